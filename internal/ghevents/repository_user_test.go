package ghevents

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"testing"
)

// A transfer from a user account names the old owner under
// changes.owner.from.user (the sandbox transfers from organizations): the
// rows written under the user's name are found from the new one.
func TestRepositoryTransferredFromAUser(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, false)
	body := []byte(`{"action":"transferred","changes":{"owner":{"from":{"user":{"login":"Codertocat","id":21031067}}}},` +
		`"repository":{"id":186853002,"full_name":"hive/Hello-World"},"installation":{"id":` + strconv.Itoa(installID) + `}}`)
	if rec := f.post("repository", "r-user", body, nil); rec.Code != http.StatusAccepted {
		t.Fatalf("transferred from a user: %d %s, want 202", rec.Code, rec.Body)
	}
	olds, err := f.reg.OldNames(ctx, "hive/hello-world")
	if want := []string{"codertocat/hello-world"}; err != nil || !slices.Equal(olds, want) {
		t.Fatalf("old names after the transfer from a user: %q %v, want %q", olds, err, want)
	}
	if id, _, ok, err := f.reg.Lookup(ctx, "hive/Hello-World"); err != nil || !ok || id != installID {
		t.Fatalf("hive/Hello-World: %d %v %v, want installation %d", id, ok, err, installID)
	}
}
