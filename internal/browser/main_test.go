package browser

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"html"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/duet-test/duet"

	"github.com/duet-test/duet/internal/netguard"
)

// TestMain points the user data directories at a directory of the test run,
// and checks after the tests that no browser process, goroutine or directory
// outlived its pool.
func TestMain(m *testing.M) {
	root, err := os.MkdirTemp("", "duet-browser-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	tempRoot = root
	code := m.Run()
	if p := shared.pool; p != nil {
		p.Close()
	}
	if code == 0 {
		if err := checkLeaks(root, 10*time.Second); err != nil {
			fmt.Fprintln(os.Stderr, "FAIL: leak check:", err)
			code = 1
		}
	}
	os.RemoveAll(root)
	os.Exit(code)
}

// checkLeaks waits up to limit for the goroutines of chromedp and of this
// package, the Chromium processes that use a directory under root, and the
// user data directories under root to be gone.
func checkLeaks(root string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		err := errors.Join(leakedGoroutines(), leakedProcesses(root), leakedDirs(root))
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func leakedGoroutines() error {
	buf := make([]byte, 4<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var leaked []string
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		if strings.Contains(g, "checkLeaks") || strings.Contains(g, "leakedGoroutines") {
			continue
		}
		if strings.Contains(g, "github.com/chromedp/") || strings.Contains(g, "duet/internal/browser.") {
			leaked = append(leaked, g)
		}
	}
	if len(leaked) > 0 {
		return fmt.Errorf("%d goroutines leaked:\n%s", len(leaked), strings.Join(leaked, "\n\n"))
	}
	return nil
}

func leakedProcesses(root string) error {
	if runtime.GOOS != "linux" {
		return nil
	}
	matches, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var leaked []string
	for _, m := range matches {
		cmdline, err := os.ReadFile(m)
		if err == nil && bytes.Contains(cmdline, []byte(root)) {
			leaked = append(leaked, filepath.Base(filepath.Dir(m)))
		}
	}
	if len(leaked) > 0 {
		return fmt.Errorf("browser processes leaked: pids %s", strings.Join(leaked, ", "))
	}
	return nil
}

func leakedDirs(root string) error {
	entries, err := os.ReadDir(root)
	if err != nil {
		return err
	}
	var leaked []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), userDataPrefix) {
			leaked = append(leaked, e.Name())
		}
	}
	if len(leaked) > 0 {
		return fmt.Errorf("user data directories left: %s", strings.Join(leaked, ", "))
	}
	return nil
}

// requireChromium skips the test when no Chromium executable is found, unless
// DUET_REQUIRE_BROWSER=1 asks for a failure instead (CI sets it).
func requireChromium(tb testing.TB) {
	tb.Helper()
	if _, err := findExec(""); err != nil {
		if os.Getenv("DUET_REQUIRE_BROWSER") == "1" {
			tb.Fatalf("DUET_REQUIRE_BROWSER=1 but no Chromium: %v", err)
		}
		tb.Skipf("skipping: no Chromium executable on PATH (%v); set DUET_REQUIRE_BROWSER=1 to fail instead", err)
	}
}

// fullBrowser returns the full Chromium on PATH (not its headless shell,
// which the pool prefers), or "" when there is none.
func fullBrowser() string {
	for _, name := range execNames {
		if path, err := exec.LookPath(name); err == nil && !strings.Contains(name, "headless-shell") {
			return path
		}
	}
	return ""
}

// shared is the pool of the tests that need no pool of their own. TestMain
// closes it.
var shared struct {
	once sync.Once
	pool *Pool
}

func testLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// sharedPool returns the shared pool, or skips the test when there is no
// Chromium.
func sharedPool(tb testing.TB) *Pool {
	tb.Helper()
	requireChromium(tb)
	shared.once.Do(func() {
		shared.pool = NewPool(Options{MaxBrowsers: 1, MaxContextsPerBrowser: 6, Logger: testLogger()})
	})
	return shared.pool
}

// newSession opens a session on p that the test closes at its end.
func newSession(tb testing.TB, p *Pool, deviceName string) *Session {
	tb.Helper()
	d, err := DeviceByName(deviceName)
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := p.NewSession(ctx, d, netguard.Allowance{})
	if err != nil {
		tb.Fatalf("NewSession(%s): %v", deviceName, err)
	}
	tb.Cleanup(s.Close)
	return s
}

// testCtx returns a context that ends with the test or after d.
func testCtx(tb testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(tb.Context(), d)
	tb.Cleanup(cancel)
	return ctx
}

// open loads path of site in s, or fails the test.
func open(tb testing.TB, s *Session, site *httptest.Server, path string) {
	tb.Helper()
	if err := s.Open(testCtx(tb, 20*time.Second), site.URL+path); err != nil {
		tb.Fatalf("Open(%s): %v", path, err)
	}
}

// wantCode fails the test unless err has the code want and its message
// contains every one of the parts.
func wantCode(tb testing.TB, err error, want duet.Code, parts ...string) {
	tb.Helper()
	if got := duet.ErrorCode(err); got != want {
		tb.Fatalf("got error %v (code %q), want code %q", err, got, want)
	}
	for _, p := range parts {
		if msg := duet.ErrorMessage(err); !strings.Contains(msg, p) {
			tb.Errorf("got message %q, want it to contain %q", msg, p)
		}
	}
}

// page wraps the body of a test page.
func htmlPage(title, head, body string) string {
	return `<!doctype html><html><head><meta charset="utf-8">` + head +
		`<title>` + title + `</title></head><body>` + body + `</body></html>`
}

const viewportMeta = `<meta name="viewport" content="width=device-width, initial-scale=1">`

var sitePages = map[string]string{
	"/": htmlPage("Duet form", viewportMeta, `
<h1>Sign up</h1>
<form id="f">
  <label for="name">Name</label> <input id="name" name="name" type="text" placeholder="Your name">
  <label for="bio">Bio</label> <textarea id="bio" name="bio"></textarea>
  <label for="color">Color</label>
  <select id="color" name="color"><option value="">Pick one</option><option value="r">Red</option><option value="g">Green</option></select>
  <label for="pw">Password</label> <input id="pw" name="pw" type="password" value="secret">
  <button id="submit" type="submit">Send</button>
</form>
<pre id="out"></pre>
<p><a id="next" href="/page2?step=2">Next page</a></p>
<p id="shown" class="note" data-kind="info">  Shown text  </p>
<p id="hidden" style="display:none">Hidden text</p>
<p id="para">Not a field</p>
<button id="off" disabled>Off</button>
<div id="cover-box" style="position:relative">
  <button id="covered">Covered</button>
  <div style="position:absolute;inset:0;background:#fff" class="overlay"></div>
</div>
<script>
document.getElementById('f').addEventListener('submit', (e) => {
  e.preventDefault();
  const d = new FormData(e.target);
  d.delete('pw');
  document.getElementById('out').textContent = JSON.stringify(Object.fromEntries(d));
});
setTimeout(() => {
  const d = document.createElement('div');
  d.id = 'late';
  d.textContent = 'Loaded late';
  document.body.appendChild(d);
}, 300);
</script>`),

	"/page2": htmlPage("Page two", "", `<p id="step"></p>
<script>document.getElementById('step').textContent = 'step ' + new URLSearchParams(location.search).get('step');</script>`),

	"/keys": htmlPage("Keys", "", `<input id="k"><input id="other"><p id="log"></p>
<script>
const log = [];
document.getElementById('k').addEventListener('keydown', (e) => {
  log.push(e.key + (e.shiftKey ? '+shift' : ''));
  document.getElementById('log').textContent = log.join(',');
});
</script>`),

	// A field as a framework sees it: React's value tracker (a value set
	// through the element's own setter is not news; an input event whose
	// value differs from it is) keeps the state, and every event is logged.
	"/events": htmlPage("Events", "", `<input id="ev"> <div id="ce" contenteditable="true">old text</div>
<button id="elsewhere">Elsewhere</button> <pre id="evlog"></pre>
<script>
const log = [];
let state = '';
const el = document.getElementById('ev');
const proto = Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'value');
let tracked = el.value;
Object.defineProperty(el, 'value', {configurable: true,
  get() { return proto.get.call(this); },
  set(v) { tracked = String(v); proto.set.call(this, v); }});
const note = (e) => {
  log.push({type: e.type, target: e.target.id, inputType: e.inputType || '', data: e.data == null ? null : e.data, trusted: e.isTrusted});
  document.getElementById('evlog').textContent = JSON.stringify({state, log});
};
for (const t of ['keydown', 'keyup', 'beforeinput', 'change']) {
  el.addEventListener(t, note);
  document.getElementById('ce').addEventListener(t, note);
}
const onInput = (e) => {
  if (e.target === el) {
    const v = el.value;
    if (v !== tracked) { tracked = v; state = v; }
  }
  note(e);
};
el.addEventListener('input', onInput);
document.getElementById('ce').addEventListener('input', onInput);
</script>`),

	"/device": htmlPage("Device", viewportMeta, `<pre id="info"></pre>
<script>
document.getElementById('info').textContent = JSON.stringify({
  width: window.innerWidth, height: window.innerHeight, dpr: window.devicePixelRatio,
  ua: navigator.userAgent, touch: 'ontouchstart' in window, maxTouchPoints: navigator.maxTouchPoints,
});
</script>`),

	// A wide page without a viewport tag: a mobile browser zooms it out.
	"/wide": htmlPage("Wide", "", `<div style="width:1200px;height:1600px;position:relative">
<button id="far" style="position:absolute;left:1000px;top:1400px">Far</button></div><p id="res">not clicked</p>
<script>document.getElementById('far').addEventListener('click', () => { document.getElementById('res').textContent = 'clicked'; });</script>`),

	"/tall": htmlPage("Tall", "", `<div style="height:3000px;background:linear-gradient(#fff,#00f)">tall</div>`),

	"/dialog": htmlPage("Dialogs", "", `<button id="alert">Alert</button> <button id="confirm">Confirm</button>
<button id="prompt">Prompt</button> <p id="res"></p>
<script>
const res = document.getElementById('res');
document.getElementById('alert').onclick = () => { alert('hi'); res.textContent = 'after alert'; };
document.getElementById('confirm').onclick = () => { res.textContent = 'confirmed: ' + confirm('sure?'); };
document.getElementById('prompt').onclick = () => { res.textContent = 'prompt: ' + prompt('name?', 'dflt'); };
</script>`),

	"/cookie/set": htmlPage("Set", "", `<p id="c">set</p>`),
}

// newSite starts the test web site. /slow answers only when the test ends;
// /cookie/set sets a cookie; /cookie/show shows the cookies it receives.
func newSite(tb testing.TB) *httptest.Server {
	tb.Helper()
	release := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("GET /slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	mux.HandleFunc("GET /cookie/show", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, htmlPage("Show", "", `<p id="c">cookies=[`+html.EscapeString(r.Header.Get("Cookie"))+`]</p>`))
	})
	mux.HandleFunc("GET /", func(w http.ResponseWriter, r *http.Request) {
		body, ok := sitePages[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if r.URL.Path == "/cookie/set" {
			http.SetCookie(w, &http.Cookie{Name: "duet", Value: "one", Path: "/"})
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, body)
	})
	srv := httptest.NewServer(mux)
	tb.Cleanup(srv.Close)
	tb.Cleanup(func() { close(release) }) // runs before srv.Close
	return srv
}
