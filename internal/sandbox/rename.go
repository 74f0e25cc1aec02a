package sandbox

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/queen-app/queen-app/internal/ghrepo"
)

// moves are the renames and transfers of repositories: a repository keeps
// its id under every name, and its old names redirect to it.
type moves struct {
	mu  sync.Mutex
	to  map[string]string // an old name, lower case -> the current name
	ids map[string]int64  // a moved repository's current name, lower case -> its id
}

// nameID is the id of a repository never moved: a hash of its name.
func nameID(full string) int64 {
	var id int64
	for _, c := range strings.ToLower(full) {
		id = id*31 + int64(c)
	}
	return id & (1<<40 - 1)
}

// repoID is the repository's id, the same under every name it had.
func (s *GitHub) repoID(full string) int64 {
	s.moved.mu.Lock()
	defer s.moved.mu.Unlock()
	if id, ok := s.moved.ids[strings.ToLower(full)]; ok {
		return id
	}
	return nameID(full)
}

// movedTo is the current name of a repository that had the name full.
func (s *GitHub) movedTo(full string) (string, bool) {
	s.moved.mu.Lock()
	defer s.moved.mu.Unlock()
	to, ok := s.moved.to[strings.ToLower(full)]
	return to, ok
}

// RenameRepo renames or transfers the repository from to to ("owner/name")
// as GitHub does: it keeps its id, PRs, issues, branches and installations,
// its PRs name it by its new name as their head repository, and its old name
// still reaches it: REST answers 301 (307 for a method other than GET or
// HEAD) to /repositories/{id}/..., which serves it, and GraphQL's
// repository(owner, name) resolves the old name to the new nameWithOwner.
func (s *GitHub) RenameRepo(from, to string) {
	id := s.repoID(from)
	f, t := strings.ToLower(from), strings.ToLower(to)
	s.mu.Lock()
	rekey(s.prs, f, t)
	for _, list := range s.prs {
		for i := range list {
			if strings.EqualFold(list[i].HeadRepo, from) {
				list[i].HeadRepo = to
			}
		}
	}
	rekey(s.issues, f, t)
	rekey(s.branches, f, t)
	rekey(s.empty, f, t)
	rekey(s.remotes, f, t)
	rekey(s.numbers, f, t)
	for _, in := range s.installations {
		for i, name := range in.repos {
			if strings.EqualFold(name, from) {
				in.repos[i] = to
			}
		}
	}
	s.mu.Unlock()

	s.moved.mu.Lock()
	defer s.moved.mu.Unlock()
	delete(s.moved.ids, f)
	s.moved.ids[t] = id
	for old, cur := range s.moved.to {
		if strings.EqualFold(cur, from) {
			s.moved.to[old] = to
		}
	}
	s.moved.to[f] = to
	delete(s.moved.to, t) // a name taken back is its repository's again
}

// redirectMoved answers a REST request naming a moved repository by its old
// name as GitHub does, and reports whether it did.
func (s *GitHub) redirectMoved(w http.ResponseWriter, r *http.Request) bool {
	rest, ok := strings.CutPrefix(r.URL.Path, "/repos/")
	if !ok {
		return false
	}
	parts := strings.SplitN(rest, "/", 3)
	if len(parts) < 2 {
		return false
	}
	to, ok := s.movedTo(parts[0] + "/" + parts[1])
	if !ok {
		return false
	}
	// On the host asked, as paging links are: a test may front the sandbox.
	loc := "http://" + r.Host + "/repositories/" + strconv.FormatInt(s.repoID(to), 10)
	if len(parts) == 3 {
		loc += "/" + parts[2]
	}
	if r.URL.RawQuery != "" {
		loc += "?" + r.URL.RawQuery
	}
	status := http.StatusMovedPermanently
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		status = http.StatusTemporaryRedirect
	}
	s.rateHeaders(w, r)
	w.Header().Set("Location", loc)
	writeJSON(w, status, map[string]any{
		"message": "Moved Permanently", "url": loc,
		"documentation_url": "https://docs.github.com/rest/guides/best-practices-for-using-the-rest-api#follow-redirects",
	})
	return true
}

// byID rewrites /repositories/{id}/... of a moved repository to its
// /repos/{owner}/{name}/... route.
func (s *GitHub) byID(r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/repositories/")
	if !ok {
		return
	}
	idText, tail, _ := strings.Cut(rest, "/")
	id, err := strconv.ParseInt(idText, 10, 64)
	if err != nil {
		return
	}
	s.moved.mu.Lock()
	defer s.moved.mu.Unlock()
	for name, n := range s.moved.ids {
		if n == id {
			r.URL.Path = strings.TrimSuffix("/repos/"+s.currentCase(name)+"/"+tail, "/")
			r.URL.RawPath = ""
			return
		}
	}
}

// currentCase is the moved repository's current name as it was given;
// s.moved.mu is held.
func (s *GitHub) currentCase(lower string) string {
	for _, cur := range s.moved.to {
		if strings.EqualFold(cur, lower) {
			return cur
		}
	}
	return lower
}

// MoveRepo is RenameRepo followed by the repository event GitHub sends the
// App: "renamed" (changes.repository.name.from) when the owner stays,
// "transferred" (changes.owner.from) when it changes; the payload names
// the repository as it is now.
func (s *GitHub) MoveRepo(from, to string) (Delivery, error) {
	s.RenameRepo(from, to)
	s.mu.Lock()
	inst := s.installationOf(to)
	h := s.hook
	s.mu.Unlock()
	if inst == nil {
		return Delivery{}, fmt.Errorf("sandbox: the App is not installed on %s", to)
	}
	fromOwner, fromName := ghrepo.Split(from)
	toOwner, _ := ghrepo.Split(to)
	action := "renamed"
	changes := map[string]any{"repository": map[string]any{"name": map[string]any{"from": fromName}}}
	if !strings.EqualFold(fromOwner, toOwner) {
		action = "transferred"
		changes = map[string]any{"owner": map[string]any{"from": map[string]any{"organization": orgShape(fromOwner)}}}
	}
	return s.deliver(h, "repository", action, inst.id, map[string]any{
		"changes":    changes,
		"repository": s.repoJSON(to),
	})
}

// orgShape is an organization as a transfer's changes.owner.from names it.
func orgShape(login string) map[string]any {
	u := userShape(map[string]any{"login": login, "type": "Organization"})
	api := "https://api.github.com/orgs/" + login
	return map[string]any{
		"login": login, "id": u["id"], "node_id": u["node_id"], "url": api, "repos_url": api + "/repos",
		"events_url": api + "/events", "hooks_url": api + "/hooks", "issues_url": api + "/issues",
		"members_url": api + "/members{/member}", "public_members_url": api + "/public_members{/member}",
		"avatar_url": u["avatar_url"], "description": nil, "html_url": "https://github.com/" + login,
	}
}

// rekey moves m's entry under from, if any, to the key to.
func rekey[V any](m map[string]V, from, to string) {
	if v, ok := m[from]; ok {
		m[to] = v
		delete(m, from)
	}
}
