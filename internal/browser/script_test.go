package browser

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/duet-test/duet/internal/browser/chromiumtest"
)

// TestScriptTextIsTheSameOnEveryCall: the element scripts reach the page as
// one function text each, with the locator and the options as arguments, so
// that V8 compiles their helpers once per page. A text that carries the
// arguments differs on every look (the options hold the time left) and is
// compiled anew each time: 2–5 ms of Chromium's CPU a look, against about
// 1.3 ms for the whole call (docs/performance.md, part 13). The commands
// are read from the DevTools connection itself, through a proxy.
func TestScriptTextIsTheSameOnEveryCall(t *testing.T) {
	t.Parallel()
	b := startChromium(t)
	lab := newLab(t)
	proxy := chromiumtest.NewProxy(t, b.Addr)
	var (
		mu           sync.Mutex
		calls, evals []string // the texts that carry the helpers
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
		switch {
		case m.Method == "Runtime.callFunctionOn" && strings.Contains(m.Params.FunctionDeclaration, jsLocate):
			calls = append(calls, m.Params.FunctionDeclaration)
		case m.Method == "Runtime.evaluate" && strings.Contains(m.Params.Expression, jsLocate):
			evals = append(evals, m.Params.Expression)
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

	mu.Lock()
	defer mu.Unlock()
	if len(evals) > 0 {
		t.Errorf("%d looks sent the helpers in a Runtime.evaluate text of their own; the first:\n%.300s", len(evals), evals[0])
	}
	if len(calls) < 2*len(looks) {
		t.Fatalf("the proxy saw %d calls of the element scripts, want at least %d (one a look)", len(calls), 2*len(looks))
	}
	distinct := map[string]bool{}
	for _, c := range calls {
		distinct[c] = true
	}
	// The element script, the click's verdict and the role path's listing
	// of candidates: one text each, however many looks.
	if len(distinct) > 3 {
		t.Errorf("%d calls of the element scripts sent %d different texts, want at most 3 (one a script)", len(calls), len(distinct))
	}
	t.Logf("%d calls, %d texts", len(calls), len(distinct))
}
