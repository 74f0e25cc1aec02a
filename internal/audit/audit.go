// Package audit is the shape of the audit trail: the entry the ledger
// appends for every decision, to its stream and to the row's own history,
// as the claims API serves it and queenctl shows it. It holds types only, so
// a client reads the trail without linking the ledger.
package audit

import (
	"bytes"
	"cmp"
	"encoding/json"
	"strings"
	"time"
)

// Entry is one audit entry.
type Entry struct {
	ID       string          `json:"id,omitempty"` // stream id, set when read from the stream
	At       time.Time       `json:"at"`
	Repo     string          `json:"repo"`
	Issue    int64           `json:"issue"`
	Version  int64           `json:"version"` // the row's version after this entry
	Action   string          `json:"action"`
	Decision string          `json:"decision,omitempty"`
	Rule     string          `json:"rule,omitempty"`
	Evidence string          `json:"evidence,omitempty"`
	Source   Source          `json:"source"`
	Inputs   json.RawMessage `json:"inputs,omitempty"`
	Outcome  Outcome         `json:"outcome"`
}

// Outcome is the row's state after an entry.
type Outcome struct {
	Deleted   bool   `json:"deleted,omitempty"`
	Live      bool   `json:"live"`
	Freed     string `json:"freed,omitempty"`      // rule of the applied free
	WouldFree string `json:"would_free,omitempty"` // rule of the shadow free
	Kept      bool   `json:"kept,omitempty"`
	Claim     string `json:"claim,omitempty"`
	Stage     string `json:"stage,omitempty"`
	Export    string `json:"export,omitempty"`
	Digest    string `json:"digest,omitempty"` // of the stored row: ties the entry to one exact row
}

// Source says once who or what asked for a write: a webhook delivery, a
// sweep's slot, a person with a reason, a writer of the API.
type Source struct {
	Kind     string `json:"kind"`               // one of the Kind constants
	Delivery string `json:"delivery,omitempty"` // webhook: X-GitHub-Delivery
	Slot     string `json:"slot,omitempty"`     // sweep, export: the task's id
	Writer   string `json:"writer,omitempty"`   // api, manual: X-Queen-Source (queenctl, an import)
	Reason   string `json:"reason,omitempty"`   // manual, a delete, a migration: why
}

// Kinds of Source.
const (
	KindWebhook   = "webhook"
	KindSweep     = "sweep"
	KindManual    = "manual" // a person's free or keep
	KindAPI       = "api"    // the Queen's writes and deletes
	KindMigration = "migration"
	KindExport    = "export" // an export:push task's outcome
)

// Webhook is the source of a decision on a delivery's re-read.
func Webhook(delivery string) Source { return Source{Kind: KindWebhook, Delivery: delivery} }

// Sweep is the source of a decision of the periodic sweep's slot.
func Sweep(slot string) Source { return Source{Kind: KindSweep, Slot: slot} }

// Manual is a person's override, through writer, with their reason.
func Manual(writer, reason string) Source {
	return Source{Kind: KindManual, Writer: writer, Reason: reason}
}

// Export is the source of an export:push task's outcome.
func Export(task string) Source { return Source{Kind: KindExport, Slot: task} }

// API is a write of the claims API by writer ("" for an unnamed one).
func API(writer string) Source { return Source{Kind: KindAPI, Writer: writer} }

// String is the source in one line: "webhook 72d3…", "sweep periodic:…",
// "manual alice: reason".
func (s Source) String() string {
	var b strings.Builder
	b.WriteString(s.Kind)
	for _, v := range []string{s.Delivery, s.Slot, s.Writer} {
		if v != "" {
			b.WriteString(" " + v)
		}
	}
	if s.Reason != "" {
		b.WriteString(": " + s.Reason)
	}
	return b.String()
}

// UnmarshalJSON reads an entry in the shape this package writes and in the
// shape ledgers written before the source was an object still hold (a
// string source, the reason and a delivery beside it): the audit stream
// cannot be rewritten in place, so both shapes stay readable.
func (e *Entry) UnmarshalJSON(b []byte) error {
	type plain Entry
	var v struct {
		plain
		Source json.RawMessage `json:"source"`
		Reason string          `json:"reason"` // the string shape's
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*e = Entry(v.plain)
	e.Source = Source{}
	raw := bytes.TrimSpace(v.Source)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		e.Source = legacySource(e.Action, "", v.Reason, e.Inputs)
		return nil
	}
	if raw[0] != '"' {
		return json.Unmarshal(raw, &e.Source)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return err
	}
	e.Source = legacySource(e.Action, s, v.Reason, e.Inputs)
	return nil
}

// Actions: what was asked of the ledger.
const (
	ActionUpsert   = "upsert"
	ActionPRs      = "prs"
	ActionEvaluate = "evaluate"
	ActionFree     = "free" // a person's free
	ActionKeep     = "keep"
	ActionDelete   = "delete"
	ActionExport   = "export"
	ActionMigrate  = "migrate" // moved to its repository's canonical key
	// ActionExportDryRun records what an asked-for dry run decided; the
	// row is not written (the entry carries its version and digest).
	ActionExportDryRun = "export_dry_run"
)

// legacyAPI was the string shape's name of an unnamed API writer.
const legacyAPI = "api"

// legacySource is the Source of an entry of the string shape: the writer
// named the API caller (X-Queen-Source, "api" when unnamed), a person's
// override, the webhook's delivery of a PR read, or the sweep; the reason
// and a PR read's delivery stood beside it.
func legacySource(action, s, reason string, inputs json.RawMessage) Source {
	writer := s
	if writer == legacyAPI {
		writer = ""
	}
	switch {
	case s == KindMigration || action == ActionMigrate:
		return Source{Kind: KindMigration, Reason: reason}
	case s == KindSweep:
		return Source{Kind: KindSweep, Reason: reason}
	case action == ActionExport:
		return Source{Kind: KindExport, Slot: s}
	case action == ActionPRs:
		var in struct {
			Delivery string `json:"delivery"`
		}
		_ = json.Unmarshal(inputs, &in)
		return Source{Kind: KindWebhook, Delivery: cmp.Or(in.Delivery, s)}
	case action == ActionFree || action == ActionKeep:
		return Source{Kind: KindManual, Writer: writer, Reason: reason}
	case action == ActionUpsert || action == ActionDelete:
		return Source{Kind: KindAPI, Writer: writer, Reason: reason}
	}
	return Source{Kind: s, Reason: reason}
}
