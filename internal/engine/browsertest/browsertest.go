// Package browsertest checks that a device driver honours the contract of
// engine.Browser and engine.BrowserSession, as testing/fstest checks an
// fs.FS. The Chromium driver (internal/app over internal/browser) passes it;
// a new driver, such as an Android one over adb, calls Run from its tests.
//
// Run serves a small web site of its own and drives the driver's sessions
// through it: navigation, reads, form input, keys, waits, screenshots,
// isolation between sessions, cancellation and the error codes the engine
// relies on. See docs/devices.md.
package browsertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image/png"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/engine"
	"github.com/duet-test/duet/internal/netguard"
	"github.com/duet-test/duet/internal/step"
)

// Options tune Run. The zero value suits a driver that runs on this
// machine and emulates no device presets.
type Options struct {
	// Listen is the address the test site listens on; "" means
	// "127.0.0.1:0". A driver on another machine (a phone) needs an address
	// it can reach, or a port forward such as `adb reverse`.
	Listen string
	// Devices maps the device presets the driver emulates to the CSS
	// viewport width (window.innerWidth) each gives, for example
	// {"iphone-15": 393}. Nil skips the device checks, except that an
	// unknown name must fail with INVALID_ARGUMENT.
	Devices map[string]int
	// Timeout bounds each check; 0 means 30s.
	Timeout time.Duration
}

// Run checks b. It fails t for every broken promise and names it.
func Run(t *testing.T, b engine.Browser, opts Options) {
	t.Helper()
	if opts.Timeout <= 0 {
		opts.Timeout = 30 * time.Second
	}
	site := serve(t, opts.Listen)
	ck := &checker{b: b, site: site, opts: opts}
	t.Run("navigation", ck.navigation)
	t.Run("reads", ck.reads)
	t.Run("input", ck.input)
	t.Run("waits", ck.waits)
	t.Run("errors", ck.errors)
	t.Run("cancel", ck.cancel)
	t.Run("screenshot", ck.screenshot)
	t.Run("isolation", ck.isolation)
	t.Run("devices", ck.devices)
	t.Run("close", ck.close)
	t.Run("locators", ck.locators)
}

type checker struct {
	b    engine.Browser
	site string
	opts Options
}

func (ck *checker) ctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), ck.opts.Timeout)
	t.Cleanup(cancel)
	return ctx
}

// session opens a session on device that closes when the test ends.
func (ck *checker) session(t *testing.T, device string) engine.BrowserSession {
	t.Helper()
	s, err := ck.b.NewSession(ck.ctx(t), device, netguard.Allowance{})
	if err != nil {
		t.Fatalf("NewSession(%q): %v", device, err)
	}
	t.Cleanup(s.Close)
	return s
}

func (ck *checker) open(t *testing.T, s engine.BrowserSession, path string) {
	t.Helper()
	if err := s.Open(ck.ctx(t), ck.site+path); err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
}

func wantCode(t *testing.T, what string, err error, want duet.Code) {
	t.Helper()
	if got := duet.ErrorCode(err); got != want {
		t.Errorf("%s: got error %v (code %q), want code %s", what, err, got, want)
	}
}

func (ck *checker) navigation(t *testing.T) {
	s := ck.session(t, "")
	ctx := ck.ctx(t)
	ck.open(t, s, "/form?from=test")
	if title, err := s.Title(ctx); err != nil || title != "Form" {
		t.Errorf("Title: got %q, %v; want %q", title, err, "Form")
	}
	if u, err := s.URL(ctx); err != nil || u != ck.site+"/form?from=test" {
		t.Errorf("URL: got %q, %v; want %q", u, err, ck.site+"/form?from=test")
	}
	if err := s.Click(ctx, "#next"); err != nil {
		t.Fatalf("Click(#next): %v", err)
	}
	if err := s.WaitFor(ctx, engine.WaitCondition{URLContains: "/next?step=2"}); err != nil {
		t.Fatalf("WaitFor(URL after a link): %v", err)
	}
	// The URL changes as soon as the navigation commits; the new page's
	// element may not be laid out yet (Text reads "" for an element that is
	// not visible), so wait for it as a case would.
	if err := s.WaitFor(ctx, engine.WaitCondition{Selector: "#step", Visible: true}); err != nil {
		t.Fatalf("WaitFor(#step visible): %v", err)
	}
	if got, err := s.Text(ctx, "#step"); err != nil || got != "step 2" {
		t.Errorf("Text(#step) after navigating: got %q, %v; want %q", got, err, "step 2")
	}
}

func (ck *checker) reads(t *testing.T) {
	s := ck.session(t, "")
	ctx := ck.ctx(t)
	ck.open(t, s, "/form")
	if got, err := s.Text(ctx, "#shown"); err != nil || got != "Shown text" {
		t.Errorf("Text(#shown): got %q, %v; want the trimmed text %q", got, err, "Shown text")
	}
	if got, ok, err := s.Attr(ctx, "#shown", "data-kind"); err != nil || !ok || got != "info" {
		t.Errorf("Attr(#shown, data-kind): got %q, %v, %v; want info, true", got, ok, err)
	}
	if _, ok, err := s.Attr(ctx, "#shown", "data-none"); err != nil || ok {
		t.Errorf("Attr of a missing attribute: got ok=%v, %v; want false, nil", ok, err)
	}
	if got, err := s.Value(ctx, "#name"); err != nil || got != "preset" {
		t.Errorf("Value(#name): got %q, %v; want %q", got, err, "preset")
	}
	for sel, want := range map[string]bool{"#shown": true, "#hidden": false, "#missing": false} {
		if got, err := s.Visible(ctx, sel); err != nil || got != want {
			t.Errorf("Visible(%s): got %v, %v; want %v", sel, got, err, want)
		}
	}
}

func (ck *checker) input(t *testing.T) {
	s := ck.session(t, "")
	ctx := ck.ctx(t)
	ck.open(t, s, "/form")
	steps := []struct {
		name string
		do   func() error
	}{
		{"Fill(#name)", func() error { return s.Fill(ctx, "#name", "Ada") }},
		{"Select(#color) by label", func() error { return s.Select(ctx, "#color", "Green") }},
		{"Click(#go)", func() error { return s.Click(ctx, "#go") }},
		{"Press(Enter, #k)", func() error { return s.Press(ctx, "Enter", "#k") }},
		{"Press(x)", func() error { return s.Press(ctx, "x", "") }},
	}
	for _, st := range steps {
		if err := st.do(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
	}
	if got, err := s.Value(ctx, "#name"); err != nil || got != "Ada" {
		t.Errorf("Fill replaces the value: got %q, %v; want %q", got, err, "Ada")
	}
	if got, err := s.Text(ctx, "#out"); err != nil || got != "Ada likes g" {
		t.Errorf("the page after the click: got %q, %v; want %q", got, err, "Ada likes g")
	}
	if got, err := s.Text(ctx, "#keys"); err != nil || got != "Enter,x" {
		t.Errorf("the keys the page saw: got %q, %v; want %q", got, err, "Enter,x")
	}
}

func (ck *checker) waits(t *testing.T) {
	s := ck.session(t, "")
	ctx := ck.ctx(t)
	ck.open(t, s, "/next?step=1")
	conds := []engine.WaitCondition{
		{Selector: "#late"},
		{Selector: "#late", Visible: true},
		{Text: "arrived late"},
		{Selector: "#late", Text: "late"},
		{URLContains: "step=1"},
		{URLMatches: `/next\?step=\d$`},
	}
	for _, c := range conds {
		c.Timeout = 10 * time.Second
		if err := s.WaitFor(ctx, c); err != nil {
			t.Errorf("WaitFor(%+v): %v", c, err)
		}
	}
}

func (ck *checker) errors(t *testing.T) {
	s := ck.session(t, "")
	ck.open(t, s, "/form")
	short := func() context.Context {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		t.Cleanup(cancel)
		return ctx
	}
	_, err := s.Text(short(), "#missing")
	wantCode(t, "Text of a missing element", err, duet.CodeElementNotFound)
	wantCode(t, "Click of a missing element", s.Click(short(), "#missing"), duet.CodeElementNotFound)
	wantCode(t, "Click of a hidden element", s.Click(short(), "#hidden"), duet.CodeElementNotFound)
	err = s.WaitFor(ck.ctx(t), engine.WaitCondition{Selector: "#never", Timeout: 300 * time.Millisecond})
	wantCode(t, "WaitFor past its Timeout", err, duet.CodeStepTimeout)
	err = s.WaitFor(short(), engine.WaitCondition{Text: "never shown"})
	wantCode(t, "WaitFor past the ctx deadline", err, duet.CodeStepTimeout)
	// The session still works after the failures.
	if got, err := s.Text(ck.ctx(t), "#shown"); err != nil || got != "Shown text" {
		t.Errorf("Text after failures: got %q, %v", got, err)
	}
}

func (ck *checker) cancel(t *testing.T) {
	s := ck.session(t, "")
	ck.open(t, s, "/form")
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(300*time.Millisecond, cancel)
	start := time.Now()
	err := s.WaitFor(ctx, engine.WaitCondition{Text: "never shown", Timeout: time.Minute})
	wantCode(t, "WaitFor when its ctx is cancelled", err, duet.CodeCancelled)
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("WaitFor returned %s after its ctx was cancelled, want at once", took-300*time.Millisecond)
	}
	if got, err := s.Text(ck.ctx(t), "#shown"); err != nil || got != "Shown text" {
		t.Errorf("Text after a cancelled call: got %q, %v", got, err)
	}
}

func (ck *checker) screenshot(t *testing.T) {
	s := ck.session(t, "")
	ctx := ck.ctx(t)
	ck.open(t, s, "/tall")
	var heights [2]int
	for i, full := range []bool{false, true} {
		data, err := s.Screenshot(ctx, full)
		if err != nil {
			t.Fatalf("Screenshot(full=%v): %v", full, err)
		}
		img, err := png.Decode(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("Screenshot(full=%v) is not a PNG: %v", full, err)
		}
		heights[i] = img.Bounds().Dy()
	}
	if heights[1] <= heights[0] {
		t.Errorf("a full-page screenshot of a tall page is %d px high, the viewport %d: want it higher", heights[1], heights[0])
	}
}

func (ck *checker) isolation(t *testing.T) {
	a, b := ck.session(t, ""), ck.session(t, "")
	ctx := ck.ctx(t)
	ck.open(t, a, "/store?set=alice")
	if got, err := a.Text(ctx, "#seen"); err != nil || got != "cookie=alice storage=alice" {
		t.Fatalf("the first session's state: got %q, %v", got, err)
	}
	ck.open(t, b, "/store")
	if got, err := b.Text(ctx, "#seen"); err != nil || got != "cookie= storage=" {
		t.Errorf("a second session sees the first one's cookie or storage: got %q, %v; want none", got, err)
	}
}

func (ck *checker) devices(t *testing.T) {
	_, err := ck.b.NewSession(ck.ctx(t), "no-such-device", netguard.Allowance{})
	wantCode(t, "NewSession of an unknown device", err, duet.CodeInvalidArgument)
	for name, width := range ck.opts.Devices {
		t.Run(name, func(t *testing.T) {
			s := ck.session(t, name)
			ck.open(t, s, "/device")
			got, err := s.Text(ck.ctx(t), "#width")
			if err != nil || got != strconv.Itoa(width) {
				t.Errorf("window.innerWidth: got %q, %v; want %d", got, err, width)
			}
		})
	}
}

func (ck *checker) close(t *testing.T) {
	s, err := ck.b.NewSession(ck.ctx(t), "", netguard.Allowance{})
	if err != nil {
		t.Fatal(err)
	}
	ck.open(t, s, "/form")
	s.Close()
	s.Close() // twice is fine
	if _, err := s.Text(ck.ctx(t), "#shown"); err == nil {
		t.Errorf("Text after Close: got no error")
	}
}

// pages of the test site.
var pages = map[string]string{
	"/form": `<title>Form</title>
<input id="name" value="preset"> <select id="color"><option value="r">Red</option><option value="g">Green</option></select>
<button id="go">Go</button> <p id="out"></p>
<input id="k"> <p id="keys"></p>
<p id="shown" data-kind="info">  Shown text  </p><p id="hidden" style="display:none">Hidden</p>
<a id="next" href="/next?step=2">Next</a>
<script>
document.getElementById('go').onclick = () => {
  document.getElementById('out').textContent = document.getElementById('name').value + ' likes ' + document.getElementById('color').value;
};
const keys = [];
document.getElementById('k').addEventListener('keydown', (e) => { keys.push(e.key); document.getElementById('keys').textContent = keys.join(','); });
</script>`,
	"/next": `<title>Next</title><p id="step"></p>
<script>
document.getElementById('step').textContent = 'step ' + new URLSearchParams(location.search).get('step');
setTimeout(() => { const p = document.createElement('p'); p.id = 'late'; p.textContent = 'arrived late'; document.body.appendChild(p); }, 400);
</script>`,
	"/tall":   `<title>Tall</title><div style="height:4000px;background:linear-gradient(#fff,#36c)">tall</div>`,
	"/device": `<meta name="viewport" content="width=device-width, initial-scale=1"><title>Device</title><p id="width"></p><script>document.getElementById('width').textContent = String(window.innerWidth);</script>`,
	"/store": `<title>Store</title><p id="seen"></p>
<script>
const set = new URLSearchParams(location.search).get('set');
if (set) { document.cookie = 'who=' + set + '; path=/'; localStorage.setItem('who', set); }
const c = (document.cookie.match(/(?:^|; )who=([^;]*)/) || [])[1] || '';
document.getElementById('seen').textContent = 'cookie=' + c + ' storage=' + (localStorage.getItem('who') || '');
</script>`,
}

// serve starts the test site and returns its base URL.
func serve(t *testing.T, addr string) string {
	t.Helper()
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("browsertest: cannot listen on %s: %v", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /", func(w http.ResponseWriter, r *http.Request) {
		body, ok := pages[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, "<!doctype html><meta charset=utf-8>"+body)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			t.Logf("browsertest: stopping the site: %v", err)
		}
		srv.Close()
	})
	host := ln.Addr().String()
	if h, p, err := net.SplitHostPort(host); err == nil && (h == "0.0.0.0" || h == "::") {
		host = net.JoinHostPort("127.0.0.1", p)
	}
	return "http://" + strings.TrimSuffix(host, "/")
}

// locators checks the capabilities the step kinds beyond the Page methods
// need (step.Elements and the others): every Chromium target (local,
// remote, a phone) has them, as they are all the DevTools protocol.
func (ck *checker) locators(t *testing.T) {
	s := ck.session(t, "")
	ctx := ck.ctx(t)
	ck.open(t, s, "/form")
	el, ok := s.(step.Elements)
	if !ok {
		t.Fatalf("the session is not a step.Elements: locators do not work on it")
	}
	for _, c := range []struct {
		name string
		ok   bool
	}{
		{"Framer", implements[step.Framer](s)}, {"Tabs", implements[step.Tabs](s)}, {"Dialogs", implements[step.Dialogs](s)},
		{"Historian", implements[step.Historian](s)}, {"Emulator", implements[step.Emulator](s)}, {"Evaluator", implements[step.Evaluator](s)},
	} {
		if !c.ok {
			t.Errorf("the session is not a step.%s", c.name)
		}
	}
	if err := el.Act(ctx, step.Target{Locator: &duet.Locator{Role: "button", Name: "Go"}}, step.Action{Kind: "click"}); err != nil {
		t.Fatalf("Act(click role=button[name=Go]): %v", err)
	}
	a, err := el.Query(ctx, step.Target{Locator: &duet.Locator{Text: "likes", Exact: false}}, step.Query{Kind: "text"})
	if err != nil || a.Str != "preset likes r" {
		t.Errorf("Query(text=likes): %q, %v", a.Str, err)
	}
	_, err = el.Query(ctx, step.Target{Locator: &duet.Locator{CSS: "p"}}, step.Query{Kind: "text"})
	wantCode(t, "Query of a locator that matches several elements", err, duet.CodeLocatorAmbiguous)
	if a, err := el.Query(ctx, step.Target{Locator: &duet.Locator{CSS: "p"}}, step.Query{Kind: "count"}); err != nil || a.Count < 3 {
		t.Errorf("Query(count p): %d, %v", a.Count, err)
	}
	if v, err := s.(step.Evaluator).Evaluate(ctx, "document.title", nil, 0); err != nil || v != "Form" {
		t.Errorf("Evaluate(document.title): %v, %v", v, err)
	}
}

func implements[T any](v any) bool {
	_, ok := v.(T)
	return ok
}
