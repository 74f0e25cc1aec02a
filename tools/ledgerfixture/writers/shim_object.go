//go:build ignore

// The worker's calls of a release whose audit source is an object
// (bfd7ee7 on): audit.Webhook, audit.Sweep, audit.Export.
package main

import (
	"context"

	"github.com/queen-app/queen-app/internal/audit"
	"github.com/queen-app/queen-app/internal/dispatch"
	"github.com/queen-app/queen-app/internal/ledger"
)

type calls struct{}

var worker calls

func (calls) prs(l *ledger.Ledger, repo string, n int64, st dispatch.PRState, delivery string) error {
	st.ReadAt = &T0
	_, err := l.RecordPRs(context.Background(), repo, n, st, audit.Webhook(delivery))
	return err
}

func (calls) evaluate(l *ledger.Ledger, repo string, n int64) error {
	_, err := l.Evaluate(context.Background(), repo, n, audit.Sweep("periodic:claim:sweep:2026-12-01T11:50:00Z"))
	return err
}

func (calls) export(l *ledger.Ledger, repo string, n int64, st dispatch.ExportState, version int64) error {
	_, err := l.RecordExport(context.Background(), repo, n, st, version, audit.Export("export:push:"+repo))
	return err
}
