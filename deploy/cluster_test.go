package deploy

import (
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/queen-app/queen-app/internal/config"
)

// doctorPod is the helm test hook's Pod.
func (o *objects) doctorPod(t *testing.T) *corev1.Pod {
	t.Helper()
	if len(o.TestPods) != 1 {
		t.Fatalf("%d helm test Pods rendered, want 1", len(o.TestPods))
	}
	return &o.TestPods[0]
}

// podSpecs are the specs of every pod the release runs: both Deployments
// and the test hook.
func (o *objects) podSpecs(t *testing.T) map[string]corev1.PodSpec {
	t.Helper()
	return map[string]corev1.PodSpec{
		"webhook": o.deployment(t, "webhook").Spec.Template.Spec,
		"worker":  o.deployment(t, "worker").Spec.Template.Spec,
		"doctor":  o.doctorPod(t).Spec,
	}
}

// `helm test` runs queenctl doctor with what it needs to check every part:
// the worker's settings and files, and the claims API's URL and token.
func TestHelmTestRunsDoctorWithTheReleasesSettings(t *testing.T) {
	for _, name := range []string{"inline", "ci"} {
		t.Run(name, func(t *testing.T) {
			o := render(t, scenarios(t)[name])
			pod := o.doctorPod(t)
			if pod.Annotations["helm.sh/hook"] != "test" || pod.Spec.RestartPolicy != corev1.RestartPolicyNever {
				t.Fatalf("doctor Pod: hook %q, restart %q; want a test hook that runs once", pod.Annotations["helm.sh/hook"], pod.Spec.RestartPolicy)
			}
			if c := pod.Spec.Containers[0]; strings.Join(c.Command, " ") != "queenctl doctor" {
				t.Fatalf("doctor Pod runs %q", c.Command)
			}
			if c := pod.Spec.Containers[0]; c.SecurityContext == nil || c.SecurityContext.ReadOnlyRootFilesystem == nil ||
				!*c.SecurityContext.ReadOnlyRootFilesystem || pod.Spec.SecurityContext == nil ||
				pod.Spec.SecurityContext.RunAsNonRoot == nil || !*pod.Spec.SecurityContext.RunAsNonRoot ||
				pod.Spec.AutomountServiceAccountToken == nil || *pod.Spec.AutomountServiceAccountToken {
				t.Errorf("doctor Pod is not locked down as the Deployments are")
			}
			e := o.env(t, &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: pod.Spec}}},
				o.store(readmeSecrets(t)))
			for _, p := range e.problems {
				t.Error(p)
			}
			cfg, err := config.Load(config.Worker, e.getenv)
			if err != nil {
				t.Fatalf("queenctl doctor would refuse its settings: %v", err)
			}
			api := o.service(t, release+"-queen-app-api")
			wantAPI := "http://" + api.Name + "." + namespace + ".svc:" + strconv.Itoa(int(api.Spec.Ports[0].Port))
			if cfg.QueenAPI != wantAPI || cfg.APIToken == "" || string(cfg.PrivateKey) != testKeyPEM || cfg.RedisURL == "" {
				t.Errorf("doctor: API %q (want %q), token set %v, key %v, Redis %q", cfg.QueenAPI, wantAPI,
					cfg.APIToken != "", string(cfg.PrivateKey) == testKeyPEM, cfg.RedisURL)
			}
			if name == "ci" && (!cfg.ExportEnabled() || cfg.ExportToken == "") {
				t.Errorf("doctor: the export is on in ci values, doctor gets no export token")
			}
			if _, ok := e.vars["GITHUB_WEBHOOK_SECRET_FILE"]; ok {
				t.Errorf("doctor gets the webhook secret, which it does not need")
			}
		})
	}
	// With a NetworkPolicy on the API port, the doctor is let in.
	np := with(inlineValues(), "networkPolicy", map[string]any{"enabled": true,
		"apiFrom": []any{map[string]any{"podSelector": map[string]any{"matchLabels": map[string]any{"app": "queen"}}}}})
	o := render(t, np)
	doctorLabels := o.doctorPod(t).Labels
	admitted := false
	for _, p := range o.NetworkPolicies {
		for _, rule := range p.Spec.Ingress {
			for _, peer := range rule.From {
				if peer.PodSelector == nil || len(peer.PodSelector.MatchLabels) == 0 {
					continue
				}
				all := true
				for k, v := range peer.PodSelector.MatchLabels {
					all = all && doctorLabels[k] == v
				}
				admitted = admitted || all
			}
		}
	}
	if !admitted {
		t.Errorf("the NetworkPolicy keeps helm test's doctor from the claims API")
	}
	if o := render(t, with(inlineValues(), "tests.enabled", false)); len(o.TestPods) != 0 {
		t.Errorf("tests.enabled=false still renders %d test Pods", len(o.TestPods))
	}
}

func TestCABundleIsMountedAndTrustedByEveryPod(t *testing.T) {
	for from, vals := range map[string]map[string]any{
		"configMap": with(inlineValues(), "caBundle.configMap", map[string]any{"name": "corp-ca", "key": "bundle.pem"}),
		"secret":    with(inlineValues(), "caBundle.secret", map[string]any{"name": "corp-ca", "key": "bundle.pem"}),
	} {
		o := render(t, vals)
		for name, spec := range o.podSpecs(t) {
			var vol *corev1.Volume
			for i, v := range spec.Volumes {
				if v.Name == "ca-bundle" {
					vol = &spec.Volumes[i]
				}
			}
			var items []corev1.KeyToPath
			switch {
			case vol == nil:
				t.Fatalf("%s: %s pod has no ca-bundle volume", from, name)
			case from == "configMap" && vol.ConfigMap != nil && vol.ConfigMap.Name == "corp-ca":
				items = vol.ConfigMap.Items
			case from == "secret" && vol.Secret != nil && vol.Secret.SecretName == "corp-ca":
				items = vol.Secret.Items
			}
			if len(items) != 1 || items[0].Key != "bundle.pem" || items[0].Path != "ca.crt" {
				t.Fatalf("%s: %s pod's ca-bundle volume %+v, want corp-ca's bundle.pem as ca.crt", from, name, vol)
			}
			c := spec.Containers[0]
			mounted := ""
			for _, m := range c.VolumeMounts {
				if m.Name == "ca-bundle" && m.ReadOnly {
					mounted = m.MountPath
				}
			}
			certFile := ""
			for _, e := range c.Env {
				if e.Name == "SSL_CERT_FILE" {
					certFile = e.Value
				}
			}
			if mounted == "" || certFile != mounted+"/ca.crt" {
				t.Errorf("%s: %s: SSL_CERT_FILE %q, bundle mounted read-only at %q; want it to point at the mounted ca.crt", from, name, certFile, mounted)
			}
		}
	}
	both := with(with(inlineValues(), "caBundle.configMap.name", "a"), "caBundle.secret.name", "b")
	if _, err := renderErr(t, both); err == nil || !strings.Contains(err.Error(), "not both") {
		t.Errorf("a CA bundle from a ConfigMap and a Secret: %v, want refused", err)
	}
	for name, spec := range render(t, inlineValues()).podSpecs(t) {
		for _, e := range spec.Containers[0].Env {
			if e.Name == "SSL_CERT_FILE" {
				t.Errorf("%s: SSL_CERT_FILE set without a caBundle: the system's CAs would be replaced", name)
			}
		}
	}
}

func TestExtraVolumesAndPriorityReachEveryPod(t *testing.T) {
	vals := with(with(with(inlineValues(), "priorityClassName", "queen-critical"),
		"extraVolumes", []any{map[string]any{"name": "hooks", "emptyDir": map[string]any{}}}),
		"extraVolumeMounts", []any{map[string]any{"name": "hooks", "mountPath": "/var/hooks"}})
	for name, spec := range render(t, vals).podSpecs(t) {
		if spec.PriorityClassName != "queen-critical" {
			t.Errorf("%s: priorityClassName %q", name, spec.PriorityClassName)
		}
		vol, mount := false, false
		for _, v := range spec.Volumes {
			vol = vol || (v.Name == "hooks" && v.EmptyDir != nil)
		}
		for _, m := range spec.Containers[0].VolumeMounts {
			mount = mount || (m.Name == "hooks" && m.MountPath == "/var/hooks")
		}
		if !vol || !mount {
			t.Errorf("%s: extra volume %v, mount %v", name, vol, mount)
		}
	}
	if _, err := renderErr(t, with(inlineValues(), "extraVolumeMounts", []any{map[string]any{"name": "x"}})); err == nil {
		t.Errorf("a mount without mountPath is accepted")
	}
}

func TestCommonLabelsAndAnnotationsOnEveryObject(t *testing.T) {
	vals := with(with(with(inlineValues(), "commonLabels", map[string]any{"team": "hive"}),
		"commonAnnotations", map[string]any{"owner": "queen-ops"}),
		"service.api.annotations", map[string]any{"prometheus.io/scrape": "true"})
	o := render(t, with(vals, "ingress", map[string]any{"enabled": true, "host": "q.example.com",
		"annotations": map[string]any{"cert-manager.io/cluster-issuer": "letsencrypt"}}))
	for key, doc := range o.Docs {
		var m struct {
			Metadata struct {
				Labels      map[string]string `json:"labels"`
				Annotations map[string]string `json:"annotations"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatal(err)
		}
		if m.Metadata.Labels["team"] != "hive" || m.Metadata.Annotations["owner"] != "queen-ops" {
			t.Errorf("%s: labels %v, annotations %v; want the common ones", key, m.Metadata.Labels, m.Metadata.Annotations)
		}
	}
	api := o.service(t, release+"-queen-app-api")
	if api.Annotations["prometheus.io/scrape"] != "true" {
		t.Errorf("the API Service's annotations: %v", api.Annotations)
	}
	if hook := o.service(t, release+"-queen-app-webhook"); hook.Annotations["prometheus.io/scrape"] != "" {
		t.Errorf("the API Service's annotations reach the webhook Service: %v", hook.Annotations)
	}
	if ing := o.Ingresses[0]; ing.Annotations["cert-manager.io/cluster-issuer"] != "letsencrypt" {
		t.Errorf("the Ingress lost its own annotations: %v", ing.Annotations)
	}
	for _, d := range o.Deployments {
		for k := range d.Spec.Selector.MatchLabels {
			if k == "team" {
				t.Errorf("%s: a common label in the selector, which cannot change after install", d.Name)
			}
		}
	}
}
