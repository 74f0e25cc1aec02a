package deploy

import (
	"maps"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/queen-app/queen-app/internal/config"
	"github.com/queen-app/queen-app/internal/githubapp"
	"github.com/queen-app/queen-app/internal/ledger"
	"github.com/queen-app/queen-app/internal/metrics"
	"github.com/queen-app/queen-app/internal/redisavail"
	"github.com/queen-app/queen-app/internal/schedule"
	"github.com/queen-app/queen-app/internal/serve"
	"github.com/queen-app/queen-app/internal/version"
	"github.com/queen-app/queen-app/internal/webhookserver"
	"github.com/queen-app/queen-app/internal/worker"
	"github.com/queen-app/queen-app/internal/workerserver"
)

func TestChartVersionIsTheRelease(t *testing.T) {
	ch := queenChart(t)
	if ch.Metadata.APIVersion != "v2" {
		t.Errorf("Chart.yaml apiVersion = %q, want v2", ch.Metadata.APIVersion)
	}
	if ch.Metadata.AppVersion != version.Version {
		t.Errorf("Chart.yaml appVersion = %q, want the module version %q", ch.Metadata.AppVersion, version.Version)
	}
	if len(ch.Metadata.Dependencies) != 0 {
		t.Errorf("the chart has dependencies %v; Redis is external", ch.Metadata.Dependencies)
	}
	o := render(t, inlineValues())
	for _, d := range o.Deployments {
		img := d.Spec.Template.Spec.Containers[0].Image
		if !strings.HasSuffix(img, ":"+version.Version) {
			t.Errorf("%s runs %s, want the tag %s by default", d.Name, img, version.Version)
		}
	}
}

// scenarios are the renders every structural check runs on.
func scenarios(t *testing.T) map[string]map[string]any {
	return map[string]map[string]any{
		"inline": inlineValues(),
		"ci":     ciFileValues(t),
		"sentinel": with(with(without(inlineValues(), "redis.host"), "redis.sentinel",
			map[string]any{"addresses": []any{"s1:26379", "s2:26379"}, "masterName": "mymaster",
				"existingSecret": map[string]any{"name": "queen-app-redis-sentinel"}}),
			"redis.existingSecret", map[string]any{"name": "queen-app-redis"}),
		"cluster": with(without(inlineValues(), "redis.host"), "redis.cluster",
			map[string]any{"addresses": []any{"n1:6379", "n2:6379"}, "tls": true}),
		"3 workers": with(inlineValues(), "worker.replicas", 3),
	}
}

func TestEveryManifestDecodesStrictly(t *testing.T) {
	for name, vals := range scenarios(t) {
		t.Run(name, func(t *testing.T) {
			o := render(t, vals) // render fails on any unknown field or kind
			if len(o.Deployments) != 2 || len(o.Services) != 3 || len(o.ConfigMaps) != 1 {
				t.Errorf("rendered %d Deployments, %d Services, %d ConfigMaps; want 2, 3, 1",
					len(o.Deployments), len(o.Services), len(o.ConfigMaps))
			}
		})
	}
	o := render(t, ciFileValues(t))
	counts := map[string][2]int{
		"Ingress": {len(o.Ingresses), 1}, "NetworkPolicy": {len(o.NetworkPolicies), 2},
		"ServiceMonitor": {len(o.ServiceMonitors), 1}, "PrometheusRule": {len(o.PrometheusRules), 1},
		"HorizontalPodAutoscaler": {len(o.HPAs), 1}, "PodDisruptionBudget": {len(o.PDBs), 2},
		"Secret": {len(o.Secrets), 0},
	}
	for kind, c := range counts {
		if c[0] != c[1] {
			t.Errorf("ci values: %d %s rendered, want %d", c[0], kind, c[1])
		}
	}
}

// TestBinariesStartWithTheRenderedEnv loads each container's environment,
// resolved from the rendered ConfigMap and Secrets (or the README's), through
// the binaries' own config: every variable a binary requires is set and valid.
func TestBinariesStartWithTheRenderedEnv(t *testing.T) {
	for _, name := range []string{"inline", "ci"} {
		t.Run(name, func(t *testing.T) {
			vals := scenarios(t)[name]
			o := render(t, vals)
			store := o.store(readmeSecrets(t))

			wh := o.env(t, o.deployment(t, "webhook"), store)
			wk := o.env(t, o.deployment(t, "worker"), store)
			for _, e := range []*podEnv{wh, wk} {
				for _, p := range e.problems {
					t.Error(p)
				}
			}
			cfg, err := config.Load(config.Webhook, wh.getenv)
			if err != nil {
				t.Fatalf("webhook would not start: %v", err)
			}
			if string(cfg.PrivateKey) != testKeyPEM || cfg.WebhookSecret != testWebhookSecret || cfg.AppID != 12345 {
				t.Errorf("webhook did not get the App's key, id and webhook secret from the Secret")
			}
			wcfg, err := config.Load(config.Worker, wk.getenv)
			if err != nil {
				t.Fatalf("worker would not start: %v", err)
			}
			if _, err := workerserver.OptionsFromEnv(wk.getenv); err != nil {
				t.Fatalf("worker would not start: %v", err)
			}
			if string(wcfg.PrivateKey) != testKeyPEM {
				t.Errorf("worker did not get the App's key")
			}
			for _, v := range []string{"GITHUB_WEBHOOK_SECRET", "GITHUB_WEBHOOK_SECRET_PREVIOUS", "QUEEN_API_TOKEN"} {
				for _, name := range []string{v, v + "_FILE"} {
					if _, ok := wk.vars[name]; ok {
						t.Errorf("worker gets %s, which it does not need", name)
					}
				}
			}
			if cfg.APIToken != testValueFor("token") && cfg.APIToken != testAPIToken {
				t.Errorf("webhook did not get the API token from the Secret")
			}
			if name == "ci" {
				if !wcfg.ExportEnabled() || wcfg.ExportRepo != "hive/t27" || !wcfg.FreeClosedPR {
					t.Errorf("worker config from ci values: export %v repo %q free %v", wcfg.ExportEnabled(), wcfg.ExportRepo, wcfg.FreeClosedPR)
				}
			}
		})
	}
}

// TestPrivateKeyIsOnlyAFile: the key reaches the binaries as a mounted file,
// never as an environment value or a ConfigMap entry.
func TestPrivateKeyIsOnlyAFile(t *testing.T) {
	for name, vals := range scenarios(t) {
		t.Run(name, func(t *testing.T) {
			o := render(t, vals)
			store := o.store(readmeSecrets(t))
			for _, d := range o.Deployments {
				e := o.env(t, &d, store)
				if _, ok := e.vars["GITHUB_APP_PRIVATE_KEY"]; ok {
					t.Errorf("%s sets GITHUB_APP_PRIVATE_KEY; the key must be a file", d.Name)
				}
				for k, v := range e.vars {
					if strings.Contains(v, "PRIVATE KEY") {
						t.Errorf("%s: env %s holds the private key", d.Name, k)
					}
				}
				if e.keyFile == "" {
					t.Errorf("%s: GITHUB_APP_PRIVATE_KEY_FILE does not name a mounted Secret file", d.Name)
				}
				for _, vol := range d.Spec.Template.Spec.Volumes {
					var m *int32
					switch {
					case vol.Secret != nil:
						m = vol.Secret.DefaultMode
					case vol.Projected != nil:
						m = vol.Projected.DefaultMode
					default:
						continue
					}
					if m == nil || *m&0o007 != 0 {
						t.Errorf("%s: Secret volume %s is readable by others (mode %v)", d.Name, vol.Name, m)
					}
					for _, c := range d.Spec.Template.Spec.Containers {
						for _, vm := range c.VolumeMounts {
							if vm.Name == vol.Name && !vm.ReadOnly {
								t.Errorf("%s: Secret volume %s is mounted writable", d.Name, vol.Name)
							}
						}
					}
				}
			}
			for _, cm := range o.ConfigMaps {
				for k, v := range cm.Data {
					if strings.Contains(v, "PRIVATE KEY") {
						t.Errorf("ConfigMap %s: %s holds the private key", cm.Name, k)
					}
				}
			}
		})
	}
}

func portOf(t *testing.T, listen string) int32 {
	t.Helper()
	_, p, err := net.SplitHostPort(listen)
	if err != nil {
		t.Fatalf("listen %q: %v", listen, err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatalf("listen %q: %v", listen, err)
	}
	return int32(n)
}

// containerPort resolves a probe's or Service's named or numbered port.
func containerPort(t *testing.T, c corev1.Container, name string, num int32) int32 {
	t.Helper()
	for _, p := range c.Ports {
		if (name != "" && p.Name == name) || (name == "" && p.ContainerPort == num) {
			return p.ContainerPort
		}
	}
	t.Errorf("container %s has no port %q/%d", c.Name, name, num)
	return -1
}

func probePort(t *testing.T, c corev1.Container, p *corev1.Probe) (string, int32) {
	t.Helper()
	if p == nil || p.HTTPGet == nil {
		t.Fatalf("container %s: probe missing or not httpGet", c.Name)
	}
	return p.HTTPGet.Path, containerPort(t, c, p.HTTPGet.Port.StrVal, p.HTTPGet.Port.IntVal)
}

// TestProbesAndServicesMatchWhatTheBinariesServe: the probes ask the paths
// the binaries serve on the port their config listens on, and with default
// values those are the binaries' default ports.
func TestProbesAndServicesMatchWhatTheBinariesServe(t *testing.T) {
	check := func(t *testing.T, vals map[string]any, wantWebhook, wantAPI, wantWorker string) {
		o := render(t, vals)
		store := o.store(readmeSecrets(t))
		wd, kd := o.deployment(t, "webhook"), o.deployment(t, "worker")
		wcfg, err := config.Load(config.Webhook, o.env(t, wd, store).getenv)
		if err != nil {
			t.Fatal(err)
		}
		kcfg, err := config.Load(config.Worker, o.env(t, kd, store).getenv)
		if err != nil {
			t.Fatal(err)
		}
		if portOf(t, wcfg.Listen) != portOf(t, wantWebhook) || portOf(t, wcfg.APIListen) != portOf(t, wantAPI) ||
			portOf(t, kcfg.APIListen) != portOf(t, wantWorker) {
			t.Errorf("binaries listen on webhook %s, api %s, worker %s; want %s, %s, %s",
				wcfg.Listen, wcfg.APIListen, kcfg.APIListen, wantWebhook, wantAPI, wantWorker)
		}
		for _, pc := range []struct {
			d      *appsv1.Deployment
			listen string
		}{{wd, wcfg.APIListen}, {kd, kcfg.APIListen}} {
			c := pc.d.Spec.Template.Spec.Containers[0]
			lp, lport := probePort(t, c, c.LivenessProbe)
			rp, rport := probePort(t, c, c.ReadinessProbe)
			if lp != metrics.HealthzPath || rp != metrics.ReadyzPath {
				t.Errorf("%s: probes on %s and %s, want liveness %s, readiness %s", pc.d.Name, lp, rp, metrics.HealthzPath, metrics.ReadyzPath)
			}
			if lport != portOf(t, pc.listen) || rport != portOf(t, pc.listen) {
				t.Errorf("%s: probes on ports %d/%d, the binary serves health on %s", pc.d.Name, lport, rport, pc.listen)
			}
		}
		// Each Service reaches one component on a port it serves.
		serves := map[string]int32{
			release + "-queen-app-webhook": portOf(t, wcfg.Listen),
			release + "-queen-app-api":     portOf(t, wcfg.APIListen),
			release + "-queen-app-worker":  portOf(t, kcfg.APIListen),
		}
		for _, s := range o.Services {
			var picked []appsv1.Deployment
			for _, d := range o.Deployments {
				if labels.SelectorFromSet(s.Spec.Selector).Matches(labels.Set(d.Spec.Template.Labels)) {
					picked = append(picked, d)
				}
			}
			if len(picked) != 1 || len(s.Spec.Ports) != 1 {
				t.Errorf("Service %s selects %d Deployments with %d ports, want 1 and 1", s.Name, len(picked), len(s.Spec.Ports))
				continue
			}
			tp := s.Spec.Ports[0].TargetPort
			got := containerPort(t, picked[0].Spec.Template.Spec.Containers[0], tp.StrVal, tp.IntVal)
			if want, ok := serves[s.Name]; !ok || got != want {
				t.Errorf("Service %s targets port %d, want %d", s.Name, got, want)
			}
			if s.Name != release+"-queen-app-webhook" && s.Spec.Type != corev1.ServiceTypeClusterIP {
				t.Errorf("Service %s is %s; only ClusterIP keeps the API inside", s.Name, s.Spec.Type)
			}
		}
	}
	t.Run("defaults", func(t *testing.T) {
		check(t, inlineValues(), config.DefaultListen, config.DefaultWebhookAPIListen, config.DefaultWorkerAPIListen)
	})
	t.Run("moved ports", func(t *testing.T) {
		v := with(with(with(inlineValues(), "webhook.ports.webhook", 9080), "webhook.ports.api", 9081), "worker.ports.metrics", 9082)
		check(t, v, ":9080", ":9081", ":9082")
	})
}

// TestIngressRoutesOnlyTheWebhook: the public route is the receiver's path,
// to the port the receiver listens on; the API never goes through it.
func TestIngressRoutesOnlyTheWebhook(t *testing.T) {
	o := render(t, ciFileValues(t))
	ing := o.Ingresses[0]
	if len(ing.Spec.Rules) != 1 || ing.Spec.Rules[0].HTTP == nil || len(ing.Spec.Rules[0].HTTP.Paths) != 1 {
		t.Fatalf("Ingress rules %+v, want one host with one path", ing.Spec.Rules)
	}
	p := ing.Spec.Rules[0].HTTP.Paths[0]
	if p.Path != webhookserver.WebhookPath || p.PathType == nil || *p.PathType != "Exact" {
		t.Errorf("Ingress path %q (%v), want exactly %s", p.Path, p.PathType, webhookserver.WebhookPath)
	}
	svc := o.service(t, p.Backend.Service.Name)
	if svc.Name != release+"-queen-app-webhook" || svc.Spec.Ports[0].Name != p.Backend.Service.Port.Name {
		t.Errorf("Ingress goes to %s port %q, want the webhook Service's port", svc.Name, p.Backend.Service.Port.Name)
	}
	if len(ing.Spec.TLS) != 1 || ing.Spec.TLS[0].Hosts[0] != ing.Spec.Rules[0].Host {
		t.Errorf("Ingress TLS %+v does not cover host %s", ing.Spec.TLS, ing.Spec.Rules[0].Host)
	}
}

func TestPodsRunLockedDown(t *testing.T) {
	uid := dockerfileUID(t)
	for name, vals := range scenarios(t) {
		t.Run(name, func(t *testing.T) {
			o := render(t, vals)
			for _, d := range o.Deployments {
				ps := d.Spec.Template.Spec
				psc := ps.SecurityContext
				if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser != uid ||
					psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
					t.Errorf("%s: pod securityContext %+v, want non-root uid %d with seccomp RuntimeDefault", d.Name, psc, uid)
				}
				if ps.AutomountServiceAccountToken == nil || *ps.AutomountServiceAccountToken {
					t.Errorf("%s mounts a service account token it never uses", d.Name)
				}
				c := ps.Containers[0]
				sc := c.SecurityContext
				if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
					sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
					sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
					t.Errorf("%s: container securityContext %+v, want read-only root, no escalation, all capabilities dropped", d.Name, sc)
				}
				if c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
					t.Errorf("%s has no memory request or limit", d.Name)
				}
				if !writable(d, "/tmp") {
					t.Errorf("%s: /tmp is not writable (git and Go write temporary files there)", d.Name)
				}
			}
			wk := o.deployment(t, "worker")
			opts, err := workerserver.OptionsFromEnv(o.env(t, wk, o.store(readmeSecrets(t))).getenv)
			if err != nil {
				t.Fatal(err)
			}
			if opts.CacheDir == "" || !writable(*wk, opts.CacheDir) {
				t.Errorf("worker: QUEEN_WORKER_CACHE_DIR %q is not a writable volume", opts.CacheDir)
			}
		})
	}
}

// writable reports whether dir is on a writable emptyDir volume of d.
func writable(d appsv1.Deployment, dir string) bool {
	for _, m := range d.Spec.Template.Spec.Containers[0].VolumeMounts {
		if m.MountPath != dir || m.ReadOnly {
			continue
		}
		for _, v := range d.Spec.Template.Spec.Volumes {
			if v.Name == m.Name && v.EmptyDir != nil {
				return true
			}
		}
	}
	return false
}

// TestGracePeriodsOutlastShutdown: Kubernetes must not SIGKILL a pod before
// the binary has finished its graceful shutdown.
func TestGracePeriodsOutlastShutdown(t *testing.T) {
	for name, vals := range scenarios(t) {
		o := render(t, vals)
		for comp, shutdown := range map[string]time.Duration{"worker": workerserver.ShutdownTimeout, "webhook": serve.ShutdownTimeout} {
			g := o.deployment(t, comp).Spec.Template.Spec.TerminationGracePeriodSeconds
			if g == nil || time.Duration(*g)*time.Second <= shutdown {
				t.Errorf("%s: %s terminationGracePeriodSeconds %v, want above its %v shutdown", name, comp, g, shutdown)
			}
		}
	}
}

// TestChangedSettingsRollThePods: a changed setting or inline Secret changes
// both pod templates (so Kubernetes rolls them); an unrelated value does not.
func TestChangedSettingsRollThePods(t *testing.T) {
	annotations := func(vals map[string]any) map[string]map[string]string {
		o := render(t, vals)
		out := map[string]map[string]string{}
		for _, c := range []string{"webhook", "worker"} {
			out[c] = o.deployment(t, c).Spec.Template.Annotations
		}
		return out
	}
	base := annotations(inlineValues())
	for change, vals := range map[string]map[string]any{
		"flags.freeClosedPR": with(inlineValues(), "flags.freeClosedPR", true),
		"redis.host":         with(inlineValues(), "redis.host", "other.redis"),
		"api.token":          with(inlineValues(), "api.token", "another-token-0123456789"),
		"github.privateKey":  with(inlineValues(), "github.privateKey", testKeyPEM+"\n"),
	} {
		got := annotations(vals)
		for c := range got {
			if maps.Equal(got[c], base[c]) {
				t.Errorf("changing %s leaves the %s pod template as it was: no rollout", change, c)
			}
		}
	}
	same := annotations(with(inlineValues(), "worker.replicas", 4))
	for c := range same {
		if !maps.Equal(same[c], base[c]) {
			t.Errorf("changing worker.replicas changes the %s pod template", c)
		}
	}
}

// TestSecretReferencesResolveToDocumentedKeys: with existing Secrets (the ci
// values), every key a pod reads is one the README's kubectl commands create
// (an optional one is at least named in the README) and values.yaml lists.
func TestSecretReferencesResolveToDocumentedKeys(t *testing.T) {
	o := render(t, ciFileValues(t))
	documented := readmeSecrets(t)
	values := readFile(t, chartDir+"/values.yaml")
	text := readme(t)
	for _, d := range o.Deployments {
		e := o.env(t, &d, documented)
		for _, p := range e.problems {
			t.Errorf("%s: %s", d.Name, p)
		}
		keys := map[string]bool{}
		for _, r := range e.refs {
			keys[r.Key] = true
			if _, ok := documented[r.Name][r.Key]; !ok && !strings.Contains(text, r.Key) {
				t.Errorf("%s reads optional key %s of Secret %s, which the README never names", d.Name, r.Key, r.Name)
			}
		}
		for name, items := range secretItems(&d) {
			for key, optional := range items {
				keys[key] = true
				_, created := documented[name][key]
				switch {
				case !created && !optional:
					t.Errorf("%s mounts key %s of Secret %s, which the README does not create", d.Name, key, name)
				case !created && !strings.Contains(text, key):
					t.Errorf("%s mounts optional key %s of Secret %s, which the README never names", d.Name, key, name)
				}
			}
		}
		for k := range keys {
			if !strings.Contains(values, k) {
				t.Errorf("%s reads Secret key %s, which values.yaml does not document", d.Name, k)
			}
		}
	}
}

// refusedValues are values the chart refuses, each by the error naming what
// to set.
func refusedValues() map[string]map[string]any {
	base := inlineValues()
	return map[string]map[string]any{
		"github.existingSecret.name":   without(base, "github"),
		"api.existingSecret.name":      without(base, "api"),
		"redis.url (or redis.host":     without(base, "redis"),
		"github.webhookSecret must be": with(base, "github.webhookSecret", "short"),
		"redis.password must be":       with(base, "redis.password", "short"),
		"export.token must be": with(with(with(base, "export.url", "https://export.example/"), "export.repo", "o/r"),
			"export.token", "short"),
		"api.token must be":             with(base, "api.token", "short"),
		"export.repo":                   with(base, "export.url", "https://export.example/"),
		"export.existingSecret.name":    with(with(base, "export.url", "https://export.example/"), "export.repo", "o/r"),
		"redis.sentinel.masterName":     with(without(base, "redis.host"), "redis.sentinel.addresses", []any{"s:26379"}),
		"only one of redis.url":         with(base, "redis.url", "redis://other:6379/0"),
		"must not contain a password":   with(without(base, "redis.host"), "redis.url", "redis://u:secret@r:6379/0"),
		"not both":                      with(base, "github.existingSecret", map[string]any{"name": "queen-app-github"}),
		"ingress.host is required":      with(base, "ingress.enabled", true),
		"github.appId is required with": without(base, "github.appId"),
	}
}

func TestRequiredValuesNameTheValue(t *testing.T) {
	for want, vals := range refusedValues() {
		_, err := renderErr(t, vals)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want an error naming %q, got %v", want, err)
		}
	}
}

func TestSchemaRejectsBadValues(t *testing.T) {
	base := inlineValues()
	for where, vals := range map[string]map[string]any{
		"/webhook/replicas":              with(base, "webhook.replicas", -1),
		"/worker/replicas":               with(base, "worker.replicas", -1),
		"/worker/concurrency":            with(base, "worker.concurrency", 0),
		"/flags/freeClosedPR":            with(base, "flags.freeClosedPR", "maybe"),
		"/flags/reviewFirst":             with(base, "flags.reviewFirst", "yes"),
		"/github/existingSecret":         with(without(base, "github"), "github.existingSecret", map[string]any{"privateKeyKey": "key.pem"}),
		"/api/existingSecret":            with(without(base, "api"), "api.existingSecret", map[string]any{"tokenKey": "t"}),
		"/redis/existingSecret":          with(base, "redis.existingSecret", map[string]any{"passwordKey": "p"}),
		"/redis/sentinel/existingSecret": with(base, "redis.sentinel.existingSecret", map[string]any{"name": ""}),
		"/settings/sweepInterval":        with(base, "settings.sweepInterval", "ten minutes"),
		"/redis/url":                     with(without(base, "redis.host"), "redis.url", "http://redis:6379"),
		"/worker":                        with(base, "worker.replica", 3), // a typo is refused, not ignored
	} {
		_, err := renderErr(t, vals)
		if err == nil || !strings.Contains(err.Error(), "at '"+where) {
			t.Errorf("values bad at %s: want the schema to refuse them there, got %v", where, err)
		}
	}
}

// TestRedisFormsFromValues: each form of Redis the binaries take is built
// from values with no password in the URL; passwords come from Secrets.
func TestRedisFormsFromValues(t *testing.T) {
	noHost := without(inlineValues(), "redis.host")
	for _, tc := range []struct {
		name, url string
		vals      map[string]any
		passwords map[string]string // env var -> value the pod gets
	}{
		{"host", "rediss://queen@redis.example:6380/2", with(with(with(with(with(with(inlineValues(),
			"redis.host", "redis.example"), "redis.port", 6380), "redis.db", 2), "redis.tls", true), "redis.username", "queen"),
			"redis.password", "acl-password-0123456"),
			map[string]string{"QUEEN_REDIS_PASSWORD": "acl-password-0123456"}},
		{"url", "redis://redis.example:6379/1", with(noHost, "redis.url", "redis://redis.example:6379/1"), nil},
		{"inline password", "redis://redis.queen.svc:6379/0", with(inlineValues(), "redis.password", "inline-password-0123"),
			map[string]string{"QUEEN_REDIS_PASSWORD": "inline-password-0123"}},
		{"existing password", "redis://redis.queen.svc:6379/0",
			with(inlineValues(), "redis.existingSecret", map[string]any{"name": "queen-app-redis"}),
			map[string]string{"QUEEN_REDIS_PASSWORD": testValueFor("password")}},
		{"sentinel", "rediss+sentinel://s1:26379,s2:26379,s3:26379/mymaster/3", with(with(noHost, "redis.sentinel",
			map[string]any{"addresses": []any{"s1:26379", "s2:26379", "s3:26379"}, "masterName": "mymaster", "db": 3, "tls": true,
				"existingSecret": map[string]any{"name": "queen-app-redis-sentinel"}}),
			"redis.existingSecret", map[string]any{"name": "queen-app-redis"}),
			map[string]string{"QUEEN_REDIS_PASSWORD": testValueFor("password"), "QUEEN_REDIS_SENTINEL_PASSWORD": testValueFor("password")}},
		{"cluster", "rediss+cluster://n1:6379,n2:6379", with(with(noHost, "redis.cluster",
			map[string]any{"addresses": []any{"n1:6379", "n2:6379"}, "tls": true}), "redis.password", "cluster-password-0123"),
			map[string]string{"QUEEN_REDIS_PASSWORD": "cluster-password-0123"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := render(t, tc.vals)
			store := o.store(readmeSecrets(t))
			for _, d := range o.Deployments {
				e := o.env(t, &d, store)
				for _, p := range e.problems {
					t.Error(p)
				}
				got := e.vars["QUEEN_REDIS_URL"]
				if got != tc.url {
					t.Errorf("%s: QUEEN_REDIS_URL %q, want %q", d.Name, got, tc.url)
				}
				if u, err := url.Parse(got); err != nil {
					t.Errorf("%s: QUEEN_REDIS_URL %q does not parse: %v", d.Name, got, err)
				} else if _, has := u.User.Password(); has {
					t.Errorf("%s: QUEEN_REDIS_URL carries a password", d.Name)
				}
				cfg, err := config.Load(config.Worker, e.getenv)
				if err != nil {
					t.Errorf("%s: %v", d.Name, err)
					continue
				}
				for v, got := range map[string]string{"QUEEN_REDIS_PASSWORD": cfg.RedisPassword, "QUEEN_REDIS_SENTINEL_PASSWORD": cfg.RedisSentinelPassword} {
					if got != tc.passwords[v] {
						t.Errorf("%s: %s = %q, want %q", d.Name, v, got, tc.passwords[v])
					}
					if _, inEnv := e.vars[v]; inEnv {
						t.Errorf("%s: %s is an environment value, not a file", d.Name, v)
					}
				}
			}
		})
	}
}

// TestSeveralWorkersShareOneScheduler: the scheduler is not a role of its
// own. More worker replicas are more of one Deployment; the Redis lease
// (schedule.LeaderKey) picks the one that enqueues, and the docs say so.
func TestSeveralWorkersShareOneScheduler(t *testing.T) {
	o := render(t, with(inlineValues(), "worker.replicas", 3))
	if len(o.Deployments) != 2 {
		t.Fatalf("%d Deployments, want webhook and worker only", len(o.Deployments))
	}
	if r := o.deployment(t, "worker").Spec.Replicas; r == nil || *r != 3 {
		t.Errorf("worker replicas %v, want 3", r)
	}
	for key := range o.Docs {
		if strings.Contains(strings.ToLower(key), "scheduler") {
			t.Errorf("%s: a separate scheduler object", key)
		}
	}
	for _, d := range o.Deployments {
		c := d.Spec.Template.Spec.Containers[0]
		if len(c.Args) != 0 || len(c.Command) != 1 {
			t.Errorf("%s runs %v %v: no role flags, one binary", d.Name, c.Command, c.Args)
		}
		for _, e := range c.Env {
			if strings.Contains(strings.ToUpper(e.Name), "SCHEDULER") {
				t.Errorf("%s sets %s: the scheduler has no switch", d.Name, e.Name)
			}
		}
	}
	for _, doc := range []string{readme(t), readFile(t, chartDir+"/values.yaml")} {
		if !strings.Contains(doc, schedule.LeaderKey) {
			t.Errorf("README or values.yaml does not say the lease %s keeps the scheduler single", schedule.LeaderKey)
		}
	}
}

// TestNetworkPolicyGuardsTheAPIPort: with the policy on, the claims API port
// admits only the selected peers, the webhook pods themselves (NOTES.txt's
// queenctl in a pod goes through the Service, to any pod) and helm test's
// doctor, even with no peer selected; the webhook port stays open.
func TestNetworkPolicyGuardsTheAPIPort(t *testing.T) {
	vals := ciFileValues(t)
	networkPolicyAdmits(t, render(t, vals), 4) // the Queen and Prometheus from the ci values
	networkPolicyAdmits(t, render(t, without(without(vals, "networkPolicy.apiFrom"), "networkPolicy.metricsFrom")), 2)
}

func networkPolicyAdmits(t *testing.T, o *objects, peers int) {
	t.Helper()
	wd := o.deployment(t, "webhook")
	c := wd.Spec.Template.Spec.Containers[0]
	for _, p := range o.NetworkPolicies {
		sel := labels.SelectorFromSet(p.Spec.PodSelector.MatchLabels)
		if !sel.Matches(labels.Set(wd.Spec.Template.Labels)) {
			continue
		}
		open, guarded := false, false
		for _, rule := range p.Spec.Ingress {
			for _, port := range rule.Ports {
				n := containerPort(t, c, port.Port.StrVal, port.Port.IntVal)
				switch n {
				case containerPort(t, c, "webhook", 0):
					open = len(rule.From) == 0
				case containerPort(t, c, "api", 0):
					self := false
					for _, peer := range rule.From {
						self = self || (peer.PodSelector != nil &&
							labels.SelectorFromSet(peer.PodSelector.MatchLabels).Matches(labels.Set(wd.Spec.Template.Labels)))
					}
					guarded = len(rule.From) == peers && self
				default:
					t.Errorf("NetworkPolicy %s opens port %d", p.Name, n)
				}
			}
		}
		if !open || !guarded {
			t.Errorf("NetworkPolicy %s: webhook port open %v, API port limited to %d peers with the webhook pods %v", p.Name, open, peers, guarded)
		}
		return
	}
	t.Error("no NetworkPolicy selects the webhook pods")
}

// exportedMetrics are the metric names the code registers.
func exportedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	re := regexp.MustCompile(`"(queen_[a-z_]+)"`)
	err := filepath.WalkDir("../internal", func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return err
		}
		b, err := os.ReadFile(p)
		for _, m := range re.FindAllStringSubmatch(string(b), -1) {
			out[m[1]] = true
		}
		return err
	})
	if err != nil || len(out) == 0 {
		t.Fatalf("reading the code's metrics: %v (%d found)", err, len(out))
	}
	return out
}

// TestAlertsWatchWhatTheCodeExports: every metric an alert reads is one the
// binaries export, and the alerts cover what an operator must hear about.
func TestAlertsWatchWhatTheCodeExports(t *testing.T) {
	o := render(t, ciFileValues(t))
	exported := exportedMetrics(t)
	metricRe := regexp.MustCompile(`\bqueen_[a-z_]+\b`)
	var exprs []string
	for _, r := range o.PrometheusRules[0].Spec.Groups[0].Rules {
		exprs = append(exprs, r.Expr)
		if r.Alert == "" || r.For == "" || r.Labels["severity"] == "" || r.Annotations["summary"] == "" {
			t.Errorf("rule %q lacks alert, for, severity or summary", r.Alert)
		}
		for _, m := range metricRe.FindAllString(r.Expr, -1) {
			if !exported[m] {
				t.Errorf("alert %s reads %s, which no binary exports", r.Alert, m)
			}
		}
		if !strings.Contains(r.Expr, `namespace="`+namespace+`"`) {
			t.Errorf("alert %s is not scoped to the release's namespace", r.Alert)
		}
	}
	all := strings.Join(exprs, "\n")
	for _, need := range []string{
		`queen_webhook_requests_total{`, `code=~"5.."`, // webhook 5xx
		`queen_webhook_signature_failures_total{`,
		`queen_webhook_enqueues_total{`,
		`queen_asynq_tasks{`, `state="archived"`,
		`state="` + worker.StateRetrying + `"`, // export rows retrying
		`queen_scheduler_leader{`,
		`queen_github_rate_limit_remaining{`,
		`queen_ledger_state{`, `state!="` + ledger.StateOpen + `"`,
		`queen_redis_eviction_state{`, `state="` + redisavail.EvictionEvicts + `"`,
		`queen_redis_persistence_state{`, `state="` + redisavail.PersistenceOff + `"`,
		`queen_github_app_state{`, `state="` + githubapp.AppRefused + `"`,
	} {
		if !strings.Contains(all, need) {
			t.Errorf("no alert reads %s", need)
		}
	}
	for _, sm := range o.ServiceMonitors {
		for _, ep := range sm.Spec.Endpoints {
			if ep.Path != metrics.MetricsPath {
				t.Errorf("ServiceMonitor scrapes %s, the binaries serve %s", ep.Path, metrics.MetricsPath)
			}
		}
		matched := 0
		for _, s := range o.Services {
			if labels.SelectorFromSet(sm.Spec.Selector.MatchLabels).Matches(labels.Set(s.Labels)) {
				matched++
				found := false
				for _, ep := range sm.Spec.Endpoints {
					found = found || s.Spec.Ports[0].Name == ep.Port
				}
				if !found {
					t.Errorf("ServiceMonitor selects %s but scrapes none of its ports", s.Name)
				}
			}
		}
		if matched != 2 {
			t.Errorf("ServiceMonitor selects %d Services, want the API and the worker", matched)
		}
	}
}

func TestNotesGiveTheWebhookURL(t *testing.T) {
	o := render(t, ciFileValues(t))
	want := "https://queen-app.example.com" + webhookserver.WebhookPath
	if !strings.Contains(o.Notes, want) {
		t.Errorf("NOTES.txt does not print %s:\n%s", want, o.Notes)
	}
	o = render(t, inlineValues())
	if !strings.Contains(o.Notes, webhookserver.WebhookPath) || !strings.Contains(o.Notes, release+"-queen-app-webhook") {
		t.Errorf("NOTES.txt without an Ingress does not say where /webhook is served:\n%s", o.Notes)
	}
}

// TestCIValuesHoldNoSecret: the production-like values name Secrets only.
func TestCIValuesHoldNoSecret(t *testing.T) {
	var v map[string]any
	if err := yaml.Unmarshal([]byte(readFile(t, ciValues)), &v); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"github.privateKey", "github.webhookSecret", "api.token", "export.token", "redis.password"} {
		if s, _ := lookup(v, p).(string); s != "" {
			t.Errorf("%s: %s is set inline", ciValues, p)
		}
	}
}

func lookup(v any, dotted string) any {
	for _, p := range strings.Split(dotted, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[p]
	}
	return v
}

// secretVars are the variables of the credentials: none may be an
// environment value in a pod, each comes as its *_FILE.
var secretVars = []string{"GITHUB_WEBHOOK_SECRET", "GITHUB_WEBHOOK_SECRET_PREVIOUS", "QUEEN_API_TOKEN",
	"QUEEN_EXPORT_TOKEN", "QUEEN_REDIS_PASSWORD", "QUEEN_REDIS_SENTINEL_PASSWORD"}

// TestCredentialsReachThePodsAsFilesOnly: every credential is a file of a
// read-only Secret mount named by its *_FILE variable, never an
// environment value (kubectl describe, /proc/PID/environ and crash dumps
// show those); only the App's id, no secret, is a secretKeyRef. The
// previous webhook secret is an optional key: absent, the webhook starts
// without it; present, it is taken.
func TestCredentialsReachThePodsAsFilesOnly(t *testing.T) {
	withAll := with(with(with(with(without(inlineValues(), "redis.host"), "redis.sentinel",
		map[string]any{"addresses": []any{"s1:26379"}, "masterName": "m", "password": "sentinel-password-0123"}),
		"redis.password", "redis-password-0123"), "export.url", "https://export.example/queen/export"),
		"export.repo", "hive/t27")
	withAll = with(withAll, "export.token", "export-token-0123456789")
	scenarios := scenarios(t)
	scenarios["every secret"] = withAll
	scenarios["rotating"] = with(inlineValues(), "github.webhookSecretPrevious", "previous-secret-0123456789")
	for name, vals := range scenarios {
		t.Run(name, func(t *testing.T) {
			o := render(t, vals)
			store := o.store(readmeSecrets(t))
			for _, d := range o.Deployments {
				e := o.env(t, &d, store)
				for _, p := range e.problems {
					t.Error(p)
				}
				for _, r := range e.refs {
					if r.Key != "app-id" {
						t.Errorf("%s reads key %s of Secret %s into its environment", d.Name, r.Key, r.Name)
					}
				}
				for _, v := range secretVars {
					if _, ok := e.vars[v]; ok {
						t.Errorf("%s sets %s in its environment", d.Name, v)
					}
				}
				for v := range e.files {
					for _, m := range d.Spec.Template.Spec.Containers[0].VolumeMounts {
						if strings.HasPrefix(e.vars[v], m.MountPath+"/") && !m.ReadOnly {
							t.Errorf("%s: %s is on a writable mount", d.Name, v)
						}
					}
				}
				role := config.Worker
				if strings.HasSuffix(d.Name, "-webhook") {
					role = config.Webhook
				}
				cfg, err := config.Load(role, e.getenv)
				if err != nil {
					t.Fatalf("%s would not start: %v", d.Name, err)
				}
				if role == config.Webhook {
					want := ""
					if name == "rotating" {
						want = "previous-secret-0123456789"
					}
					if cfg.WebhookSecret != testWebhookSecret || cfg.WebhookSecretPrev != want {
						t.Errorf("%s: webhook secrets %q and %q, want %q and %q", d.Name, cfg.WebhookSecret, cfg.WebhookSecretPrev, testWebhookSecret, want)
					}
				}
				if name == "every secret" && role == config.Worker &&
					(cfg.ExportToken != "export-token-0123456789" || cfg.RedisPassword != "redis-password-0123" || cfg.RedisSentinelPassword != "sentinel-password-0123") {
					t.Errorf("%s: export token %q, Redis passwords %q %q", d.Name, cfg.ExportToken, cfg.RedisPassword, cfg.RedisSentinelPassword)
				}
			}
		})
	}
}

// The chart creates the ledger once, after the first install, with the
// Redis settings and password the binaries use; never on an upgrade,
// which must not put a new, empty ledger over a lost one.
func TestChartInitsTheLedgerOnceAfterInstall(t *testing.T) {
	for name, vals := range scenarios(t) {
		t.Run(name, func(t *testing.T) {
			o := render(t, vals)
			if len(o.Jobs) != 1 {
				t.Fatalf("%d Jobs rendered, want the ledger's init", len(o.Jobs))
			}
			j := o.Jobs[0]
			if hook := j.Annotations["helm.sh/hook"]; hook != "post-install" {
				t.Errorf("%s runs as hook %q, want post-install only", j.Name, hook)
			}
			c := j.Spec.Template.Spec.Containers[0]
			if !slices.Equal(c.Command, []string{"queenctl", "ledger", "init"}) {
				t.Errorf("%s runs %q", j.Name, c.Command)
			}
			store := o.store(readmeSecrets(t))
			e := o.env(t, &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Template: j.Spec.Template}}, store)
			if len(e.problems) > 0 {
				t.Fatalf("%s: %v", j.Name, e.problems)
			}
			got, err := config.Load(config.LedgerTool, e.getenv)
			if err != nil {
				t.Fatalf("%s: queenctl ledger init's configuration: %v", j.Name, err)
			}
			want, err := config.Load(config.Webhook, o.env(t, o.deployment(t, "webhook"), store).getenv)
			if err != nil {
				t.Fatal(err)
			}
			gs, _ := got.Redis()
			ws, _ := want.Redis()
			if gs.String() != ws.String() || got.RedisPassword != want.RedisPassword || got.RedisSentinelPassword != want.RedisSentinelPassword {
				t.Errorf("%s reaches Redis as %s, the webhook as %s (or with another password)", j.Name, gs, ws)
			}
		})
	}
	if o := render(t, with(inlineValues(), "ledgerInit.enabled", false)); len(o.Jobs) != 0 {
		t.Errorf("ledgerInit.enabled false still renders %d Jobs", len(o.Jobs))
	}
}
