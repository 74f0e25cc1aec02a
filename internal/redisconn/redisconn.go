// Package redisconn reads QUEEN_REDIS_URL and builds the one go-redis client
// a process uses for everything it keeps in Redis: the ledger, the installs
// registry, the scheduler lease and asynq (client, server and inspector are
// built over the same client), so they can never point at different servers.
//
// Three forms:
//
//	redis://[user:password@]host[:6379][/DB]           one node (rediss:// for TLS)
//	redis+sentinel://[user:password@]h1:26379,h2:26379/MASTER[/DB]
//	                                                   a primary found through Sentinel
//	redis+cluster://[user:password@]h1:6379,h2:6379    a Redis Cluster
//
// rediss+sentinel:// and rediss+cluster:// speak TLS to every server. The
// user and password are the data nodes'; QUEEN_REDIS_PASSWORD may carry the
// password instead, and QUEEN_REDIS_SENTINEL_PASSWORD is the sentinels' own.
package redisconn

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// The variables this package reads, named in its errors.
const (
	URLVar              = "QUEEN_REDIS_URL"
	PasswordVar         = "QUEEN_REDIS_PASSWORD"
	SentinelPasswordVar = "QUEEN_REDIS_SENTINEL_PASSWORD"
)

// Mode is the kind of Redis deployment a URL names.
type Mode int

const (
	Single   Mode = iota + 1 // redis://, rediss://
	Sentinel                 // redis+sentinel://, rediss+sentinel://
	Cluster                  // redis+cluster://, rediss+cluster://
)

func (m Mode) String() string {
	switch m {
	case Single:
		return "single"
	case Sentinel:
		return "sentinel"
	case Cluster:
		return "cluster"
	}
	return "unknown"
}

// Default ports of a host given without one.
const (
	DefaultPort         = 6379
	DefaultSentinelPort = 26379
)

// Spec is a parsed QUEEN_REDIS_URL with its passwords.
type Spec struct {
	Mode Mode
	TLS  bool
	// Addrs are host:port: the one node, the sentinels, or the cluster's seed nodes.
	Addrs      []string
	MasterName string // Sentinel: the name the sentinels monitor
	DB         int    // Single and Sentinel; a Cluster has only 0

	Username         string // the data nodes' ACL user; empty is "default"
	Password         string // the data nodes' password; never logged
	SentinelPassword string // the sentinels' password; never logged
}

// String describes the deployment for logs, without credentials.
func (s *Spec) String() string {
	var b strings.Builder
	b.WriteString(s.Mode.String())
	if s.Mode == Sentinel {
		b.WriteString(" " + s.MasterName + " via")
	}
	b.WriteString(" " + strings.Join(s.Addrs, ","))
	if s.DB != 0 {
		fmt.Fprintf(&b, " db %d", s.DB)
	}
	if s.TLS {
		b.WriteString(" tls")
	}
	return b.String()
}

// Error is a bad Redis setting: the variable and what is wrong, never its value.
type Error struct {
	Var, Problem string
}

func (e *Error) Error() string { return e.Var + ": " + e.Problem }

func bad(format string, a ...any) error {
	return &Error{Var: URLVar, Problem: fmt.Sprintf(format, a...)}
}

var schemes = map[string]struct {
	mode Mode
	tls  bool
}{
	"redis":           {Single, false},
	"rediss":          {Single, true},
	"redis+sentinel":  {Sentinel, false},
	"rediss+sentinel": {Sentinel, true},
	"redis+cluster":   {Cluster, false},
	"rediss+cluster":  {Cluster, true},
}

// Parse reads rawURL (QUEEN_REDIS_URL) with the values of
// QUEEN_REDIS_PASSWORD and QUEEN_REDIS_SENTINEL_PASSWORD. An error is an
// *Error naming the variable; no error text carries a credential.
func Parse(rawURL, password, sentinelPassword string) (*Spec, error) {
	if rawURL == "" {
		return nil, bad("is required")
	}
	scheme, rest, ok := strings.Cut(rawURL, "://")
	form, known := schemes[strings.ToLower(scheme)]
	if !ok || !known {
		return nil, bad("must be a redis://, rediss://, redis+sentinel://, rediss+sentinel://, redis+cluster:// or rediss+cluster:// URL")
	}
	s := &Spec{Mode: form.mode, TLS: form.tls}
	// The authority ends at the first '/', '?' or '#' after the last '@':
	// a password with those characters must be percent-encoded.
	authority, path := rest, ""
	userinfo := ""
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		if i := strings.IndexAny(rest[:at], "/?#"); i < 0 {
			userinfo, authority = rest[:at], rest[at+1:]
		}
	}
	if i := strings.IndexAny(authority, "/?#"); i >= 0 {
		authority, path = authority[:i], authority[i:]
	}
	if strings.ContainsAny(path, "?#") {
		return nil, bad("takes no query parameters or fragment")
	}
	if err := s.credentials(userinfo, password); err != nil {
		return nil, err
	}
	if err := s.hosts(authority); err != nil {
		return nil, err
	}
	if err := s.path(path); err != nil {
		return nil, err
	}
	if sentinelPassword != "" && s.Mode != Sentinel {
		return nil, &Error{Var: SentinelPasswordVar, Problem: "is set but " + URLVar + " is not a redis+sentinel:// or rediss+sentinel:// URL"}
	}
	s.SentinelPassword = sentinelPassword
	return s, nil
}

func (s *Spec) credentials(userinfo, password string) error {
	if userinfo == "" {
		s.Password = password
		return nil
	}
	user, pass, hasPass := strings.Cut(userinfo, ":")
	u, err1 := url.PathUnescape(user)
	p, err2 := url.PathUnescape(pass)
	if err1 != nil || err2 != nil {
		return bad("user or password is not percent-encoded correctly")
	}
	switch {
	case hasPass && p != "" && password != "":
		return &Error{Var: PasswordVar, Problem: "is set but " + URLVar + " carries a password too: give it in one place"}
	case hasPass && p != "":
		s.Password = p
	case password != "":
		s.Password = password
	case u != "":
		// redis://secret@host is a password in the user's place; refuse it
		// rather than send a secret as a user name.
		return bad("names a user without a password: use user:password@ or %s", PasswordVar)
	}
	s.Username = u
	return nil
}

func (s *Spec) hosts(authority string) error {
	if authority == "" {
		return bad("names no host")
	}
	parts := strings.Split(authority, ",")
	if s.Mode == Single && len(parts) > 1 {
		return bad("names %d hosts: use redis+sentinel:// or redis+cluster:// for several", len(parts))
	}
	port := DefaultPort
	if s.Mode == Sentinel {
		port = DefaultSentinelPort
	}
	seen := map[string]bool{}
	for i, h := range parts {
		addr, err := hostPort(h, port)
		if err != nil {
			return bad("host %d of %d: %s", i+1, len(parts), err)
		}
		if seen[addr] {
			return bad("host %d of %d: %s is named twice", i+1, len(parts), addr)
		}
		seen[addr] = true
		s.Addrs = append(s.Addrs, addr)
	}
	return nil
}

func hostPort(h string, def int) (string, error) {
	if h == "" {
		return "", fmt.Errorf("is empty")
	}
	host, port := h, strconv.Itoa(def)
	if strings.HasPrefix(h, "[") || strings.Contains(h, ":") {
		var err error
		host, port, err = net.SplitHostPort(h)
		if err != nil {
			return "", fmt.Errorf("must be host:port (an IPv6 address in brackets)")
		}
	}
	if host == "" || strings.ContainsAny(host, " /\\@") {
		return "", fmt.Errorf("must be host:port with a host name or address")
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("port must be a number from 1 to 65535")
	}
	return net.JoinHostPort(host, strconv.Itoa(n)), nil
}

func (s *Spec) path(p string) error {
	segs := strings.Split(strings.Trim(p, "/"), "/")
	if len(segs) == 1 && segs[0] == "" {
		segs = nil
	}
	switch s.Mode {
	case Cluster:
		if len(segs) > 0 {
			return bad("a Redis Cluster has only database 0: give no /DB")
		}
	case Sentinel:
		if len(segs) == 0 {
			return bad("names no master: redis+sentinel://host:26379,.../MASTER_NAME[/DB]")
		}
		if len(segs) > 2 {
			return bad("path must be /MASTER_NAME or /MASTER_NAME/DB")
		}
		name, err := url.PathUnescape(segs[0])
		if err != nil || name == "" || strings.ContainsAny(name, " \t") {
			return bad("master name must be a name without spaces")
		}
		s.MasterName = name
		segs = segs[1:]
		fallthrough
	default:
		if len(segs) > 1 {
			return bad("path must be /DB")
		}
		if len(segs) == 1 {
			db, err := strconv.Atoi(segs[0])
			if err != nil || db < 0 || segs[0] != strconv.Itoa(db) {
				return bad("database must be a whole number 0 or more")
			}
			s.DB = db
		}
	}
	return nil
}
