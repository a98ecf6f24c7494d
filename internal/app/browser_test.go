package app_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/app"
	"github.com/duet-test/duet/internal/browser"
	"github.com/duet-test/duet/internal/browser/devices"
	"github.com/duet-test/duet/internal/compiler"
	"github.com/duet-test/duet/internal/config"
	"github.com/duet-test/duet/internal/engine/browsertest"
	"github.com/duet-test/duet/internal/sample/sampletest"
)

// TestChromiumDriver checks the Chromium driver against the contract every
// device driver honours (docs/devices.md).
func TestChromiumDriver(t *testing.T) {
	t.Parallel()
	if err := browser.NewPool(browser.Options{}).Available(); err != nil {
		if os.Getenv("DUET_REQUIRE_BROWSER") == "1" {
			t.Fatalf("DUET_REQUIRE_BROWSER=1 but no Chromium: %v", err)
		}
		t.Skipf("skipping: %v", err)
	}
	pool := browser.NewPool(browser.Options{MaxBrowsers: 1})
	t.Cleanup(pool.Close)
	browsertest.Run(t, app.NewBrowser(pool), browsertest.Options{
		Devices: map[string]int{"desktop": 1280, "iphone-15": 393, "pixel-7": 412, "ipad": 820},
	})
}

func openAppEnv(t *testing.T, env map[string]string) *app.App {
	t.Helper()
	env["DUET_HOME"] = t.TempDir()
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.Open(t.Context(), cfg, app.Options{Stderr: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	return a
}

// TestNoChromium needs no browser: with a bogus DUET_CHROME_PATH, browser
// steps fail with the install hint and the other cases still run.
func TestNoChromium(t *testing.T) {
	t.Parallel()
	a := openAppEnv(t, map[string]string{"DUET_CHROME_PATH": "/nonexistent/duet-test-chromium", "DUET_LOG_LEVEL": "error"})
	ctx := t.Context()
	shop := sampletest.Shop(t)
	suite, err := compiler.CompileSuite(ctx, []byte(`
task: {name: shop, baseURL: `+shop+`, device: pixel-7}
cases:
  - key: api
    title: The API answers
    steps:
      - http: {url: /api/orders/A1001, saveAs: o}
      - assert: o.body.status == "paid"
  - key: web
    title: The page needs a browser
    steps:
      - open: /order?orderId=A1001
      - assertText: {selector: "#status", equals: paid}
`), "suite.yaml", a.CompilerOptions(ctx, "alice"))
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
	run := &duet.Run{TaskID: res.Task.ID, TriggeredBy: "alice", CallSource: duet.SourceCLI}
	var execs []*duet.Execution
	for _, c := range cases {
		execs = append(execs, &duet.Execution{CaseID: c.ID, CaseKey: c.Key, CaseTitle: c.Title, CaseVersion: c.Version, Steps: c.Steps})
	}
	if _, _, err := a.Store.CreateRun(ctx, duet.StartRunParams{Run: run, Executions: execs}); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if ok, err := a.Worker.ExecuteRun(wctx, run.ID); !ok || err != nil {
		t.Fatalf("ExecuteRun: %v, %v", ok, err)
	}
	final, err := a.Store.FindRunByID(ctx, "alice", run.ID)
	if err != nil {
		t.Fatal(err)
	}
	got, err := a.Store.FindExecutions(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if final.Status != duet.StatusError || got[0].Status != duet.StatusPassed || got[1].Status != duet.StatusError {
		t.Fatalf("got run %s, api %s, web %s; want error, passed, error", final.Status, got[0].Status, got[1].Status)
	}
	r := got[1].Results[0]
	if r.ErrorCode != duet.CodeBrowserUnavailable || !strings.Contains(r.ErrorMessage, "/nonexistent/duet-test-chromium") ||
		!strings.Contains(r.ErrorMessage, "apt-get install -y chromium") || !strings.Contains(r.ErrorMessage, "DUET_CHROME_PATH") {
		t.Errorf("the open step: got %s %q, want BROWSER_UNAVAILABLE naming the path and the install hint", r.ErrorCode, r.ErrorMessage)
	}
	if st := a.Browsers.Stats(); st.Browsers != 0 || st.Sessions != 0 {
		t.Errorf("pool after the run: got %+v, want nothing running", st)
	}
}

func TestDevicesAndArtifacts(t *testing.T) {
	t.Parallel()
	a := openAppEnv(t, map[string]string{"DUET_ARTIFACT_RETENTION": "48h"})
	for _, name := range []string{"", "desktop", "iphone-15", "pixel-7", "ipad"} {
		if err := devices.Valid(name); err != nil {
			t.Errorf("ValidDevice(%q): %v", name, err)
		}
	}
	err := devices.Valid("nokia-3310")
	if duet.ErrorCode(err) != duet.CodeInvalidArgument || !strings.Contains(duet.ErrorMessage(err), "iphone-15") {
		t.Errorf("ValidDevice(nokia-3310): got %v, want INVALID_ARGUMENT listing the presets", err)
	}
	_, err = compiler.CompileSuite(t.Context(), []byte("task: {name: x, device: nokia-3310}\ncases:\n  - title: t\n    steps:\n      - assert: 'true'\n"),
		"s.yaml", a.CompilerOptions(t.Context(), "alice"))
	if err == nil || !strings.Contains(err.Error(), "valid devices are") {
		t.Errorf("a suite with an unknown device: got %v, want a compile error listing the presets", err)
	}
	if got, want := a.Artifacts.Dir(), filepath.Join(a.Config.Home, "artifacts"); got != want {
		t.Errorf("artifact directory: got %s, want %s", got, want)
	}
	if got := a.Artifacts.Retention(); got != 48*time.Hour {
		t.Errorf("artifact retention: got %s, want 48h", got)
	}
}
