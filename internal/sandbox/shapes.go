package sandbox

import (
	"fmt"
	"strings"
)

// GitHub's published description (testdata/github-contract) requires many
// fields queen-app never reads; these fill them in, so every answer and
// webhook has GitHub's shape and the contract tests hold the sandbox to
// it. A field the sandbox sets itself is kept.

// fill sets every key of defaults m lacks, and returns m.
func fill(m map[string]any, defaults map[string]any) map[string]any {
	for k, v := range defaults {
		if _, ok := m[k]; !ok {
			m[k] = v
		}
	}
	return m
}

// userShape completes a user or organization ("simple-user") named by its
// login.
func userShape(m map[string]any) map[string]any {
	login, _ := m["login"].(string)
	var id int64
	for _, c := range strings.ToLower(login) {
		id = id*31 + int64(c)
	}
	id &= 1<<30 - 1
	api := "https://api.github.com/users/" + login
	typ := "User"
	if t, ok := m["type"].(string); ok {
		typ = t
	}
	return fill(m, map[string]any{
		"id": id, "node_id": fmt.Sprintf("MDQ6VXNlcj%d", id), "type": typ, "site_admin": false,
		"avatar_url": "https://avatars.githubusercontent.com/u/" + fmt.Sprint(id), "gravatar_id": "",
		"url": api, "html_url": "https://github.com/" + login,
		"followers_url": api + "/followers", "following_url": api + "/following{/other_user}",
		"gists_url": api + "/gists{/gist_id}", "starred_url": api + "/starred{/owner}{/repo}",
		"subscriptions_url": api + "/subscriptions", "organizations_url": api + "/orgs",
		"repos_url": api + "/repos", "events_url": api + "/events{/privacy}",
		"received_events_url": api + "/received_events", "user_view_type": "public",
	})
}

// repoShape completes a repository ("repository", and the webhooks' form).
func repoShape(m map[string]any) map[string]any {
	if o, ok := m["owner"].(map[string]any); ok {
		userShape(o)
	}
	full, _ := m["full_name"].(string)
	api := "https://api.github.com/repos/" + full
	if u, ok := m["url"].(string); ok {
		api = u
	}
	html := "https://github.com/" + full
	d := map[string]any{
		"description": nil, "fork": false, "homepage": nil, "language": nil, "mirror_url": nil, "license": nil,
		"forks": 0, "forks_count": 0, "open_issues": 0, "open_issues_count": 0, "size": 0,
		"stargazers_count": 0, "watchers": 0, "watchers_count": 0,
		"has_downloads": true, "has_issues": true, "has_projects": true, "has_wiki": true, "has_pages": false,
		"has_discussions": false, "disabled": false, "is_template": false, "allow_forking": true,
		"web_commit_signoff_required": false, "topics": []any{}, "visibility": "public",
		"created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z", "pushed_at": "2026-01-01T00:00:00Z",
		"clone_url": html + ".git", "git_url": "git://github.com/" + full + ".git",
		"ssh_url": "git@github.com:" + full + ".git", "svn_url": html,
	}
	for k, v := range map[string]string{
		"archive_url": "/{archive_format}{/ref}", "assignees_url": "/assignees{/user}", "blobs_url": "/git/blobs{/sha}",
		"branches_url": "/branches{/branch}", "collaborators_url": "/collaborators{/collaborator}",
		"comments_url": "/comments{/number}", "commits_url": "/commits{/sha}", "compare_url": "/compare/{base}...{head}",
		"contents_url": "/contents/{+path}", "contributors_url": "/contributors", "deployments_url": "/deployments",
		"downloads_url": "/downloads", "events_url": "/events", "forks_url": "/forks", "git_commits_url": "/git/commits{/sha}",
		"git_refs_url": "/git/refs{/sha}", "git_tags_url": "/git/tags{/sha}", "hooks_url": "/hooks",
		"issue_comment_url": "/issues/comments{/number}", "issue_events_url": "/issues/events{/number}",
		"issues_url": "/issues{/number}", "keys_url": "/keys{/key_id}", "labels_url": "/labels{/name}",
		"languages_url": "/languages", "merges_url": "/merges", "milestones_url": "/milestones{/number}",
		"notifications_url": "/notifications{?since,all,participating}", "pulls_url": "/pulls{/number}",
		"releases_url": "/releases{/id}", "stargazers_url": "/stargazers", "statuses_url": "/statuses/{sha}",
		"subscribers_url": "/subscribers", "subscription_url": "/subscription", "tags_url": "/tags",
		"teams_url": "/teams", "trees_url": "/git/trees{/sha}",
	} {
		d[k] = api + v
	}
	return fill(m, d)
}

// fullRepoShape completes one repository's own answer ("full-repository"):
// repoShape and the counts lists leave out.
func fullRepoShape(m map[string]any) map[string]any {
	return fill(repoShape(m), map[string]any{"network_count": 0, "subscribers_count": 0})
}

// prShape completes a pull request ("pull-request-simple", "pull-request"
// and the webhooks' form).
func prShape(m map[string]any) map[string]any {
	if u, ok := m["user"].(map[string]any); ok {
		userShape(u)
	}
	for _, side := range []string{"head", "base"} {
		if b, ok := m[side].(map[string]any); ok {
			if u, ok := b["user"].(map[string]any); ok {
				userShape(u)
			}
			if r, ok := b["repo"].(map[string]any); ok {
				repoShape(r)
			}
		}
	}
	api, _ := m["url"].(string)
	html, _ := m["html_url"].(string)
	issue := strings.Replace(api, "/pulls/", "/issues/", 1)
	base := ""
	if b, ok := m["base"].(map[string]any); ok {
		if r, ok := b["repo"].(map[string]any); ok {
			base, _ = r["url"].(string)
		}
	}
	sha := ""
	if h, ok := m["head"].(map[string]any); ok {
		sha, _ = h["sha"].(string)
	}
	link := func(u string) map[string]any { return map[string]any{"href": u} }
	return fill(m, map[string]any{
		"assignee": nil, "assignees": []any{}, "labels": []any{}, "milestone": nil,
		"requested_reviewers": []any{}, "requested_teams": []any{}, "auto_merge": nil,
		"active_lock_reason": nil, "merge_commit_sha": nil,
		"diff_url": html + ".diff", "patch_url": html + ".patch", "issue_url": issue,
		"commits_url": api + "/commits", "review_comments_url": api + "/comments",
		"review_comment_url": strings.TrimSuffix(api, "/"+fmt.Sprint(m["number"])) + "/comments{/number}",
		"comments_url":       issue + "/comments", "statuses_url": base + "/statuses/" + sha,
		"_links": map[string]any{
			"self": link(api), "html": link(html), "issue": link(issue), "comments": link(issue + "/comments"),
			"review_comments": link(api + "/comments"), "commits": link(api + "/commits"),
			"review_comment": link(strings.TrimSuffix(api, "/"+fmt.Sprint(m["number"])) + "/comments{/number}"),
			"statuses":       link(base + "/statuses/" + sha),
		},
	})
}

// prFullShape completes a pull request as one PR's answer and a webhook
// carry it ("pull-request"): prShape and the counts list items leave out.
func prFullShape(m map[string]any) map[string]any {
	return fill(prShape(m), map[string]any{
		"merged": m["merged_at"] != nil, "merged_by": nil, "mergeable": nil, "rebaseable": nil,
		"mergeable_state": "unknown", "maintainer_can_modify": false,
		"comments": 0, "review_comments": 0, "commits": 1, "additions": 0, "deletions": 0, "changed_files": 0,
	})
}

// issueShape completes an issue ("issue").
func issueShape(m map[string]any) map[string]any {
	if u, ok := m["user"].(map[string]any); ok {
		userShape(u)
	}
	api, _ := m["url"].(string)
	repoURL, _, _ := strings.Cut(api, "/issues/")
	return fill(m, map[string]any{
		"node_id": fmt.Sprintf("I_%v", m["id"]), "assignee": nil, "assignees": []any{}, "milestone": nil,
		"closed_at": nil, "comments": 0, "locked": false, "author_association": "MEMBER",
		"comments_url": api + "/comments", "events_url": api + "/events", "labels_url": api + "/labels{/name}",
		"repository_url": repoURL, "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z",
	})
}

// accountShape completes an installation's account. GitHub's description
// has it allOf a user and an enterprise, so it carries both one's fields.
func accountShape(m map[string]any) map[string]any {
	login, _ := m["login"].(string)
	return fill(userShape(m), map[string]any{
		"name": login, "slug": strings.ToLower(login),
		"created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z",
	})
}

// installationShape completes an installation ("installation").
func installationShape(m map[string]any) map[string]any {
	return fill(m, map[string]any{
		"app_slug": AppSlug, "single_file_name": nil, "has_multiple_single_files": false, "single_file_paths": []any{},
		"html_url": fmt.Sprintf("https://github.com/organizations/%v/settings/installations/%v", m["account"].(map[string]any)["login"], m["id"]),
	})
}
