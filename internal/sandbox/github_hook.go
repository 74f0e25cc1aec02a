package sandbox

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// HookID is the id of the App's webhook, sent as X-GitHub-Hook-ID.
const HookID = 424242

// hook is the App's webhook: where GitHub delivers events and the secret
// it signs them with.
type hook struct {
	url    string
	secret string
	client *http.Client
}

// SetHook points the App's webhook at url, signed with secret.
func (s *GitHub) SetHook(url, secret string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// GitHub gives a delivery 10 seconds.
	s.hook = hook{url: url, secret: secret, client: &http.Client{Timeout: 10 * time.Second}}
}

// ClosePR closes PR number of repo, merged or not, and delivers the
// pull_request "closed" event to the hook, as GitHub does when someone
// closes it.
func (s *GitHub) ClosePR(repo string, number int, merged bool) (Delivery, error) {
	return s.changePR(repo, number, "closed", func(p *PR) {
		p.State = "closed"
		if merged {
			now := time.Now().UTC().Truncate(time.Second)
			p.MergedAt = &now
		}
	})
}

// ReopenPR reopens a closed, unmerged PR and delivers "reopened".
func (s *GitHub) ReopenPR(repo string, number int) (Delivery, error) {
	return s.changePR(repo, number, "reopened", func(p *PR) { p.State = "open" })
}

func (s *GitHub) changePR(repo string, number int, action string, change func(*PR)) (Delivery, error) {
	s.mu.Lock()
	k := strings.ToLower(repo)
	var pr *PR
	for i := range s.prs[k] {
		if s.prs[k][i].Number == number {
			pr = &s.prs[k][i]
		}
	}
	if pr == nil {
		s.mu.Unlock()
		return Delivery{}, fmt.Errorf("sandbox: %s has no PR #%d", repo, number)
	}
	change(pr)
	p := *pr
	inst := s.installationOf(repo)
	h := s.hook
	s.mu.Unlock()
	if inst == nil {
		return Delivery{}, fmt.Errorf("sandbox: the App is not installed on %s", repo)
	}
	event := prFullShape(s.prJSON(repo, p))
	event["merged"] = p.MergedAt != nil // event payloads carry it, list items do not
	return s.deliver(h, "pull_request", action, inst.id, map[string]any{
		"number":       p.Number,
		"pull_request": event,
		"repository":   s.repoJSON(repo),
	})
}

// installationOf is the installation that reaches repo; s.mu is held.
func (s *GitHub) installationOf(repo string) *installation {
	for _, in := range s.installations {
		for _, name := range in.repos {
			if strings.EqualFold(name, repo) {
				return in
			}
		}
	}
	return nil
}

// deliver posts one signed delivery to the hook, the event's fields with
// what every delivery to an App carries (action, installation, sender),
// and records the attempt with the status the receiver answered (0 when it
// could not be reached), as GitHub's delivery log does.
func (s *GitHub) deliver(h hook, event, action string, inst int64, fields map[string]any) (Delivery, error) {
	if h.url == "" {
		return Delivery{}, fmt.Errorf("sandbox: no webhook set (SetHook)")
	}
	payload := map[string]any{
		"action":       action,
		"installation": map[string]any{"id": inst, "node_id": fmt.Sprintf("MDIz%d", inst)},
		"sender":       userShape(map[string]any{"login": "octocat", "type": "User"}),
	}
	maps.Copy(payload, fields)
	body, err := json.Marshal(payload)
	if err != nil {
		return Delivery{}, err
	}
	d := Delivery{GUID: newGUID(), DeliveredAt: time.Now().UTC(), Event: event, Action: action, InstallationID: inst}
	req, err := http.NewRequest(http.MethodPost, h.url, bytes.NewReader(body))
	if err != nil {
		return d, err
	}
	mac := hmac.New(sha256.New, []byte(h.secret))
	mac.Write(body)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "GitHub-Hookshot/sandbox")
	req.Header.Set("X-GitHub-Event", event)
	req.Header.Set("X-GitHub-Delivery", d.GUID)
	// An App's hook: its target is the App, by id.
	req.Header.Set("X-GitHub-Hook-ID", strconv.FormatInt(HookID, 10))
	req.Header.Set("X-GitHub-Hook-Installation-Target-Type", "integration")
	req.Header.Set("X-GitHub-Hook-Installation-Target-ID", strconv.FormatInt(s.appID, 10))
	req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	resp, err := h.client.Do(req)
	if err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		d.StatusCode = resp.StatusCode
	}
	d.ID = s.AddDelivery(d)
	if err != nil {
		return d, fmt.Errorf("sandbox: deliver %s %s: %w", event, d.GUID, err)
	}
	return d, nil
}

// newGUID is a random delivery id shaped like GitHub's (a UUID).
func newGUID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	h := hex.EncodeToString(b)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
