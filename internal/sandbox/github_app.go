package sandbox

import (
	"net/http"
	"strconv"
)

// AppSlug is the sandbox App's slug, as GET /app names it.
const AppSlug = "queen-app-sandbox"

// getApp is GET /app: the App the JWT signs for.
func (s *GitHub) getApp(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"id": s.appID, "slug": AppSlug, "name": "queen-app sandbox",
		"node_id": "A_" + strconv.FormatInt(s.appID, 10),
	})
}
