package browser

import (
	"bytes"
	"fmt"
	"image/png"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/duet-test/duet"
)

// TestScreenshotAcrossANavigation: a screenshot asked of a document that a
// navigation then replaces is taken of the new document. The old page is
// kept busy, so its frame cannot come, and the tab is sent to another site
// while the capture waits: Chromium's headless shell never answered that
// capture (the step waited for its deadline), the full browser answered
// "Not attached to an active page". The capture sees the main frame commit
// and asks again; the image is the new page's red, long before the old
// page's script would have ended. In the headless shell and in the full
// browser where both are installed.
func TestScreenshotAcrossANavigation(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	shell, err := findExec("")
	if err != nil {
		t.Fatal(err)
	}
	execs := []string{shell}
	if full := fullBrowser(); full != "" && full != shell {
		execs = append(execs, full)
	}
	for _, exe := range execs {
		t.Run(filepath.Base(exe), func(t *testing.T) {
			t.Parallel()
			screenshotAcrossANavigation(t, exe)
		})
	}
}

func screenshotAcrossANavigation(t *testing.T, exe string) {
	busy := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		switch r.URL.Path {
		case "/busy":
			select {
			case busy <- struct{}{}:
			default:
			}
		case "/red":
			fmt.Fprint(w, htmlPage("Red", "<style>html,body{margin:0;height:100%;background:#f00}</style>", ""))
		default:
			fmt.Fprint(w, htmlPage("White", "<style>html,body{margin:0;background:#fff}</style>", "<p>white</p>"))
		}
	}))
	t.Cleanup(srv.Close)
	p := NewPool(Options{ExecPath: exe, MaxBrowsers: 1, Logger: testLogger()})
	t.Cleanup(p.Close)
	s := newSession(t, p, "desktop")
	if err := s.Open(testCtx(t, 20*time.Second), srv.URL+"/"); err != nil {
		t.Fatal(err)
	}
	tab := s.current().ctx
	// The old page's main thread: busy for 30 s once it has said so.
	go func() {
		_, _ = chromedp.Run(tab, chromedp.Evaluate[chromedp.Void](`navigator.sendBeacon("/busy"); { const end = Date.now() + 30000; while (Date.now() < end) {} }`))
	}()
	select {
	case <-busy:
	case <-testCtx(t, 20*time.Second).Done():
		t.Fatal("the page never said it was busy")
	}
	type shot struct {
		data []byte
		err  error
	}
	done := make(chan shot, 1)
	go func() {
		data, err := s.Screenshot(testCtx(t, 25*time.Second))
		done <- shot{data, err}
	}()
	for c := s.inflight.Load(); c == nil || c.op != "screenshot"; c = s.inflight.Load() {
		time.Sleep(time.Millisecond)
	}
	// Another site (localhost, not 127.0.0.1): the new document commits in
	// a renderer of its own while the old one is still busy.
	other := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1) + "/red"
	if _, err := chromedp.Call(tab, page.Navigate, page.NavigateParams{URL: other}); err != nil {
		t.Fatal(err)
	}
	got := <-done
	if got.err != nil {
		t.Fatalf("Screenshot: %v (code %s)", got.err, duet.ErrorCode(got.err))
	}
	img, err := png.Decode(bytes.NewReader(got.data))
	if err != nil {
		t.Fatal(err)
	}
	b := img.Bounds()
	if r, g, bl, _ := img.At(b.Dx()/2, b.Dy()/2).RGBA(); r>>8 != 0xff || g>>8 != 0 || bl>>8 != 0 {
		t.Errorf("the screenshot's centre is %d,%d,%d: not the new page's red", r>>8, g>>8, bl>>8)
	}
	if s.captureRetries.Load() == 0 {
		t.Error("the capture was not asked again")
	}
}
