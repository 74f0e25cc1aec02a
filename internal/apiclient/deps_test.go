package apiclient_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The client speaks the API through apiwire alone: it links no ledger, no
// Redis and no queue (a probe binary of it is 5.5 MB, 9.6 MB when it
// imported the server package for its types).
func TestClientLinksNoServerSide(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, banned := range []string{"github.com/redis/go-redis", "github.com/hibiken/asynq",
			"github.com/queen-app/queen-app/internal/ledger", "github.com/queen-app/queen-app/internal/api"} {
			if dep == banned || strings.HasPrefix(dep, banned+"/") {
				t.Errorf("apiclient links %s", dep)
			}
		}
	}
}
