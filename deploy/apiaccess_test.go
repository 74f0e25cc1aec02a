package deploy

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chartutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"

	"github.com/queen-app/queen-app/internal/apiclient"
	"github.com/queen-app/queen-app/internal/config"
	"github.com/queen-app/queen-app/internal/serve"
	"github.com/queen-app/queen-app/internal/testkit"
)

// apiTLSSecret is the kubernetes.io/tls Secret cert-manager leaves for the
// claims API: a certificate naming the Service and the API Ingress's host.
const (
	apiTLSSecret = "queen-api-tls"
	apiHost      = "queen-api.example.com"
)

func apiTLSStore(t *testing.T) (secretStore, testkit.Cert) {
	t.Helper()
	c := testkit.SelfSigned(t, t.TempDir(), "api", release+"-queen-app-api."+namespace+".svc", apiHost, "localhost")
	key := readFile(t, c.KeyFile)
	return secretStore{apiTLSSecret: {"tls.crt": c.PEM, "tls.key": []byte(key), "ca.crt": c.PEM}}, c
}

func (o *objects) ingress(name string) *networkingv1.Ingress {
	for i, ing := range o.Ingresses {
		if ing.Name == name {
			return &o.Ingresses[i]
		}
	}
	return nil
}

// doctorEnv is the helm test Pod's environment, resolved as the kubelet would.
func (o *objects) doctorEnv(t *testing.T, store secretStore) *podEnv {
	t.Helper()
	pod := o.doctorPod(t)
	e := o.env(t, &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: pod.Spec}}}, store)
	for _, p := range e.problems {
		t.Error("doctor: " + p)
	}
	return e
}

// The API Ingress routes /v1, only, of its own host to the port the
// claims API listens on, with its own class, annotations and TLS; the
// webhook's Ingress stays /webhook only.
func TestAPIIngressRoutesOnlyV1ToTheClaimsAPI(t *testing.T) {
	if o := render(t, inlineValues()); o.ingress(release+"-queen-app-api") != nil {
		t.Fatal("an API Ingress is rendered by default")
	}
	annotations := map[string]any{"nginx.ingress.kubernetes.io/whitelist-source-range": "203.0.113.0/24"}
	vals := with(with(inlineValues(), "apiIngress", map[string]any{"enabled": true, "host": apiHost,
		"className": "internal", "annotations": annotations, "tlsSecretName": "queen-api-public-tls"}),
		"ingress", map[string]any{"enabled": true, "host": "queen-app.example.com"})
	o := render(t, vals)
	if len(o.Ingresses) != 2 {
		t.Fatalf("%d Ingresses, want the webhook's and the API's", len(o.Ingresses))
	}
	hook := o.ingress(release + "-queen-app")
	if hook == nil || len(hook.Spec.Rules[0].HTTP.Paths) != 1 || hook.Spec.Rules[0].HTTP.Paths[0].Path != "/webhook" {
		t.Errorf("the webhook's Ingress changed: %+v", hook)
	}
	ing := o.ingress(release + "-queen-app-api")
	if ing == nil {
		t.Fatal("no API Ingress")
	}
	if ing.Spec.IngressClassName == nil || *ing.Spec.IngressClassName != "internal" ||
		ing.Annotations["nginx.ingress.kubernetes.io/whitelist-source-range"] != "203.0.113.0/24" {
		t.Errorf("API Ingress class %v, annotations %v; want its own", ing.Spec.IngressClassName, ing.Annotations)
	}
	if len(ing.Spec.TLS) != 1 || ing.Spec.TLS[0].SecretName != "queen-api-public-tls" ||
		len(ing.Spec.TLS[0].Hosts) != 1 || ing.Spec.TLS[0].Hosts[0] != apiHost {
		t.Errorf("API Ingress TLS %+v, want %s for %s", ing.Spec.TLS, "queen-api-public-tls", apiHost)
	}
	if len(ing.Spec.Rules) != 1 || ing.Spec.Rules[0].Host != apiHost || ing.Spec.Rules[0].HTTP == nil ||
		len(ing.Spec.Rules[0].HTTP.Paths) != 1 {
		t.Fatalf("API Ingress rules %+v, want one path of %s", ing.Spec.Rules, apiHost)
	}
	p := ing.Spec.Rules[0].HTTP.Paths[0]
	if p.Path != "/v1" || p.PathType == nil || *p.PathType != networkingv1.PathTypePrefix {
		t.Errorf("API Ingress path %q (%v), want the prefix /v1: health and metrics stay inside", p.Path, p.PathType)
	}
	// The backend is the port the webhook's claims API listens on.
	svc := o.service(t, p.Backend.Service.Name)
	if svc.Name != release+"-queen-app-api" || svc.Spec.Ports[0].Name != p.Backend.Service.Port.Name {
		t.Fatalf("API Ingress goes to %s port %q, want the API Service's", svc.Name, p.Backend.Service.Port.Name)
	}
	wd := o.deployment(t, "webhook")
	cfg, err := config.Load(config.Webhook, o.env(t, wd, o.store(readmeSecrets(t))).getenv)
	if err != nil {
		t.Fatal(err)
	}
	tp := svc.Spec.Ports[0].TargetPort
	if got := containerPort(t, wd.Spec.Template.Spec.Containers[0], tp.StrVal, tp.IntVal); got != portOf(t, cfg.APIListen) {
		t.Errorf("API Ingress reaches container port %d, the claims API listens on %s", got, cfg.APIListen)
	}

	if _, err := renderErr(t, with(inlineValues(), "apiIngress.enabled", true)); err == nil ||
		!strings.Contains(err.Error(), "apiIngress.host is required with apiIngress.enabled") {
		t.Errorf("apiIngress.enabled without a host: %v, want refused naming apiIngress.host", err)
	}
	for name, bad := range map[string]map[string]any{
		"unknown key":          with(inlineValues(), "apiIngress.path", "/api"),
		"annotation not text":  with(inlineValues(), "apiIngress.annotations", map[string]any{"a": 1}),
		"enabled not a switch": with(inlineValues(), "apiIngress.enabled", "yes"),
	} {
		if _, err := renderErr(t, bad); err == nil {
			t.Errorf("%s: rendered, want the schema to refuse it", name)
		}
	}
}

// api.tls.secretName: the webhook serves the claims API over HTTPS with
// the Secret's pair, the probes and the ServiceMonitor ask over HTTPS, and
// helm test's doctor reaches it at the Service's name trusting the
// Secret's CA.
func TestAPIListenerTLSFromASecret(t *testing.T) {
	store, cert := apiTLSStore(t)
	o := render(t, with(with(with(inlineValues(), "api.tls.secretName", apiTLSSecret), "api.tls.caKey", "ca.crt"), "metrics.serviceMonitor.enabled", true))
	store = o.store(store)
	for k, v := range readmeSecrets(t) {
		store.add(k, v)
	}
	wd := o.deployment(t, "webhook")
	we := o.env(t, wd, store)
	for _, p := range we.problems {
		t.Error("webhook: " + p)
	}
	cfg, err := config.Load(config.Webhook, we.getenv)
	if err != nil {
		t.Fatalf("webhook would not start: %v", err)
	}
	if !cfg.APITLS.Enabled() || we.secrets["QUEEN_API_TLS_CERT_FILE"] != string(cert.PEM) {
		t.Fatalf("webhook's API TLS %+v does not serve the Secret's certificate", cfg.APITLS)
	}
	if cfg.TLS.Enabled() {
		t.Errorf("the webhook receiver got TLS too; the Ingress terminates it")
	}
	c := wd.Spec.Template.Spec.Containers[0]
	for _, m := range c.VolumeMounts {
		if m.Name == "api-tls" && (!m.ReadOnly || m.SubPath != "") {
			t.Errorf("api-tls mount %+v: want a read-only directory (a subPath never sees a renewal)", m)
		}
	}
	for name, p := range map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
		if p.HTTPGet.Scheme != corev1.URISchemeHTTPS {
			t.Errorf("%s probe scheme %q, want HTTPS", name, p.HTTPGet.Scheme)
		}
	}
	if len(o.ServiceMonitors) != 1 {
		t.Fatalf("%d ServiceMonitors", len(o.ServiceMonitors))
	}
	for _, ep := range o.ServiceMonitors[0].Spec.Endpoints {
		if ep.Port != "api" {
			continue
		}
		if ep.Scheme != "https" || ep.TLSConfig == nil || ep.TLSConfig.ServerName != release+"-queen-app-api."+namespace+".svc" ||
			ep.TLSConfig.CA.Secret == nil || ep.TLSConfig.CA.Secret.Name != apiTLSSecret || ep.TLSConfig.CA.Secret.Key != "ca.crt" {
			t.Errorf("ServiceMonitor's api endpoint %+v does not scrape over HTTPS trusting the Secret's CA", ep)
		}
	}

	// helm test's doctor, with the settings it is given, reaches a server
	// serving the webhook's pair at the URL it is given.
	de := o.doctorEnv(t, store)
	if on, _ := config.ParseFlag(de.vars["QUEEN_ALLOW_INSECURE_URLS"]); on {
		t.Error("doctor still gets QUEEN_ALLOW_INSECURE_URLS=on")
	}
	dcfg, err := config.Load(config.Worker, de.getenv)
	if err != nil {
		t.Fatalf("doctor would refuse its settings: %v", err)
	}
	if want := "https://" + release + "-queen-app-api." + namespace + ".svc:8081"; dcfg.QueenAPI != want {
		t.Errorf("doctor's QUEEN_API_URL %q, want %q", dcfg.QueenAPI, want)
	}
	reachOverTLS(t, cfg, dcfg)

	// By default (a publicly trusted certificate) the doctor gets no CA
	// file, and a Secret of kubectl create secret tls (no ca.crt) starts
	// the pod: the kubelet refuses one that mounts a key its Secret lacks.
	o = render(t, with(inlineValues(), "api.tls.secretName", apiTLSSecret))
	if _, ok := o.doctorEnv(t, store).vars["QUEEN_CA_FILE"]; ok {
		t.Error("api.tls.caKey empty: the doctor still gets QUEEN_CA_FILE")
	}
	plain := secretStore{apiTLSSecret: {"tls.crt": cert.PEM, "tls.key": store[apiTLSSecret]["tls.key"]}}
	for _, d := range o.Deployments {
		for key, optional := range secretItems(&d)[apiTLSSecret] {
			if _, ok := plain[apiTLSSecret][key]; !ok && !optional {
				t.Errorf("%s mounts key %s, which a kubernetes.io/tls Secret made by kubectl need not have", d.Name, key)
			}
		}
	}
}

// reachOverTLS serves the claims API's TLS as the webhook's cfg sets it
// and asks it as queenctl with the doctor's dcfg: the name, the CA and the
// pair fit together.
func reachOverTLS(t *testing.T, cfg, dcfg *config.Config) {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	tc, err := serve.TLSConfig(cfg.APITLS.CertFile, cfg.APITLS.KeyFile, log)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := serve.NewServer(ln.Addr().String(), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+cfg.APIToken {
			http.Error(w, `{"error":"unauthorized"}`, http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"claims":[]}`)
	}), log)
	srv.TLSConfig = tc
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve.RunListener(ctx, srv, ln, log) }()
	defer func() { cancel(); <-done }()

	rt, err := apiclient.Transport(dcfg.QueenCA)
	if err != nil {
		t.Fatal(err)
	}
	tr := rt.(*http.Transport).Clone()
	tr.DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, ln.Addr().String()) // the cluster's DNS
	}
	api, err := apiclient.New(dcfg.QueenAPI, dcfg.APIToken, &http.Client{Transport: tr})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := api.List(ctx, apiclient.ListOptions{Limit: 1}); err != nil {
		t.Errorf("doctor asking %s: %v", dcfg.QueenAPI, err)
	}
}

// A half-set pair is refused at render in the binary's words.
func TestAPITLSHalfSetIsRefusedAsTheBinaryDoes(t *testing.T) {
	_, cert := apiTLSStore(t)
	for value, only := range map[string]string{"certKey": "QUEEN_API_TLS_KEY_FILE", "keyKey": "QUEEN_API_TLS_CERT_FILE"} {
		// What the webhook says with only the other file.
		env := map[string]string{"QUEEN_API_TLS_CERT_FILE": cert.CertFile, "QUEEN_API_TLS_KEY_FILE": cert.KeyFile}
		delete(env, map[string]string{"QUEEN_API_TLS_KEY_FILE": "QUEEN_API_TLS_CERT_FILE", "QUEEN_API_TLS_CERT_FILE": "QUEEN_API_TLS_KEY_FILE"}[only])
		_, err := config.Load(config.Webhook, func(k string) string { return env[k] })
		var bad *config.Error
		var es config.Errors
		switch {
		case errors.As(err, &es):
			for _, e := range es {
				if strings.HasPrefix(e.Var, "QUEEN_API_TLS_") {
					bad = e
				}
			}
		default:
			errors.As(err, &bad)
		}
		if bad == nil {
			t.Fatalf("the webhook takes half a pair: %v", err)
		}
		_, err = renderErr(t, with(with(inlineValues(), "api.tls.secretName", apiTLSSecret), "api.tls."+value, ""))
		want := "(" + bad.Var + "): " + bad.Problem
		if err == nil || !strings.Contains(err.Error(), "api.tls.") || !strings.Contains(err.Error(), want) {
			t.Errorf("api.tls.%s empty: %v, want the binary's words %q", value, err, want)
		}
	}
}

// Every QUEEN_API_URL NOTES.txt prints is one queenctl takes as it is,
// without QUEEN_ALLOW_INSECURE_URLS; NOTES give the port-forward recipe and,
// when on, the API Ingress's URL.
func TestNotesPrintURLsQueenctlTakes(t *testing.T) {
	re := regexp.MustCompile(`QUEEN_API_URL=(\S+)`)
	for name, vals := range map[string]map[string]any{
		"plain": inlineValues(),
		"tls and ingress": with(with(with(inlineValues(), "api.tls.secretName", apiTLSSecret), "api.tls.caKey", "ca.crt"),
			"apiIngress", map[string]any{"enabled": true, "host": apiHost}),
	} {
		o := render(t, vals)
		urls := re.FindAllStringSubmatch(o.Notes, -1)
		if len(urls) < 3 {
			t.Fatalf("%s: NOTES print %d QUEEN_API_URLs:\n%s", name, len(urls), o.Notes)
		}
		for _, m := range urls {
			env := map[string]string{"QUEEN_API_URL": m[1], "QUEEN_API_TOKEN": testAPIToken}
			if _, err := config.Load(config.CLI, func(k string) string { return env[k] }); err != nil {
				t.Errorf("%s: NOTES print QUEEN_API_URL=%s, queenctl refuses it: %v", name, m[1], err)
			}
		}
		pf := "kubectl -n " + namespace + " port-forward svc/" + release + "-queen-app-api 8081:8081"
		if !strings.Contains(o.Notes, pf) {
			t.Errorf("%s: NOTES lack %q:\n%s", name, pf, o.Notes)
		}
		local := "QUEEN_API_URL=http://127.0.0.1:8081 queenctl claims list"
		if name != "plain" {
			local = "QUEEN_API_URL=https://localhost:8081 QUEEN_CA_FILE="
			if !strings.Contains(o.Notes, "QUEEN_API_URL=https://"+apiHost+" queenctl claims list") {
				t.Errorf("%s: NOTES lack the API Ingress's URL:\n%s", name, o.Notes)
			}
		}
		if !strings.Contains(o.Notes, local) {
			t.Errorf("%s: NOTES lack %q after the port-forward:\n%s", name, local, o.Notes)
		}
	}
}

// The README's values for a Queen outside the cluster, beside its first
// values, render the API Ingress and the listener's TLS, and every
// QUEEN_API_URL the README shows is one queenctl takes.
func TestReadmeLetsAQueenOutsideTheClusterIn(t *testing.T) {
	base, err := chartutil.ReadValues([]byte(readmeBlock(t, "# queen-app-values.yaml")))
	if err != nil {
		t.Fatalf("README's values: %v", err)
	}
	more, err := chartutil.ReadValues([]byte(readmeBlock(t, "# queen-app-api-values.yaml")))
	if err != nil {
		t.Fatalf("README's API values: %v", err)
	}
	vals := chartutil.CoalesceTables(more.AsMap(), base.AsMap())
	o := render(t, vals)
	ing := o.ingress(release + "-queen-app-api")
	if ing == nil || ing.Spec.Rules[0].Host != lookup(map[string]any(vals), "apiIngress.host") {
		t.Fatalf("README's API values render no API Ingress for their host")
	}
	if ing.Annotations["nginx.ingress.kubernetes.io/backend-protocol"] != "HTTPS" {
		t.Errorf("README's API Ingress would speak plain HTTP to an HTTPS listener: %v", ing.Annotations)
	}
	c := o.deployment(t, "webhook").Spec.Template.Spec.Containers[0]
	if c.ReadinessProbe.HTTPGet.Scheme != corev1.URISchemeHTTPS {
		t.Errorf("README's api.tls: readiness probe over %q", c.ReadinessProbe.HTTPGet.Scheme)
	}
	urls := regexp.MustCompile("QUEEN_API_URL=([^ `\n]+)").FindAllStringSubmatch(readme(t), -1)
	if len(urls) < 2 {
		t.Fatalf("README shows %d QUEEN_API_URLs", len(urls))
	}
	for _, m := range append(urls, []string{"", "http://queen-app-api.queen-app.svc:8081"}) {
		env := map[string]string{"QUEEN_API_URL": m[1], "QUEEN_API_TOKEN": testAPIToken}
		if _, err := config.Load(config.CLI, func(k string) string { return env[k] }); err != nil {
			t.Errorf("README shows QUEEN_API_URL=%s, queenctl refuses it: %v", m[1], err)
		}
	}
	if !strings.Contains(readme(t), "kubectl -n queen-app port-forward svc/queen-app-api 8081:8081") {
		t.Error("README has no port-forward to the API Service")
	}
}
