package api

import (
	"bytes"
	"embed"
	"html/template"
	"io/fs"
	"net/http"
	"strconv"
	"strings"

	"github.com/queen-app/queen-app/internal/serve"
)

// The claims page: UIPath serves it to a signed-in browser, the sign-in
// form otherwise. It is embedded (no CDN, works offline), reads the /v1
// routes with its session and follows GET /v1/events; it changes nothing.
const (
	UIPath     = "/ui/"
	QueuesPath = "/ui/queues/" // the queue UI (asynqmon), behind the same sign-in
)

// uiCSP lets the page run only its own script and style and talk only to
// its own origin.
const uiCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

//go:embed ui
var uiFiles embed.FS

var (
	uiStatic   = must(fs.Sub(uiFiles, "ui/static"))
	uiPage     = must(uiFiles.ReadFile("ui/index.html"))
	uiSignIn   = template.Must(template.ParseFS(uiFiles, "ui/sign-in.html"))
	uiMaxForm  = int64(4096)
	uiSignedIn = UIPath // where sign-in and sign-out send the browser
)

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// isUI says whether path is the claims page's.
func isUI(path string) bool {
	return path == strings.TrimSuffix(UIPath, "/") || strings.HasPrefix(path, UIPath)
}

// ui serves the claims page, its sign-in and sign-out, its files and the
// queue UI.
func (s *server) ui(w http.ResponseWriter, r *http.Request) {
	if !uiCanonical(r) {
		http.Error(w, serve.UncleanPathError, http.StatusBadRequest)
		return
	}
	p := r.URL.Path
	if p == strings.TrimSuffix(UIPath, "/") {
		http.Redirect(w, r, UIPath, http.StatusSeeOther)
		return
	}
	secure := r.TLS != nil
	now := s.now()
	switch {
	case strings.HasPrefix(p, UIPath+"static/"):
		uiHeaders(w)
		w.Header().Set("Cache-Control", "no-cache")
		http.StripPrefix(UIPath+"static/", http.FileServerFS(uiStatic)).ServeHTTP(w, r)
		return
	case p == UIPath+"sign-in" && r.Method == http.MethodPost:
		s.signIn(w, r, secure)
		return
	case p == UIPath+"sign-out" && r.Method == http.MethodPost:
		if _, id, exp := s.sessions.read(r, now); id != "" {
			s.sessions.revoke(id, exp, now)
		}
		http.SetCookie(w, ended(secure))
		http.Redirect(w, r, uiSignedIn, http.StatusSeeOther)
		return
	}
	ro, _, _ := s.sessions.read(r, now)
	if strings.HasPrefix(p, QueuesPath) || p == strings.TrimSuffix(QueuesPath, "/") {
		h := s.queues[0]
		if ro == roleOperator {
			h = s.queues[1]
		}
		switch {
		case ro == roleNone:
			http.Redirect(w, r, UIPath, http.StatusSeeOther)
		case h == nil:
			http.NotFound(w, r)
		default:
			w.Header().Set("Cache-Control", "no-store")
			h.ServeHTTP(w, r)
		}
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, r.Method+" is not allowed on "+p, http.StatusMethodNotAllowed)
		return
	}
	if ro == roleNone {
		if p != UIPath {
			http.Redirect(w, r, UIPath, http.StatusSeeOther)
			return
		}
		s.signInForm(w, http.StatusOK, "")
		return
	}
	if p != UIPath && !strings.HasPrefix(p, UIPath+"rows/") {
		http.NotFound(w, r)
		return
	}
	uiHeaders(w)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(uiPage)
}

// uiCanonical is serve.Canonical allowing one trailing slash: the page's
// paths and asynqmon's end with one.
func uiCanonical(r *http.Request) bool {
	c, u := *r, *r.URL
	u.Path, u.RawPath = strings.TrimSuffix(u.Path, "/"), strings.TrimSuffix(u.RawPath, "/")
	c.URL = &u
	return serve.Canonical(&c)
}

func uiHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", uiCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
}

// signIn takes the form's token: the API's or the viewer's signs in; a
// wrong one counts with the API's guard (401, then 429 while its address
// waits).
func (s *server) signIn(w http.ResponseWriter, r *http.Request, secure bool) {
	r.Body = http.MaxBytesReader(w, r.Body, uiMaxForm)
	tok := ""
	if err := r.ParseForm(); err == nil {
		tok = strings.TrimSpace(r.PostForm.Get("token"))
	}
	ro := roleNone
	if tok != "" {
		ro = s.tokens.roleOf(tok)
	}
	if ro == roleNone {
		if secs := s.refused(r, "sign-in"); secs > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(secs))
			s.signInForm(w, http.StatusTooManyRequests, "Too many wrong tokens from this address; retry in "+strconv.Itoa(secs)+" s.")
			return
		}
		s.signInForm(w, http.StatusUnauthorized, "Wrong token.")
		return
	}
	http.SetCookie(w, s.sessions.cookie(ro, s.now(), secure))
	http.Redirect(w, r, uiSignedIn, http.StatusSeeOther)
}

func (s *server) signInForm(w http.ResponseWriter, code int, problem string) {
	var b bytes.Buffer
	if err := uiSignIn.Execute(&b, map[string]string{"Problem": problem}); err != nil {
		http.Error(w, "sign-in page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	uiHeaders(w)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	w.Write(b.Bytes())
}
