package app_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/app"
	"github.com/duet-test/duet/internal/browser"
	"github.com/duet-test/duet/internal/browser/android"
	"github.com/duet-test/duet/internal/browser/chromiumtest"
	"github.com/duet-test/duet/internal/browser/devices"
	"github.com/duet-test/duet/internal/compiler"
	"github.com/duet-test/duet/internal/config"
	"github.com/duet-test/duet/internal/engine"
	"github.com/duet-test/duet/internal/engine/browsertest"
)

func loadConfig(t *testing.T, env map[string]string) *config.Config {
	t.Helper()
	env["DUET_HOME"] = t.TempDir()
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func startChromium(t *testing.T) *chromiumtest.Browser {
	return chromiumtest.Start(t, func(dir string) []string { return browser.CommandLine(dir, 0) })
}

// TestRemoteChromiumDriver runs the driver conformance checker against a
// Chromium started separately with remote debugging — the protocol a
// forwarded phone or a browser grid speaks — through DUET_BROWSER_URL's
// path: the pool attaches instead of launching.
func TestRemoteChromiumDriver(t *testing.T) {
	t.Parallel()
	b := startChromium(t)
	cfg := loadConfig(t, map[string]string{"DUET_BROWSER_URL": b.WS, "DUET_CHROME_PATH": "/nonexistent/chromium"})
	pool := app.NewBrowserPool(cfg, nil, nil)
	t.Cleanup(pool.Close)
	browsertest.Run(t, app.NewBrowser(pool), browsertest.Options{
		Devices: map[string]int{"desktop": 1280, "iphone-15": 393, "pixel-7": 412, "ipad": 820},
	})
}

// TestDeviceNames: the device names of tasks and runs.
func TestDeviceNames(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]devices.Device{
		"":                                  {},
		"pixel-7":                           {Preset: "pixel-7"},
		"pixel-7@ws://10.0.0.5:9222":        {Preset: "pixel-7", Browser: "ws://10.0.0.5:9222"},
		"@http://grid.internal":             {Browser: "http://grid.internal:80"},
		"wss://grid.internal/session/x/cdp": {Browser: "wss://grid.internal:443/session/x/cdp"},
		"android:R58M1234ABC":               {Android: "R58M1234ABC"},
		"android:any":                       {Android: "any"},
	} {
		got, err := devices.Parse(name)
		if err != nil || got != want {
			t.Errorf("ParseDevice(%q): got %+v, %v; want %+v", name, got, err, want)
		}
	}
	for name, msg := range map[string]string{
		"nokia-3310":                "valid devices are",
		"nokia@ws://10.0.0.5:9222":  "valid devices are",
		"pixel-7@":                  "not a URL",
		"pixel-7@ftp://x":           "want ws, wss, http or https",
		"@ws://u:p@grid:9222":       "credentials",
		"@wss://grid/?token=s3cret": "cannot be stored with a task",
		"android:":                  "android:SERIAL",
		"android:R58; reboot":       "a serial has",
	} {
		err := devices.Valid(name)
		if duet.ErrorCode(err) != duet.CodeInvalidArgument || !strings.Contains(duet.ErrorMessage(err), msg) {
			t.Errorf("ValidDevice(%q): got %v, want INVALID_ARGUMENT containing %q", name, err, msg)
		}
	}
}

// runSuite applies yaml as alice and executes one run of it in a, and
// returns its executions by case key.
func runSuite(t *testing.T, a *app.App, yaml, device string) map[string]*duet.Execution {
	t.Helper()
	ctx := t.Context()
	suite, err := compiler.CompileSuite(ctx, []byte(yaml), "suite.yaml", a.CompilerOptions(ctx, "alice"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Store.ApplySuite(ctx, "alice", suite)
	if err != nil {
		t.Fatal(err)
	}
	cases, _, _, err := a.Store.FindCases(ctx, duet.CaseFilter{TaskID: res.Task.ID})
	if err != nil {
		t.Fatal(err)
	}
	run := &duet.Run{TaskID: res.Task.ID, TriggeredBy: "alice", CallSource: duet.SourceCLI, Device: device}
	var execs []*duet.Execution
	for _, c := range cases {
		execs = append(execs, &duet.Execution{CaseID: c.ID, CaseKey: c.Key, CaseTitle: c.Title, CaseVersion: c.Version, Steps: c.Steps})
	}
	if _, _, err := a.Store.CreateRun(ctx, duet.StartRunParams{Run: run, Executions: execs}); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 5*time.Minute) // a bound for a stuck run, not a timing claim (TestNetworkGuard took up to 2 minutes at a load of 33–50)
	defer cancel()
	if ok, err := a.Worker.ExecuteRun(wctx, run.ID); !ok || err != nil {
		t.Fatalf("ExecuteRun: %v, %v", ok, err)
	}
	got, err := a.Store.FindExecutions(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*duet.Execution{}
	for _, x := range got {
		out[x.CaseKey] = x
	}
	return out
}

// counter is a loopback service that counts its requests.
type counter struct {
	*httptest.Server
	hits atomic.Int32
}

func newCounter(t *testing.T) *counter {
	c := &counter{}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.hits.Add(1)
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, `<!doctype html><title>Internal</title><p id="secret">internal</p>`)
	}))
	t.Cleanup(c.Close)
	return c
}

// TestNetworkGuard is issue 10 point 5 end to end: with the default
// settings, http steps and browser navigations of a task reach its base URL
// host and nothing else the guard refuses — 0.0.0.0, IPv4-mapped loopback,
// another loopback service, a link-local metadata address behind a
// redirect, Duet's own port — each step failing with URL_REFUSED.
func TestNetworkGuard(t *testing.T) {
	t.Parallel()
	internal := newCounter(t)
	// No worker of Serve's own: the test executes the run itself
	// (runSuite), and a queue worker that claimed it first left ExecuteRun
	// nothing to run ("ExecuteRun: false").
	a := openAppEnv(t, map[string]string{"DUET_LOG_LEVEL": "error", "DUET_BROWSERS": "1", "DUET_WORKERS": "0"})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(context.Background())
	served, ready := make(chan error, 1), make(chan string, 1)
	go func() { served <- a.Serve(sctx, ln, app.ServeOptions{Ready: ready}) }()
	t.Cleanup(func() { stop(); <-served })
	// Duet knows its own address once it serves: wait for that, not for
	// luck (a loaded machine starts the suite before Serve gets there).
	select {
	case <-ready:
	case err := <-served:
		t.Fatalf("serve: %v", err)
	}
	duetURL := "http://" + ln.Addr().String()

	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/ok", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{"ok":true}`) })
	mux.HandleFunc("GET /api/metadata", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/iam/security-credentials/", http.StatusFound)
	})
	mux.HandleFunc("GET /api/internal", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, internal.URL+"/admin", http.StatusFound)
	})
	// The page navigates away by itself once loaded: after the open step
	// (which waits for the load), during the assertText that waits for
	// #secret. That wait is the budget for the navigation to be refused
	// and noticed; 15s (not the default 5s) is one a loaded machine meets.
	mux.HandleFunc("GET /page", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<!doctype html><title>Shop</title><p id="ok">shop</p><script>addEventListener("load", () => setTimeout(() => { location.href = %q; }, 100));</script>`, internal.URL+"/admin")
	})
	shop := httptest.NewServer(mux)
	t.Cleanup(shop.Close)
	_, internalPort, _ := net.SplitHostPort(internal.Listener.Addr().String())

	yaml := `
task: {name: guarded, baseURL: ` + shop.URL + `}
cases:
  - key: base
    title: the base URL host
    steps:
      - http: {url: /api/ok, saveAs: r}
      - assert: r.body.ok == true
  - key: zero
    title: 0.0.0.0
    steps:
      - http: GET http://0.0.0.0:` + internalPort + `/admin
  - key: mapped
    title: IPv4-mapped loopback
    steps:
      - http: GET http://[::ffff:127.0.0.1]:` + internalPort + `/admin
  - key: metadata
    title: a redirect to the metadata address
    steps:
      - http: GET /api/metadata
  - key: redirect
    title: a redirect to another loopback service
    steps:
      - http: GET /api/internal
  - key: self
    title: Duet's own API
    steps:
      - http: GET ` + duetURL + `/readyz
  - key: page
    title: a page that navigates to a refused host
    steps:
      - open: /page
      - assertText: {selector: "#secret", equals: internal}
        timeout: 15s
  - key: open
    title: opening a refused host
    steps:
      - open: ` + internal.URL + `/admin
`
	execs := runSuite(t, a, yaml, "")
	for key, x := range execs {
		want := duet.CodeURLRefused
		if key == "base" {
			want = ""
		}
		if x.ErrorCode != want {
			t.Errorf("case %s: got %s %s %q, want code %q", key, x.Status, x.ErrorCode, x.ErrorMessage, want)
		}
	}
	if !strings.Contains(execs["self"].ErrorMessage, "Duet's own address") {
		t.Errorf("the call to Duet's own API: got %q", execs["self"].ErrorMessage)
	}
	if !strings.Contains(execs["page"].ErrorMessage, "the page navigated to "+internal.URL+"/admin") {
		t.Errorf("the page's navigation: got %q", execs["page"].ErrorMessage)
	}
	if n := internal.hits.Load(); n != 0 {
		t.Errorf("the internal service got %d requests, want none", n)
	}

	// DUET_NET_ALLOW lets more through; Duet's own address stays refused.
	b := openAppEnv(t, map[string]string{"DUET_LOG_LEVEL": "error", "DUET_NET_ALLOW": "127.0.0.1", "DUET_ADDR": ln.Addr().String()})
	execs = runSuite(t, b, `
task: {name: allowed, baseURL: `+shop.URL+`}
cases:
  - key: internal
    title: a listed address
    steps:
      - http: GET `+internal.URL+`/admin
  - key: self
    title: Duet's own API
    steps:
      - http: GET `+duetURL+`/readyz
`, "")
	if x := execs["internal"]; x.Status != duet.StatusPassed {
		t.Errorf("a destination listed in DUET_NET_ALLOW: got %s %s %q", x.Status, x.ErrorCode, x.ErrorMessage)
	}
	if x := execs["self"]; x.ErrorCode != duet.CodeURLRefused {
		t.Errorf("Duet's own address with DUET_NET_ALLOW listing it: got %s %s", x.Status, x.ErrorCode)
	}
}

// TestBrowserURL: with DUET_BROWSER_URL, a case's browser steps run in the
// browser started separately, and none is started here (DUET_CHROME_PATH
// points nowhere).
func TestBrowserURL(t *testing.T) {
	t.Parallel()
	b := startChromium(t)
	shop := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, `<!doctype html><meta name="viewport" content="width=device-width"><title>Order</title><p id="status">paid</p><p id="w"></p><script>document.getElementById('w').textContent = innerWidth;</script>`)
	}))
	t.Cleanup(shop.Close)
	_, port, _ := net.SplitHostPort(b.Addr)
	a := openAppEnv(t, map[string]string{"DUET_LOG_LEVEL": "error", "DUET_BROWSER_URL": "http://127.0.0.1:" + port, "DUET_CHROME_PATH": "/nonexistent/chromium"})
	yaml := `
task: {name: remote, baseURL: ` + shop.URL + `, device: iphone-15}
cases:
  - key: order
    title: the order page
    steps:
      - open: /order
      - assertText: {selector: "#status", equals: paid}
      - assertText: {selector: "#w", equals: "393"}
      - screenshot: order
`
	execs := runSuite(t, a, yaml, "")
	if x := execs["order"]; x.Status != duet.StatusPassed || len(x.Results[3].Artifacts) == 0 && x.Results[3].Output == nil {
		t.Fatalf("the case on the remote browser: got %s %s %q", x.Status, x.ErrorCode, x.ErrorMessage)
	}
	if st := a.Browsers.Stats(); st.Started != 1 {
		t.Errorf("connections made: got %+v, want one", st)
	}
}

// recordedPhone is adb as a Pixel 7 answers it, with a separately started
// Chromium as the phone's Chrome behind a proxy per `adb forward`.
type recordedPhone struct {
	chrome  *chromiumtest.Browser
	t       *testing.T
	mu      sync.Mutex
	proxies []*chromiumtest.Proxy
	removed int
}

func (p *recordedPhone) run(_ context.Context, args ...string) ([]byte, error) {
	switch {
	case args[0] == "devices":
		return []byte("List of devices attached\nR58M1234ABC            device usb:1-4 product:panther model:Pixel_7 device:panther transport_id:1\n\n"), nil
	case len(args) > 3 && args[3] == "getprop":
		return []byte("[ro.build.version.release]: [14]\n[ro.build.version.sdk]: [34]\n[ro.product.model]: [Pixel 7]\n"), nil
	case len(args) > 3 && args[2] == "forward" && args[3] == "tcp:0":
		px := chromiumtest.NewProxy(p.t, p.chrome.Addr)
		p.mu.Lock()
		p.proxies = append(p.proxies, px)
		p.mu.Unlock()
		return fmt.Appendf(nil, "%d\n", px.Port()), nil
	case len(args) > 3 && args[2] == "forward" && args[3] == "--remove":
		p.mu.Lock()
		p.removed++
		p.mu.Unlock()
		return nil, nil
	}
	return nil, fmt.Errorf("unexpected adb %s", strings.Join(args, " "))
}

func (p *recordedPhone) unplug() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, px := range p.proxies {
		px.Kill()
	}
}

// TestDeviceLost: a case on android:SERIAL whose phone disconnects mid-run
// ends with DEVICE_LOST as an error (not a test failure), and the phone is
// free again for the next execution.
func TestDeviceLost(t *testing.T) {
	t.Parallel()
	phone := &recordedPhone{chrome: startChromium(t), t: t}
	a := openAppEnv(t, map[string]string{"DUET_LOG_LEVEL": "error"})
	drv := android.New(android.Options{ADB: &android.ADB{Run: phone.run}, Leases: a.Store, LeaseTTL: 3 * time.Second})
	reached := make(chan struct{})
	var once sync.Once
	shop := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/second" {
			once.Do(func() { close(reached) })
		}
		w.Header().Set("Content-Type", "text/html")
		// #late never comes: only the phone's loss ends the waitFor (a
		// #late shown after 3s let a slow unplug find the case passed).
		io.WriteString(w, `<!doctype html><title>Order</title><p id="status">paid</p>`)
	}))
	t.Cleanup(shop.Close)
	e := engine.New(a.Store, engine.Options{Browser: &app.Browsers{Router: &devices.Router{Android: drv}}, StepTimeout: 20 * time.Second})
	ctx := t.Context()
	suite, err := compiler.CompileSuite(ctx, []byte(`
task: {name: phone, baseURL: `+shop.URL+`, device: "android:R58M1234ABC"}
cases:
  - key: order
    title: the order page on the phone
    steps:
      - open: /first
      - assertText: {selector: "#status", equals: paid}
      - open: /second
      - waitFor: {selector: "#late"}
`), "suite.yaml", a.CompilerOptions(ctx, "alice"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Store.ApplySuite(ctx, "alice", suite)
	if err != nil {
		t.Fatal(err)
	}
	cases, _, _, _ := a.Store.FindCases(ctx, duet.CaseFilter{TaskID: res.Task.ID})
	run := &duet.Run{TaskID: res.Task.ID, TriggeredBy: "alice", CallSource: duet.SourceCLI}
	if _, _, err := a.Store.CreateRun(ctx, duet.StartRunParams{Run: run, Executions: []*duet.Execution{
		{CaseID: cases[0].ID, CaseKey: "order", CaseTitle: "t", CaseVersion: cases[0].Version, Steps: cases[0].Steps}}}); err != nil {
		t.Fatal(err)
	}
	go func() {
		select {
		case <-reached:
			time.Sleep(300 * time.Millisecond) // the waitFor is waiting for #late
			phone.unplug()
		case <-ctx.Done():
		}
	}()
	claimed, err := a.Store.ClaimRunByID(ctx, run.ID, "test", time.Minute)
	if err != nil || claimed == nil {
		t.Fatalf("claim: %+v %v", claimed, err)
	}
	if err := e.Execute(ctx, duet.LeaseOf(claimed, "test"), claimed, nil); err != nil {
		t.Fatal(err)
	}
	execs, _ := a.Store.FindExecutions(ctx, run.ID)
	x := execs[0]
	if x.Status != duet.StatusError || x.ErrorCode != duet.CodeDeviceLost || !strings.Contains(x.ErrorMessage, "Android device R58M1234ABC (Pixel 7)") {
		t.Errorf("the execution: got %s %s %q, want error DEVICE_LOST naming the phone", x.Status, x.ErrorCode, x.ErrorMessage)
	}
	if x.Results[1].Status != duet.StatusPassed {
		t.Errorf("the steps before the loss: %+v", x.Results[1])
	}
	if ls, _ := a.Store.FindDeviceLeases(ctx); len(ls) != 0 {
		t.Errorf("leases after the execution: got %d, want none (the phone is freed)", len(ls))
	}
	phone.mu.Lock()
	removed := phone.removed
	phone.mu.Unlock()
	if removed != 1 {
		t.Errorf("adb forward --remove ran %d times, want once", removed)
	}
}

// TestTaskBrowserSetting: a suite's task may name a remote browser with
// browser:, beside its device preset; it is checked when the suite compiles.
func TestTaskBrowserSetting(t *testing.T) {
	t.Parallel()
	a := openAppEnv(t, map[string]string{"DUET_LOG_LEVEL": "error"})
	opts := a.CompilerOptions(t.Context(), "alice")
	compile := func(task string) (*duet.Suite, error) {
		return compiler.CompileSuite(t.Context(), []byte("task: "+task+"\ncases:\n  - title: t\n    steps:\n      - assert: 'true'\n"), "s.yaml", opts)
	}
	s, err := compile(`{name: x, device: pixel-7, browser: "ws://10.0.0.5:9222"}`)
	if err != nil || s.Task.Device != "pixel-7@ws://10.0.0.5:9222" {
		t.Fatalf("browser: beside device: got %v, %v", s, err)
	}
	if d, err := devices.Parse(s.Task.Device); err != nil || d.Browser != "ws://10.0.0.5:9222" || d.Preset != "pixel-7" {
		t.Errorf("the stored device: got %+v, %v", d, err)
	}
	for task, msg := range map[string]string{
		`{name: x, browser: "ws://grid:9222/?token=s3cret"}`:          "cannot be stored with a task",
		`{name: x, device: "android:any", browser: "ws://grid:9222"}`: "cannot be combined",
		`{name: x, browser: "grid:9222"}`:                             "is not a URL",
	} {
		if _, err := compile(task); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("task %s: got %v, want an error containing %q", task, err, msg)
		}
	}
}
