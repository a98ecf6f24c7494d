package browser

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/netguard"
)

// hits counts the requests a test server received, by path.
type hits struct {
	mu sync.Mutex
	n  map[string]int
}

func (h *hits) add(path string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.n == nil {
		h.n = map[string]int{}
	}
	h.n[path]++
}

func (h *hits) of(path string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n[path]
}

// TestPopupRequestsAnsweredInThePopup: once a popup is a tab of the
// session, its requests go through the routes and the network guard and
// are answered on the popup's own connection — an API call the route
// mocks, a navigation the guard allows, one it refuses. (The answers went
// to the first tab, which does not know the popup's requests: they stayed
// paused and the popup hung.)
func TestPopupRequestsAnsweredInThePopup(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	var siteHits, farHits hits
	far := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		farHits.add(r.URL.Path)
		fmt.Fprint(w, `<title>Secret</title>`)
	}))
	t.Cleanup(far.Close)
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		siteHits.add(r.URL.Path)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		switch r.URL.Path {
		case "/":
			fmt.Fprint(w, `<!doctype html><title>Opener</title><button id="open" onclick="window.open('/popup')">Open</button>`)
		case "/popup":
			fmt.Fprintf(w, `<!doctype html><title>Popup</title><p id="late">waiting</p>
<button id="call" onclick="fetch('/api/late').then(r => r.json()).then(j => { document.getElementById('late').textContent = j.from })">Call</button>
<a id="next" href="/next">Next</a> <a id="far" href="%s/secret">Far</a>`, far.URL)
		case "/next":
			fmt.Fprint(w, `<!doctype html><title>Next</title>`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(site.Close)

	// The guard refuses loopback but for the site.
	ctx, s := openPopup(t, Options{MaxBrowsers: 1, Logger: testLogger(), Guard: &netguard.Policy{}}, site.URL)
	err := s.AddRoute(ctx, Route{URL: regexp.MustCompile(`^.*/api/late$`), Fulfil: true,
		Headers: map[string]string{"Content-Type": "application/json"}, Body: []byte(`{"from": "the route"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Click(ctx, "#call"); err != nil {
		t.Fatal(err)
	}
	if err := s.WaitFor(ctx, WaitCondition{Selector: "#late", Text: "the route"}); err != nil {
		t.Errorf("the popup's API call is not answered by the route: %v", err)
	}
	if n := siteHits.of("/api/late"); n != 0 {
		t.Errorf("the site saw the mocked API call %d times", n)
	}
	if got, _ := s.Requests(RequestFilter{URL: regexp.MustCompile(`/api/late$`)}); !slices.Equal(got, []string{"GET " + site.URL + "/api/late"}) {
		t.Errorf("the request log: %q", got)
	}

	// A navigation the guard allows loads; one it refuses never leaves.
	if err := s.Click(ctx, "#next"); err != nil {
		t.Fatal(err)
	}
	if err := s.WaitFor(ctx, WaitCondition{URLContains: "/next"}); err != nil {
		t.Fatalf("the popup's navigation: %v", err)
	}
	if err := s.History(ctx, "back"); err != nil {
		t.Fatal(err)
	}
	err = s.Click(ctx, "#far")
	if err == nil {
		// Bounded: the wait fails, with the guard's refusal as its news.
		err = s.WaitFor(ctx, WaitCondition{URLContains: "/secret", Timeout: 3 * time.Second})
	}
	wantCode(t, err, duet.CodeURLRefused)
	if n := farHits.of("/secret"); n != 0 {
		t.Errorf("the refused server saw the popup's navigation %d times", n)
	}
}

// popupPools returns the pools the first-request tests run on: local
// Chromium, and a Chromium started separately and reached as a remote
// browser (DUET_BROWSER_URL's path).
func popupPools(t *testing.T) map[string]func(*testing.T) *Pool {
	return map[string]func(*testing.T) *Pool{
		"local": func(t *testing.T) *Pool {
			p := NewPool(Options{MaxBrowsers: 1, Logger: testLogger(), Guard: &netguard.Policy{}})
			t.Cleanup(p.Close)
			return p
		},
		"remote": func(t *testing.T) *Pool {
			b := startChromium(t)
			return remotePool(t, Remote{URL: b.WS}, Options{Guard: &netguard.Policy{}})
		},
	}
}

// TestPopupFirstRequestsGuarded: a page that a link with target=_blank
// rel=noopener opens at a host the network guard refuses is refused from
// its very first request: its server never sees it. (The popup loaded
// before Duet attached to it, unguarded.)
func TestPopupFirstRequestsGuarded(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	for name, pool := range popupPools(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var farHits hits
			far := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				farHits.add(r.URL.Path)
				fmt.Fprint(w, `<title>Secret</title>`)
			}))
			t.Cleanup(far.Close)
			site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html; charset=utf-8")
				fmt.Fprintf(w, `<!doctype html><title>Opener</title><a id="far" href="%s/secret" target="_blank" rel="noopener">Far</a>`, far.URL)
			}))
			t.Cleanup(site.Close)
			p := pool(t)
			ctx := testCtx(t, 60*time.Second)
			s, err := p.NewSession(ctx, Device{}, netguard.AllowURL(site.URL))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(s.Close)
			if err := s.Open(ctx, site.URL+"/"); err != nil {
				t.Fatal(err)
			}
			if err := s.Click(ctx, "#far"); err != nil {
				t.Fatal(err)
			}
			_, err = s.WaitForPopup(ctx)
			if err == nil {
				// The popup is the current tab: its navigation ends refused.
				err = s.WaitFor(ctx, WaitCondition{URLContains: "/secret", Timeout: 10 * time.Second})
			}
			wantCode(t, err, duet.CodeURLRefused)
			if n := farHits.of("/secret"); n != 0 {
				t.Errorf("the refused server saw the popup's first request %d times", n)
			}
		})
	}
}

// TestPopupFirstCallRouted: a popup whose page calls an API as it loads
// gets the answer of the case's route, both when a link with
// target=_blank rel=noopener opens it and when window.open does; the real
// server never sees the call. (The popup's first requests left before Duet
// attached to it, unrouted.)
func TestPopupFirstCallRouted(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	openers := map[string]string{
		"noopener":    `<a id="open" href="/popup" target="_blank" rel="noopener">Open</a>`,
		"window.open": `<button id="open" onclick="window.open('/popup')">Open</button>`,
	}
	for name, pool := range popupPools(t) {
		for how, opener := range openers {
			t.Run(name+"/"+how, func(t *testing.T) {
				t.Parallel()
				var siteHits hits
				site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					siteHits.add(r.URL.Path)
					switch r.URL.Path {
					case "/":
						w.Header().Set("Content-Type", "text/html; charset=utf-8")
						fmt.Fprint(w, `<!doctype html><title>Opener</title>`+opener)
					case "/popup":
						w.Header().Set("Content-Type", "text/html; charset=utf-8")
						fmt.Fprint(w, `<!doctype html><title>Popup</title><p id="first">waiting</p>
<script>fetch('/api/first').then(r => r.json()).then(j => { document.getElementById('first').textContent = j.from })</script>`)
					case "/api/first":
						w.Header().Set("Content-Type", "application/json")
						fmt.Fprint(w, `{"from": "the server"}`)
					default:
						http.NotFound(w, r)
					}
				}))
				t.Cleanup(site.Close)
				p := pool(t)
				ctx := testCtx(t, 60*time.Second)
				s, err := p.NewSession(ctx, Device{}, netguard.AllowURL(site.URL))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(s.Close)
				if err := s.Open(ctx, site.URL+"/"); err != nil {
					t.Fatal(err)
				}
				err = s.AddRoute(ctx, Route{URL: regexp.MustCompile(`^.*/api/first$`), Fulfil: true,
					Headers: map[string]string{"Content-Type": "application/json"}, Body: []byte(`{"from": "the route"}`)})
				if err != nil {
					t.Fatal(err)
				}
				if err := s.Click(ctx, "#open"); err != nil {
					t.Fatal(err)
				}
				if n, err := s.WaitForPopup(ctx); err != nil || n != 2 {
					t.Fatalf("WaitForPopup: %d, %v", n, err)
				}
				// Either answer ends the wait: the test fails on the server's.
				err = s.WaitFor(ctx, WaitCondition{Selector: "#first", Text: "the ", Timeout: 20 * time.Second})
				if err != nil {
					t.Fatalf("the popup's first call got no answer: %v", err)
				}
				if got, _ := s.Text(ctx, "#first"); got != "the route" {
					t.Errorf("the popup's first call was answered by %q, not the route", got)
				}
				if n := siteHits.of("/api/first"); n != 0 {
					t.Errorf("the server saw the popup's mocked first call %d times", n)
				}
			})
		}
	}
}

// TestPopupFromAFrameGuarded: a popup that a frame of another site opens
// (a frame in a process of its own) is held and guarded like the others:
// its refused first request never reaches the server.
func TestPopupFromAFrameGuarded(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	var farHits hits
	far := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		farHits.add(r.URL.Path)
		fmt.Fprint(w, `<title>Secret</title>`)
	}))
	t.Cleanup(far.Close)
	frame := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><title>Frame</title><a id="far" href="%s/secret" target="_blank" rel="noopener">Far</a>`, far.URL)
	}))
	t.Cleanup(frame.Close)
	// The frame is of another site than the page (localhost, 127.0.0.1).
	frameURL := strings.Replace(frame.URL, "127.0.0.1", "localhost", 1)
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><title>Page</title><iframe id="f" src="%s/"></iframe>`, frameURL)
	}))
	t.Cleanup(site.Close)
	p := NewPool(Options{MaxBrowsers: 1, Logger: testLogger(), Guard: &netguard.Policy{}})
	t.Cleanup(p.Close)
	ctx := testCtx(t, 60*time.Second)
	s, err := p.NewSession(ctx, Device{}, netguard.AllowURL(site.URL, frameURL))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if err := s.Open(ctx, site.URL+"/"); err != nil {
		t.Fatal(err)
	}
	if err := s.SetFrame(ctx, []*Locator{{CSS: "#f"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Click(ctx, "#far"); err != nil {
		t.Fatal(err)
	}
	_, err = s.WaitForPopup(ctx)
	if err == nil {
		err = s.WaitFor(ctx, WaitCondition{URLContains: "/secret", Timeout: 10 * time.Second})
	}
	wantCode(t, err, duet.CodeURLRefused)
	if n := farHits.of("/secret"); n != 0 {
		t.Errorf("the refused server saw the first request of the frame's popup %d times", n)
	}
}

// TestPopupFirstRequestsLogged: the requests a popup's page sends as it
// loads — its document, the API call of its script — are each in the
// session's request log once, as the page sent them, and WaitForResponse
// returns the call's response with its body: when a link with
// target=_blank rel=noopener opens the popup (a page with no renderer
// until its document is in, whose first call may leave before the renderer
// reports requests) and the server answers, and when window.open does
// under a route that mocks the call (the Fetch handler then pauses every
// request: the page's, and the document's second load from the cache that
// the CSS domain makes once chromedp attaches, which is not the page's).
// (The popup's first requests left before the Network domain of its tab
// was enabled: the log had neither, and the call's body was lost.)
func TestPopupFirstRequestsLogged(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	ways := []struct {
		name, opener, from string
		route              bool
	}{
		{name: "noopener", opener: `<a id="open" href="/popup" target="_blank" rel="noopener">Open</a>`, from: "the server"},
		{name: "window.open routed", opener: `<button id="open" onclick="window.open('/popup')">Open</button>`, from: "the route", route: true},
	}
	for name, pool := range popupPools(t) {
		for _, way := range ways {
			t.Run(name+"/"+way.name, func(t *testing.T) {
				t.Parallel()
				var siteHits hits
				site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					siteHits.add(r.URL.Path)
					switch r.URL.Path {
					case "/":
						w.Header().Set("Content-Type", "text/html; charset=utf-8")
						fmt.Fprint(w, `<!doctype html><title>Opener</title>`+way.opener)
					case "/popup":
						w.Header().Set("Content-Type", "text/html; charset=utf-8")
						fmt.Fprint(w, `<!doctype html><title>Popup</title><p id="first">waiting</p>
<script>fetch('/api/first').then(r => r.json()).then(j => { document.getElementById('first').textContent = j.from })</script>`)
					case "/api/first":
						w.Header().Set("Content-Type", "application/json")
						fmt.Fprint(w, `{"from": "the server"}`)
					default:
						http.NotFound(w, r)
					}
				}))
				t.Cleanup(site.Close)
				p := pool(t)
				ctx := testCtx(t, 60*time.Second)
				s, err := p.NewSession(ctx, Device{}, netguard.AllowURL(site.URL))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(s.Close)
				if err := s.Open(ctx, site.URL+"/"); err != nil {
					t.Fatal(err)
				}
				if way.route {
					err = s.AddRoute(ctx, Route{URL: regexp.MustCompile(`^.*/api/first$`), Fulfil: true,
						Headers: map[string]string{"Content-Type": "application/json"}, Body: []byte(`{"from": "the route"}`)})
					if err != nil {
						t.Fatal(err)
					}
				}
				if err := s.Click(ctx, "#open"); err != nil {
					t.Fatal(err)
				}
				if n, err := s.WaitForPopup(ctx); err != nil || n != 2 {
					t.Fatalf("WaitForPopup: %d, %v", n, err)
				}
				if err := s.WaitFor(ctx, WaitCondition{Selector: "#first", Text: way.from}); err != nil {
					t.Fatalf("the popup's first call: %v", err)
				}

				wctx := testCtx(t, 10*time.Second)
				res, err := s.WaitForResponse(wctx, RequestFilter{URL: regexp.MustCompile(`/api/first$`)})
				if want := `{"from": "` + way.from + `"}`; err != nil {
					t.Errorf("WaitForResponse of the popup's first call: %v", err)
				} else if res.Status != http.StatusOK || string(res.Body) != want {
					t.Errorf("WaitForResponse: got %d %q, want 200 %q", res.Status, res.Body, want)
				}
				for path, want := range map[string][]string{
					"/popup":     {"GET " + site.URL + "/popup"},
					"/api/first": {"GET " + site.URL + "/api/first"},
				} {
					if got, _ := s.Requests(RequestFilter{URL: regexp.MustCompile(regexp.QuoteMeta(path) + "$")}); !slices.Equal(got, want) {
						t.Errorf("the request log of %s: got %q, want %q (the server saw it %d times)", path, got, want, siteHits.of(path))
					}
				}
				if n, want := siteHits.of("/api/first"), map[bool]int{true: 0, false: 1}[way.route]; n != want {
					t.Errorf("the server saw the popup's first call %d times, want %d", n, want)
				}
			})
		}
	}
}

// TestPopupRunsOnlyOnceChromedpHasItsSession: a held popup is let run
// only once chromedp has its target of the popup's session. chromedp drops
// the events of a session it has no target of; when its target came after
// the page ran (a slow goroutine under load), the popup's first paused
// request was lost, its document never came, and the adoption gave up
// after adoptTimeout ("attach to the new tab: context canceled"). The
// relay here hands chromedp each attach's reply only after the page's
// first paused request, or a second later.
func TestPopupRunsOnlyOnceChromedpHasItsSession(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		switch r.URL.Path {
		case "/":
			fmt.Fprint(w, `<!doctype html><title>Opener</title><a id="open" href="/popup" target="_blank" rel="noopener">Open</a>`)
		case "/popup":
			fmt.Fprint(w, `<!doctype html><title>Popup</title><p id="first">loaded</p>`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(site.Close)
	ctx, s := openPopup(t, Options{MaxBrowsers: 1, Logger: testLogger(), Guard: &netguard.Policy{}, lateAttachReply: time.Second}, site.URL)
	if got, err := s.Text(ctx, "#first"); err != nil || got != "loaded" {
		t.Fatalf("the popup's text: %q, %v", got, err)
	}
}

// openPopup starts a pool with opts, opens site's page in a session that
// the guard lets reach site alone, clicks its #open and waits until the
// popup is the session's second tab.
func openPopup(t *testing.T, opts Options, site string) (context.Context, *Session) {
	t.Helper()
	p := NewPool(opts)
	t.Cleanup(p.Close)
	ctx := testCtx(t, 60*time.Second)
	s, err := p.NewSession(ctx, Device{}, netguard.AllowURL(site))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if err := s.Open(ctx, site+"/"); err != nil {
		t.Fatal(err)
	}
	if err := s.Click(ctx, "#open"); err != nil {
		t.Fatal(err)
	}
	if n, err := s.WaitForPopup(ctx); err != nil || n != 2 {
		t.Fatalf("WaitForPopup: %d, %v", n, err)
	}
	return ctx, s
}
