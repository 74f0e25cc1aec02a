package sandbox

import (
	"net/http"
	"strconv"
)

// AppSlug is the sandbox App's slug, as GET /app names it.
const AppSlug = "queen-app-sandbox"

// getApp is GET /app: the App the JWT signs for, in GitHub's
// "integration" shape (every field it requires).
func (s *GitHub) getApp(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"id": s.appID, "slug": AppSlug, "name": "queen-app sandbox",
		"node_id":      "A_" + strconv.FormatInt(s.appID, 10),
		"client_id":    "Iv1.sandbox" + strconv.FormatInt(s.appID, 10),
		"owner":        userShape(map[string]any{"login": "queen-app", "id": 1, "type": "Organization"}),
		"description":  "The sandbox's stand-in for queen-app's GitHub App",
		"external_url": "https://github.com/queen-app/queen-app", "html_url": "https://github.com/apps/" + AppSlug,
		"created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z",
		"permissions": map[string]any{"contents": "write", "pull_requests": "write", "metadata": "read"},
		"events":      []any{"pull_request"},
	})
}
