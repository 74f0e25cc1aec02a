package demo

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// An outcome that has not happened when time runs out is named, in the
// error and in the table; the demo never claims success it did not see.
func TestAMissedOutcomeIsNamed(t *testing.T) {
	var out bytes.Buffer
	err := Run(context.Background(), Options{FlagsOn: true, Out: &out, Limit: time.Millisecond})
	var f *Failed
	if !errors.As(err, &f) || f.Row != "hive/t27#9120" || f.Want != "freed by accept_claim" {
		t.Fatalf("err %v, want the closed-unmerged row's free named; output:\n%s", err, out.String())
	}
	if !strings.Contains(err.Error(), "expected hive/t27#9120 (accepted, PR closes unmerged) to be freed by accept_claim") {
		t.Errorf("error %q", err)
	}
	table := out.String()[strings.Index(out.String(), "\nROW "):]
	if !strings.Contains(table, "MISSED: want freed by accept_claim") || strings.Contains(out.String(), "Every expected outcome happened") {
		t.Errorf("the table does not mark the missed outcome:\n%s", table)
	}
}
