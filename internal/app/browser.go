package app

import (
	"context"
	"encoding/json"
	"log/slog"
	"runtime"
	"strings"
	"sync"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/api"
	"github.com/duet-test/duet/internal/artifact"
	"github.com/duet-test/duet/internal/browser"
	"github.com/duet-test/duet/internal/browser/android"
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
func NewBrowser(p *browser.Pool) engine.Browser { return &Browsers{Default: p} }

// Device is a parsed device name of a task or a run (docs/devices.md):
//
//	""                       the default browser, desktop preset
//	pixel-7                  a preset on the default browser (local Chromium, or DUET_BROWSER_URL)
//	pixel-7@ws://HOST:PORT   a preset on the remote browser at that address ("@URL" alone: desktop)
//	ws://HOST:PORT           the same as "@ws://HOST:PORT"
//	android:SERIAL           Chrome on that phone (android:any: any free phone)
type Device struct {
	Preset  string // "" means desktop
	Browser string // a DevTools endpoint; "" means the default browser
	Android string // a serial or "any"; "" means not a phone
}

// ParseDevice parses a device name. It returns INVALID_ARGUMENT naming what
// is wrong: an unknown preset (listing the valid ones), a malformed phone
// name or browser address, or a browser address with credentials or a query
// (a token belongs in DUET_BROWSER_URL, not in a task).
func ParseDevice(name string) (Device, error) {
	name = strings.TrimSpace(name)
	if strings.HasPrefix(name, android.Prefix) {
		serial, err := android.ParseTarget(name)
		return Device{Android: serial}, err
	}
	var d Device
	preset, endpoint, hasAt := strings.Cut(name, "@")
	switch {
	case hasAt:
		d.Preset, d.Browser = preset, endpoint
	case strings.Contains(name, "://"):
		d.Browser = name
	default:
		d.Preset = name
	}
	if d.Browser != "" || hasAt {
		u, err := browser.ParseRemoteURL(d.Browser, true)
		if err != nil {
			return Device{}, err
		}
		d.Browser = u.String()
	}
	if _, err := browser.DeviceByName(d.Preset); err != nil {
		return Device{}, err
	}
	return d, nil
}

// ValidDevice checks a device name ("" is the default): a preset, a preset
// on a remote browser, or a phone. It returns INVALID_ARGUMENT naming the
// valid presets or what is wrong.
func ValidDevice(name string) error {
	_, err := ParseDevice(name)
	return err
}

// maxRemotes caps the remote browsers that tasks and runs name, each with a
// connection of its own.
const maxRemotes = 8

// Browsers is the engine's browser driver: it sends each execution to the
// browser its device name asks for — the default pool, a remote browser a
// task or run names, or a phone. It is safe for concurrent use.
type Browsers struct {
	Default *browser.Pool   // presets; local Chromium or DUET_BROWSER_URL
	Android *android.Driver // android:SERIAL; nil: phones are unavailable
	// Guard checks the addresses of the remote browsers that tasks and runs
	// name, and their sessions' navigations; nil checks nothing.
	Guard  *netguard.Policy
	Logger *slog.Logger

	mu      sync.Mutex
	remotes map[string]*browser.Pool
	closed  bool
}

var _ engine.Browser = (*Browsers)(nil)

// NewSession opens a session on the browser of device.
func (b *Browsers) NewSession(ctx context.Context, device string) (engine.BrowserSession, error) {
	d, err := ParseDevice(device)
	if err != nil {
		return nil, err
	}
	if d.Android != "" {
		if b.Android == nil {
			return nil, duet.Errorf(duet.CodeBrowserUnavailable, "Android phones are not available in this process")
		}
		s, err := b.Android.NewSession(ctx, android.Prefix+d.Android)
		if err != nil {
			return nil, err
		}
		return engineSession{s.Session, s.Close}, nil
	}
	preset, err := browser.DeviceByName(d.Preset)
	if err != nil {
		return nil, err
	}
	pool := b.Default
	if d.Browser != "" {
		if pool, err = b.remote(d.Browser); err != nil {
			return nil, err
		}
	}
	s, err := pool.NewSession(ctx, preset)
	if err != nil {
		return nil, err
	}
	return engineSession{s, s.Close}, nil
}

// remote returns the pool of the remote browser at endpoint, connecting on
// first use. When maxRemotes are in use, an idle one makes room.
func (b *Browsers) remote(endpoint string) (*browser.Pool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, duet.Errorf(duet.CodeBrowserUnavailable, "the browsers are closed")
	}
	if p, ok := b.remotes[endpoint]; ok {
		return p, nil
	}
	if b.remotes == nil {
		b.remotes = map[string]*browser.Pool{}
	}
	if len(b.remotes) >= maxRemotes {
		for k, p := range b.remotes {
			if st := p.Stats(); st.Sessions == 0 && st.Waiting == 0 {
				delete(b.remotes, k)
				go p.Close()
				break
			}
		}
	}
	if len(b.remotes) >= maxRemotes {
		return nil, duet.Errorf(duet.CodeBrowserUnavailable, "%d remote browsers are in use; the browser of this run has to wait for a free one", maxRemotes)
	}
	p := browser.NewPool(browser.Options{
		Remote: &browser.Remote{URL: endpoint, Guard: b.Guard},
		Guard:  b.Guard, MaxBrowsers: 1, Logger: b.Logger,
	})
	b.remotes[endpoint] = p
	return p, nil
}

// Close closes the connections to the remote browsers that tasks and runs
// named (not the default pool, which its owner closes).
func (b *Browsers) Close() {
	b.mu.Lock()
	b.closed = true
	pools := b.remotes
	b.remotes = nil
	b.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range pools {
		wg.Go(p.Close)
	}
	wg.Wait()
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
