package main

import (
	"net"
	"strings"
	"testing"
)

// Nothing listens at QUEEN_API_URL: the error says so, naming the
// variable and its value.
func TestRefusedConnectionNamesQueenAPIURL(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String()
	l.Close()
	t.Setenv("QUEEN_API_URL", url)
	t.Setenv("QUEEN_API_TOKEN", claimsToken)
	for _, args := range [][]string{{"claims", "list"}, {"explain", "hive/t27#1"}, {"export", "status"}, {"audit"}} {
		code, out, errOut := ctl(args...)
		if code != 1 || out != "" || strings.Count(errOut, "\n") != 1 ||
			!strings.Contains(errOut, "QUEEN_API_URL="+url) || !strings.Contains(errOut, "connection refused") ||
			strings.Contains(errOut, claimsToken) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want one line naming QUEEN_API_URL=%s", args, code, out, errOut, url)
		}
	}
}
