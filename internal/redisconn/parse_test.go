package redisconn

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestParseEachForm(t *testing.T) {
	cases := []struct {
		url, password, sentinelPassword string
		want                            Spec
	}{
		{"redis://127.0.0.1:6379/0", "", "", Spec{Mode: Single, Addrs: []string{"127.0.0.1:6379"}}},
		{"redis://redis.internal", "", "", Spec{Mode: Single, Addrs: []string{"redis.internal:6379"}}},
		{"redis://redis.internal/", "", "", Spec{Mode: Single, Addrs: []string{"redis.internal:6379"}}},
		{"rediss://queen:s%3Acret@redis.internal:6380/3", "", "", Spec{Mode: Single, TLS: true,
			Addrs: []string{"redis.internal:6380"}, DB: 3, Username: "queen", Password: "s:cret"}},
		{"redis://:pw@[::1]:7000", "", "", Spec{Mode: Single, Addrs: []string{"[::1]:7000"}, Password: "pw"}},
		{"redis://10.0.0.5:6379/1", "from-env", "", Spec{Mode: Single, Addrs: []string{"10.0.0.5:6379"}, DB: 1, Password: "from-env"}},
		{"redis://queen@10.0.0.5", "from-env", "", Spec{Mode: Single, Addrs: []string{"10.0.0.5:6379"}, Username: "queen", Password: "from-env"}},
		{"REDIS://h:1", "", "", Spec{Mode: Single, Addrs: []string{"h:1"}}},

		{"redis+sentinel://s1:26379,s2:26380,s3/mymaster", "", "", Spec{Mode: Sentinel,
			Addrs: []string{"s1:26379", "s2:26380", "s3:26379"}, MasterName: "mymaster"}},
		{"redis+sentinel://queen:pw@s1:26379,s2:26379/mymaster/2", "", "sentinel-pw", Spec{Mode: Sentinel,
			Addrs: []string{"s1:26379", "s2:26379"}, MasterName: "mymaster", DB: 2,
			Username: "queen", Password: "pw", SentinelPassword: "sentinel-pw"}},
		{"rediss+sentinel://10.0.0.1:26379/queen-primary/", "data-pw", "", Spec{Mode: Sentinel, TLS: true,
			Addrs: []string{"10.0.0.1:26379"}, MasterName: "queen-primary", Password: "data-pw"}},

		{"redis+cluster://n1:6379,n2:6379,n3:7000", "", "", Spec{Mode: Cluster,
			Addrs: []string{"n1:6379", "n2:6379", "n3:7000"}}},
		{"rediss+cluster://queen:pw@n1,n2/", "", "", Spec{Mode: Cluster, TLS: true,
			Addrs: []string{"n1:6379", "n2:6379"}, Username: "queen", Password: "pw"}},
	}
	for _, c := range cases {
		got, err := Parse(c.url, c.password, c.sentinelPassword)
		if err != nil {
			t.Errorf("%s: %v", c.url, err)
			continue
		}
		if !reflect.DeepEqual(*got, c.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", c.url, *got, c.want)
		}
	}
}

func TestParseRefusesEachBadFormNamingTheVariable(t *testing.T) {
	const secret = "hunter2-secret"
	cases := []struct {
		url, password, sentinelPassword, variable, says string
	}{
		{"", "", "", URLVar, "required"},
		{"http://h:6379", "", "", URLVar, "redis+sentinel://"},
		{"redis:/h:6379", "", "", URLVar, "redis://"},
		{"unix:///tmp/redis.sock", "", "", URLVar, "redis://"},
		{"redis://", "", "", URLVar, "no host"},
		{"redis+cluster://", "", "", URLVar, "no host"},
		{"redis://:" + secret + "@/0", "", "", URLVar, "no host"},
		{"redis://h:abc", "", "", URLVar, "port"},
		{"redis://h:0", "", "", URLVar, "port"},
		{"redis://h:70000", "", "", URLVar, "port"},
		{"redis://::1:6379", "", "", URLVar, "host:port"},
		{"redis://h1:6379,h2:6379", "", "", URLVar, "2 hosts"},
		{"redis+sentinel://s1:26379,,s2:26379/m", "", "", URLVar, "host 2 of 3"},
		{"redis+sentinel://s1:26379,s1:26379/m", "", "", URLVar, "twice"},
		{"redis+cluster://n1:6379,n2:x", "", "", URLVar, "host 2 of 2"},
		{"redis://h/abc", "", "", URLVar, "database"},
		{"redis://h/-1", "", "", URLVar, "database"},
		{"redis://h/01", "", "", URLVar, "database"},
		{"redis://h/0/1", "", "", URLVar, "/DB"},
		{"redis://h/0?dial_timeout=1s", "", "", URLVar, "query"},
		{"redis://h#x", "", "", URLVar, "query"},
		{"redis+sentinel://s1:26379", "", "", URLVar, "no master"},
		{"redis+sentinel://s1:26379/", "", "", URLVar, "no master"},
		{"redis+sentinel://s1:26379/m/x", "", "", URLVar, "database"},
		{"redis+sentinel://s1:26379/m/0/1", "", "", URLVar, "MASTER_NAME/DB"},
		{"redis+sentinel://s1:26379/m%20x", "", "", URLVar, "master name"},
		{"redis+cluster://n1:6379/0", "", "", URLVar, "database 0"},
		{"redis+cluster://n1:6379/1", "", "", URLVar, "database 0"},
		// A password where the user goes is refused, not sent as a user name.
		{"redis://" + secret + "@h:6379", "", "", URLVar, "without a password"},
		{"redis://u:%zz@h:6379", "", "", URLVar, "percent-encoded"},
		{"redis://u:" + secret + "@h:6379", "other-" + secret, "", PasswordVar, "one place"},
		{"redis+cluster://:" + secret + "@n1", secret, "", PasswordVar, "one place"},
		{"redis://h:6379", "", secret, SentinelPasswordVar, "not a redis+sentinel://"},
		{"redis+cluster://n1", "", secret, SentinelPasswordVar, "not a redis+sentinel://"},
	}
	for _, c := range cases {
		_, err := Parse(c.url, c.password, c.sentinelPassword)
		if err == nil {
			t.Errorf("%q: parsed, want an error naming %s", c.url, c.variable)
			continue
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, c.variable+": ") || strings.Contains(msg, "\n") || !strings.Contains(msg, c.says) {
			t.Errorf("%q: error %q, want one line naming %s that says %q", c.url, msg, c.variable, c.says)
		}
		if strings.Contains(msg, secret) {
			t.Errorf("%q: error %q leaks the password", c.url, msg)
		}
		if _, ok := err.(*Error); !ok {
			t.Errorf("%q: error is %T, want *Error", c.url, err)
		}
	}
}

func TestStringCarriesNoCredentials(t *testing.T) {
	s, err := Parse("rediss+sentinel://queen:pw-data@s1:26379,s2:26379/mymaster/2", "", "pw-sentinel")
	if err != nil {
		t.Fatal(err)
	}
	got := s.String()
	if got != "sentinel mymaster via s1:26379,s2:26379 db 2 tls" {
		t.Fatalf("String() = %q", got)
	}
	if strings.Contains(got, "pw-") || strings.Contains(got, "queen") {
		t.Fatalf("String() = %q leaks a credential", got)
	}
}

// Each form gets its matching go-redis client, with the parsed options.
func TestNewBuildsTheClientOfEachForm(t *testing.T) {
	single := New(mustParse(t, "redis://u:pw@127.0.0.1:6390/4", "", ""))
	defer single.Close()
	c, ok := single.(*redis.Client)
	if !ok {
		t.Fatalf("redis:// gave %T, want *redis.Client", single)
	}
	if o := c.Options(); o.Addr != "127.0.0.1:6390" || o.DB != 4 || o.Username != "u" || o.Password != "pw" || o.TLSConfig != nil {
		t.Fatalf("redis:// options: addr %s db %d user %q tls %v", o.Addr, o.DB, o.Username, o.TLSConfig)
	}

	failover := New(mustParse(t, "rediss+sentinel://s1:26379,s2:26379/m/1", "pw", "spw"))
	defer failover.Close()
	f, ok := failover.(*redis.Client)
	if !ok {
		t.Fatalf("redis+sentinel:// gave %T, want a failover *redis.Client", failover)
	}
	if o := f.Options(); o.Addr != "FailoverClient" || o.DB != 1 || o.Password != "pw" || o.TLSConfig == nil {
		t.Fatalf("redis+sentinel:// options: addr %s db %d tls %v", o.Addr, o.DB, o.TLSConfig)
	}

	cluster := New(mustParse(t, "redis+cluster://:pw@n1:7000,n2:7001", "", ""))
	defer cluster.Close()
	cc, ok := cluster.(*redis.ClusterClient)
	if !ok {
		t.Fatalf("redis+cluster:// gave %T, want *redis.ClusterClient", cluster)
	}
	if o := cc.Options(); !reflect.DeepEqual(o.Addrs, []string{"n1:7000", "n2:7001"}) || o.Password != "pw" || o.TLSConfig != nil {
		t.Fatalf("redis+cluster:// options: addrs %v tls %v", o.Addrs, o.TLSConfig)
	}
}

// A webhook delivery makes up to three Redis calls and must be answered
// within GitHub's 10 s; go-redis's defaults (5 s timeouts, 3 retries, 5
// dials) would let one call alone take over a minute against a dead server.
func TestEveryFormGivesUpOnACallWellWithinGitHubsDeadline(t *testing.T) {
	const callsPerDelivery = 3 // installation lookup, the queue registration, the enqueue
	for _, url := range []string{"redis://h:6379", "redis+sentinel://s1:26379/m", "redis+cluster://n1:6379"} {
		c := New(mustParse(t, url, "", ""))
		var attempts, dials int
		var dial, read, pool time.Duration
		switch o := c.(type) {
		case *redis.Client:
			op := o.Options()
			attempts, dials, dial, read, pool = op.MaxRetries+1, op.DialerRetries, op.DialTimeout, op.ReadTimeout, op.PoolTimeout
		case *redis.ClusterClient:
			op := o.Options()
			attempts, dials, dial, read, pool = op.MaxRedirects+1, op.DialerRetries, op.DialTimeout, op.ReadTimeout, op.PoolTimeout
		}
		c.Close()
		// An attempt gets a connection (waits for a free one or dials one),
		// writes into the socket buffer and waits for the answer.
		perCall := time.Duration(attempts) * (max(pool, time.Duration(dials)*dial) + read)
		if attempts < 2 || read <= AckTimeout || perCall*callsPerDelivery >= 10*time.Second {
			t.Errorf("%s: %d attempts of up to %s each, %s per delivery; want a retry, room for WAIT and well under 10 s",
				url, attempts, perCall/time.Duration(attempts), perCall*callsPerDelivery)
		}
	}
}

func mustParse(t *testing.T, url, pw, spw string) *Spec {
	t.Helper()
	s, err := Parse(url, pw, spw)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
