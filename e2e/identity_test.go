package e2e

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// GitHub spells the repository hive/t27; the Queen wrote Hive/T27. A row
// the Queen writes today, and one an older queen-app stored under the
// Queen's spelling, are both found by the webhook and freed. Before, neither
// was ever freed.
func TestFreeWhateverTheRepositorySpelling(t *testing.T) {
	t.Parallel()
	f := newFreeStack(t, map[string]string{frFlag: "on"})
	// A row of the layout before canonical keys, written before the binaries start.
	ctx := context.Background()
	now := time.Now().UTC()
	old := fmt.Sprintf(`{"repo":"Hive/T27","issue":77,"started":true,"dispatched_at":%q,"finished_at":%q,"review_state":"accept","version":3}`,
		now.Add(-2*time.Hour).Format(time.RFC3339), now.Add(-time.Hour).Format(time.RFC3339))
	for _, err := range []error{
		f.rdb.HSet(ctx, "queen:{Hive/T27}:row:77", "v", 3, "row", old, "w", "old").Err(),
		f.rdb.ZAdd(ctx, "queen:{Hive/T27}:rows", redis.Z{Score: 77, Member: "77"}).Err(),
		f.rdb.ZAdd(ctx, "queen:{Hive/T27}:accepted", redis.Z{Score: 77, Member: "77"}).Err(),
		f.rdb.ZAdd(ctx, "queen:repos", redis.Z{Member: "Hive/T27"}).Err(),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	f.both()

	// Written today with the Queen's spelling.
	body := map[string]any{"started": true, "dispatched_at": now.Add(-2 * time.Hour).Format(time.RFC3339),
		"finished_at": now.Add(-time.Hour).Format(time.RFC3339), "review_state": "accept"}
	if code := apiJSON(t, "PUT", f.apiURL+"/v1/repos/Hive/T27/dispatches/78", apiToken, body, nil); code != http.StatusOK {
		t.Fatalf("PUT Hive/T27#78: %d", code)
	}
	for _, issue := range []int64{77, 78} {
		f.closedPR(issue, int(issue)+500, false)
		f.deliverPR(issue, int(issue)+500, "closed", false, "d-spelling-"+itoa(issue)) // GitHub's spelling
		v := f.waitFreed(issue)
		frCheckFreed(t, v, "d-spelling-"+itoa(issue))
	}
	var v struct {
		Repo    string `json:"repo"`
		Version int64  `json:"version"`
	}
	if code := apiJSON(t, "GET", f.apiURL+"/v1/repos/hive/t27/claims/77", apiToken, nil, &v); code != http.StatusOK || v.Repo != "Hive/T27" || v.Version <= 3 {
		t.Fatalf("migrated row: %d repo %q version %d; want the Queen's spelling above its old version", code, v.Repo, v.Version)
	}
	if n, _ := f.rdb.Exists(ctx, "queen:{Hive/T27}:row:77").Result(); n != 0 {
		t.Fatal("the old key was left behind")
	}
}
