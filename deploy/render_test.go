package deploy

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/queen-app/queen-app/internal/testkit"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/releaseutil"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

const (
	chartDir  = "../charts/queen-app"
	ciValues  = "../charts/queen-app/ci/production-values.yaml"
	release   = "q"
	namespace = "queen"
)

var (
	loadOnce    sync.Once
	loadedChart *chart.Chart
	loadErr     error
)

func queenChart(t *testing.T) *chart.Chart {
	t.Helper()
	loadOnce.Do(func() { loadedChart, loadErr = loader.Load(chartDir) })
	if loadErr != nil {
		t.Fatalf("load %s: %v", chartDir, loadErr)
	}
	return loadedChart
}

// testKeyPEM is a real RSA key: the binaries' config parses the key file.
var testKeyPEM = func() string {
	k, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		panic(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)}))
}()

const (
	testWebhookSecret = "webhook-secret-0123456789abcdef"
	testAPIToken      = "api-token-0123456789abcdef"
	testAppID         = "12345"
)

// inlineValues are the least a person trying the chart out sets: inline
// credentials and a Redis host.
func inlineValues() map[string]any {
	return map[string]any{
		"github": map[string]any{"appId": testAppID, "privateKey": testKeyPEM, "webhookSecret": testWebhookSecret},
		"api":    map[string]any{"token": testAPIToken},
		"redis":  map[string]any{"host": "redis.queen.svc"},
	}
}

// ciFileValues reads the chart's production-like values file.
func ciFileValues(t *testing.T) map[string]any {
	t.Helper()
	b, err := os.ReadFile(ciValues)
	if err != nil {
		t.Fatal(err)
	}
	v, err := chartutil.ReadValues(b)
	if err != nil {
		t.Fatalf("%s: %v", ciValues, err)
	}
	return v
}

// with returns a deep copy of base with the dotted path set to v.
func with(base map[string]any, dotted string, v any) map[string]any {
	out := deepCopy(base).(map[string]any)
	m := out
	parts := strings.Split(dotted, ".")
	for _, p := range parts[:len(parts)-1] {
		next, ok := m[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[p] = next
		}
		m = next
	}
	m[parts[len(parts)-1]] = v
	return out
}

func without(base map[string]any, dotted string) map[string]any {
	out := deepCopy(base).(map[string]any)
	m := out
	parts := strings.Split(dotted, ".")
	for _, p := range parts[:len(parts)-1] {
		m = m[p].(map[string]any)
	}
	delete(m, parts[len(parts)-1])
	return out
}

func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = deepCopy(e)
		}
		return m
	case []any:
		s := make([]any, len(x))
		for i, e := range x {
			s[i] = deepCopy(e)
		}
		return s
	}
	return v
}

// renderErr renders the chart as `helm install` would (schema checked,
// required values enforced) and returns the files.
func renderErr(t *testing.T, vals map[string]any) (map[string]string, error) {
	t.Helper()
	ch := queenChart(t)
	rv, err := chartutil.ToRenderValues(ch, vals,
		chartutil.ReleaseOptions{Name: release, Namespace: namespace, IsInstall: true, Revision: 1}, nil)
	if err != nil {
		return nil, err
	}
	return engine.Render(ch, rv)
}

// objects is one render, decoded.
type objects struct {
	Deployments     []appsv1.Deployment
	Services        []corev1.Service
	ConfigMaps      []corev1.ConfigMap
	Secrets         []corev1.Secret
	ServiceAccounts []corev1.ServiceAccount
	TestPods        []corev1.Pod
	Jobs            []batchv1.Job // hooks: the ledger's init
	PDBs            []policyv1.PodDisruptionBudget
	HPAs            []autoscalingv2.HorizontalPodAutoscaler
	Ingresses       []networkingv1.Ingress
	NetworkPolicies []networkingv1.NetworkPolicy
	ServiceMonitors []serviceMonitor
	PrometheusRules []prometheusRule
	Notes           string
	// Docs are the raw manifests by "Kind/name".
	Docs map[string]string
}

// serviceMonitor and prometheusRule are the Prometheus Operator's
// monitoring.coreos.com/v1 objects, as far as the chart uses them.
type serviceMonitor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Selector  metav1.LabelSelector `json:"selector"`
		Endpoints []struct {
			Port      string `json:"port"`
			Path      string `json:"path"`
			Interval  string `json:"interval"`
			Scheme    string `json:"scheme"`
			TLSConfig *struct {
				ServerName string `json:"serverName"`
				CA         struct {
					Secret *corev1.SecretKeySelector `json:"secret"`
				} `json:"ca"`
			} `json:"tlsConfig"`
		} `json:"endpoints"`
	} `json:"spec"`
}

type prometheusRule struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Groups []struct {
			Name  string `json:"name"`
			Rules []struct {
				Alert       string            `json:"alert"`
				Expr        string            `json:"expr"`
				For         string            `json:"for"`
				Labels      map[string]string `json:"labels"`
				Annotations map[string]string `json:"annotations"`
			} `json:"rules"`
		} `json:"groups"`
	} `json:"spec"`
}

// render renders vals and decodes every manifest strictly into its API
// type: an unknown or misspelled field fails the test.
func render(t *testing.T, vals map[string]any) *objects {
	t.Helper()
	files, err := renderErr(t, vals)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	o := &objects{Docs: map[string]string{}}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		content := files[name]
		if strings.HasSuffix(name, "NOTES.txt") {
			o.Notes = content
			continue
		}
		if path.Base(name)[0] == '_' {
			continue
		}
		for _, doc := range releaseutil.SplitManifests(content) {
			if strings.TrimSpace(stripComments(doc)) == "" {
				continue
			}
			o.decode(t, name, doc)
		}
	}
	return o
}

func stripComments(doc string) string {
	var b strings.Builder
	for _, l := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

func (o *objects) decode(t *testing.T, file, doc string) {
	t.Helper()
	var tm struct {
		metav1.TypeMeta `json:",inline"`
		Metadata        struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
		t.Fatalf("%s: not YAML: %v\n%s", file, err, doc)
	}
	key := tm.Kind + "/" + tm.Metadata.Name
	if _, dup := o.Docs[key]; dup {
		t.Errorf("%s: %s rendered twice", file, key)
	}
	o.Docs[key] = doc
	strict := func(apiVersion string, into any) {
		if tm.APIVersion != apiVersion {
			t.Errorf("%s: %s has apiVersion %q, want %q", file, key, tm.APIVersion, apiVersion)
		}
		if err := yaml.UnmarshalStrict([]byte(doc), into); err != nil {
			t.Errorf("%s: %s does not decode strictly: %v", file, key, err)
		}
	}
	switch tm.Kind {
	case "Deployment":
		var x appsv1.Deployment
		strict("apps/v1", &x)
		o.Deployments = append(o.Deployments, x)
	case "Service":
		var x corev1.Service
		strict("v1", &x)
		o.Services = append(o.Services, x)
	case "ConfigMap":
		var x corev1.ConfigMap
		strict("v1", &x)
		o.ConfigMaps = append(o.ConfigMaps, x)
	case "Secret":
		var x corev1.Secret
		strict("v1", &x)
		o.Secrets = append(o.Secrets, x)
	case "Pod": // helm test hooks
		var x corev1.Pod
		strict("v1", &x)
		o.TestPods = append(o.TestPods, x)
	case "Job":
		var x batchv1.Job
		strict("batch/v1", &x)
		o.Jobs = append(o.Jobs, x)
	case "ServiceAccount":
		var x corev1.ServiceAccount
		strict("v1", &x)
		o.ServiceAccounts = append(o.ServiceAccounts, x)
	case "PodDisruptionBudget":
		var x policyv1.PodDisruptionBudget
		strict("policy/v1", &x)
		o.PDBs = append(o.PDBs, x)
	case "HorizontalPodAutoscaler":
		var x autoscalingv2.HorizontalPodAutoscaler
		strict("autoscaling/v2", &x)
		o.HPAs = append(o.HPAs, x)
	case "Ingress":
		var x networkingv1.Ingress
		strict("networking.k8s.io/v1", &x)
		o.Ingresses = append(o.Ingresses, x)
	case "NetworkPolicy":
		var x networkingv1.NetworkPolicy
		strict("networking.k8s.io/v1", &x)
		o.NetworkPolicies = append(o.NetworkPolicies, x)
	case "ServiceMonitor":
		var x serviceMonitor
		strict("monitoring.coreos.com/v1", &x)
		o.ServiceMonitors = append(o.ServiceMonitors, x)
	case "PrometheusRule":
		var x prometheusRule
		strict("monitoring.coreos.com/v1", &x)
		o.PrometheusRules = append(o.PrometheusRules, x)
	default:
		t.Errorf("%s: unexpected kind %q", file, tm.Kind)
	}
}

// deployment returns the Deployment of component (webhook, worker).
func (o *objects) deployment(t *testing.T, component string) *appsv1.Deployment {
	t.Helper()
	for i, d := range o.Deployments {
		if d.Spec.Template.Labels["app.kubernetes.io/component"] == component {
			return &o.Deployments[i]
		}
	}
	t.Fatalf("no %s Deployment rendered", component)
	return nil
}

func (o *objects) service(t *testing.T, name string) *corev1.Service {
	t.Helper()
	for i, s := range o.Services {
		if s.Name == name {
			return &o.Services[i]
		}
	}
	t.Fatalf("no Service %s rendered", name)
	return nil
}

// secretStore holds the Secrets a pod can read: those the chart renders and
// those the README tells a person to create.
type secretStore map[string]map[string][]byte

func (s secretStore) add(name string, data map[string][]byte) {
	if s[name] == nil {
		s[name] = map[string][]byte{}
	}
	for k, v := range data {
		s[name][k] = v
	}
}

func (o *objects) store(existing secretStore) secretStore {
	s := secretStore{}
	for name, data := range existing {
		s.add(name, data)
	}
	for _, sec := range o.Secrets {
		s.add(sec.Name, sec.Data)
	}
	return s
}

// podEnv is the environment a container of d starts with, resolved the way
// the kubelet does: envFrom ConfigMaps, then env values and secretKeyRefs.
// Each *_FILE variable's path is rewritten to a file holding what the
// Secret volume would mount there, so a binary's config can read it; an
// optional key the Secret lacks is a path where nothing is, as in the pod.
type podEnv struct {
	vars     map[string]string
	files    map[string]string // *_FILE variable -> the file on disk standing for the mounted one
	secrets  map[string]string // *_FILE variable -> the content mounted there
	keyFile  string            // the path GITHUB_APP_PRIVATE_KEY_FILE resolves to on disk
	refs     []corev1.SecretKeySelector
	problems []string
}

func (o *objects) env(t *testing.T, d *appsv1.Deployment, store secretStore) *podEnv {
	t.Helper()
	c := d.Spec.Template.Spec.Containers[0]
	e := &podEnv{vars: map[string]string{}, files: map[string]string{}, secrets: map[string]string{}}
	for _, from := range c.EnvFrom {
		if from.ConfigMapRef == nil {
			e.problems = append(e.problems, "envFrom other than a ConfigMap")
			continue
		}
		found := false
		for _, cm := range o.ConfigMaps {
			if cm.Name == from.ConfigMapRef.Name {
				found = true
				for k, v := range cm.Data {
					e.vars[k] = v
				}
			}
		}
		if !found {
			e.problems = append(e.problems, "envFrom names ConfigMap "+from.ConfigMapRef.Name+" that is not rendered")
		}
	}
	for _, v := range c.Env {
		switch {
		case v.ValueFrom == nil:
			e.vars[v.Name] = v.Value
		case v.ValueFrom.SecretKeyRef != nil:
			ref := v.ValueFrom.SecretKeyRef
			e.refs = append(e.refs, *ref)
			val, ok := store[ref.Name][ref.Key]
			switch {
			case ok:
				e.vars[v.Name] = string(val)
			case ref.Optional != nil && *ref.Optional:
			default:
				e.problems = append(e.problems, fmt.Sprintf("%s: Secret %s has no key %s", v.Name, ref.Name, ref.Key))
			}
		default:
			e.problems = append(e.problems, v.Name+": valueFrom other than a secretKeyRef")
		}
	}
	dir := t.TempDir()
	for name, p := range e.vars {
		if !strings.HasSuffix(name, "_FILE") {
			continue
		}
		local := filepath.Join(dir, name)
		e.files[name] = local
		content, err := mountedSecretFile(d, store, p)
		switch {
		case errors.Is(err, errOptionalAbsent):
			continue // nothing at local either
		case err != nil:
			e.problems = append(e.problems, name+": "+err.Error())
			continue
		}
		e.secrets[name] = string(content)
		if err := os.WriteFile(local, content, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := e.secrets["GITHUB_APP_PRIVATE_KEY_FILE"]; ok {
		e.keyFile = e.files["GITHUB_APP_PRIVATE_KEY_FILE"]
	}
	return e
}

// getenv is what the binary's config sees.
func (e *podEnv) getenv(name string) string {
	if f, ok := e.files[name]; ok {
		return f
	}
	return e.vars[name]
}

// errOptionalAbsent is an optional key its Secret lacks: the kubelet mounts
// nothing in its place.
var errOptionalAbsent = errors.New("optional key absent")

// mountedSecretFile is the content a Secret volume, or a projected volume
// of Secrets, mounts at file in d's container, or an error saying why
// nothing is there (errOptionalAbsent for an optional key left out).
func mountedSecretFile(d *appsv1.Deployment, store secretStore, file string) ([]byte, error) {
	c := d.Spec.Template.Spec.Containers[0]
	for _, m := range c.VolumeMounts {
		rel, err := filepath.Rel(m.MountPath, file)
		if err != nil || strings.HasPrefix(rel, "..") || m.SubPath != "" {
			continue
		}
		for _, vol := range d.Spec.Template.Spec.Volumes {
			if vol.Name != m.Name {
				continue
			}
			var sources []*corev1.SecretProjection
			switch {
			case vol.Secret != nil:
				sources = append(sources, &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: vol.Secret.SecretName},
					Items: vol.Secret.Items, Optional: vol.Secret.Optional})
			case vol.Projected != nil:
				for _, src := range vol.Projected.Sources {
					if src.Secret == nil {
						return nil, fmt.Errorf("projected volume %s holds something other than Secrets", vol.Name)
					}
					sources = append(sources, src.Secret)
				}
			default:
				return nil, fmt.Errorf("%s is on volume %s, which is not a Secret", file, vol.Name)
			}
			for _, src := range sources {
				for _, it := range src.Items {
					if it.Path != rel {
						continue
					}
					b, ok := store[src.Name][it.Key]
					switch {
					case ok:
						return b, nil
					case src.Optional != nil && *src.Optional:
						return nil, errOptionalAbsent
					}
					return nil, fmt.Errorf("Secret %s has no key %s", src.Name, it.Key)
				}
			}
			return nil, fmt.Errorf("volume %s mounts no item at %s", vol.Name, rel)
		}
	}
	return nil, fmt.Errorf("no volume is mounted at %s", file)
}

// secretItems are the Secret keys a pod's volumes mount, by Secret, with
// whether each is optional.
func secretItems(d *appsv1.Deployment) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	add := func(name string, items []corev1.KeyToPath, optional *bool) {
		if out[name] == nil {
			out[name] = map[string]bool{}
		}
		for _, it := range items {
			out[name][it.Key] = optional != nil && *optional
		}
	}
	for _, v := range d.Spec.Template.Spec.Volumes {
		switch {
		case v.Secret != nil:
			add(v.Secret.SecretName, v.Secret.Items, v.Secret.Optional)
		case v.Projected != nil:
			for _, src := range v.Projected.Sources {
				if src.Secret != nil {
					add(src.Secret.Name, src.Secret.Items, src.Secret.Optional)
				}
			}
		}
	}
	return out
}

// readmeSecrets are the Secrets the README's kubectl commands create, with
// a value the test picks for each key.
func readmeSecrets(t *testing.T) secretStore {
	t.Helper()
	s := secretStore{}
	for _, cmd := range readmeCommands(t, "kubectl") {
		m := regexp.MustCompile(`create secret generic (\S+)`).FindStringSubmatch(cmd)
		if m == nil {
			continue
		}
		data := map[string][]byte{}
		for _, kv := range regexp.MustCompile(`--from-(literal|file)=([A-Za-z0-9._-]+)=`).FindAllStringSubmatch(cmd, -1) {
			data[kv[2]] = []byte(testValueFor(kv[2]))
		}
		if len(data) == 0 {
			t.Errorf("README: %q creates a Secret with no keys", cmd)
		}
		s.add(m[1], data)
	}
	if len(s) == 0 {
		t.Fatal("README: no `kubectl create secret generic` commands found")
	}
	return s
}

func testValueFor(key string) string {
	switch {
	case strings.HasSuffix(key, ".pem"):
		return testKeyPEM
	case key == "app-id":
		return testAppID
	case strings.Contains(key, "webhook"):
		return testWebhookSecret
	default:
		return "value-of-" + key + "-0123456789"
	}
}

// readmeCommands are the shell commands of the README's code blocks that
// start with prog, with continuation lines joined.
func readmeCommands(t *testing.T, prog string) []string {
	t.Helper()
	var out []string
	var cur strings.Builder
	inBlock := false
	for _, line := range strings.Split(readme(t), "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") {
			inBlock = !inBlock
			continue
		}
		indented := strings.HasPrefix(line, "    ")
		if !inBlock && !indented && cur.Len() == 0 {
			continue
		}
		if cur.Len() > 0 || strings.HasPrefix(trimmed, prog+" ") {
			cur.WriteString(strings.TrimSuffix(trimmed, `\`) + " ")
			if !strings.HasSuffix(trimmed, `\`) {
				out = append(out, strings.TrimSpace(cur.String()))
				cur.Reset()
			}
		}
	}
	return out
}

// readme is the operator's documents as one text (testkit.OperatorDocs).
func readme(t *testing.T) string { return testkit.OperatorDocs(t, "..") }

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
