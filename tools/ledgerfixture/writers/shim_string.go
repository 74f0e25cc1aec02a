//go:build ignore

// The worker's calls of a release whose audit source was a string (0.1.0
// up to bfd7ee7): the delivery, "sweep", or nothing for the export.
package main

import (
	"context"

	"github.com/queen-app/queen-app/internal/dispatch"
	"github.com/queen-app/queen-app/internal/ledger"
)

type calls struct{}

var worker calls

func (calls) prs(l *ledger.Ledger, repo string, n int64, st dispatch.PRState, delivery string) error {
	st.ReadAt = &T0
	_, err := l.RecordPRs(context.Background(), repo, n, st, delivery)
	return err
}

func (calls) evaluate(l *ledger.Ledger, repo string, n int64) error {
	_, err := l.Evaluate(context.Background(), repo, n, "sweep")
	return err
}

func (calls) export(l *ledger.Ledger, repo string, n int64, st dispatch.ExportState, version int64) error {
	_, err := l.RecordExport(context.Background(), repo, n, st, version)
	return err
}
