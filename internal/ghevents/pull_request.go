package ghevents

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"time"

	"github.com/queen-app/queen-app/internal/dispatch"
	"github.com/queen-app/queen-app/internal/tasks"
)

// pull_request opened, closed or reopened on a queen-<N> branch of the base
// repository enqueues claim:reevaluate of issue N; the payload is only a
// hint, the worker re-reads the branch's PRs. opened counts too, so a claim
// freed on an older read sees the new PR within seconds, not at the sweep.

// pullRequestEvent is what the receiver reads of a pull_request payload
// (decodePullRequest fills it; the tags say which names it matches).
type pullRequestEvent struct {
	Action       string           `json:"action"`
	Number       int              `json:"number"`
	PullRequest  *pullRequestBody `json:"pull_request"`
	Repository   *repoRef         `json:"repository"`
	Installation *installationRef `json:"installation"`
}

type pullRequestBody struct {
	Number   int              `json:"number"`
	Merged   bool             `json:"merged"`
	MergedAt *json.RawMessage `json:"merged_at"`
	Head     struct {
		Ref  string   `json:"ref"`
		Repo *repoRef `json:"repo"`
	} `json:"head"`
}

type installationRef struct {
	ID int64 `json:"id"`
}

func (h *handler) pullRequest(ctx context.Context, d *delivery, body []byte) outcome {
	var ev pullRequestEvent
	if err := decodePullRequest(body, &ev); err != nil {
		return fail(http.StatusBadRequest, "body is not a pull_request payload")
	}
	d.action = ev.Action
	if !actsOn[ev.Action] {
		return ignored("action not acted on")
	}
	pr, repo := ev.PullRequest, ev.Repository
	if pr == nil || repo == nil || repo.FullName == "" || repo.ID == 0 {
		return fail(http.StatusBadRequest, "pull_request payload lacks pull_request or repository")
	}
	d.attrs = append(d.attrs, slog.String("repo", repo.FullName), slog.Int("pr", pr.Number))
	issue, ok := dispatch.IssueOfBranch(pr.Head.Ref)
	if !ok {
		return ignored("branch is not queen-<issue>")
	}
	d.attrs = append(d.attrs, slog.Int64("issue", issue))
	if pr.Head.Repo == nil {
		return ignored("head repository deleted")
	}
	if pr.Head.Repo.ID != repo.ID {
		return ignored("head repository is a fork")
	}
	if ev.Installation != nil {
		d.attrs = append(d.attrs, slog.Int64("installation_id", ev.Installation.ID))
	}
	instID, suspended, installed, err := h.installs.Lookup(ctx, repo.FullName)
	if err != nil {
		return unavailable(err)
	}
	if !installed {
		// Before the first sync "not installed" means "not known yet":
		// ignoring would lose the delivery, a 503 has GitHub keep it.
		synced, err := h.installs.Synced(ctx)
		switch {
		case err != nil:
			return unavailable(err)
		case !synced:
			return outcome{code: http.StatusServiceUnavailable, status: "installations not synced yet, retry later"}
		}
		return ignored("repository not installed")
	}
	if ev.Installation == nil || ev.Installation.ID != instID {
		d.attrs = append(d.attrs, slog.Int64("registry_installation_id", instID))
	}
	if suspended {
		return ignored("installation suspended")
	}
	p := tasks.ReevaluatePayload{
		Repo: repo.FullName, Issue: issue, Delivery: d.id, Event: d.event, Action: ev.Action,
		InstallationID: instID, PRNumber: pr.Number, ReceivedAt: time.Now().UnixMilli(),
		Merged: pr.Merged || (pr.MergedAt != nil && string(*pr.MergedAt) != "null"),
	}
	if p.PRNumber == 0 {
		p.PRNumber = ev.Number
	}
	task, err := tasks.NewReevaluate(p, h.delay)
	if err != nil {
		return fail(http.StatusBadRequest, "pull_request payload names no valid repository")
	}
	id := tasks.ReevaluateID(p)
	d.attrs = append(d.attrs, slog.String("task_id", id))
	res, err := h.enqueuer.Enqueue(ctx, task)
	if err != nil {
		h.enqueued(tasks.TypeReevaluate, "error")
		return unavailable(err)
	}
	h.enqueued(tasks.TypeReevaluate, res.String())
	if res == tasks.AlreadyEnqueued {
		// The task id carries the delivery id: this delivery was taken.
		o := duplicate("task already enqueued")
		o.taskID = id
		return o
	}
	return outcome{code: http.StatusAccepted, status: "accepted", taskID: id}
}

// actsOn are the pull_request actions that change what a branch's PRs say.
var actsOn = map[string]bool{"opened": true, "closed": true, "reopened": true}
