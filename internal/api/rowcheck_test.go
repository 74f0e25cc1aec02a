package api_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/queen-app/queen-app/docs"
	"github.com/queen-app/queen-app/internal/rules"
)

// judged_head is a full commit id or null: anything else is refused naming
// the field, and an upper-case id is stored in lower case (the export
// compares it so).
func TestPutJudgedHeadMustBeACommitID(t *testing.T) {
	e := newEnv(t, envOpts{})
	for _, bad := range []string{`"abc"`, `""`, `"` + strings.Repeat("g", 40) + `"`, `"` + strings.Repeat("a", 41) + `"`, `7`} {
		r := e.req(t, "PUT", path("hive/t27", 5, "dispatches"), `{"started": true, "judged_head": `+bad+`}`)
		r.mustCode(t, 400, "judged_head")
		e.absent(t, "hive/t27", 5)
	}
	upper := "4F2A9C0E1B7D3A5F6E8C9B0A1D2E3F4A5B6C7D8E"
	e.put(t, "hive/t27", 5, `{"started": true, "judged_head": "`+upper+`"}`)
	if got := e.get(t, "hive/t27", 5).JudgedHead; got == nil || *got != strings.ToLower(upper) {
		t.Fatalf("judged_head stored %v, want it in lower case", got)
	}
	e.put(t, "hive/t27", 5, `{"judged_head": null}`)
	if got := e.get(t, "hive/t27", 5).JudgedHead; got != nil {
		t.Fatalf("judged_head %q after null, want none", *got)
	}
}

// A review_state the Queen never writes is kept (the cards read it as
// "other") but the answer says so, naming the field and the known words.
func TestPutUnknownReviewStateWarns(t *testing.T) {
	e := newEnv(t, envOpts{})
	m := e.put(t, "hive/t27", 6, `{"started": true, "dispatched_at": "2026-10-10T17:00:00Z", "finished_at": "2026-10-10T19:50:00Z", "review_state": "accepted"}`)
	if got := e.get(t, "hive/t27", 6).ReviewWord(); got != "accepted" {
		t.Fatalf("review_state stored %q, want the word as written", got)
	}
	ws, _ := m["warnings"].([]any)
	if len(ws) != 1 {
		t.Fatalf("warnings %v, want one: %v", m["warnings"], m)
	}
	w, _ := ws[0].(map[string]any)
	msg, _ := w["message"].(string)
	known, _ := w["known"].([]any)
	if w["field"] != "review_state" || !strings.Contains(msg, `"accepted"`) || !strings.Contains(msg, "review_state") || len(known) != 9 {
		t.Fatalf("warning %v, want review_state named with the nine known words", w)
	}
	for _, word := range []string{"accept", "sendBack", "wait", "stale-contract", "obsolete"} {
		found := false
		for _, k := range known {
			found = found || k == word
		}
		if !found {
			t.Fatalf("known words %v miss %q", known, word)
		}
	}
	for _, ok := range []string{`"accept"`, `"sendBack"`, `null`, `""`} {
		m := e.put(t, "hive/t27", 6, `{"review_state": `+ok+`}`)
		if _, has := m["warnings"]; has {
			t.Fatalf("review_state %s: warnings %v, want none", ok, m["warnings"])
		}
	}
}

// The description's ReviewWord (and so the TypeScript type) lists the
// words the rules know, in their order.
func TestOpenAPIReviewWordsAreTheRules(t *testing.T) {
	doc, err := openapi3.NewLoader().LoadFromData(docs.OpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	s := doc.Components.Schemas["ReviewWord"]
	if s == nil || s.Value == nil {
		t.Fatal("docs/openapi.yaml has no ReviewWord schema")
	}
	var got []string
	for _, v := range s.Value.Enum {
		w, _ := v.(string)
		got = append(got, w)
	}
	if want := rules.ReviewWords(); !slices.Equal(got, want) {
		t.Fatalf("ReviewWord enum %v, want the rules' words %v", got, want)
	}
}
