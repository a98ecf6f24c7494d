package browser

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/browser/chromiumtest"
	"github.com/duet-test/duet/internal/netguard"
)

// startChromium starts a Chromium separately, as an operator does for
// DUET_BROWSER_URL.
func startChromium(t *testing.T) *chromiumtest.Browser {
	return chromiumtest.Start(t, func(dir string) []string { return CommandLine(dir, 0) })
}

// remotePool returns a pool attached to url that the test closes.
func remotePool(t *testing.T, r Remote, opts Options) *Pool {
	t.Helper()
	opts.Remote = &r
	if opts.Logger == nil {
		opts.Logger = testLogger()
	}
	p := NewPool(opts)
	t.Cleanup(p.Close)
	return p
}

// TestRemoteAttach drives a Chromium started separately, through each form
// of its address.
func TestRemoteAttach(t *testing.T) {
	t.Parallel()
	b := startChromium(t)
	site := newSite(t)
	_, port, _ := net.SplitHostPort(b.Addr)
	for _, u := range []string{b.WS, b.HTTP, "ws://localhost:" + port} {
		t.Run(u, func(t *testing.T) {
			p := remotePool(t, Remote{URL: u}, Options{})
			if err := p.Available(); err != nil {
				t.Fatalf("Available: %v", err)
			}
			s := newSession(t, p, "iphone-15")
			open(t, s, site, "/device")
			info, err := s.Text(testCtx(t, 10*time.Second), "#info")
			if err != nil || !strings.Contains(info, `"width":393`) || !strings.Contains(info, "iPhone") {
				t.Errorf("the emulated device on a remote browser: got %s, %v", info, err)
			}
			if png, err := s.Screenshot(testCtx(t, 10*time.Second)); err != nil || len(png) < 100 {
				t.Errorf("Screenshot: %d bytes, %v", len(png), err)
			}
			if st := p.Stats(); st.Browsers != 1 || st.Sessions != 1 {
				t.Errorf("Stats: got %+v, want one connection with one session", st)
			}
		})
	}
}

// TestRemoteErrors: an endpoint that is down, one that speaks something
// else, and a browser that is too old each fail with their own code.
func TestRemoteErrors(t *testing.T) {
	t.Parallel()
	closed := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		return addr
	}()
	// Recorded /json/version answers: Chrome 60 on an old device farm,
	// Firefox's partial CDP endpoint.
	old := `{"Browser": "Chrome/60.0.3112.116", "Protocol-Version": "1.2", "User-Agent": "Mozilla/5.0 (Linux; Android 7.0; SM-G930F) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/60.0.3112.116 Mobile Safari/537.36", "V8-Version": "6.0.286.52", "WebKit-Version": "537.36 (@a3a7b8c4b1b4a5d2a7e1fd0ce7b9a5c4a2c1f3e9)", "webSocketDebuggerUrl": "ws://%s/devtools/browser"}`
	firefox := `{"Browser": "Firefox/115.0", "Protocol-Version": "1.0", "User-Agent": "Mozilla/5.0 (X11; Linux x86_64; rv:115.0) Gecko/20100101 Firefox/115.0", "V8-Version": "1.0", "WebKit-Version": "1.0", "webSocketDebuggerUrl": "ws://%s/devtools/browser/0b1c"}`
	mux := http.NewServeMux()
	mux.HandleFunc("GET /old/json/version", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintf(w, old, r.Host) })
	mux.HandleFunc("GET /firefox/json/version", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintf(w, firefox, r.Host) })
	mux.HandleFunc("GET /", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<html><body>Welcome to the intranet</body></html>")
	})
	web := httptest.NewServer(mux)
	t.Cleanup(web.Close)
	host := strings.TrimPrefix(web.URL, "http://")

	tests := []struct {
		name, url string
		want      duet.Code
		msg       string
	}{
		{"down", "ws://" + closed, duet.CodeBrowserUnavailable, "connection refused"},
		{"down over http", "http://" + closed, duet.CodeBrowserUnavailable, "--remote-debugging-port"},
		{"a web site", web.URL, duet.CodeBrowserProtocolMismatch, "HTTP 200 text/html"},
		{"a web site over ws", "ws://" + host + "/devtools/browser/x", duet.CodeBrowserProtocolMismatch, "WebSocket handshake got 200 OK"},
		{"too old", web.URL + "/old", duet.CodeBrowserVersionUnsupported, "Chrome/60.0.3112.116; Duet needs Chrome 100 or later"},
		{"firefox", web.URL + "/firefox", duet.CodeBrowserProtocolMismatch, "Firefox/115.0, not a Chromium-based browser"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := remotePool(t, Remote{URL: tt.url}, Options{})
			_, err := p.NewSession(testCtx(t, 30*time.Second), Device{}, netguard.Allowance{})
			wantCode(t, err, tt.want, tt.msg)
		})
	}
	// A pool's token in DUET_BROWSER_URL stays out of messages and logs.
	tp := remotePool(t, Remote{URL: "ws://" + host + "/pool?token=s3cret"}, Options{})
	_, err := tp.NewSession(testCtx(t, 30*time.Second), Device{}, netguard.Allowance{})
	wantCode(t, err, duet.CodeBrowserProtocolMismatch)
	if strings.Contains(err.Error(), "s3cret") {
		t.Errorf("the error quotes the token: %v", err)
	}
	p := remotePool(t, Remote{URL: "ftp://" + host}, Options{})
	wantCode(t, p.Available(), duet.CodeInvalidArgument, "want ws, wss, http or https")
	_, err = ParseRemoteURL("ws://grid.example:9222/?token=s3cret", true)
	wantCode(t, err, duet.CodeInvalidArgument, "cannot be stored with a task")
	if strings.Contains(duet.ErrorMessage(err), "s3cret") {
		t.Errorf("the message quotes the token: %s", duet.ErrorMessage(err))
	}
}

func TestCheckProduct(t *testing.T) {
	t.Parallel()
	for product, want := range map[string]duet.Code{
		"HeadlessChrome/156.0.8078.114": "",
		"Chrome/120.0.6099.230":         "", // Chrome on Android
		"Edg/120.0.2210.91":             "",
		"Chrome/99.0.4844.88":           duet.CodeBrowserVersionUnsupported,
		"Firefox/128.0":                 duet.CodeBrowserProtocolMismatch,
		"nonsense":                      duet.CodeBrowserProtocolMismatch,
	} {
		if got := duet.ErrorCode(checkProduct(product, "x")); got != want {
			t.Errorf("checkProduct(%s): got %q, want %q", product, got, want)
		}
	}
}

// TestRemoteLost: when the connection to the remote browser drops mid-session
// (an unplugged phone), the calls fail with DEVICE_LOST; the pool connects
// again for the next session.
func TestRemoteLost(t *testing.T) {
	t.Parallel()
	b := startChromium(t)
	site := newSite(t)
	proxy := chromiumtest.NewProxy(t, b.Addr)
	p := remotePool(t, Remote{URL: "http://" + proxy.Addr, Name: "the test phone"}, Options{})
	s := newSession(t, p, "")
	open(t, s, site, "/")
	proxy.Kill()
	_, err := s.Text(testCtx(t, 10*time.Second), "#shown")
	wantCode(t, err, duet.CodeDeviceLost, "the connection to the test phone was lost")
	s.Close()
	// The next session connects again, and finds nothing listening.
	_, err = p.NewSession(testCtx(t, 20*time.Second), Device{}, netguard.Allowance{})
	wantCode(t, err, duet.CodeBrowserUnavailable, "the test phone")
	if st := p.Stats(); st.Sessions != 0 {
		t.Errorf("Stats after the loss: got %+v, want no session", st)
	}
}

// TestSharedContext: a browser without isolated contexts (Chrome on a phone)
// gets a fresh tab per session, and a session does not see the cookies or
// storage of the one before it.
func TestSharedContext(t *testing.T) {
	t.Parallel()
	b := startChromium(t)
	site := newSite(t)
	p := remotePool(t, Remote{URL: b.WS, Real: true, SharedContext: true}, Options{MaxContextsPerBrowser: 1})
	store := site.URL + "/cookie/set"
	real := func() *Session {
		s, err := p.NewSession(testCtx(t, time.Minute), Device{}, netguard.Allowance{})
		if err != nil {
			t.Fatalf("NewSession: %v", err)
		}
		t.Cleanup(s.Close)
		return s
	}
	first := real()
	if err := first.Open(testCtx(t, 20*time.Second), store); err != nil {
		t.Fatal(err)
	}
	if _, err := evalJSIn(first, `function () { localStorage.setItem('who', 'first'); return {state: 'ok'}; }`); err != nil {
		t.Fatal(err)
	}
	d := first.Device()
	if d.Width <= 0 || d.Height <= 0 || d.UserAgent == "" || d.Name != "the remote browser at "+b.Addr {
		t.Errorf("the real device: got %+v, want its own size, user agent and the browser's name", d)
	}
	first.Close()

	second := real()
	open(t, second, site, "/cookie/show")
	if got, err := second.Text(testCtx(t, 10*time.Second), "#c"); err != nil || got != "cookies=[]" {
		t.Errorf("the next session's cookies: got %q, %v; want none", got, err)
	}
	r, err := evalJSIn(second, `function () { return {state: 'ok', str: localStorage.getItem('who') || ''}; }`)
	if err != nil || r.Str != "" {
		t.Errorf("the next session's local storage: got %q, %v; want empty", r.Str, err)
	}
	_, err = p.NewSession(testCtx(t, 5*time.Second), Devices()["pixel-7"], netguard.Allowance{})
	wantCode(t, err, duet.CodeInvalidArgument, "real device")
}

func evalJSIn(s *Session, fn string) (jsResult, error) {
	c, err := s.begin(context.Background(), "eval", 10*time.Second)
	if err != nil {
		return jsResult{}, err
	}
	defer s.end(c)
	return evalJS[jsResult](c.c, fn)
}

// guardSites is a site under test and a second loopback service that the
// guard must keep the browser away from.
type guardSites struct {
	base, other *httptest.Server
	otherHits   atomic.Int32
	// release, once closed, lets the page /later navigate to other.
	release chan struct{}
}

func newGuardSites(t *testing.T) *guardSites {
	g := &guardSites{release: make(chan struct{})}
	g.other = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.otherHits.Add(1)
		fmt.Fprint(w, htmlPage("Internal", "", `<p id="secret">internal data</p>`))
	}))
	t.Cleanup(g.other.Close)
	mux := http.NewServeMux()
	page := func(body string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, htmlPage("Shop", "", body))
		}
	}
	mux.HandleFunc("GET /{$}", page(`<p id="ok">shop</p><a id="out" href="`+g.other.URL+`/admin">admin</a>`))
	mux.HandleFunc("GET /redirect", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, g.other.URL+"/admin", http.StatusFound)
	})
	mux.HandleFunc("GET /metadata", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
	})
	mux.HandleFunc("GET /script", page(`<p id="ok">shop</p><script>setTimeout(() => { location.href = '`+g.other.URL+`/admin'; }, 50);</script>`))
	mux.HandleFunc("GET /later", page(`<p id="ok">shop</p><script>fetch('/release').then(() => { location.href = '`+g.other.URL+`/admin'; });</script>`))
	mux.HandleFunc("GET /release", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-g.release:
		case <-r.Context().Done():
		}
	})
	mux.HandleFunc("GET /frame", page(`<p id="ok">shop</p><iframe id="f" src="`+g.other.URL+`/admin"></iframe>`))
	g.base = httptest.NewServer(mux)
	t.Cleanup(g.base.Close)
	return g
}

// session opens a session of a pool with the default guard that allows
// the site under test.
func (g *guardSites) session(t *testing.T) *Session {
	t.Helper()
	p := NewPool(Options{MaxBrowsers: 1, Logger: testLogger(), Guard: &netguard.Policy{}})
	t.Cleanup(p.Close)
	s, err := p.NewSession(testCtx(t, time.Minute), Device{}, netguard.AllowURL(g.base.URL))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// TestGuardRefusalEndsTheWait: a navigation of the page that the guard
// refuses while a step waits on that page ends the step at once with
// URL_REFUSED — the page it waits for is gone — instead of at the end of
// its wait, an hour here, with no deadline on its context.
func TestGuardRefusalEndsTheWait(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	g := newGuardSites(t)
	s := g.session(t)
	if err := s.Open(testCtx(t, time.Minute), g.base.URL+"/later"); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	wctx, stop := context.WithCancel(t.Context())
	defer stop()
	go func() {
		done <- s.WaitFor(wctx, WaitCondition{Selector: "#secret", Timeout: time.Hour})
	}()
	// The page navigates once the wait is under way.
	for deadline := time.Now().Add(time.Minute); s.inflight.Load() == nil; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the wait did not start within a minute")
		}
	}
	close(g.release)
	select {
	case err := <-done:
		wantCode(t, err, duet.CodeURLRefused, "the page navigated to "+g.other.URL+"/admin")
	case <-time.After(time.Minute): // the refusal's news takes ms; a loaded machine, seconds
		stop()
		t.Fatalf("the step still waited a minute after the page was released to a refused host (then: %v)", <-done)
	}
	if n := g.otherHits.Load(); n != 0 {
		t.Errorf("the refused service got %d requests from the browser, want none", n)
	}
	// The session goes on: the next step works.
	if err := s.Open(testCtx(t, time.Minute), g.base.URL+"/"); err != nil {
		t.Fatalf("Open after the refusal: %v", err)
	}
	if got, err := s.Text(testCtx(t, time.Minute), "#ok"); err != nil || got != "shop" {
		t.Errorf("Text after the refusal: %q, %v", got, err)
	}
}

// TestGuardNavigation is issue 10 point 5 for browser steps: the page under
// test (the task's base URL host) loads, and nothing takes the browser to a
// destination the guard refuses — not Open, not a redirect, not a link, not
// a script, not a frame.
func TestGuardNavigation(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	g := newGuardSites(t)
	s := g.session(t)
	var err error
	// A step's budget: what a loaded machine meets, never a claim of
	// speed (the calls that must fail are refused without waiting).
	step := func() context.Context { return testCtx(t, time.Minute) }
	// refused waits for the event the next step reports: the guard has
	// refused a navigation of the page (the browser gets to it when it
	// gets to it). The step after it then ends at once with that refusal,
	// however long the browser took.
	refused := func(what string) {
		t.Helper()
		for deadline := time.Now().Add(time.Minute); s.refused.Load() == nil; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: the guard refused no navigation within a minute", what)
			}
		}
	}

	if err := s.Open(step(), g.base.URL+"/"); err != nil {
		t.Fatalf("Open of the base URL: %v", err)
	}
	wantCode(t, s.Open(step(), g.other.URL+"/admin"), duet.CodeURLRefused, "loopback")
	wantCode(t, s.Open(step(), g.base.URL+"/redirect"), duet.CodeURLRefused, "redirected to "+g.other.URL+"/admin")
	wantCode(t, s.Open(step(), g.base.URL+"/metadata"), duet.CodeURLRefused, "redirected to http://169.254.169.254/latest/meta-data/", "cloud metadata")
	wantCode(t, s.Open(step(), "http://0.0.0.0:"+strings.Split(g.other.Listener.Addr().String(), ":")[1]+"/"), duet.CodeURLRefused, "unspecified")

	// A link the test clicks: the click works, the navigation does not,
	// and the click says why when the refusal comes while it still runs,
	// else the next step.
	if err := s.Open(step(), g.base.URL+"/"); err != nil {
		t.Fatal(err)
	}
	if err = s.Click(step(), "#out"); err == nil {
		refused("the link")
		err = s.WaitFor(step(), WaitCondition{Selector: "#secret", Timeout: 2 * time.Second})
	}
	wantCode(t, err, duet.CodeURLRefused, "the page navigated to "+g.other.URL+"/admin")

	// A script of the page (50 ms after it starts): the open says why
	// when the refusal comes while it still runs, else the next step.
	if err = s.Open(step(), g.base.URL+"/script"); err == nil {
		refused("the script")
		_, err = s.Text(testCtx(t, 2*time.Second), "#secret")
	}
	wantCode(t, err, duet.CodeURLRefused, "the page navigated to")

	// A frame: the page loads, the frame does not.
	if err := s.Open(step(), g.base.URL+"/frame"); err != nil {
		t.Fatalf("Open of a page with a refused frame: %v", err)
	}
	if got, err := s.Text(step(), "#ok"); err != nil || got != "shop" {
		t.Errorf("the page around the refused frame: got %q, %v", got, err)
	}
	if n := g.otherHits.Load(); n != 0 {
		t.Errorf("the refused service got %d requests from the browser, want none", n)
	}
}
