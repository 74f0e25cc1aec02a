package githubapp

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// maxRedirects is what Go's client follows by default.
const maxRedirects = 10

// origins are the scheme://host of the REST and GraphQL endpoints, the only
// places a request carrying the App JWT or an installation token may go.
type origins map[string]bool

func originsOf(urls ...*url.URL) origins {
	o := origins{}
	for _, u := range urls {
		o[origin(u)] = true
	}
	return o
}

func origin(u *url.URL) string { return u.Scheme + "://" + strings.ToLower(u.Host) }

// checkRedirect is every client's CheckRedirect. ghinstallation's
// transports set Authorization on each request they send, a redirected one
// too, after Go's client has dropped it for the new host; so a redirect off
// the API is refused, and an answer from elsewhere decides nothing.
func (o origins) checkRedirect(req *http.Request, via []*http.Request) error {
	if !o[origin(req.URL)] {
		return fmt.Errorf("redirect to %s refused: not the GitHub API", origin(req.URL))
	}
	if len(via) >= maxRedirects {
		return fmt.Errorf("stopped after %d redirects", maxRedirects)
	}
	return nil
}
