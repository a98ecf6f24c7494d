package recorder_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/app"
	"github.com/duet-test/duet/internal/browser"
	"github.com/duet-test/duet/internal/compiler"
	"github.com/duet-test/duet/internal/engine"
	"github.com/duet-test/duet/internal/netguard"
	. "github.com/duet-test/duet/internal/recorder"
	"github.com/duet-test/duet/internal/sample/sampletest"
	"github.com/duet-test/duet/internal/sqlite"
)

var shared struct {
	once sync.Once
	pool *browser.Pool
}

func TestMain(m *testing.M) {
	code := m.Run()
	if p := shared.pool; p != nil {
		p.Close()
	}
	os.Exit(code)
}

// pool returns the package's browser pool; it skips the test when there
// is no Chromium, unless DUET_REQUIRE_BROWSER=1 asks for a failure.
func pool(t *testing.T) *browser.Pool {
	t.Helper()
	if err := browser.NewPool(browser.Options{}).Available(); err != nil {
		if os.Getenv("DUET_REQUIRE_BROWSER") == "1" {
			t.Fatalf("DUET_REQUIRE_BROWSER=1 but no Chromium: %v", err)
		}
		t.Skipf("skipping: %v (set DUET_REQUIRE_BROWSER=1 to fail instead)", err)
	}
	shared.once.Do(func() { shared.pool = browser.NewPool(browser.Options{MaxBrowsers: 1}) })
	return shared.pool
}

// opener opens sessions of p, as the app's driver does.
func opener(p *browser.Pool) Opener {
	return func(ctx context.Context, device string, allow netguard.Allowance) (*browser.Session, func(), error) {
		d, err := browser.DeviceByName(device)
		if err != nil {
			return nil, nil, err
		}
		s, err := p.NewSession(ctx, d, allow)
		if err != nil {
			return nil, nil, err
		}
		return s, s.Close, nil
	}
}

// tester drives a live session as a person in the console does: by
// coordinates on the live view and keys.
type tester struct {
	t *testing.T
	l *Live
}

// centre returns the centre of the element of a CSS selector: where a
// person looking at the frame would click (the test's knowledge of the
// page; the recorder is not told).
func (p tester) centre(sel string) (float64, float64) {
	p.t.Helper()
	var pt []any
	deadline := time.Now().Add(10 * time.Second)
	for {
		v, err := p.l.TestSession().Evaluate(p.t.Context(), fmt.Sprintf(`(() => { const e = document.querySelector(%s); if (!e) return null; e.scrollIntoView({block: "center"}); const r = e.getBoundingClientRect(); return [r.x + r.width/2, r.y + r.height/2]; })()`, Lit(sel)), nil, 0)
		if err == nil && v != nil {
			pt = v.([]any)
			break
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("no element %s on the page: %v", sel, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return pt[0].(float64), pt[1].(float64)
}

func (p tester) click(sel string) {
	p.t.Helper()
	x, y := p.centre(sel)
	for _, m := range []browser.MouseInput{{Type: "moved", X: x, Y: y}, {Type: "pressed", X: x, Y: y, Button: "left", ClickCount: 1}, {Type: "released", X: x, Y: y, Button: "left", ClickCount: 1}} {
		if err := p.l.Mouse(p.t.Context(), m); err != nil {
			p.t.Fatalf("mouse %s on %s: %v", m.Type, sel, err)
		}
	}
}

func (p tester) typeText(s string) {
	p.t.Helper()
	for _, r := range s {
		k := string(r)
		for _, ev := range []browser.KeyInput{{Type: "down", Key: k, Text: k}, {Type: "up", Key: k}} {
			if err := p.l.Key(p.t.Context(), ev); err != nil {
				p.t.Fatalf("key %q: %v", k, err)
			}
		}
	}
}

func (p tester) press(key string) {
	p.t.Helper()
	text := ""
	if key == "Enter" {
		text = "\r"
	}
	for _, ev := range []browser.KeyInput{{Type: "down", Key: key, Text: text}, {Type: "up", Key: key}} {
		if err := p.l.Key(p.t.Context(), ev); err != nil {
			p.t.Fatalf("key %s: %v", key, err)
		}
	}
}

// awaitSteps waits until the recording has n steps.
func (p tester) awaitSteps(n int) []Step {
	p.t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		ch, closed := p.l.Changed()
		st := p.l.State()
		if len(st.Steps) >= n {
			return st.Steps
		}
		if closed {
			p.t.Fatalf("the session closed with %d steps", len(st.Steps))
		}
		select {
		case <-ch:
		case <-timeout:
			p.t.Fatalf("waiting for %d steps; have %d (%s): %s", n, len(st.Steps), st.Error, CaseYAML("k", "t", st.Steps))
		}
	}
}

// awaitWorld waits until the page's script of the document at path
// said hello.
func (p tester) awaitPage(path string) {
	p.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		u, _ := p.l.TestSession().LiveURL(p.t.Context())
		w := p.l.TestWorld()
		var ok bool
		if w != 0 && strings.Contains(u, path) {
			ok = p.l.TestSession().EvaluateIn(p.t.Context(), w, "typeof __duetRec === 'object'", &ok) == nil && ok
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("the page %s did not load (at %s)", path, u)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestRecordSignInReplaysGreen records a sign-in on the sample shop by
// clicking and typing on coordinates, as the console's live view sends
// them, adds assertions by picking, and checks the recorded YAML: the
// locators are role and label ones (no CSS), it compiles with the
// compiler, and it passes when the engine runs it in a fresh browser.
func TestRecordSignInReplaysGreen(t *testing.T) {
	t.Parallel()
	p := pool(t)
	base := sampletest.Shop(t)
	m := New(Options{Open: opener(p)})
	t.Cleanup(m.Close)
	l, err := m.Start(t.Context(), Start{Owner: "alice", TaskID: "task_1", BaseURL: base, OpenURL: "/login"})
	if err != nil {
		t.Fatal(err)
	}
	u := tester{t, l}
	u.awaitPage("/login")
	u.awaitSteps(1)

	u.click("#username")
	u.typeText("alice")
	u.click("#password")
	u.typeText("s3cret")
	u.click("#remember")
	u.awaitSteps(4)
	u.click("#login-submit")
	u.awaitSteps(5)
	u.awaitPage("welcome=alice")
	x, y := u.centre("#welcome")
	if _, err := l.Pick(t.Context(), x, y, AssertText); err != nil {
		t.Fatalf("pick: %v", err)
	}
	if _, err := l.AssertURL(t.Context()); err != nil {
		t.Fatal(err)
	}
	steps := u.awaitSteps(7)
	if f := l.Frame(); f == nil || len(f.JPEG) == 0 || f.Width == 0 {
		t.Errorf("no frame of the page reached the viewer: %+v", f)
	}

	src := CaseYAML("sign-in", "Sign in", steps)
	want := `key: "sign-in"
title: "Sign in"
steps:
  - open: "/login"
  - fill: {role: "textbox", name: "Username", value: "alice"}
  - fill: {role: "textbox", name: "Password", value: "s3cret"}
  - check: {role: "checkbox", name: "Remember me"}
  - click: {role: "button", name: "Sign in"}
  - assertText: {text: "Welcome, alice!", equals: "Welcome, alice!"}
  - assertURL: {contains: "/?welcome=alice"}
`
	if src != want {
		t.Errorf("recorded:\n%s\nwant:\n%s", src, want)
	}
	for _, s := range steps {
		if s.Locator != nil && (s.Locator.CSS != "" || s.Locator.XPath != "") {
			t.Errorf("step %s recorded a CSS locator %s where the page has roles and labels", s.Kind, s.Locator)
		}
	}
	x1 := replay(t, p, base, src)
	if x1.Status != duet.StatusPassed {
		t.Fatalf("the recorded case does not pass:\n%s\n%s", src, describe(x1))
	}
}

// replay compiles a case's YAML for a task at base, as the apply path
// does, and runs it with the engine in Chromium.
func replay(t *testing.T, p *browser.Pool, base, caseYAML string) *duet.Execution {
	t.Helper()
	src := "task: {name: t, baseURL: " + base + "}\ncases:\n"
	for i, line := range strings.Split(strings.TrimRight(caseYAML, "\n"), "\n") {
		if i == 0 {
			src += "  - " + line + "\n"
		} else {
			src += "    " + line + "\n"
		}
	}
	suite, err := compiler.CompileSuite(t.Context(), []byte(src), "t.yaml", compiler.Options{})
	if err != nil {
		t.Fatalf("the recorded case does not compile: %v\n%s", err, src)
	}
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "duet.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	res, err := db.ApplySuite(t.Context(), "alice", suite)
	if err != nil {
		t.Fatal(err)
	}
	c := suite.Cases[0]
	run := &duet.Run{TaskID: res.Task.ID, TriggeredBy: "alice", CallSource: duet.SourceWeb}
	x := &duet.Execution{CaseID: res.Cases[0].ID, CaseKey: c.Key, CaseTitle: c.Title, CaseVersion: res.Cases[0].Version, Steps: c.Steps}
	if _, _, err := db.CreateRun(t.Context(), duet.StartRunParams{Run: run, Executions: []*duet.Execution{x}}); err != nil {
		t.Fatal(err)
	}
	claimed, err := db.ClaimRunByID(t.Context(), run.ID, "test-worker", time.Minute)
	if err != nil || claimed == nil {
		t.Fatalf("claim: %v", err)
	}
	if err := engine.New(db, engine.Options{Browser: app.NewBrowser(p)}).Execute(context.WithoutCancel(t.Context()), duet.LeaseOf(claimed, "test-worker"), claimed, nil); err != nil {
		t.Fatal(err)
	}
	execs, err := db.FindExecutions(t.Context(), run.ID)
	if err != nil || len(execs) != 1 {
		t.Fatalf("executions: %v %v", execs, err)
	}
	return execs[0]
}

func describe(x *duet.Execution) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %s", x.Status, x.ErrorCode, x.ErrorMessage)
	for _, r := range x.Results {
		fmt.Fprintf(&b, "\n  %d %-13s %-9s %s %s", r.Index, r.Kind, r.Status, r.ErrorCode, r.ErrorMessage)
	}
	return b.String()
}

// TestRecordFormAndTable records a checkout form (a select chosen with the
// keyboard, a checkbox by its label, a button that only the checkbox
// enables) and a table of three "Details" buttons, where the button's
// role and name are not unique: the recorder narrows it within its row.
// The recording replays green.
func TestRecordFormAndTable(t *testing.T) {
	t.Parallel()
	p := pool(t)
	base := sampletest.Shop(t)
	m := New(Options{Open: opener(p)})
	t.Cleanup(m.Close)
	l, err := m.Start(t.Context(), Start{Owner: "alice", TaskID: "task_1", BaseURL: base, OpenURL: "/lab/form"})
	if err != nil {
		t.Fatal(err)
	}
	u := tester{t, l}
	u.awaitPage("/lab/form")
	u.click("#ship")
	u.press("ArrowDown")
	u.awaitSteps(2)
	u.click("label:has(#terms)")
	u.awaitSteps(3)
	// The email field last: leaving it shows a hint above the button,
	// which moves under a replayed click (the engine's concern, not the
	// recorder's).
	u.click("#email")
	u.typeText("bob@example.com")
	u.awaitSteps(4)
	x, y := u.centre("#pay")
	if _, err := l.Pick(t.Context(), x, y, AssertVisible); err != nil {
		t.Fatalf("pick: %v", err)
	}
	if err := l.Open(t.Context(), "/lab/table"); err != nil {
		t.Fatal(err)
	}
	u.awaitPage("/lab/table")
	u.click("tr[data-qa=row-A1002] button")
	steps := u.awaitSteps(7)
	src := CaseYAML("checkout", "Checkout", steps)
	want := `key: "checkout"
title: "Checkout"
steps:
  - open: "/lab/form"
  - select: {role: "combobox", name: "Shipping", value: "exp"}
  - check: {role: "checkbox", name: "I agree to the terms"}
  - fill: {role: "textbox", name: "Email address", value: "bob@example.com"}
  - assertVisible: {role: "button", name: "Pay"}
  - open: "/lab/table"
  - click: {role: "button", name: "Details", within: {role: "row", hasText: "A1002"}}
`
	if src != want {
		t.Errorf("recorded:\n%s\nwant:\n%s", src, want)
	}
	if x := replay(t, p, base, src); x.Status != duet.StatusPassed {
		t.Fatalf("the recorded case does not pass:\n%s\n%s", src, describe(x))
	}
}

// TestSessionsAreTheOwners: another user's request for a session is
// NOT_FOUND; a user has one session at a time by default (RATE_LIMITED),
// and another once the first is closed; an idle session closes itself.
func TestSessionsAreTheOwners(t *testing.T) {
	t.Parallel()
	p := pool(t)
	base := sampletest.Shop(t)
	m := New(Options{Open: opener(p), IdleTimeout: time.Hour})
	t.Cleanup(m.Close)
	l, err := m.Start(t.Context(), Start{Owner: "alice", BaseURL: base})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Get("bob", l.ID); duet.ErrorCode(err) != duet.CodeNotFound {
		t.Errorf("bob gets alice's session: got %v, want NOT_FOUND", err)
	}
	if got, err := m.Get("alice", l.ID); err != nil || got != l {
		t.Errorf("alice gets her session: %v", err)
	}
	if _, err := m.Start(t.Context(), Start{Owner: "alice", BaseURL: base}); duet.ErrorCode(err) != duet.CodeRateLimited {
		t.Errorf("a second session: got %v, want RATE_LIMITED", err)
	}
	l.Close()
	if _, err := m.Get("alice", l.ID); duet.ErrorCode(err) != duet.CodeNotFound {
		t.Errorf("a closed session: got %v, want NOT_FOUND", err)
	}
	m2 := New(Options{Open: opener(p), IdleTimeout: 300 * time.Millisecond})
	t.Cleanup(m2.Close)
	l2, err := m2.Start(t.Context(), Start{Owner: "alice", BaseURL: base})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-l2.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("an idle session did not close")
	}
	if _, err := m2.Get("alice", l2.ID); duet.ErrorCode(err) != duet.CodeNotFound {
		t.Errorf("an idle session is gone: got %v, want NOT_FOUND", err)
	}
}
