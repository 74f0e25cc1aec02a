package sandbox

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

func TestRecordKeepsEveryRequestAndAnswerOnlyWhenAsked(t *testing.T) {
	gh, err := NewGitHub()
	if err != nil {
		t.Fatal(err)
	}
	defer gh.Close()
	post := func(path string) {
		t.Helper()
		resp, err := http.Post(gh.URL()+strings.TrimPrefix(path, "/"), "application/json", strings.NewReader(`{"x":1}`))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	post("/before?a=1")
	if n := len(gh.Recorded()); n != 0 {
		t.Fatalf("%d exchanges kept before Record", n)
	}
	gh.Record()
	post("/app/hook/deliveries/5/attempts?b=2")
	ex := gh.Recorded()
	if len(ex) != 1 {
		t.Fatalf("%d exchanges kept, want 1", len(ex))
	}
	e := ex[0]
	if e.Method != "POST" || e.Path != "/app/hook/deliveries/5/attempts" || e.RawQuery != "b=2" ||
		string(e.Body) != `{"x":1}` || e.Header.Get("Content-Type") != "application/json" {
		t.Errorf("request kept as %+v", e)
	}
	// No App JWT: GitHub's 401, as the client saw it.
	if e.Status != http.StatusUnauthorized || !strings.Contains(string(e.RespBody), "JSON web token") ||
		e.RespHeader.Get("Content-Type") == "" {
		t.Errorf("answer kept as %d %v %s", e.Status, e.RespHeader, e.RespBody)
	}
}
