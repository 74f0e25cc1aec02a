//go:build ignore

// What the binaries of a schema-2 release did to the ledger at start:
// Migrate, which writes the schema key a real deployment holds.
package main

import (
	"context"
	"log"

	"github.com/queen-app/queen-app/internal/ledger"
)

func atStart(l *ledger.Ledger) {
	if _, err := l.Migrate(context.Background()); err != nil {
		log.Fatal(err)
	}
}
