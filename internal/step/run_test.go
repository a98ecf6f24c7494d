package step_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
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
	"github.com/duet-test/duet/internal/sqlite"
)

// The tests of the browser kinds compile a case with the compiler and run
// it with the engine in headless Chromium, as a run does: the kind's entry
// is reached through the registry on both sides.

var shared struct {
	once sync.Once
	pool *browser.Pool
}

// TestMain closes the browser pool the tests share.
func TestMain(m *testing.M) {
	code := m.Run()
	if p := shared.pool; p != nil {
		p.Close()
	}
	os.Exit(code)
}

// pool returns the package's browser pool; it skips the test when there
// is no Chromium, unless DUET_REQUIRE_BROWSER=1 asks for a failure.
func pool(t testing.TB) *browser.Pool {
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

// site serves each page of pages (path → HTML).
func site(t *testing.T, pages map[string]string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := pages[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// runSteps compiles a case of the steps (YAML list items, indented by six
// spaces) of a task whose base URL is baseURL, runs it in Chromium and
// returns its execution.
func runSteps(t *testing.T, baseURL, steps string) *duet.Execution {
	t.Helper()
	return runStepsWith(t, baseURL, steps, engine.Options{})
}

// runStepsWith is runSteps with the engine's options opts (its browser
// set here, unless opts has one).
func runStepsWith(t *testing.T, baseURL, steps string, opts engine.Options) *duet.Execution {
	t.Helper()
	p := pool(t)
	src := "task: {name: t, baseURL: " + baseURL + "}\ncases:\n  - title: c\n    steps:\n" + steps
	suite, err := compiler.CompileSuite(t.Context(), []byte(src), "t.yaml", compiler.Options{})
	if err != nil {
		t.Fatal(err)
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
	run := &duet.Run{TaskID: res.Task.ID, TriggeredBy: "alice", CallSource: duet.SourceCLI}
	x := &duet.Execution{CaseID: res.Cases[0].ID, CaseKey: c.Key, CaseTitle: c.Title, CaseVersion: res.Cases[0].Version, Steps: c.Steps}
	if _, _, err := db.CreateRun(t.Context(), duet.StartRunParams{Run: run, Executions: []*duet.Execution{x}}); err != nil {
		t.Fatal(err)
	}
	claimed, err := db.ClaimRunByID(t.Context(), run.ID, "test-worker", time.Minute)
	if err != nil || claimed == nil {
		t.Fatalf("claim: %v", err)
	}
	if err := engine.New(db, withBrowser(opts, app.NewBrowser(p))).Execute(context.WithoutCancel(t.Context()), duet.LeaseOf(claimed, "test-worker"), claimed, nil); err != nil {
		t.Fatal(err)
	}
	execs, err := db.FindExecutions(t.Context(), run.ID)
	if err != nil || len(execs) != 1 {
		t.Fatalf("executions: %v %v", execs, err)
	}
	return execs[0]
}

// describe prints an execution's step results for failure messages.
func describe(x *duet.Execution) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %s", x.Status, x.ErrorCode, x.ErrorMessage)
	for _, r := range x.Results {
		fmt.Fprintf(&b, "\n  %d %-13s %-9s %s %s", r.Index, r.Kind, r.Status, r.ErrorCode, r.ErrorMessage)
	}
	return b.String()
}

func withBrowser(opts engine.Options, b engine.Browser) engine.Options {
	if opts.Browser == nil {
		opts.Browser = b
	}
	return opts
}
