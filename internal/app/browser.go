package app

import (
	"context"
	"encoding/json"
	"log/slog"
	"runtime"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/api"
	"github.com/duet-test/duet/internal/artifact"
	"github.com/duet-test/duet/internal/browser"
	"github.com/duet-test/duet/internal/browser/android"
	"github.com/duet-test/duet/internal/browser/devices"
	"github.com/duet-test/duet/internal/config"
	"github.com/duet-test/duet/internal/engine"
	"github.com/duet-test/duet/internal/netguard"
	"github.com/duet-test/duet/internal/step"
)

// NetPolicy returns the network guard of the configuration, the one policy
// of MCP servers, http steps and browser navigations: DUET_MCP_ALLOW_LOOPBACK,
// DUET_MCP_ALLOW_PRIVATE and DUET_NET_ALLOW, and self, the addresses Duet
// listens on (nil means none).
func NetPolicy(cfg *config.Config, self *netguard.Self) netguard.Policy {
	return netguard.Policy{AllowLoopback: cfg.MCPAllowLoopback, AllowPrivate: cfg.MCPAllowPrivate, Allow: cfg.NetAllow, Self: self}
}

// NewBrowserPool returns the pool of browsers that the configuration asks
// for: Chromium processes (DUET_CHROME_PATH, DUET_BROWSERS), or connections
// to the browser of DUET_BROWSER_URL. Every session's navigations go through
// guard when it is not nil. It starts no process; the first browser step
// does.
func NewBrowserPool(cfg *config.Config, guard *netguard.Policy, log *slog.Logger) *browser.Pool {
	return browser.NewPool(browserOptions(cfg, guard, cfg.Browsers, log))
}

func browserOptions(cfg *config.Config, guard *netguard.Policy, max int, log *slog.Logger) browser.Options {
	o := browser.Options{ExecPath: cfg.ChromePath, MaxBrowsers: max, Processes: browserProcesses(cfg, max), Logger: log, Guard: guard}
	if cfg.BrowserNoSandbox {
		o.Flags = map[string]any{"no-sandbox": true} // DUET_BROWSER_SANDBOX=off
	}
	if cfg.BrowserURL != "" {
		o.Remote = &browser.Remote{URL: cfg.BrowserURL}
	}
	return o
}

// NewAndroid returns the driver of Android phones over adb (DUET_ADB_PATH):
// leases in store hold a phone for one execution at a time across every
// process on it.
func NewAndroid(cfg *config.Config, leases duet.DeviceLeaseStore, guard *netguard.Policy, log *slog.Logger) *android.Driver {
	return android.New(android.Options{ADB: &android.ADB{Path: cfg.ADBPath}, Leases: leases, Guard: guard, Logger: log})
}

// NewArtifactStore returns the artifact store of the configuration:
// DUET_ARTIFACT_DIR (default DUET_HOME/artifacts) with
// DUET_ARTIFACT_RETENTION. Instances on one PostgreSQL database share the
// directory (docs/deployment.md), so a report reads the screenshots another
// instance's worker took.
func NewArtifactStore(cfg *config.Config) *artifact.Store {
	return artifact.New(cfg.ArtifactPath(), cfg.ArtifactRetention)
}

// NewBrowser returns the engine's browser driver over a pool: each
// execution gets its own session (an isolated browser context) emulating the
// device preset it names.
func NewBrowser(p *browser.Pool) engine.Browser {
	return &Browsers{Router: &devices.Router{Default: p}}
}

// Browsers is the engine's browser driver: the sessions of the browser
// each execution's device asks for (devices.Router), as the engine's
// BrowserSession.
type Browsers struct{ *devices.Router }

var _ engine.Browser = (*Browsers)(nil)

// NewSession opens a session on the browser of device, whose guard lets
// allow's destinations be loopback or private.
func (b *Browsers) NewSession(ctx context.Context, device string, allow netguard.Allowance) (engine.BrowserSession, error) {
	s, end, err := b.Session(ctx, device, allow)
	if err != nil {
		return nil, err
	}
	return engineSession{s, end}, nil
}

// engineSession adapts a browser session to the engine's interface; close
// ends it (and frees its phone, for a phone).
type engineSession struct {
	*browser.Session
	close func()
}

func (s engineSession) Close() { s.close() }

func (s engineSession) WaitFor(ctx context.Context, c engine.WaitCondition) error {
	return s.Session.WaitFor(ctx, browser.WaitCondition(c))
}

func (s engineSession) Screenshot(ctx context.Context, fullPage bool) ([]byte, error) {
	if fullPage {
		return s.Session.FullScreenshot(ctx)
	}
	return s.Session.Screenshot(ctx)
}

// Act implements step.Elements.
func (s engineSession) Act(ctx context.Context, t step.Target, a step.Action) error {
	return s.Session.Act(ctx, browser.Target(t), browser.Action(a))
}

// Query implements step.Elements.
func (s engineSession) Query(ctx context.Context, t step.Target, q step.Query) (step.Answer, error) {
	a, err := s.Session.Query(ctx, browser.Target(t), browser.Query(q))
	return step.Answer(a), err
}

// Dialogs implements step.Dialogs.
func (s engineSession) Dialogs() ([]step.Dialog, <-chan struct{}) {
	list, seen := s.Session.Dialogs()
	out := make([]step.Dialog, len(list))
	for i, d := range list {
		out[i] = step.Dialog(d)
	}
	return out, seen
}

var (
	_ engine.BrowserSession = engineSession{}
	_ step.Elements         = engineSession{}
	_ step.Dialogs          = engineSession{}
	_ step.Framer           = engineSession{}
	_ step.Tabs             = engineSession{}
	_ step.Historian        = engineSession{}
	_ step.Emulator         = engineSession{}
	_ step.Evaluator        = engineSession{}
	_ engine.Artifacts      = (*artifact.Store)(nil)
)

// devicesOfThisMachine lists the phones this machine's adb sees, as the
// API describes them (api.Service.ListDevices adds who uses each).
func (a *App) devicesOfThisMachine(ctx context.Context) ([]api.Device, error) {
	devs, err := a.Android.ADB().Devices(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]api.Device, 0, len(devs))
	for _, d := range devs {
		out = append(out, api.Device{Name: android.Prefix + d.Serial, Serial: d.Serial, State: d.State, Model: d.Model, Android: d.Android, SDK: d.SDK,
			Ready: d.Ready(), Problem: d.Problem()})
	}
	return out, nil
}

// AddRoute implements step.Router.
func (s engineSession) AddRoute(ctx context.Context, r step.PageRoute) error {
	return s.Session.AddRoute(ctx, browser.Route(r))
}

// WaitForResponse implements step.Router.
func (s engineSession) WaitForResponse(ctx context.Context, f step.RequestFilter) (step.Response, error) {
	r, err := s.Session.WaitForResponse(ctx, browser.RequestFilter(f))
	return step.Response(r), err
}

// Requests implements step.Router.
func (s engineSession) Requests(f step.RequestFilter) ([]string, int) {
	return s.Session.Requests(browser.RequestFilter(f))
}

// StorageState implements step.StorageKeeper: the state as JSON.
func (s engineSession) StorageState(ctx context.Context) ([]byte, error) {
	st, err := s.Session.StorageState(ctx)
	if err != nil {
		return nil, err
	}
	return json.Marshal(st)
}

// SetStorageState implements step.StorageKeeper.
func (s engineSession) SetStorageState(ctx context.Context, state []byte) error {
	var st browser.StorageState
	if err := json.Unmarshal(state, &st); err != nil {
		return duet.WrapError(duet.CodeInternal, err, "a saved session is not a storage state: %v", err)
	}
	return s.Session.SetStorageState(ctx, st)
}

var (
	_ step.Router        = engineSession{}
	_ step.StorageKeeper = engineSession{}
)

// browserProcesses is DUET_BROWSER_PROCESSES, or when it is 0 the smallest
// of the pool's processes, the cases a run executes at once and half the
// CPUs: a second Chromium process pays when it has a core to run on. On 2
// shared cores (issue 32) two cases at a time over two processes took
// 0.62x the time of one at a time at load 32-60 (0.81x in one process) but
// 1.34x at load 62-101 (0.93x in one): so one process there.
func browserProcesses(cfg *config.Config, maxBrowsers int) int {
	if cfg.BrowserProcesses > 0 {
		return cfg.BrowserProcesses
	}
	return max(1, min(maxBrowsers, cfg.Parallel, runtime.NumCPU()/2))
}
