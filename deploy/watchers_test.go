package deploy

import (
	"strings"
	"testing"

	"github.com/queen-app/queen-app/internal/config"
)

// api.maxWatchers is the webhook's QUEEN_API_MAX_WATCHERS: the binary's
// default when left alone, the value when set, never the worker's (it
// serves no watch), and a cap under 1 refused at render.
func TestMaxWatchersReachesTheWebhook(t *testing.T) {
	base := inlineValues()
	for name, c := range map[string]struct {
		vals map[string]any
		want int64
	}{
		"default": {base, 256},
		"set":     {with(base, "api.maxWatchers", 12), 12},
	} {
		o := render(t, c.vals)
		store := o.store(readmeSecrets(t))
		wh := o.env(t, o.deployment(t, "webhook"), store)
		cfg, err := config.Load(config.Webhook, wh.getenv)
		if err != nil {
			t.Fatalf("%s: webhook would not start: %v", name, err)
		}
		if cfg.APIMaxWatchers != c.want {
			t.Errorf("%s: webhook's QUEEN_API_MAX_WATCHERS = %d, want %d", name, cfg.APIMaxWatchers, c.want)
		}
		if wk := o.env(t, o.deployment(t, "worker"), store); wk.getenv("QUEEN_API_MAX_WATCHERS") != "" {
			t.Errorf("%s: the worker gets QUEEN_API_MAX_WATCHERS", name)
		}
	}
	if _, err := renderErr(t, with(base, "api.maxWatchers", 0)); err == nil || !strings.Contains(err.Error(), "at '/api/maxWatchers") {
		t.Errorf("api.maxWatchers 0: %v, want the schema to refuse it", err)
	}
}
