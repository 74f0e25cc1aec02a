package openapicheck_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/queen-app/queen-app/internal/api/openapicheck"
)

// A client's view of an exchange (an absolute URL, the answer's headers as
// received) is checked as the server's is: e2e holds the built webhook's
// answers to the description this way.
func TestCheckTakesAClientsExchange(t *testing.T) {
	req, err := http.NewRequest("GET", "http://127.0.0.1:39111/v1/audit?limit=2", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer tok-3f9a1c0e77d2")
	header := http.Header{"Content-Type": {"application/json"}, "Content-Length": {"30"}, "Date": {"Wed, 02 Dec 2026 21:00:00 GMT"}}
	check := func(body string) error {
		return openapicheck.Check(openapicheck.Exchange{Request: req, Status: 200, Header: header, Body: []byte(body)})
	}
	if err := check(`{"entries":[],"more":false}`); err != nil {
		t.Fatalf("a described answer: %v", err)
	}
	err = check(`{"entries":[{"at":"2026-12-01T10:56:30Z","repo":"hive/t27","issue":9120,"version":2,"action":"prs","source":{"kind":"sweep"},"outcome":{}}],"more":false}`)
	if err == nil || !strings.Contains(err.Error(), "live") {
		t.Fatalf("an entry without outcome.live: %v, want an error naming live", err)
	}
}
