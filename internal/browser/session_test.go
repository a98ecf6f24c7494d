package browser

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/closedport"
)

func TestSessionForm(t *testing.T) {
	t.Parallel()
	p := sharedPool(t)
	site := newSite(t)
	s := newSession(t, p, "desktop")
	open(t, s, site, "/")
	ctx := testCtx(t, 30*time.Second)

	steps := []struct {
		name string
		do   func() error
	}{
		{"fill name", func() error { return s.Fill(ctx, "#name", "first try") }},
		{"refill name", func() error { return s.Fill(ctx, "#name", "Ada Lovelace") }},
		{"fill textarea", func() error { return s.Fill(ctx, "#bio", "line one\nline two") }},
		{"select by label", func() error { return s.Select(ctx, "#color", "Red") }},
		{"select by value", func() error { return s.Select(ctx, "#color", "g") }},
	}
	for _, st := range steps {
		if err := st.do(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
	}

	values := []struct{ sel, want string }{
		{"#name", "Ada Lovelace"},
		{"#bio", "line one\nline two"},
		{"#color", "g"},
	}
	for _, v := range values {
		got, err := s.Value(ctx, v.sel)
		if err != nil {
			t.Fatalf("Value(%s): %v", v.sel, err)
		}
		if got != v.want {
			t.Errorf("Value(%s) = %q, want %q", v.sel, got, v.want)
		}
	}

	if err := s.Click(ctx, "#submit"); err != nil {
		t.Fatalf("Click: %v", err)
	}
	if err := s.WaitFor(ctx, WaitCondition{Selector: "#out", Text: "Ada"}); err != nil {
		t.Fatalf("WaitFor(#out): %v", err)
	}
	out, err := s.Text(ctx, "#out")
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]string
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("form output %q: %v", out, err)
	}
	want := map[string]string{"name": "Ada Lovelace", "bio": "line one\nline two", "color": "g"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("submitted form (-want +got):\n%s", diff)
	}

	// Enter in a text field submits the form, as for a user.
	if err := s.Fill(ctx, "#name", "Grace"); err != nil {
		t.Fatal(err)
	}
	if err := s.Press(ctx, "Enter", "#name"); err != nil {
		t.Fatalf("Press(Enter): %v", err)
	}
	if err := s.WaitFor(ctx, WaitCondition{Selector: "#out", Text: "Grace"}); err != nil {
		t.Errorf("after Enter: %v", err)
	}
}

func TestSessionReads(t *testing.T) {
	t.Parallel()
	p := sharedPool(t)
	site := newSite(t)
	s := newSession(t, p, "desktop")
	open(t, s, site, "/")
	ctx := testCtx(t, 30*time.Second)

	texts := []struct{ sel, want string }{
		{"#shown", "Shown text"},
		{"#hidden", ""},
		{"h1", "Sign up"},
	}
	for _, tt := range texts {
		got, err := s.Text(ctx, tt.sel)
		if err != nil || got != tt.want {
			t.Errorf("Text(%s) = %q, %v; want %q, nil", tt.sel, got, err, tt.want)
		}
	}

	visible := []struct {
		sel  string
		want bool
	}{
		{"#shown", true},
		{"#hidden", false},
		{"#missing", false},
		{"#covered", true},
	}
	for _, tt := range visible {
		got, err := s.Visible(ctx, tt.sel)
		if err != nil || got != tt.want {
			t.Errorf("Visible(%s) = %v, %v; want %v, nil", tt.sel, got, err, tt.want)
		}
	}

	attrs := []struct {
		sel, name string
		want      string
		wantOK    bool
	}{
		{"#next", "href", "/page2?step=2", true},
		{"#shown", "data-kind", "info", true},
		{"#shown", "data-none", "", false},
		{"#off", "disabled", "", true},
	}
	for _, tt := range attrs {
		got, ok, err := s.Attr(ctx, tt.sel, tt.name)
		if err != nil || got != tt.want || ok != tt.wantOK {
			t.Errorf("Attr(%s, %s) = %q, %v, %v; want %q, %v, nil", tt.sel, tt.name, got, ok, err, tt.want, tt.wantOK)
		}
	}

	if got, err := s.Title(ctx); err != nil || got != "Duet form" {
		t.Errorf("Title() = %q, %v; want %q, nil", got, err, "Duet form")
	}
	if got, err := s.URL(ctx); err != nil || got != site.URL+"/" {
		t.Errorf("URL() = %q, %v; want %q, nil", got, err, site.URL+"/")
	}
}

func TestSessionNavigation(t *testing.T) {
	t.Parallel()
	p := sharedPool(t)
	site := newSite(t)
	s := newSession(t, p, "desktop")
	open(t, s, site, "/")
	ctx := testCtx(t, 30*time.Second)

	if err := s.Click(ctx, "#next"); err != nil {
		t.Fatalf("Click(#next): %v", err)
	}
	if err := s.WaitFor(ctx, WaitCondition{URLContains: "step=2", URLMatches: `/page2\?step=\d+$`}); err != nil {
		t.Fatalf("WaitFor(URL): %v", err)
	}
	if err := s.WaitFor(ctx, WaitCondition{Selector: "#step", Text: "step 2", Visible: true}); err != nil {
		t.Fatalf("WaitFor(#step): %v", err)
	}
	if got, err := s.URL(ctx); err != nil || got != site.URL+"/page2?step=2" {
		t.Errorf("URL() = %q, %v; want %q, nil", got, err, site.URL+"/page2?step=2")
	}
	if got, err := s.Title(ctx); err != nil || got != "Page two" {
		t.Errorf("Title() = %q, %v; want %q, nil", got, err, "Page two")
	}
}

func TestSessionPress(t *testing.T) {
	t.Parallel()
	p := sharedPool(t)
	site := newSite(t)
	s := newSession(t, p, "desktop")
	open(t, s, site, "/keys")
	ctx := testCtx(t, 30*time.Second)

	presses := []struct{ key, sel string }{
		{"a", "#k"},
		{"ArrowDown", ""},
		{"Escape", ""},
		{"Shift+Tab", ""}, // moves the focus away from #k
		{"b", ""},         // so #k does not see this one
		{"Backspace", "#k"},
	}
	for _, pr := range presses {
		if err := s.Press(ctx, pr.key, pr.sel); err != nil {
			t.Fatalf("Press(%q, %q): %v", pr.key, pr.sel, err)
		}
	}
	got, err := s.Text(ctx, "#log")
	if want := "a,ArrowDown,Escape,Tab+shift,Backspace"; err != nil || got != want {
		t.Errorf("key log = %q, %v; want %q, nil", got, err, want)
	}
	if got, err := s.Value(ctx, "#k"); err != nil || got != "" {
		t.Errorf("Value(#k) = %q, %v; want %q, nil", got, err, "")
	}
}

func TestSessionWaitFor(t *testing.T) {
	t.Parallel()
	p := sharedPool(t)
	site := newSite(t)
	s := newSession(t, p, "desktop")

	// The conditions that never hold get seconds, not milliseconds: a
	// loaded machine must see the page answer at least once within the
	// budget, so that the error says which part of the condition failed
	// ("the page did not answer" otherwise).
	const waitBudget = 5 * time.Second
	tests := []struct {
		name     string
		cond     WaitCondition
		wantCode duet.Code
		wantMsg  string
	}{
		{"delayed element", WaitCondition{Selector: "#late", Visible: true}, "", ""},
		{"delayed text", WaitCondition{Text: "Loaded late"}, "", ""},
		{"delayed text in element", WaitCondition{Selector: "#late", Text: "late"}, "", ""},
		{"URL", WaitCondition{URLContains: "127.0.0.1", URLMatches: `^http://`}, "", ""},
		{"missing element", WaitCondition{Selector: "#never", Timeout: waitBudget}, duet.CodeStepTimeout, `no element matches "#never"`},
		{"hidden element", WaitCondition{Selector: "#hidden", Visible: true, Timeout: waitBudget}, duet.CodeStepTimeout, "not visible"},
		{"missing text", WaitCondition{Text: "no such text", Timeout: waitBudget}, duet.CodeStepTimeout, `text "no such text" not found`},
		{"other URL", WaitCondition{URLContains: "/elsewhere", Timeout: waitBudget}, duet.CodeStepTimeout, "the URL is"},
		{"empty", WaitCondition{}, duet.CodeInvalidArgument, "empty"},
		{"visible without selector", WaitCondition{Text: "x", Visible: true}, duet.CodeInvalidArgument, "selector"},
		{"bad pattern", WaitCondition{URLMatches: "("}, duet.CodeInvalidArgument, "pattern"},
		{"bad selector", WaitCondition{Selector: "##"}, duet.CodeInvalidArgument, "invalid CSS selector"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			open(t, s, site, "/")
			err := s.WaitFor(testCtx(t, 30*time.Second), tt.cond)
			if tt.wantCode == "" {
				if err != nil {
					t.Fatalf("WaitFor(%+v) = %v, want nil", tt.cond, err)
				}
				return
			}
			wantCode(t, err, tt.wantCode, tt.wantMsg)
		})
	}
}

func TestSessionErrors(t *testing.T) {
	t.Parallel()
	p := sharedPool(t)
	site := newSite(t)
	s := newSession(t, p, "desktop")
	open(t, s, site, "/")
	closed := closedport.URL(t) // where nothing answers (not a fixed port: one may be taken)

	tests := []struct {
		name     string
		call     func(ctx context.Context) error
		wantCode duet.Code
		wantMsg  []string
	}{
		{"click missing", func(ctx context.Context) error { return s.Click(ctx, "#missing") }, duet.CodeElementNotFound, []string{`"#missing"`}},
		{"fill missing", func(ctx context.Context) error { return s.Fill(ctx, "#missing", "x") }, duet.CodeElementNotFound, []string{`"#missing"`}},
		{"select missing", func(ctx context.Context) error { return s.Select(ctx, "#missing", "x") }, duet.CodeElementNotFound, []string{`"#missing"`}},
		{"press missing", func(ctx context.Context) error { return s.Press(ctx, "Enter", "#missing") }, duet.CodeElementNotFound, []string{`"#missing"`}},
		{"text missing", func(ctx context.Context) error { _, err := s.Text(ctx, "#missing"); return err }, duet.CodeElementNotFound, []string{`"#missing"`}},
		{"attr missing", func(ctx context.Context) error { _, _, err := s.Attr(ctx, "#missing", "id"); return err }, duet.CodeElementNotFound, []string{`"#missing"`}},
		{"value missing", func(ctx context.Context) error { _, err := s.Value(ctx, "#missing"); return err }, duet.CodeElementNotFound, []string{`"#missing"`}},
		{"click hidden", func(ctx context.Context) error { return s.Click(ctx, "#hidden") }, duet.CodeElementNotFound, []string{`"#hidden"`, "not visible"}},
		{"click covered", func(ctx context.Context) error { return s.Click(ctx, "#covered") }, duet.CodeStepTimeout, []string{"covered by", "overlay"}},
		{"click disabled", func(ctx context.Context) error { return s.Click(ctx, "#off") }, duet.CodeStepTimeout, []string{"disabled"}},
		{"select no option", func(ctx context.Context) error { return s.Select(ctx, "#color", "Blue") }, duet.CodeElementNotFound, []string{`"Blue"`, "r (Red)"}},
		{"fill paragraph", func(ctx context.Context) error { return s.Fill(ctx, "#para", "x") }, duet.CodeInvalidArgument, []string{"<p"}},
		{"select input", func(ctx context.Context) error { return s.Select(ctx, "#name", "x") }, duet.CodeInvalidArgument, []string{"<select>"}},
		{"value of paragraph", func(ctx context.Context) error { _, err := s.Value(ctx, "#para"); return err }, duet.CodeInvalidArgument, []string{"value"}},
		{"bad selector", func(ctx context.Context) error { return s.Click(ctx, "a[") }, duet.CodeInvalidArgument, []string{"invalid CSS selector"}},
		{"empty selector", func(ctx context.Context) error { return s.Click(ctx, "") }, duet.CodeInvalidArgument, []string{"empty"}},
		{"unknown key", func(ctx context.Context) error { return s.Press(ctx, "Hyperspace", "") }, duet.CodeInvalidArgument, []string{"Hyperspace"}},
		{"bad URL", func(ctx context.Context) error { return s.Open(ctx, "not a url") }, duet.CodeInvalidArgument, []string{"not a url"}},
		{"file URL", func(ctx context.Context) error { return s.Open(ctx, "file:///etc/passwd") }, duet.CodeURLRefused, []string{"file"}},
		{"unreachable", func(ctx context.Context) error { return s.Open(ctx, closed+"/") }, duet.CodeBrowserError, []string{"ERR_"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Long enough for a loaded machine (under -race, the CPUs
			// shared) to answer at least once, so that the error can say
			// why the call failed: with 1 s, CI got "the page did not
			// answer" for a missing element.
			ctx := testCtx(t, 5*time.Second)
			wantCode(t, tt.call(ctx), tt.wantCode, tt.wantMsg...)
		})
	}
}

func TestSessionCancel(t *testing.T) {
	t.Parallel()
	p := sharedPool(t)
	site := newSite(t)
	s := newSession(t, p, "desktop")
	open(t, s, site, "/")

	// cancelAfter returns a context that is cancelled after d.
	cancelAfter := func(t *testing.T, d time.Duration) context.Context {
		ctx, cancel := context.WithCancel(t.Context())
		timer := time.AfterFunc(d, cancel)
		t.Cleanup(func() { timer.Stop(); cancel() })
		return ctx
	}
	tests := []struct {
		name     string
		ctx      func(t *testing.T) context.Context
		call     func(ctx context.Context) error
		wantCode duet.Code
		// within is far below what the call would take unless it ended
		// at once (the wait's minute, /slow's never), and far above what
		// a loaded machine takes to end it.
		within time.Duration
	}{
		{
			"long wait cancelled",
			func(t *testing.T) context.Context { return cancelAfter(t, 200*time.Millisecond) },
			func(ctx context.Context) error {
				return s.WaitFor(ctx, WaitCondition{Selector: "#never", Timeout: time.Minute})
			},
			duet.CodeCancelled, 30 * time.Second,
		},
		{
			"slow page cancelled",
			func(t *testing.T) context.Context { return cancelAfter(t, 200*time.Millisecond) },
			func(ctx context.Context) error { return s.Open(ctx, site.URL+"/slow") },
			duet.CodeCancelled, 30 * time.Second,
		},
		{
			"slow page timed out",
			func(t *testing.T) context.Context { return testCtx(t, 300*time.Millisecond) },
			func(ctx context.Context) error { return s.Open(ctx, site.URL+"/slow") },
			duet.CodeStepTimeout, 30 * time.Second,
		},
		{
			"already cancelled",
			func(t *testing.T) context.Context {
				ctx, cancel := context.WithCancel(t.Context())
				cancel()
				return ctx
			},
			func(ctx context.Context) error { return s.Click(ctx, "#submit") },
			duet.CodeCancelled, 5 * time.Second,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := tt.ctx(t)
			start := time.Now()
			err := tt.call(ctx)
			if took := time.Since(start); took > tt.within {
				t.Errorf("returned after %s, want within %s", took, tt.within)
			}
			wantCode(t, err, tt.wantCode)
			// The session still works.
			open(t, s, site, "/")
		})
	}
}

func TestSessionBusy(t *testing.T) {
	t.Parallel()
	p := sharedPool(t)
	site := newSite(t)
	s := newSession(t, p, "desktop")
	open(t, s, site, "/")

	// A long wait holds the session; a second call waits for its turn but
	// still honours its own ctx.
	busyCtx, stopBusy := context.WithCancel(t.Context())
	busy := make(chan error, 1)
	go func() { busy <- s.WaitFor(busyCtx, WaitCondition{Selector: "#never", Timeout: time.Minute}) }()
	// The long wait holds the session's turn (not a sleep: a loaded
	// machine may start it late).
	for deadline := time.Now().Add(time.Minute); len(s.turn) == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the long wait never took the session's turn")
		}
	}

	tests := []struct {
		name     string
		ctx      func() (context.Context, context.CancelFunc)
		wantCode duet.Code
	}{
		{"cancelled", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(t.Context())
			time.AfterFunc(200*time.Millisecond, cancel)
			return ctx, cancel
		}, duet.CodeCancelled},
		{"deadline", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(t.Context(), 200*time.Millisecond)
		}, duet.CodeStepTimeout},
	}
	for _, tt := range tests {
		ctx, cancel := tt.ctx()
		start := time.Now()
		_, err := s.Text(ctx, "h1")
		cancel()
		// Far below the busy call's minute, far above a loaded machine's
		// delays.
		if took := time.Since(start); took > 30*time.Second {
			t.Errorf("%s: returned after %s, want about 200ms", tt.name, took)
		}
		wantCode(t, err, tt.wantCode)
	}
	stopBusy()
	wantCode(t, <-busy, duet.CodeCancelled)
	if got, err := s.Text(testCtx(t, 10*time.Second), "h1"); err != nil || got != "Sign up" {
		t.Errorf("after the busy call: Text(h1) = %q, %v; want %q, nil", got, err, "Sign up")
	}
}

func TestSessionDevices(t *testing.T) {
	t.Parallel()
	p := sharedPool(t)
	site := newSite(t)

	type info struct {
		Width          int     `json:"width"`
		DPR            float64 `json:"dpr"`
		UA             string  `json:"ua"`
		Touch          bool    `json:"touch"`
		MaxTouchPoints int     `json:"maxTouchPoints"`
	}
	for _, name := range []string{"iphone-15", "pixel-7", "desktop"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d, _ := DeviceByName(name)
			s := newSession(t, p, name)
			open(t, s, site, "/device")
			ctx := testCtx(t, 20*time.Second)
			raw, err := s.Text(ctx, "#info")
			if err != nil {
				t.Fatal(err)
			}
			var got info
			if err := json.Unmarshal([]byte(raw), &got); err != nil {
				t.Fatalf("device info %q: %v", raw, err)
			}
			want := info{Width: d.Width, DPR: d.DeviceScaleFactor, UA: d.UserAgent, Touch: d.Touch}
			if d.Touch {
				want.MaxTouchPoints = 5
			}
			if d.UserAgent == "" {
				want.UA = got.UA // the browser's own
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("page sees (-want +got):\n%s", diff)
			}

			// A click lands on its target in a zoomed-out mobile page too.
			open(t, s, site, "/wide")
			if err := s.Click(ctx, "#far"); err != nil {
				t.Fatalf("Click(#far): %v", err)
			}
			if err := s.WaitFor(ctx, WaitCondition{Selector: "#res", Text: "clicked", Timeout: 5 * time.Second}); err != nil {
				t.Error(err)
			}

			// Chromium rounds fractional device pixels (412 * 2.625 = 1081.5).
			shot := screenshot(t, s, false)
			wantW, wantH := float64(d.Width)*d.DeviceScaleFactor, float64(d.Height)*d.DeviceScaleFactor
			if w, h := float64(shot.Dx()), float64(shot.Dy()); math.Abs(w-wantW) > 1 || math.Abs(h-wantH) > 1 {
				t.Errorf("screenshot is %vx%v, want %vx%v device pixels", w, h, wantW, wantH)
			}
		})
	}
}

func TestSessionIsolation(t *testing.T) {
	t.Parallel()
	p := sharedPool(t)
	site := newSite(t)
	a := newSession(t, p, "desktop")
	b := newSession(t, p, "desktop")
	ctx := testCtx(t, 30*time.Second)

	open(t, a, site, "/cookie/set")
	steps := []struct {
		name string
		s    *Session
		want string
	}{
		{"other session", b, "cookies=[]"},
		{"same session", a, "cookies=[duet=one]"},
	}
	for _, st := range steps {
		open(t, st.s, site, "/cookie/show")
		got, err := st.s.Text(ctx, "#c")
		if err != nil || got != st.want {
			t.Errorf("%s: cookies %q, %v; want %q, nil", st.name, got, err, st.want)
		}
	}
}

// screenshot takes a screenshot and returns the size of the decoded image.
func screenshot(t *testing.T, s *Session, full bool) image.Rectangle {
	t.Helper()
	ctx := testCtx(t, 20*time.Second)
	shoot := s.Screenshot
	if full {
		shoot = s.FullScreenshot
	}
	data, err := shoot(ctx)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("screenshot is not a PNG: %v", err)
	}
	return img.Bounds()
}

func TestSessionScreenshot(t *testing.T) {
	t.Parallel()
	p := sharedPool(t)
	site := newSite(t)
	s := newSession(t, p, "desktop")
	open(t, s, site, "/tall")

	tests := []struct {
		full                 bool
		wantWidth, minHeight int
		maxHeight            int
	}{
		{false, 1280, 800, 800},
		{true, 1280, 3000, 3100},
	}
	for _, tt := range tests {
		b := screenshot(t, s, tt.full)
		if b.Dx() != tt.wantWidth || b.Dy() < tt.minHeight || b.Dy() > tt.maxHeight {
			t.Errorf("screenshot(full=%v) is %dx%d, want width %d and height in [%d, %d]",
				tt.full, b.Dx(), b.Dy(), tt.wantWidth, tt.minHeight, tt.maxHeight)
		}
	}
}

func TestSessionDialogs(t *testing.T) {
	t.Parallel()
	p := sharedPool(t)
	site := newSite(t)
	s := newSession(t, p, "desktop")
	open(t, s, site, "/dialog")
	ctx := testCtx(t, 30*time.Second)

	tests := []struct{ button, want string }{
		{"#alert", "after alert"},
		{"#confirm", "confirmed: true"},
		{"#prompt", "prompt: dflt"},
	}
	for _, tt := range tests {
		if err := s.Click(ctx, tt.button); err != nil {
			t.Fatalf("Click(%s): %v", tt.button, err)
		}
		if err := s.WaitFor(ctx, WaitCondition{Selector: "#res", Text: tt.want, Timeout: 5 * time.Second}); err != nil {
			t.Errorf("after %s: %v", tt.button, err)
		}
	}
}

func TestSessionSummary(t *testing.T) {
	t.Parallel()
	p := sharedPool(t)
	site := newSite(t)
	s := newSession(t, p, "desktop")
	open(t, s, site, "/")
	ctx := testCtx(t, 30*time.Second)
	if err := s.WaitFor(ctx, WaitCondition{Selector: "#late"}); err != nil {
		t.Fatal(err)
	}

	sum, err := s.Summary(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Title: Duet form\n",
		"URL: " + site.URL + "/\n",
		`h1 "Sign up"  css=h1`,
		`text "Name" name=name placeholder="Your name" value=""  css=#name`,
		`select "Color" name=color value="Pick one" options=[Pick one, Red, Green]  css=#color`,
		`password "Password" name=pw value="***"  css=#pw`,
		`"Send"  css=#submit`,
		`"Off" disabled  css=#off`,
		`"Next page" -> /page2?step=2  css=#next`,
		"Text:\nSign up\n",
		"Loaded late",
	} {
		if !strings.Contains(sum, want) {
			t.Errorf("summary lacks %q; got:\n%s", want, sum)
		}
	}
	if strings.Contains(sum, "secret") || strings.Contains(sum, "Hidden text") {
		t.Errorf("summary shows a password or hidden text:\n%s", sum)
	}

	for _, limit := range []int{120, 400} {
		got, err := s.Summary(ctx, limit)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) > limit || !strings.HasPrefix(got, "Title: Duet form\n") {
			t.Errorf("Summary(%d) is %d bytes, want at most %d and the title first:\n%s", limit, len(got), limit, got)
		}
	}
}

func TestSessionClose(t *testing.T) {
	t.Parallel()
	p := sharedPool(t)
	site := newSite(t)
	s := newSession(t, p, "desktop")
	open(t, s, site, "/")
	before := p.Stats().Sessions

	s.Close()
	s.Close()
	if got := p.Stats().Sessions; got > before-1 {
		t.Errorf("got %d sessions after Close, want at most %d", got, before-1)
	}
	_, err := s.Text(testCtx(t, time.Second), "h1")
	wantCode(t, err, duet.CodeBrowserError, "closed")
}

// TestFillIsOneEdit: fill puts the value in as one edit — one trusted
// beforeinput and input (insertText) with the whole text, no key events —
// which a framework's value tracker (React's) takes as the user's; change
// follows when the field loses the focus. type stays key by key.
func TestFillIsOneEdit(t *testing.T) {
	t.Parallel()
	p := sharedPool(t)
	site := newSite(t)
	s := newSession(t, p, "desktop")
	open(t, s, site, "/events")
	ctx := testCtx(t, 30*time.Second)

	type event struct {
		Type      string  `json:"type"`
		Target    string  `json:"target"`
		InputType string  `json:"inputType"`
		Data      *string `json:"data"`
		Trusted   bool    `json:"trusted"`
	}
	var seen int
	events := func() (string, []event) {
		t.Helper()
		out, err := s.Text(ctx, "#evlog")
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			State string  `json:"state"`
			Log   []event `json:"log"`
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("event log %q: %v", out, err)
		}
		news := got.Log[seen:]
		seen = len(got.Log)
		return got.State, news
	}
	text := func(s string) *string { return &s }

	const value = "héllo wörld ✓"
	if err := s.Fill(ctx, "#ev", value); err != nil {
		t.Fatal(err)
	}
	state, got := events()
	want := []event{
		{Type: "beforeinput", Target: "ev", InputType: "insertText", Data: text(value), Trusted: true},
		{Type: "input", Target: "ev", InputType: "insertText", Data: text(value), Trusted: true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events of fill (-want +got):\n%s", diff)
	}
	if state != value {
		t.Errorf("the framework's state is %q, want %q", state, value)
	}

	// A field that holds text: cleared (an input event the tracker takes),
	// then the new value in one edit.
	if err := s.Fill(ctx, "#ev", "second"); err != nil {
		t.Fatal(err)
	}
	state, got = events()
	if n := len(got); n != 3 || got[0].Type != "input" || got[1].Type != "beforeinput" || got[2].Type != "input" || *got[2].Data != "second" {
		t.Errorf("events of a second fill: %+v; want input (cleared), beforeinput, input of %q", got, "second")
	}
	if state != "second" {
		t.Errorf("the framework's state is %q, want %q", state, "second")
	}
	if v, err := s.Value(ctx, "#ev"); err != nil || v != "second" {
		t.Errorf("value %q, %v; want %q", v, err, "second")
	}

	// change when the field loses the focus, as for a person.
	if err := s.Click(ctx, "#elsewhere"); err != nil {
		t.Fatal(err)
	}
	if _, got = events(); len(got) != 1 || got[0].Type != "change" || got[0].Target != "ev" {
		t.Errorf("events when the focus leaves: %+v; want one change of #ev", got)
	}

	// A contenteditable element: its text replaced in one edit.
	if err := s.Fill(ctx, "#ce", "new text"); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Text(ctx, "#ce"); err != nil || got != "new text" {
		t.Errorf("contenteditable text %q, %v; want %q", got, err, "new text")
	}
	_, got = events()
	var inserts int
	for _, e := range got {
		if e.Type == "keydown" {
			t.Errorf("fill of a contenteditable element pressed a key: %+v", e)
		}
		if e.Type == "input" && e.InputType == "insertText" {
			inserts++
		}
	}
	if inserts != 1 {
		t.Errorf("fill of a contenteditable element: %d insertText inputs, want 1 (%+v)", inserts, got)
	}

	// type: key by key, each key an event.
	if err := s.Act(ctx, CSS("#ev"), Action{Kind: ActType, Value: "ab"}); err != nil {
		t.Fatal(err)
	}
	_, got = events()
	var keys int
	for _, e := range got {
		if e.Type == "keydown" {
			keys++
		}
	}
	if keys != 2 {
		t.Errorf("type of 2 letters: %d keydown events, want 2 (%+v)", keys, got)
	}
}

// TestWaitForReactsToThePage: a wait looks again when the page changes (a
// DOM mutation, a navigation within the document), not on a clock. The
// page counts the wait's looks (its querySelector calls): an element held
// back for a second is seen in at most three (the first look, the one
// that waits in the page, the one after the mutation), where polling
// looks every 10 to 100 ms. A URL that changes by history.pushState wakes
// a wait for it too.
func TestWaitForReactsToThePage(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("GET /release", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
		fmt.Fprint(w, "ok")
	})
	mux.HandleFunc("GET /", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, htmlPage("Late", "", `<button id="go">Go</button> <button id="push">Push</button>
<script>
window.__looks = 0;
const qs = Document.prototype.querySelector;
Document.prototype.querySelector = function (sel) { if (sel === '#late') window.__looks++; return qs.call(this, sel); };
document.getElementById('go').onclick = () => fetch('/release').then(() => {
  const d = document.createElement('p'); d.id = 'late'; d.textContent = 'here'; document.body.appendChild(d);
});
document.getElementById('push').onclick = () => fetch('/release').then(() => history.pushState({}, '', '/pushed?done=1'));
</script>`))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})

	p := sharedPool(t)
	s := newSession(t, p, "desktop")
	open(t, s, srv, "/")
	ctx := testCtx(t, 30*time.Second)
	if err := s.Click(ctx, "#go"); err != nil {
		t.Fatal(err)
	}
	hold := time.AfterFunc(time.Second, func() { close(release) })
	defer hold.Stop()
	if err := s.WaitFor(ctx, WaitCondition{Selector: "#late", Timeout: 20 * time.Second}); err != nil {
		t.Fatal(err)
	}
	looks, err := s.Evaluate(ctx, "window.__looks", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := looks.(float64); n < 1 || n > 3 {
		t.Errorf("the wait looked %v times for an element held back a second; want 1 to 3 (one per change of the page)", looks)
	}

	// The URL by history.pushState: the navigation within the document
	// wakes the wait (the release is open now: the push follows the click).
	if err := s.Click(ctx, "#push"); err != nil {
		t.Fatal(err)
	}
	if err := s.WaitFor(ctx, WaitCondition{URLMatches: `/pushed\?done=1$`, Timeout: 20 * time.Second}); err != nil {
		t.Fatal(err)
	}
}
