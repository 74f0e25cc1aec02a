package sandbox

import (
	"encoding/json"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

var (
	reDeclared = regexp.MustCompile(`\$(\w+)\s*:\s*String!`)
	reRepo     = regexp.MustCompile(`repository\s*\(\s*owner\s*:\s*\$(\w+)\s*,\s*name\s*:\s*\$(\w+)\s*\)`)
	reAlias    = regexp.MustCompile(`(\w+)\s*:\s*pullRequests\s*\(([^)]*)\)`)
	reHead     = regexp.MustCompile(`headRefName\s*:\s*([^\s,)]+)`)
	reFirst    = regexp.MustCompile(`first\s*:\s*(\d+)`)
	reStates   = regexp.MustCompile(`states\s*:\s*\[([^\]]*)\]`)
	reCreated  = regexp.MustCompile(`\bcreatedAt\b`)
	reHeadOid  = regexp.MustCompile(`\bheadRefOid\b`)
	reCross    = regexp.MustCompile(`\bisCrossRepository\b`)
)

// ResourceLimitMessage is the error of a query past GitHub's resource
// limits ("large first or last arguments across multiple connections"):
// it comes with partial data and no path.
const ResourceLimitMessage = "This query was limited due to exceeding resource limits. Try a smaller query."

// ResourceLimit makes every GraphQL query of more than k pullRequests
// aliases (k <= 0: none) answer as GitHub's resource limits do: the aliases
// past k null and an error without a path, until ClearFaults.
func (s *GitHub) ResourceLimit(k int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resourceLimit = max(k, 0)
}

// graphql answers the aliased form queen-app sends:
//
//	query($owner:String!,$name:String!,$h0:String!,...) { repository(owner:$owner,name:$name) {
//	  b0: pullRequests(headRefName:$h0, states:[OPEN,CLOSED,MERGED], first:100) {
//	    nodes { number state mergedAt createdAt headRefOid headRepository { nameWithOwner } }
//	    pageInfo { hasNextPage } } ... } }
//
// Like GitHub, pullRequests(headRefName:) also matches fork PRs, a query error
// is an HTTP 200 with "errors", and a failed field nulls its alias. A node
// carries createdAt and headRefOid only when the query selects them, as
// GitHub's answer does.
func (s *GitHub) graphql(w http.ResponseWriter, r *http.Request, in *installation) {
	var req struct {
		Query     string            `json:"query"`
		Variables map[string]string `json:"variables"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"message": "Problems parsing JSON"})
		return
	}
	fail := func(msg string) {
		writeJSON(w, http.StatusOK, map[string]any{"errors": []any{map[string]any{"message": msg}}})
	}
	declared := map[string]bool{}
	for _, m := range reDeclared.FindAllStringSubmatch(req.Query, -1) {
		declared[m[1]] = true
	}
	variable := func(ref string) (string, bool) {
		name, ok := strings.CutPrefix(ref, "$")
		if !ok || !declared[name] {
			return "", false
		}
		v, ok := req.Variables[name]
		return v, ok
	}
	rm := reRepo.FindStringSubmatch(req.Query)
	if rm == nil {
		fail("queen-app fake: expected repository(owner:$owner,name:$name)")
		return
	}
	owner, ok1 := variable("$" + rm[1])
	name, ok2 := variable("$" + rm[2])
	if !ok1 || !ok2 {
		fail("Variable $owner or $name of type String! was not provided.")
		return
	}
	asked := owner + "/" + name
	if to, ok := s.movedTo(asked); ok {
		asked = to // GraphQL follows a rename or transfer
	}
	repo := ""
	for _, full := range in.repos {
		if strings.EqualFold(full, asked) {
			repo = full
		}
	}
	if repo == "" {
		writeJSON(w, http.StatusOK, map[string]any{
			"data": map[string]any{"repository": nil},
			"errors": []any{map[string]any{
				"type": "NOT_FOUND", "path": []string{"repository"},
				"message": "Could not resolve to a Repository with the name '" + owner + "/" + name + "'.",
			}},
		})
		return
	}

	s.mu.Lock()
	prs := append([]PR(nil), s.prs[strings.ToLower(repo)]...)
	broken := map[string]bool{}
	for b := range s.graphqlErrors {
		broken[b] = true
	}
	s.mu.Unlock()
	sort.Slice(prs, func(i, j int) bool { return prs[i].Number < prs[j].Number })
	// By head branch, in number order: a query of 100 aliases on a
	// repository of thousands of PRs would otherwise walk them all per alias.
	byHead := map[string][]PR{}
	for _, p := range prs {
		byHead[p.HeadRef] = append(byHead[p.HeadRef], p)
	}

	aliases := reAlias.FindAllStringSubmatch(req.Query, -1)
	if len(aliases) == 0 {
		fail("queen-app fake: no pullRequests alias")
		return
	}
	created, headOid := reCreated.MatchString(req.Query), reHeadOid.MatchString(req.Query)
	cross, baseID := reCross.MatchString(req.Query), s.repoID(repo)
	data := map[string]any{}
	var errs []any
	for _, a := range aliases {
		alias, args := a[1], a[2]
		hm := reHead.FindStringSubmatch(args)
		if hm == nil {
			fail("queen-app fake: " + alias + " has no headRefName")
			return
		}
		branch, ok := variable(hm[1])
		if !ok {
			fail("queen-app fake: headRefName of " + alias + " must be a declared, provided String! variable")
			return
		}
		first := 0
		if fm := reFirst.FindStringSubmatch(args); fm != nil {
			first, _ = strconv.Atoi(fm[1])
		}
		if first < 1 || first > 100 {
			fail("Requesting " + strconv.Itoa(first) + " records on the `pullRequests` connection exceeds the `first` limit of 100 records.")
			return
		}
		states := map[string]bool{"OPEN": true, "CLOSED": true, "MERGED": true}
		if sm := reStates.FindStringSubmatch(args); sm != nil {
			states = map[string]bool{}
			for _, st := range strings.Split(sm[1], ",") {
				states[strings.TrimSpace(st)] = true
			}
		}
		if broken[branch] {
			data[alias] = nil
			errs = append(errs, map[string]any{
				"type":      "INTERNAL",
				"path":      []string{"repository", alias},
				"locations": []any{map[string]int{"line": 1, "column": 1}},
				"message":   "Something went wrong while executing your query.",
			})
			continue
		}
		nodes := []any{}
		more := false
		for _, p := range byHead[branch] {
			st := "OPEN"
			switch {
			case p.MergedAt != nil:
				st = "MERGED"
			case p.State == "closed":
				st = "CLOSED"
			}
			if !states[st] {
				continue
			}
			if len(nodes) == first {
				more = true
				break
			}
			var head any
			if p.HeadRepo != "" {
				head = map[string]any{"nameWithOwner": p.HeadRepo}
			}
			var merged any
			if p.MergedAt != nil {
				merged = p.MergedAt.UTC().Format(time.RFC3339)
			}
			node := map[string]any{"number": p.Number, "state": st, "mergedAt": merged, "headRepository": head}
			if created {
				node["createdAt"] = p.CreatedAt.UTC().Format(time.RFC3339)
			}
			if headOid {
				node["headRefOid"] = p.HeadSHA
			}
			if cross {
				node["isCrossRepository"] = p.HeadRepo == "" || s.repoID(p.HeadRepo) != baseID
			}
			nodes = append(nodes, node)
		}
		data[alias] = map[string]any{"nodes": nodes, "pageInfo": map[string]any{"hasNextPage": more}}
	}
	s.mu.Lock()
	limit := s.resourceLimit
	s.mu.Unlock()
	if limit > 0 && len(aliases) > limit {
		// GitHub's resource limits: partial data and an error with no path.
		for _, a := range aliases[limit:] {
			data[a[1]] = nil
		}
		errs = append(errs, map[string]any{"type": "RESOURCE_LIMITS_EXCEEDED", "message": ResourceLimitMessage})
	}
	out := map[string]any{"data": map[string]any{"repository": data}}
	if len(errs) > 0 {
		out["errors"] = errs
	}
	writeJSON(w, http.StatusOK, out)
}
