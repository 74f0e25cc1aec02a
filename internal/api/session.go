package api

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Sign-in for a browser: a token given once at /ui/sign-in becomes a
// session cookie. The cookie is HttpOnly, SameSite=Strict, Secure under
// TLS, and ends at SessionTTL or at sign-out. It is signed with a key
// derived from the tokens, so every replica reads it and a rotated token
// ends every session; sign-out also refuses it on the replica that served
// the sign-out until it would have expired.
const (
	SessionCookie = "queen_session"
	SessionTTL    = 12 * time.Hour
)

// role is what a credential may do.
type role int

const (
	roleNone role = iota
	// roleViewer reads: the claims page, every GET /v1/*, the queue UI
	// read-only. A session of either token is a viewer on /v1.
	roleViewer
	// roleOperator is the API token: every route.
	roleOperator
)

func (r role) word() string {
	if r == roleOperator {
		return "operator"
	}
	return "viewer"
}

// tokens holds the sums of the tokens the API accepts.
type tokens struct {
	api, viewer [sha256.Size]byte
	hasViewer   bool
}

// roleOf compares sha256 sums of tok and each token in constant time, so
// neither the content nor the length leaks.
func (t *tokens) roleOf(tok string) role {
	sum := sha256.Sum256([]byte(tok))
	api := subtle.ConstantTimeCompare(sum[:], t.api[:])
	viewer := subtle.ConstantTimeCompare(sum[:], t.viewer[:])
	switch {
	case api == 1:
		return roleOperator
	case viewer == 1 && t.hasViewer:
		return roleViewer
	}
	return roleNone
}

// sessions signs and reads session cookies.
type sessions struct {
	key     []byte
	mu      sync.Mutex
	revoked map[string]time.Time // session id: its expiry
}

func newSessions(apiToken, viewerToken string) *sessions {
	k := sha256.Sum256([]byte("queen-app ui session\x00" + apiToken + "\x00" + viewerToken))
	return &sessions{key: k[:], revoked: map[string]time.Time{}}
}

func (ss *sessions) sign(payload string) string {
	m := hmac.New(sha256.New, ss.key)
	m.Write([]byte(payload))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// cookie is a new session of ro, expiring SessionTTL after now.
func (ss *sessions) cookie(ro role, now time.Time, secure bool) *http.Cookie {
	id := make([]byte, 16)
	rand.Read(id)
	exp := now.Add(SessionTTL)
	payload := ro.word() + "." + strconv.FormatInt(exp.Unix(), 10) + "." + hex.EncodeToString(id)
	return &http.Cookie{Name: SessionCookie, Value: payload + "." + ss.sign(payload), Path: "/",
		Expires: exp, MaxAge: int(SessionTTL / time.Second), HttpOnly: true, Secure: secure, SameSite: http.SameSiteStrictMode}
}

// ended is the cookie that removes a session from the browser.
func ended(secure bool) *http.Cookie {
	return &http.Cookie{Name: SessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, Secure: secure,
		SameSite: http.SameSiteStrictMode}
}

// read is r's session: its role and id, roleNone without a valid one.
func (ss *sessions) read(r *http.Request, now time.Time) (role, string, time.Time) {
	c, err := r.Cookie(SessionCookie)
	if err != nil {
		return roleNone, "", time.Time{}
	}
	payload, sig, ok := cutLast(c.Value, ".")
	if !ok || !hmac.Equal([]byte(sig), []byte(ss.sign(payload))) {
		return roleNone, "", time.Time{}
	}
	parts := strings.Split(payload, ".")
	if len(parts) != 3 {
		return roleNone, "", time.Time{}
	}
	secs, err := strconv.ParseInt(parts[1], 10, 64)
	exp := time.Unix(secs, 0)
	if err != nil || !now.Before(exp) {
		return roleNone, "", time.Time{}
	}
	ss.mu.Lock()
	_, out := ss.revoked[parts[2]]
	ss.mu.Unlock()
	if out {
		return roleNone, "", time.Time{}
	}
	ro := roleViewer
	if parts[0] == roleOperator.word() {
		ro = roleOperator
	}
	return ro, parts[2], exp
}

// revoke refuses session id until exp, and forgets the revocations past
// their expiry.
func (ss *sessions) revoke(id string, exp, now time.Time) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for k, e := range ss.revoked {
		if !now.Before(e) {
			delete(ss.revoked, k)
		}
	}
	ss.revoked[id] = exp
}

func cutLast(s, sep string) (before, after string, ok bool) {
	if i := strings.LastIndex(s, sep); i >= 0 {
		return s[:i], s[i+len(sep):], true
	}
	return s, "", false
}
