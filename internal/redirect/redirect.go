// Package redirect is the one redirect policy of every HTTP client that
// carries a credential: the GitHub App's (githubapp), the export's
// (export.Client) and the claims API's (apiclient). A redirect may move
// within the origin the request was first sent to, never to another
// scheme, host or port. Go's client drops Authorization only for another
// host, so it would send a token again to the same host over plain http or
// on another port; and ghinstallation's transports set it again on every
// request they send, redirected ones included.
package redirect

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// MaxRedirects is what Go's client follows by default.
const MaxRedirects = 10

// Check is an http.Client's CheckRedirect: it refuses a redirect off the
// first request's origin, and a chain longer than MaxRedirects. The error
// names the origins only, never a path or query that could carry a token.
func Check(req *http.Request, via []*http.Request) error {
	if len(via) == 0 {
		return nil
	}
	if from, to := Origin(via[0].URL), Origin(req.URL); from != to {
		return fmt.Errorf("redirect from %s to %s refused: another scheme, host or port", from, to)
	}
	if len(via) >= MaxRedirects {
		return fmt.Errorf("stopped after %d redirects", MaxRedirects)
	}
	return nil
}

// defaultPorts are the ports a URL without one means.
var defaultPorts = map[string]string{"http": "80", "https": "443"}

// Origin is u's scheme, host and port, in lower case with the scheme's
// default port written out: https://API.example and https://api.example:443
// are one origin.
func Origin(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	if port == "" {
		port = defaultPorts[scheme]
	}
	return scheme + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

// Client is hc with Check as its CheckRedirect (nil hc: a client of its
// own, never http.DefaultClient, which a caller may have changed). hc is
// copied, not changed.
func Client(hc *http.Client) *http.Client {
	c := &http.Client{}
	if hc != nil {
		*c = *hc
	}
	c.CheckRedirect = Check
	return c
}
