package browser

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/netguard"
)

// Options configures a Pool. The zero value is ready to use.
type Options struct {
	// ExecPath is the Chromium executable: a path, or a name that is looked
	// up on PATH. Empty means the first of "chromium-headless-shell",
	// "chromium", "chromium-browser" and "google-chrome" found on PATH. This package reads no environment
	// variable: the caller resolves DUET_CHROME_PATH into this field.
	ExecPath string

	// MaxBrowsers caps the number of browser processes. Zero or less means 2.
	MaxBrowsers int

	// MaxContextsPerBrowser caps the sessions (isolated browser contexts)
	// open at once in one browser process. Zero or less means 8.
	MaxContextsPerBrowser int

	// Processes is how many browser processes the sessions that run at
	// the same time are spread over: a new session starts another process
	// (up to MaxBrowsers) while each running one holds a session, and
	// otherwise goes to the process with the fewest. The processes start
	// when first needed and are reused. Zero or less means 1: sessions
	// share one process until it holds MaxContextsPerBrowser. Local
	// Chromium only; a remote browser is one connection.
	Processes int

	// Flags are extra Chromium switches, without the leading "--", applied
	// after the pool's defaults. A value is a bool (true adds the switch,
	// false removes a default one), a string or a number (--name=value). Nil
	// means none. The switches user-data-dir and remote-debugging-* belong
	// to the pool and are refused.
	Flags map[string]any

	// DefaultTimeout bounds a Session call when its ctx has no deadline and
	// the call has no timeout of its own. Zero or less means 30 seconds.
	DefaultTimeout time.Duration

	// Logger receives the lifecycle of the browser processes: start, exit
	// and crash. Nil discards the records.
	Logger *slog.Logger

	// Remote, when set, makes the pool attach to a browser that runs
	// already instead of starting Chromium (ExecPath and Flags are then
	// unused): see [Remote]. Nil starts local Chromium processes.
	Remote *Remote

	// Guard, when set, checks every document request of a session — the
	// page, its frames, each redirect — with the network guard and fails
	// those it refuses; Open and the next failing call of the session
	// return CodeURLRefused. NewSession's allow names what it lets be
	// loopback or private (the task's base URL). Nil checks nothing.
	Guard *netguard.Policy

	// lateAttachReply, in tests, makes the relay of a local browser hand
	// chromedp the reply of an attach to a page only after that page's
	// first paused request, or after this long: as if chromedp's target of
	// the session came to be after the page ran (holder.lateAttach).
	lateAttachReply time.Duration
}

// Defaults of Options.
const (
	DefaultMaxBrowsers           = 2
	DefaultMaxContextsPerBrowser = 8
	DefaultTimeout               = 30 * time.Second
)

// withDefaults returns o with every zero field replaced by its default.
func (o Options) withDefaults() Options {
	if o.MaxBrowsers <= 0 {
		o.MaxBrowsers = DefaultMaxBrowsers
	}
	if o.MaxContextsPerBrowser <= 0 {
		o.MaxContextsPerBrowser = DefaultMaxContextsPerBrowser
	}
	o.Processes = max(1, min(o.Processes, o.MaxBrowsers))
	if o.Remote != nil {
		o.Processes = 1
	}
	if o.DefaultTimeout <= 0 {
		o.DefaultTimeout = DefaultTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	o.Flags = maps.Clone(o.Flags)
	return o
}

// installHint tells the user how to get a browser.
const installHint = "install Chromium: apt-get install -y chromium-headless-shell (or chromium), or set DUET_CHROME_PATH"

// execNames are the names that an empty Options.ExecPath looks up on PATH,
// in order. Chromium's headless shell comes first: it is Chromium without
// its browser UI (no window, tab strip or omnibox per browser context), and
// a browser case costs it about 0.57x the CPU of the full browser in headless
// mode, most of it in the browser process (BenchmarkBrowserCaseCPU,
// docs/performance.md). The full browser is the fallback where no shell is
// packaged.
var execNames = []string{"chromium-headless-shell", "chromium", "chromium-browser", "google-chrome"}

// findExec resolves the Chromium executable. It returns CodeBrowserUnavailable
// with the install hint when there is none.
func findExec(path string) (string, error) {
	if path != "" {
		full, err := exec.LookPath(path)
		if err != nil {
			return "", duet.WrapError(duet.CodeBrowserUnavailable, err,
				"Chromium executable %q not found: %s", path, installHint)
		}
		return unwrapLauncher(full), nil
	}
	for _, name := range execNames {
		if full, err := exec.LookPath(name); err == nil {
			return unwrapLauncher(full), nil
		}
	}
	return "", duet.Errorf(duet.CodeBrowserUnavailable,
		"no Chromium executable found on PATH (looked for %s): %s", strings.Join(execNames, ", "), installHint)
}

// Executable returns the Chromium executable that a pool whose
// Options.ExecPath is path starts: path looked up on PATH, or with an empty
// path the first of the default names found, in either case through a
// launcher script that would hide the browser's process.
//
// Errors: CodeBrowserUnavailable, with how to install Chromium.
func Executable(path string) (string, error) { return findExec(path) }

// launcherLine is the one command of a launcher script that runs a program
// by its absolute path with the script's arguments, without exec.
var launcherLine = regexp.MustCompile(`^(/[^\s"'$;&|<>()]+)\s+"\$@"$`)

// unwrapLauncher returns the program that path runs when path is a shell
// script whose only command starts it without exec — Debian's
// /usr/bin/chromium-headless-shell is `/usr/lib/chromium/chromium-headless-shell
// "$@"` — and path otherwise. Such a script stays the browser's parent: the
// pool would hold, signal and kill the shell, and a browser killed by the
// pool or dead on its own would not be seen as gone. A script that does more
// (sets variables or switches, or execs) is run as it is.
func unwrapLauncher(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return path
	}
	defer f.Close()
	head := make([]byte, 4097)
	n, _ := io.ReadFull(f, head)
	head = head[:n]
	if n > 4096 || !bytes.HasPrefix(head, []byte("#!")) {
		return path // a binary, or more than a launcher
	}
	var cmds []string
	for line := range strings.Lines(string(head)) {
		line = strings.TrimSpace(line)
		if line != "" && !strings.HasPrefix(line, "#") {
			cmds = append(cmds, line)
		}
	}
	if len(cmds) != 1 {
		return path
	}
	m := launcherLine.FindStringSubmatch(cmds[0])
	if m == nil {
		return path
	}
	if st, err := os.Stat(m[1]); err != nil || !st.Mode().IsRegular() || st.Mode()&0o111 == 0 {
		return path
	}
	return m[1]
}

// tempRoot is the directory of the temporary user data directories; empty
// means os.TempDir(). The tests point it at a directory of their own.
var tempRoot string

// userDataPrefix starts the name of every user data directory of a pool.
const userDataPrefix = "duet-chromium-"

// baseFlags are the switches of every browser process, in order. The network
// of a test machine is often closed, so everything that phones home is off.
var baseFlags = []struct {
	name  string
	value any
}{
	{"headless", true},
	{"disable-gpu", true},
	{"disable-quic", true},
	{"no-first-run", true},
	{"no-default-browser-check", true},
	{"disable-background-networking", true},
	{"disable-component-update", true},
	{"disable-sync", true},
	{"disable-dev-shm-usage", true},
	{"disable-extensions", true},
	{"disable-default-apps", true},
	{"disable-breakpad", true},
	{"disable-client-side-phishing-detection", true},
	{"disable-background-timer-throttling", true},
	{"disable-backgrounding-occluded-windows", true},
	{"disable-renderer-backgrounding", true},
	{"disable-hang-monitor", true},
	{"disable-ipc-flooding-protection", true},
	// SpareRendererForSitePerProcess: Chromium starts a renderer process
	// ahead for the next navigation, but a spare serves one browser context
	// and every session is a new one, so the spare was started and thrown
	// away: without it, 1.2-1.9 renderer processes start per case of
	// BenchmarkBrowserCaseCPU instead of 3.2-4.2, and the zygote's CPU
	// (forking them) halves; the CPU per case moved by -10 %, +10 % and
	// -7 % in three runs at load 30-65, within the noise (docs/performance.md).
	// WebUIOmniboxPopup, WebUIOmniboxAimPopup: each browser context opens
	// a window whose omnibox popup is a WebUI page with a renderer process
	// of its own (--top-chrome-webui) that headless Chromium never shows;
	// without them a context starts only the page's renderer
	// (TestSessionLoadsNoWindowWebUI).
	{"disable-features", "Translate,MediaRouter,OptimizationHints,SpareRendererForSitePerProcess,WebUIOmniboxPopup,WebUIOmniboxAimPopup"},
	{"hide-scrollbars", true},
	{"mute-audio", true},
	{"metrics-recording-only", true},
	{"password-store", "basic"},
	{"use-mock-keychain", true},
	{"force-color-profile", "srgb"},
	{"enable-automation", true},
}

// reservedFlags belong to the pool: it chooses the profile directory and the
// transport.
var reservedFlags = []string{"user-data-dir", "remote-debugging-port", "remote-debugging-address", "remote-debugging-pipe"}

// CommandLine returns the switches Duet starts Chromium with, for a browser
// that listens for DevTools connections on port (0 picks a free port, which
// the browser prints as "DevTools listening on ws://..."), with its profile
// in userDataDir. It is how to start a browser by hand for DUET_BROWSER_URL
// on this kind of machine: `chromium $(switches...)`.
func CommandLine(userDataDir string, port int) []string {
	var args []string
	for _, f := range baseFlags {
		switch v := f.value.(type) {
		case bool:
			if v {
				args = append(args, "--"+f.name)
			}
		default:
			args = append(args, fmt.Sprintf("--%s=%v", f.name, v))
		}
	}
	if os.Geteuid() == 0 {
		args = append(args, "--no-sandbox")
	}
	return append(args, "--remote-debugging-address=127.0.0.1", fmt.Sprintf("--remote-debugging-port=%d", port),
		"--user-data-dir="+userDataDir, "about:blank")
}

// allocatorOptions returns the chromedp options of one browser process. It
// returns CodeInvalidArgument for a bad entry of Options.Flags.
func (o Options) allocatorOptions(execPath, userDataDir string) ([]chromedp.ExecAllocatorOption, error) {
	opts := []chromedp.ExecAllocatorOption{chromedp.ExecPath(execPath)}
	for _, f := range baseFlags {
		opts = append(opts, chromedp.Flag(f.name, f.value))
	}
	if os.Geteuid() == 0 {
		// Chromium refuses to run as root with its sandbox.
		opts = append(opts, chromedp.Flag("no-sandbox", true))
	}
	for _, key := range slices.Sorted(maps.Keys(o.Flags)) {
		name := strings.TrimLeft(key, "-")
		if name == "" || slices.Contains(reservedFlags, name) {
			return nil, duet.Errorf(duet.CodeInvalidArgument, "browser flag %q cannot be set", key)
		}
		var v any
		switch x := o.Flags[key].(type) {
		case bool, string:
			v = x
		case int, int64, float64:
			v = fmt.Sprint(x)
		default:
			return nil, duet.Errorf(duet.CodeInvalidArgument,
				"browser flag %q: value of type %T, want bool, string or number", name, x)
		}
		opts = append(opts, chromedp.Flag(name, v))
	}
	return append(opts, chromedp.UserDataDir(userDataDir)), nil
}
