package serve

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
)

// Canonical reports whether the request's path is one Go's ServeMux serves
// as it is: it starts with "/" and has no empty segment (a doubled or
// trailing slash), no "." or ".." segment, escaped or not. ServeMux
// answers any other path with a redirect to its cleaned form before a
// handler runs, so a check in a handler would never see it.
func Canonical(r *http.Request) bool {
	p := r.URL.EscapedPath()
	if p == "/" {
		return true
	}
	if !strings.HasPrefix(p, "/") {
		return false
	}
	for _, seg := range strings.Split(p[1:], "/") {
		if u, err := url.PathUnescape(seg); seg == "" || err != nil || u == "." || u == ".." {
			return false
		}
	}
	return true
}

// UncleanPathError is the text of the 400 answering a path that is not
// Canonical.
const UncleanPathError = "path: not canonical (an empty, . or .. segment, or a trailing slash)"

// RefuseUnclean answers a request whose path is not Canonical with a JSON
// 400, never a redirect, and passes the rest to h.
func RefuseUnclean(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !Canonical(r) {
			WriteError(w, http.StatusBadRequest, UncleanPathError)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// WriteError writes {"error": msg} with code, the shape of every error
// answer of queen-app's servers.
func WriteError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	b, _ := json.Marshal(struct {
		Error string `json:"error"`
	}{msg})
	_, _ = w.Write(append(b, '\n'))
}
