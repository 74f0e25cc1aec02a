package sandbox

import (
	"context"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Export stands in for the Queen's export API over a real work repository: GET {URL} lists its queen-N branches ahead of
// Base, GET {URL}/{issue} answers a real `git bundle create Base..queen-N`.
// It requires "Authorization: Bearer <token>".
type Export struct {
	URL   string // e.g. http://127.0.0.1:port/queen/export
	Token string
	Work  *Work
	Base  string // the ref bundles are relative to; default origin/master

	mu        sync.Mutex
	failCode  int
	failN     int
	slow      time.Duration
	slowN     int
	slowIssue map[int64]time.Duration
	stored    map[int64]string
	requests  map[string]int
	srv       *server
}

var issuePath = regexp.MustCompile(`^[1-9][0-9]{0,9}$`)

// NewExport serves work's branches on a loopback port until Close; work
// is usually a Remote's clone, so that bundles are relative to history the
// remote has.
func NewExport(token string, work *Work) (*Export, error) {
	e := &Export{Token: token, Work: work, Base: "origin/master",
		slowIssue: map[int64]time.Duration{}, stored: map[int64]string{}, requests: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /queen/export", e.serve)
	mux.HandleFunc("GET /queen/export/{issue}", e.serve)
	srv, err := listen(mux)
	if err != nil {
		return nil, fmt.Errorf("sandbox: export: %w", err)
	}
	e.srv = srv
	e.URL = srv.URL + "/queen/export"
	return e, nil
}

// Close stops the server.
func (e *Export) Close() { e.srv.Close() }

// Fail answers the next n requests with status (n < 0: until Fail(0, 0)).
func (e *Export) Fail(status, n int) {
	e.mu.Lock()
	e.failCode, e.failN = status, n
	e.mu.Unlock()
}

// Slow delays the next n requests by d before answering (n < 0: until
// Slow(0, 0)); a client with a shorter timeout sees a timeout.
func (e *Export) Slow(d time.Duration, n int) {
	e.mu.Lock()
	e.slow, e.slowN = d, n
	e.mu.Unlock()
}

// SlowIssue delays every bundle request of issue by d (0 removes it).
func (e *Export) SlowIssue(issue int64, d time.Duration) {
	e.mu.Lock()
	e.slowIssue[issue] = d
	e.mu.Unlock()
}

// Stored makes GET {URL}/{issue} answer the stored fallback form (runner,
// at, no commit or file lists) even when the branch is gone from Work.
func (e *Export) Stored(issue int64, runner string) error {
	data, err := e.create("queen-" + strconv.FormatInt(issue, 10))
	if err != nil {
		return err
	}
	e.mu.Lock()
	e.stored[issue] = runner + "\x00" + base64.StdEncoding.EncodeToString(data)
	e.mu.Unlock()
	return nil
}

// Requests counts the requests that reached path (e.g. "/queen/export/5").
func (e *Export) Requests(path string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.requests[path]
}

func (e *Export) serve(w http.ResponseWriter, r *http.Request) {
	if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), []byte("Bearer "+e.Token)) != 1 {
		exportJSON(w, http.StatusUnauthorized, map[string]string{"error": "unauthorized"})
		return
	}
	issueText := r.PathValue("issue")
	e.mu.Lock()
	e.requests[r.URL.Path]++
	delay := time.Duration(0)
	if e.slowN != 0 {
		delay = e.slow
		if e.slowN > 0 {
			e.slowN--
		}
	}
	if n, err := strconv.ParseInt(issueText, 10, 64); err == nil && e.slowIssue[n] > delay {
		delay = e.slowIssue[n]
	}
	fail := 0
	if e.failN != 0 {
		fail = e.failCode
		if e.failN > 0 {
			e.failN--
		}
	}
	e.mu.Unlock()
	if delay > 0 {
		t := time.NewTimer(delay)
		select {
		case <-r.Context().Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
	if fail != 0 {
		exportJSON(w, fail, map[string]string{"error": "injected failure"})
		return
	}
	if issueText == "" {
		e.list(w, r.Context())
		return
	}
	if !issuePath.MatchString(issueText) {
		exportJSON(w, http.StatusBadRequest, map[string]string{"error": "issue must be a positive integer"})
		return
	}
	issue, _ := strconv.ParseInt(issueText, 10, 64)
	e.one(w, issue)
}

func (e *Export) list(w http.ResponseWriter, _ context.Context) {
	type branch struct {
		Issue   int64  `json:"issue"`
		Branch  string `json:"branch"`
		Commits int    `json:"commits"`
		Files   int    `json:"files"`
		Head    string `json:"head"`
	}
	out, err := e.Work.Git("for-each-ref", "--format=%(refname:strip=2) %(objectname)", "refs/heads/queen-*")
	if err != nil {
		exportJSON(w, http.StatusInternalServerError, map[string]string{"error": "could not list branches: " + err.Error()})
		return
	}
	branches := []branch{}
	for _, line := range strings.Split(out, "\n") {
		name, head, ok := strings.Cut(line, " ")
		if !ok || !strings.HasPrefix(name, "queen-") || !issuePath.MatchString(name[len("queen-"):]) {
			continue
		}
		issue, _ := strconv.ParseInt(name[len("queen-"):], 10, 64)
		commits, files, err := e.ahead(name)
		if err != nil {
			exportJSON(w, http.StatusInternalServerError, map[string]string{"error": "could not list branches: " + err.Error()})
			return
		}
		if commits == 0 {
			continue
		}
		branches = append(branches, branch{issue, name, commits, len(files), head})
	}
	sort.Slice(branches, func(i, j int) bool { return branches[i].Issue < branches[j].Issue })
	exportJSON(w, http.StatusOK, map[string]any{"base": e.Base, "count": len(branches), "branches": branches})
}

func (e *Export) ahead(branch string) (int, []string, error) {
	count, err := e.Work.Git("rev-list", "--count", e.Base+".."+branch)
	if err != nil {
		return 0, nil, err
	}
	n, _ := strconv.Atoi(count)
	names, err := e.Work.Git("diff", "--name-only", e.Base+"..."+branch)
	if err != nil {
		return 0, nil, err
	}
	var files []string
	for _, f := range strings.Split(names, "\n") {
		if f != "" {
			files = append(files, f)
		}
	}
	return n, files, nil
}

func (e *Export) one(w http.ResponseWriter, issue int64) {
	branch := "queen-" + strconv.FormatInt(issue, 10)
	e.mu.Lock()
	stored, isStored := e.stored[issue]
	e.mu.Unlock()
	if isStored {
		runner, b64, _ := strings.Cut(stored, "\x00")
		exportJSON(w, http.StatusOK, map[string]any{"issue": issue, "branch": branch, "base": e.Base,
			"runner": runner, "at": time.Now().UTC().Format(time.RFC3339), "bundleBase64": b64})
		return
	}
	if _, err := e.Work.Git("rev-parse", "--verify", "--quiet", "refs/heads/"+branch); err != nil {
		exportJSON(w, http.StatusNotFound, map[string]string{"error": "no branch " + branch})
		return
	}
	n, files, err := e.ahead(branch)
	if err != nil {
		exportJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
		return
	}
	if n == 0 {
		exportJSON(w, http.StatusConflict, map[string]string{"error": branch + " has no commits beyond " + e.Base})
		return
	}
	log, err := e.Work.Git("log", "--format=%H%x1f%an%x1f%aI%x1f%s", e.Base+".."+branch)
	if err != nil {
		exportJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
		return
	}
	commits := []map[string]string{}
	for _, line := range strings.Split(log, "\n") {
		f := strings.Split(line, "\x1f")
		if len(f) == 4 {
			commits = append(commits, map[string]string{"sha": f[0], "author": f[1], "date": f[2], "subject": f[3]})
		}
	}
	data, err := e.create(branch)
	if err != nil {
		exportJSON(w, http.StatusInternalServerError, map[string]string{"error": "bundle create: " + err.Error()})
		return
	}
	exportJSON(w, http.StatusOK, map[string]any{"issue": issue, "branch": branch, "base": e.Base,
		"commits": commits, "files": files, "bundleBase64": base64.StdEncoding.EncodeToString(data)})
}

// create runs git bundle create Base..branch into a temporary file.
func (e *Export) create(branch string) ([]byte, error) {
	dir, err := os.MkdirTemp("", "export-bundle-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, branch+".bundle")
	if _, err := e.Work.Git("bundle", "create", "--quiet", path, e.Base+".."+branch); err != nil {
		return nil, err
	}
	return os.ReadFile(path)
}

func exportJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
