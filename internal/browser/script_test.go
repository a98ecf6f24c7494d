package browser

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/duet-test/duet/internal/browser/chromiumtest"
)

// TestElementScriptsGoToAContextOnce: an element script's ~18 KB reach
// each execution context of a page once, as a function the looks after
// that call by its handle with the locator and the options as arguments.
// Sent with each look, a text that carries the arguments differs every
// time (the options hold the time left) and is compiled anew: 2–5 ms of
// Chromium's CPU a look; the same text sent each time still costs about
// 0.8 ms to take in; a call through the handle, neither (docs/performance.md,
// part 13). The commands are read from the DevTools connection itself,
// through a proxy; a navigation makes a new context, which gets the script
// again.
func TestElementScriptsGoToAContextOnce(t *testing.T) {
	t.Parallel()
	b := startChromium(t)
	lab := newLab(t)
	proxy := chromiumtest.NewProxy(t, b.Addr)
	var (
		mu      sync.Mutex
		helpers int // the commands that carry the helpers
		calls   int // the calls through a handle
	)
	proxy.Record(func(msg []byte) {
		var m struct {
			Method string `json:"method"`
			Params struct {
				FunctionDeclaration string `json:"functionDeclaration"`
				Expression          string `json:"expression"`
			} `json:"params"`
		}
		if json.Unmarshal(msg, &m) != nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if strings.Contains(m.Params.FunctionDeclaration, jsLocate) || strings.Contains(m.Params.Expression, jsLocate) {
			helpers++
		}
		if m.Method == "Runtime.callFunctionOn" && m.Params.FunctionDeclaration == callScript {
			calls++
		}
	})
	s := newSession(t, remotePool(t, Remote{URL: "http://" + proxy.Addr}, Options{}), "desktop")
	open(t, s, lab, "/find")
	ctx := testCtx(t, 30*time.Second)
	looks := []Locator{
		{CSS: "h1"}, {Text: "red MUG", Within: &Locator{CSS: "section"}}, {Label: "Email"}, {TestID: "add-red"},
		{Placeholder: "you@"}, {Role: "heading", Name: "blue"}, {Role: "link", Name: "/^ca/i"},
	}
	for _, l := range looks {
		for _, kind := range []string{"text", "count"} {
			if _, err := s.Query(ctx, Target{Locator: &l}, Query{Kind: kind}); err != nil {
				t.Fatalf("Query(%s) %s: %v", Target{Locator: &l}, kind, err)
			}
		}
	}
	if err := s.Act(ctx, Target{Locator: &Locator{TestID: "add-red"}}, Action{Kind: ActClick}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Text(ctx, "#out"); err != nil {
		t.Fatal(err)
	}

	counts := func() (int, int) {
		mu.Lock()
		defer mu.Unlock()
		return helpers, calls
	}
	h, c := counts()
	if c < 2*len(looks) {
		t.Fatalf("the proxy saw %d calls through a handle, want at least %d (one a look)", c, 2*len(looks))
	}
	// The element script and the click's verdict: one each in the page's
	// one context, however many looks.
	if h > 2 {
		t.Errorf("%d looks and a click sent the helpers %d times, want at most 2 (once a script)", c, h)
	}
	// A new document is a new context: the script goes to it once again.
	open(t, s, lab, "/find")
	for range 3 {
		if _, err := s.Query(ctx, Target{Locator: &Locator{CSS: "h1"}}, Query{Kind: "text"}); err != nil {
			t.Fatal(err)
		}
	}
	if h2, c2 := counts(); h2 != h+1 || c2 < c+3 {
		t.Errorf("after a navigation and three looks: the helpers sent %d more times, %d calls through a handle; want 1 and at least 3", h2-h, c2-c)
	}
	// A handle the page no longer has: the look that finds it gone sends
	// the whole script at once (no second try), and the next look makes
	// the handle anew.
	h, c = counts()
	tb := s.current()
	if _, err := chromedp.Run(tb.ctx, func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		_, err := cdp.Call(ctx, tg, runtime.ReleaseObjectGroup, runtime.ReleaseObjectGroupParams{ObjectGroup: scriptGroup})
		return chromedp.Void{}, err
	}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if got, err := s.Text(ctx, "h1"); err != nil || got == "" {
			t.Fatalf("Text(h1) after the handle went: %q, %v", got, err)
		}
	}
	if h2, c2 := counts(); h2 != h+2 || c2 != c+2 {
		t.Errorf("two looks after the handle went: the helpers sent %d times, %d calls through a handle; want 2 (the whole script, then the new handle) and 2", h2-h, c2-c)
	}
}
