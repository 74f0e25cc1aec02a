package githubapp

import (
	"bytes"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// answers are GraphQL answers to the batch query in GitHub's shapes
// (testdata/graphql), with the number of branches each was asked for.
var answers = []struct {
	file     string
	branches int
}{
	{"answer.json", 4},           // read branches, a fork PR and a deleted head dropped
	{"alias-error.json", 3},      // b1 errored: only queen-2 unread
	{"not-found.json", 2},        // the repository errored: all unread
	{"rate-limited.json", 2},     // an error on no path: all unread
	{"next-page.json", 2},        // queen-1 has more than 100 PRs
	{"cut-short.json", 1},        // the connection dropped mid-answer
	{"no-attempt-facts.json", 2}, // queen-1's PR has no createdAt: only queen-1 unread
}

const (
	batchRepo = "hive/t27"
	batchOp   = "POST graphql " + batchRepo
)

var batchSent = time.Date(2026, 10, 11, 12, 55, 0, 0, time.UTC)

func chunkOf(n int) []string {
	chunk := make([]string, n)
	for i := range chunk {
		chunk[i] = "queen-" + strconv.Itoa(i+1)
	}
	return chunk
}

func readAnswer(tb testing.TB, file string) []byte {
	tb.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "graphql", file))
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

// The fixtures reach each outcome the fuzz target checks, so its properties
// are not vacuous.
func TestReadBatchFixtures(t *testing.T) {
	read := func(file string, n int) (map[string]BatchResult, []string) {
		out := map[string]BatchResult{}
		paged := readBatch(batchOp, batchRepo, chunkOf(n), bytes.NewReader(readAnswer(t, file)), nil, batchSent, out)
		return out, paged
	}
	counts := func(r BatchResult) [3]uint32 {
		return [3]uint32{r.State.Open, r.State.Merged, r.State.ClosedUnmerged}
	}

	out, paged := read("answer.json", 4)
	for b, want := range map[string][3]uint32{"queen-1": {1, 0, 0}, "queen-2": {0, 1, 1}, "queen-3": {0, 0, 1}, "queen-4": {}} {
		if r := out[b]; r.Err != nil || !r.State.Read || counts(r) != want {
			t.Errorf("answer.json %s = %+v, want open/merged/closed %v", b, r, want)
		}
	}
	if paged != nil {
		t.Errorf("answer.json paged %q", paged)
	}

	out, _ = read("alias-error.json", 3)
	var ge *GraphQLError
	if r := out["queen-2"]; !errors.As(r.Err, &ge) || r.State.Read {
		t.Errorf("alias-error.json queen-2 = %+v, want its GraphQL error", r)
	}
	for _, b := range []string{"queen-1", "queen-3"} {
		if r := out[b]; r.Err != nil || !r.State.Read {
			t.Errorf("alias-error.json %s = %+v, want read", b, r)
		}
	}

	for file, kind := range map[string]Kind{"not-found.json": Permanent, "rate-limited.json": RateLimited, "cut-short.json": Retry} {
		out, _ = read(file, 2)
		for b, r := range out {
			if Classify(r.Err) != kind {
				t.Errorf("%s %s = %+v, want %v", file, b, r, kind)
			}
		}
	}

	out, paged = read("next-page.json", 2)
	if _, ok := out["queen-1"]; ok || !slices.Equal(paged, []string{"queen-1"}) {
		t.Errorf("next-page.json: paged %q, result %+v; want queen-1 left to page", paged, out["queen-1"])
	}
	if r := out["queen-2"]; r.Err != nil || counts(r) != [3]uint32{1, 0, 0} {
		t.Errorf("next-page.json queen-2 = %+v", r)
	}

	// A PR that cannot be told to an attempt (no createdAt) leaves its
	// branch unread; a fork's PR on the other branch is dropped unasked.
	out, _ = read("no-attempt-facts.json", 2)
	if r := out["queen-1"]; Classify(r.Err) != BadAnswer || r.State.Read {
		t.Errorf("no-attempt-facts.json queen-1 = %+v, want an answer that cannot be used", r)
	}
	want := []PR{{Number: 52, State: "open", HeadRepo: "hive/t27", HeadSHA: "0000000000000000000000000000000000000034",
		CreatedAt: time.Date(2026, 10, 11, 9, 0, 0, 0, time.UTC)}}
	if r := out["queen-2"]; r.Err != nil || counts(r) != [3]uint32{1, 0, 0} || !slices.Equal(r.PRs, want) || len(r.State.Listed) != 1 {
		t.Errorf("no-attempt-facts.json queen-2 = %+v, want %+v", r, want)
	}
}

// FuzzBatchAnswer: no answer panics readBatch; every branch is either read
// or unread with an error, or left to page; a read's counts add up to its
// PR numbers; an error confined to one alias leaves only that branch unread,
// and any other error leaves the whole chunk unread.
func FuzzBatchAnswer(f *testing.F) {
	for _, a := range answers {
		f.Add(readAnswer(f, a.file), uint8(a.branches))
	}
	f.Fuzz(func(t *testing.T, body []byte, n uint8) {
		// Up to 16 branches: two-digit aliases, at a sixth of the cost of 100.
		chunk := chunkOf(1 + int(n)%16)
		out := map[string]BatchResult{}
		paged := readBatch(batchOp, batchRepo, chunk, bytes.NewReader(body), http.Header{"X-Ratelimit-Reset": {"1760187300"}}, batchSent, out)

		if len(out)+len(paged) != len(chunk) {
			t.Fatalf("%d results and %d paged for %d branches", len(out), len(paged), len(chunk))
		}
		var whole error // the one error of a spoiled answer
		for i, b := range chunk {
			r, ok := out[b]
			if !ok {
				if !slices.Contains(paged, b) {
					t.Fatalf("%s: neither read, unread nor paged", b)
				}
				continue
			}
			if slices.Contains(paged, b) {
				t.Fatalf("%s: paged and given %+v", b, r)
			}
			if r.Err == nil {
				st := r.State
				if !st.Read || st.ReadAt == nil || !st.ReadAt.Equal(batchSent) {
					t.Fatalf("%s: no error yet not read at the request's time: %+v", b, st)
				}
				if int(st.Open)+int(st.Merged)+int(st.ClosedUnmerged) != len(st.Numbers) || !slices.IsSorted(st.Numbers) {
					t.Fatalf("%s: open %d + merged %d + closed %d against numbers %v", b, st.Open, st.Merged, st.ClosedUnmerged, st.Numbers)
				}
				for _, p := range st.Listed {
					if p.HeadSHA == "" || p.CreatedAt.IsZero() {
						t.Fatalf("%s: read %+v lists a PR no attempt can be told by", b, st)
					}
				}
				continue
			}
			if r.State.Read || Classify(r.Err) == None {
				t.Fatalf("%s: error %v with state %+v", b, r.Err, r.State)
			}
			var ge *GraphQLError
			switch {
			case errors.As(r.Err, &ge) && len(ge.Path) >= 2 && ge.Path[0] == "repository" && ge.Path[1] == "b"+strconv.Itoa(i):
				// confined to this branch's alias
			case whole == nil && errors.Is(r.Err, ErrBadAnswer) && r.Err.Error() == "githubapp: "+batchOp+" "+b+": "+ErrBadAnswer.Error()+": answer has no data for the branch":
				// this branch's part of the data is missing
			case whole == nil && errors.Is(r.Err, errNoAttemptFacts) && strings.HasPrefix(r.Err.Error(), "githubapp: "+batchOp+" "+b+": "):
				// one of this branch's PRs has no head commit or creation time
			case i == 0:
				whole = r.Err
			case r.Err != whole:
				t.Fatalf("%s: error %q neither its own nor the whole answer's", b, r.Err)
			}
		}
		if whole != nil {
			for _, b := range chunk {
				if out[b].Err != whole {
					t.Fatalf("the answer is spoiled (%v), yet %s has %+v", whole, b, out[b])
				}
			}
		}
	})
}
