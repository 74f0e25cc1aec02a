package ghevents

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/queen-app/queen-app/internal/githubtest"
)

// scannerSeeds are GitHub's payloads and bodies at the edges of the grammar
// and of encoding/json's name matching and typing.
func scannerSeeds(tb testing.TB) [][]byte {
	out := [][]byte{}
	for _, name := range []string{
		"pull_request/closed.payload.json", "pull_request/reopened.payload.json", "pull_request/opened.payload.json",
		"installation/created.payload.json", "ping/with-app_id.payload.json", "push/payload.json",
	} {
		out = append(out, githubtest.Payload(tb, name))
	}
	for _, s := range []string{
		`null`, ` {} `, `[]`, `"x"`, `1`, `{"action":"closed","ACTION":"opened"}`, `{"Action":"closed"}`,
		`{"\u0061ction":"closed"}`, `{"action":"clo\u0073ed"}`, `{"action":5}`, `{"action":null}`,
		`{"pull_request":{"number":1},"pull_request":{"merged":true}}`, `{"pull_request":{"number":1},"pull_request":null}`,
		`{"pull_request":{"number":1.5}}`, `{"pull_request":{"number":1e2}}`, `{"pull_request":{"number":-0}}`,
		`{"pull_request":{"number":99999999999999999999}}`, `{"pull_request":{"merged":"yes"}}`,
		`{"pull_request":{"merged_at":null}}`, `{"pull_request":{"merged_at":[1,{"a":2}]}}`,
		`{"pull_request":{"head":null}}`, `{"pull_request":{"head":{"ref":"queen-1","repo":{"id":1,"full_name":"a/b"}}}}`,
		`{"pull_request":{"head":{"repo":null}}}`, `{"pull_request":[]}`, `{"repository":"a/b"}`,
		`{"installation":{"id":"7"}}`, `{"pull_ReQueſt":{"number":3}}`, `{"action":"\ud800"}`, "{\"action\":\"\xff\"}",
		`{"a":"\x01"}`, `{"a":"\q"}`, `{"a":"\u12g4"}`, `{"a":01}`, `{"a":1.}`, `{"a":.5}`, `{"a":1e}`, `{"a":-}`,
		`{"a":tru}`, `{"a":[1,]}`, `{"a":{"b":1,}}`, `{"a" 1}`, `{"a":1} x`, `{"a":"abcdefghijklmnopqrstuvwxyz\"0123"}`,
		`[[[[[[[[[[]]]]]]]]]]`, "\ufeff{}", `{"number":1,"number":"x"}`,
	} {
		out = append(out, []byte(s))
	}
	return out
}

// FuzzScanner holds the receiver's scanner to encoding/json: validJSON is
// json.Valid, and decodePullRequest fails exactly when json.Unmarshal does
// and otherwise decodes the same fields.
func FuzzScanner(f *testing.F) {
	for _, b := range scannerSeeds(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		checkScanner(t, body)
	})
}

func TestScannerSeeds(t *testing.T) {
	for _, b := range scannerSeeds(t) {
		checkScanner(t, b)
	}
	deep := make([]byte, 0, 2*maxDepth+2)
	for range maxDepth + 1 {
		deep = append(deep, '[')
	}
	for range maxDepth + 1 {
		deep = append(deep, ']')
	}
	checkScanner(t, deep)
	checkScanner(t, deep[1:len(deep)-1])
}

func checkScanner(t *testing.T, body []byte) {
	t.Helper()
	if got, want := validJSON(body), json.Valid(body); got != want {
		t.Fatalf("validJSON(%q) = %t, json.Valid %t", body, got, want)
	}
	var got, want pullRequestEvent
	gotErr, wantErr := decodePullRequest(body, &got), json.Unmarshal(body, &want)
	if (gotErr != nil) != (wantErr != nil) {
		t.Fatalf("decodePullRequest(%q): error %v, json.Unmarshal's %v", body, gotErr, wantErr)
	}
	if wantErr == nil && !reflect.DeepEqual(got, want) {
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		t.Fatalf("decodePullRequest(%q) = %s, json.Unmarshal %s", body, g, w)
	}
}
