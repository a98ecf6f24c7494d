// Package deploy holds the checks of Duet's deployment files: the Helm
// chart (helm lint, helm template, the rendered manifests decoded strictly
// into the Kubernetes API types and checked against each other and against
// Duet's settings) and the systemd units (systemd-analyze verify). It is a
// module of its own so that Helm and the Kubernetes API types stay out of
// Duet's go.mod; scripts/test.sh runs it.
package deploy

import (
	"maps"
	"os"
	"path"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	"helm.sh/helm/v3/pkg/releaseutil"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/duet-test/duet/internal/config"
)

const chartDir = "helm/duet"

// values reads a values file of testdata.
func values(t *testing.T, name string) map[string]any {
	t.Helper()
	if name == "" {
		return map[string]any{}
	}
	v, err := chartutil.ReadValuesFile(path.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestChartLint is `helm lint --strict` for the default values and the full
// set: no error and no warning.
func TestChartLint(t *testing.T) {
	for _, file := range []string{"", "full-values.yaml"} {
		l := lint.All(chartDir, values(t, file), "duet", false)
		for _, m := range l.Messages {
			if m.Severity >= support.WarningSev {
				t.Errorf("values %q: helm lint: %s", file, m)
			}
		}
	}
}

// render is `helm template` (install, or upgrade at revision 2): the hooks
// and the manifests, in Helm's install order.
func render(t *testing.T, vals map[string]any, upgrade bool) ([]string, error) {
	t.Helper()
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	opts := chartutil.ReleaseOptions{Name: "duet", Namespace: "duet", Revision: 1, IsInstall: true}
	if upgrade {
		opts = chartutil.ReleaseOptions{Name: "duet", Namespace: "duet", Revision: 2, IsUpgrade: true}
	}
	rv, err := chartutil.ToRenderValues(ch, vals, opts, chartutil.DefaultCapabilities)
	if err != nil {
		return nil, err
	}
	files, err := engine.Render(ch, rv)
	if err != nil {
		return nil, err
	}
	for name := range files {
		if strings.HasSuffix(name, "NOTES.txt") { // printed, not applied (as helm template does)
			if strings.Contains(files[name], "<no value>") {
				t.Errorf("%s renders a missing value:\n%s", name, files[name])
			}
			delete(files, name)
		}
	}
	hooks, manifests, err := releaseutil.SortManifests(files, chartutil.DefaultCapabilities.APIVersions, releaseutil.InstallOrder)
	if err != nil {
		return nil, err
	}
	var docs []string
	for _, h := range hooks {
		docs = append(docs, h.Manifest)
	}
	for _, m := range manifests {
		docs = append(docs, m.Content)
	}
	return docs, nil
}

// objects are the rendered manifests decoded into their API types.
type objects struct {
	deployments     []*appsv1.Deployment
	jobs            []*batchv1.Job
	services        []*corev1.Service
	serviceAccounts []*corev1.ServiceAccount
	claims          []*corev1.PersistentVolumeClaim
	ingresses       []*networkingv1.Ingress
	budgets         []*policyv1.PodDisruptionBudget
	monitors        []*monitoringv1.ServiceMonitor
}

// decode decodes each manifest strictly (unknown and duplicate fields are
// errors) into the type its apiVersion and kind name.
func decode(t *testing.T, docs []string) objects {
	t.Helper()
	var o objects
	for _, doc := range docs {
		var head metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
			t.Fatalf("%v\n%s", err, doc)
		}
		into := func(v any) {
			if err := yaml.UnmarshalStrict([]byte(doc), v); err != nil {
				t.Errorf("%s: %v\n%s", head.Kind, err, doc)
			}
		}
		switch gvk := head.APIVersion + "/" + head.Kind; gvk {
		case "apps/v1/Deployment":
			v := &appsv1.Deployment{}
			into(v)
			o.deployments = append(o.deployments, v)
		case "batch/v1/Job":
			v := &batchv1.Job{}
			into(v)
			o.jobs = append(o.jobs, v)
		case "v1/Service":
			v := &corev1.Service{}
			into(v)
			o.services = append(o.services, v)
		case "v1/ServiceAccount":
			v := &corev1.ServiceAccount{}
			into(v)
			o.serviceAccounts = append(o.serviceAccounts, v)
		case "v1/PersistentVolumeClaim":
			v := &corev1.PersistentVolumeClaim{}
			into(v)
			o.claims = append(o.claims, v)
		case "networking.k8s.io/v1/Ingress":
			v := &networkingv1.Ingress{}
			into(v)
			o.ingresses = append(o.ingresses, v)
		case "policy/v1/PodDisruptionBudget":
			v := &policyv1.PodDisruptionBudget{}
			into(v)
			o.budgets = append(o.budgets, v)
		case "monitoring.coreos.com/v1/ServiceMonitor":
			v := &monitoringv1.ServiceMonitor{}
			into(v)
			o.monitors = append(o.monitors, v)
		default:
			t.Errorf("unexpected object %s:\n%s", gvk, doc)
		}
	}
	return o
}

// settings returns the environment variables Duet reads: the rows of its
// settings table, and NAME_FILE for the secrets that have that form.
func settings() map[string]bool {
	s := map[string]bool{}
	for _, o := range config.Options() {
		s[o.Env] = true
		if o.Secret && !o.NoFile {
			s[o.Env+"_FILE"] = true
		}
	}
	s["DUET_LLM_API_KEY_FILE"] = true // internal/llm reads it (its row says so)
	return s
}

// checkMeta checks the name and labels of an object as the API server would.
func checkMeta(t *testing.T, kind string, m metav1.ObjectMeta) {
	t.Helper()
	if kind != "pod template" { // a template's pods get their names from their owner
		for _, msg := range validation.NameIsDNSSubdomain(m.Name, false) {
			t.Errorf("%s %q: name: %s", kind, m.Name, msg)
		}
	}
	if kind == "Service" {
		for _, msg := range validation.NameIsDNSLabel(m.Name, false) {
			t.Errorf("Service %q: name: %s", m.Name, msg)
		}
	}
	for k, v := range m.Labels {
		for _, msg := range append(utilvalidation.IsQualifiedName(k), utilvalidation.IsValidLabelValue(v)...) {
			t.Errorf("%s %q: label %s=%s: %s", kind, m.Name, k, v, msg)
		}
	}
}

// checkPod checks a pod template: its volumes and mounts, probes and
// ports, the environment (only Duet's real settings, with values Duet
// accepts; every *_FILE names a file a volume provides) and the security
// context.
func checkPod(t *testing.T, owner string, spec corev1.PodSpec) {
	t.Helper()
	known := settings()
	vols := map[string]corev1.Volume{}
	for _, v := range spec.Volumes {
		vols[v.Name] = v
	}
	if len(spec.Containers) != 1 {
		t.Fatalf("%s: %d containers, want 1", owner, len(spec.Containers))
	}
	c := spec.Containers[0]
	mounts := map[string]string{} // mount path -> volume
	for _, m := range c.VolumeMounts {
		if _, ok := vols[m.Name]; !ok {
			t.Errorf("%s: mount %s names no volume %q", owner, m.MountPath, m.Name)
		}
		mounts[m.MountPath] = m.Name
	}
	if len(mounts) != len(vols) {
		t.Errorf("%s: %d volumes, %d mounted", owner, len(vols), len(mounts))
	}
	ports := map[string]bool{}
	for _, p := range c.Ports {
		ports[p.Name] = true
	}
	for _, p := range []*corev1.Probe{c.StartupProbe, c.LivenessProbe, c.ReadinessProbe} {
		if p == nil {
			continue
		}
		if p.HTTPGet == nil || !ports[p.HTTPGet.Port.StrVal] {
			t.Errorf("%s: a probe names no port of the container: %+v", owner, p.ProbeHandler)
		}
		if p.HTTPGet != nil && (len(p.HTTPGet.HTTPHeaders) != 1 || p.HTTPGet.HTTPHeaders[0].Name != "Host") {
			t.Errorf("%s: probe %s must send a Host header Duet accepts (DUET_ALLOWED_HOSTS)", owner, p.HTTPGet.Path)
		}
	}
	env := map[string]string{}
	for _, e := range c.Env {
		if _, dup := env[e.Name]; dup {
			t.Errorf("%s: %s set twice", owner, e.Name)
		}
		env[e.Name] = e.Value
		if strings.HasPrefix(e.Name, "DUET_") && !known[e.Name] {
			t.Errorf("%s: %s is not a Duet setting (`duet config` lists them)", owner, e.Name)
		}
		if strings.HasSuffix(e.Name, "_FILE") {
			dir, file := path.Split(e.Value)
			v, ok := vols[mounts[strings.TrimSuffix(dir, "/")]]
			if !ok || v.Projected == nil || !slices.ContainsFunc(v.Projected.Sources, func(s corev1.VolumeProjection) bool {
				return s.Secret != nil && slices.ContainsFunc(s.Secret.Items, func(i corev1.KeyToPath) bool { return i.Path == file })
			}) {
				t.Errorf("%s: %s=%s: no Secret is mounted there", owner, e.Name, e.Value)
			}
		}
	}
	// The values must be ones Duet accepts: load them as Duet does (the
	// secrets' files are not here, so their *_FILE settings are left out).
	_, err := config.Load(func(k string) string {
		if strings.HasSuffix(k, "_FILE") {
			return ""
		}
		return env[k]
	})
	if err != nil {
		t.Errorf("%s: Duet refuses its environment: %v", owner, err)
	}
	for _, want := range []string{"DUET_DATABASE_URL_FILE", "DUET_MASTER_KEY_FILE", "DUET_HOME"} {
		if env[want] == "" {
			t.Errorf("%s: %s is not set", owner, want)
		}
	}
	sc, psc := c.SecurityContext, spec.SecurityContext
	if sc == nil || psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("%s: want a non-root, read-only container without privilege escalation or capabilities", owner)
	}
	if mounts["/tmp"] == "" {
		t.Errorf("%s: a read-only root needs a writable /tmp (Chromium's profiles)", owner)
	}
	// Chromium's sandbox needs user namespaces, which RuntimeDefault forbids.
	browser := env["DUET_BROWSER_SANDBOX"] != ""
	runtimeDefault := sc.SeccompProfile != nil && sc.SeccompProfile.Type == corev1.SeccompProfileTypeRuntimeDefault
	if browser && env["DUET_BROWSER_SANDBOX"] == "on" && runtimeDefault {
		t.Errorf("%s: Chromium's sandbox with the RuntimeDefault seccomp profile cannot start", owner)
	}
	if (!browser || env["DUET_BROWSER_SANDBOX"] == "off") && !runtimeDefault {
		t.Errorf("%s: no Chromium sandbox needs user namespaces here: want seccomp RuntimeDefault", owner)
	}
	if browser && mounts["/dev/shm"] == "" {
		t.Errorf("%s: Chromium runs here without a /dev/shm volume", owner)
	}
}

// selects reports whether selector matches the labels.
func selects(t *testing.T, selector map[string]string, l map[string]string) bool {
	t.Helper()
	return len(selector) > 0 && labels.SelectorFromSet(selector).Matches(labels.Set(l))
}

// checkAll checks the objects of one rendering.
func checkAll(t *testing.T, o objects) {
	t.Helper()
	pods := map[string]corev1.PodTemplateSpec{}
	for _, d := range o.deployments {
		checkMeta(t, "Deployment", d.ObjectMeta)
		if d.Spec.Selector == nil || !selects(t, d.Spec.Selector.MatchLabels, d.Spec.Template.Labels) {
			t.Errorf("Deployment %s: its selector does not select its pods", d.Name)
		}
		checkMeta(t, "pod template", d.Spec.Template.ObjectMeta)
		checkPod(t, "Deployment "+d.Name, d.Spec.Template.Spec)
		pods[d.Name] = d.Spec.Template
	}
	for _, j := range o.jobs {
		checkMeta(t, "Job", j.ObjectMeta)
		checkMeta(t, "pod template", j.Spec.Template.ObjectMeta)
		checkPod(t, "Job "+j.Name, j.Spec.Template.Spec)
		if got := j.Spec.Template.Spec.Containers[0].Args; !slices.Equal(got, []string{"migrate", "up"}) {
			t.Errorf("Job %s runs %v, want migrate up", j.Name, got)
		}
		if h := j.Annotations["helm.sh/hook"]; h != "pre-install,pre-upgrade" {
			t.Errorf("Job %s: hook %q, want pre-install,pre-upgrade", j.Name, h)
		}
		// A pre-install hook runs before the release's own objects exist:
		// a claim the chart renders is not there yet, and its pod would
		// wait for it forever (the install never gets past the hook).
		for _, v := range j.Spec.Template.Spec.Volumes {
			if v.PersistentVolumeClaim != nil && slices.ContainsFunc(o.claims, func(c *corev1.PersistentVolumeClaim) bool { return c.Name == v.PersistentVolumeClaim.ClaimName }) {
				t.Errorf("Job %s mounts claim %s, which the release creates after its pre-install hooks", j.Name, v.PersistentVolumeClaim.ClaimName)
			}
		}
	}
	// Each Service selects pods that have the ports it targets.
	svcPorts := map[string]map[string]bool{}
	for _, s := range o.services {
		checkMeta(t, "Service", s.ObjectMeta)
		svcPorts[s.Name] = map[string]bool{}
		n := 0
		for _, name := range slices.Sorted(maps.Keys(pods)) {
			p := pods[name]
			if !selects(t, s.Spec.Selector, p.Labels) {
				continue
			}
			n++
			for _, sp := range s.Spec.Ports {
				svcPorts[s.Name][sp.Name] = true
				if sp.TargetPort.Type != intstr.String || !slices.ContainsFunc(p.Spec.Containers[0].Ports, func(cp corev1.ContainerPort) bool { return cp.Name == sp.TargetPort.StrVal }) {
					t.Errorf("Service %s: port %s targets %v, which pods of %s do not have", s.Name, sp.Name, sp.TargetPort.String(), name)
				}
			}
		}
		if n == 0 {
			t.Errorf("Service %s selects no pods", s.Name)
		}
	}
	for _, b := range o.budgets {
		checkMeta(t, "PodDisruptionBudget", b.ObjectMeta)
		if !slices.ContainsFunc(slices.Collect(maps.Values(pods)), func(p corev1.PodTemplateSpec) bool { return selects(t, b.Spec.Selector.MatchLabels, p.Labels) }) {
			t.Errorf("PodDisruptionBudget %s selects no pods", b.Name)
		}
	}
	for _, in := range o.ingresses {
		checkMeta(t, "Ingress", in.ObjectMeta)
		for _, r := range in.Spec.Rules {
			for _, p := range r.HTTP.Paths {
				if b := p.Backend.Service; b == nil || !svcPorts[b.Name][b.Port.Name] {
					t.Errorf("Ingress %s: host %s path %s goes to no Service port", in.Name, r.Host, p.Path)
				}
			}
		}
	}
	for _, m := range o.monitors {
		checkMeta(t, "ServiceMonitor", m.ObjectMeta)
		found := false
		for _, s := range o.services {
			if selects(t, m.Spec.Selector.MatchLabels, s.Labels) {
				found = true
				for _, e := range m.Spec.Endpoints {
					if !svcPorts[s.Name][e.Port] {
						t.Errorf("ServiceMonitor %s: Service %s has no port %q", m.Name, s.Name, e.Port)
					}
				}
			}
		}
		if !found {
			t.Errorf("ServiceMonitor %s selects no Service", m.Name)
		}
	}
	// Every claim a pod mounts is rendered (or named as existing by the values).
	for name, p := range pods {
		for _, v := range p.Spec.Volumes {
			if v.PersistentVolumeClaim != nil && !slices.ContainsFunc(o.claims, func(c *corev1.PersistentVolumeClaim) bool { return c.Name == v.PersistentVolumeClaim.ClaimName }) &&
				v.PersistentVolumeClaim.ClaimName != "shared-artifacts" { // full-values.yaml's existingClaim
				t.Errorf("%s mounts claim %s, which is not rendered", name, v.PersistentVolumeClaim.ClaimName)
			}
		}
	}
	for _, c := range o.claims {
		checkMeta(t, "PersistentVolumeClaim", c.ObjectMeta)
		if !slices.Contains(c.Spec.AccessModes, corev1.ReadWriteMany) {
			t.Errorf("claim %s: every serve and worker pod shares it: want ReadWriteMany, got %v", c.Name, c.Spec.AccessModes)
		}
	}
}

// TestChartTemplate renders the chart (helm template) with the default
// values and with a full set, decodes every manifest strictly into the
// Kubernetes API types and checks that the objects fit together.
func TestChartTemplate(t *testing.T) {
	t.Run("default", func(t *testing.T) {
		docs, err := render(t, values(t, ""), false)
		if err != nil {
			t.Fatal(err)
		}
		o := decode(t, docs)
		checkAll(t, o)
		if len(o.deployments) != 2 || len(o.jobs) != 1 || len(o.services) != 1 || len(o.claims) != 1 || len(o.budgets) != 2 ||
			len(o.ingresses) != 0 || len(o.monitors) != 0 || len(o.serviceAccounts) != 1 {
			t.Errorf("default values: got %d deployments, %d jobs, %d services, %d claims, %d budgets, %d ingresses, %d monitors, %d service accounts",
				len(o.deployments), len(o.jobs), len(o.services), len(o.claims), len(o.budgets), len(o.ingresses), len(o.monitors), len(o.serviceAccounts))
		}
		// On a first install the hook runs before the chart's ServiceAccount exists.
		if sa := o.jobs[0].Spec.Template.Spec.ServiceAccountName; sa != "" {
			t.Errorf("install: the migration Job uses ServiceAccount %q, which does not exist yet", sa)
		}
	})
	t.Run("full", func(t *testing.T) {
		docs, err := render(t, values(t, "full-values.yaml"), true)
		if err != nil {
			t.Fatal(err)
		}
		o := decode(t, docs)
		checkAll(t, o)
		if len(o.deployments) != 2 || len(o.jobs) != 1 || len(o.services) != 2 || len(o.claims) != 0 || len(o.ingresses) != 1 || len(o.monitors) != 1 {
			t.Errorf("full values: got %d deployments, %d jobs, %d services, %d claims, %d ingresses, %d monitors",
				len(o.deployments), len(o.jobs), len(o.services), len(o.claims), len(o.ingresses), len(o.monitors))
		}
		serve := o.deployments[slices.IndexFunc(o.deployments, func(d *appsv1.Deployment) bool { return strings.HasSuffix(d.Name, "-serve") })]
		env := map[string]string{}
		for _, e := range serve.Spec.Template.Spec.Containers[0].Env {
			env[e.Name] = e.Value
		}
		for _, h := range []string{"duet.example.com", "duet.duet.svc", "mcp-gateway.internal"} {
			if !slices.Contains(strings.Split(env["DUET_ALLOWED_HOSTS"], ","), h) {
				t.Errorf("DUET_ALLOWED_HOSTS=%s lacks %s", env["DUET_ALLOWED_HOSTS"], h)
			}
		}
		if env["DUET_OAUTH_CLIENT_SECRET_FILE"] == "" || env["DUET_GATEWAY_API_KEYS_FILE"] == "" || env["DUET_PUBLIC_URL"] != "https://duet.example.com" {
			t.Errorf("serve env misses the full values' settings: %v", env)
		}
		if sa := o.jobs[0].Spec.Template.Spec.ServiceAccountName; sa == "" {
			t.Error("upgrade: the migration Job should use the chart's ServiceAccount")
		}
	})
}

// TestChartRefuses: values that cannot work fail `helm template` with a
// message that says what to change.
func TestChartRefuses(t *testing.T) {
	for _, c := range []struct {
		set  string
		want string
	}{
		{"worker: {enabled: false}", "nothing would execute runs"},
		{"worker: {workers: 0}", "worker.workers must be 1 or more"},
		{"ingress: {enabled: true}", "list at least one of ingress.hosts"},
		{"database: {existingSecret: ''}", "database.existingSecret"},
		{"masterKey: {existingSecret: ''}", "masterKey.existingSecret"},
		{"metrics: {serviceMonitor: {enabled: true}}", "needs metrics.enabled"},
		{"secretFiles: [{env: DUET_SSO_SECRET, secret: s, key: k}]", "must be a *_FILE setting"},
	} {
		var v map[string]any
		if err := yaml.Unmarshal([]byte(c.set), &v); err != nil {
			t.Fatal(err)
		}
		_, err := render(t, v, false)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error with %q", c.set, err, c.want)
		}
	}
}

// TestChartValuesDocumented: every value has a comment in values.yaml
// above it or on its line, at least at its top-level key.
func TestChartValuesDocumented(t *testing.T) {
	b, err := os.ReadFile(path.Join(chartDir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	for i, l := range lines {
		if l == "" || strings.HasPrefix(l, " ") || strings.HasPrefix(l, "#") || strings.HasPrefix(l, "-") {
			continue
		}
		key := strings.SplitN(l, ":", 2)[0]
		switch key {
		case "nameOverride", "fullnameOverride", "imagePullSecrets": // Kubernetes' and Helm's own
			continue
		}
		if i == 0 || !strings.HasPrefix(lines[i-1], "#") {
			t.Errorf("values.yaml: %s has no comment above it", key)
		}
	}
}
