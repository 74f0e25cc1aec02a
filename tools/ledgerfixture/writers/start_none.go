//go:build ignore

// What the binaries of a release without Migrate (0.1.0) did to the ledger
// at start: nothing.
package main

import "github.com/queen-app/queen-app/internal/ledger"

func atStart(*ledger.Ledger) {}
