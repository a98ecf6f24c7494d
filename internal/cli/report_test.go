package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/browser"
	"github.com/duet-test/duet/internal/cli"
	"github.com/duet-test/duet/internal/report"
	"github.com/duet-test/duet/internal/sample/sampletest"
)

// These tests drive the duet command as a user does, in real Chromium
// against the sample shop: apply a suite, run it, cancel a run, write its
// reports.

func requireBrowser(t *testing.T) {
	t.Helper()
	if err := browser.NewPool(browser.Options{}).Available(); err != nil {
		if os.Getenv("DUET_REQUIRE_BROWSER") == "1" {
			t.Fatalf("DUET_REQUIRE_BROWSER=1 but no Chromium: %v", err)
		}
		t.Skipf("skipping: %v (set DUET_REQUIRE_BROWSER=1 to fail instead)", err)
	}
}

// syncBuffer is a bytes.Buffer safe for a command writing while the test
// reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// duetHome is a DUET_HOME for one test and the environment of its commands.
type duetHome struct {
	t   *testing.T
	env map[string]string
}

func newHome(t *testing.T) *duetHome {
	return &duetHome{t: t, env: map[string]string{
		"DUET_HOME": t.TempDir(), "DUET_USER": "alice", "DUET_BROWSERS": "1", "DUET_LOG_LEVEL": "warn",
	}}
}

// duet runs the command line with args and returns its exit code and
// output.
func (h *duetHome) duet(ctx context.Context, args ...string) (code int, stdout, stderr string) {
	var out, errOut syncBuffer
	code = cli.Main(ctx, args, cli.Env{
		Getenv: func(k string) string { return h.env[k] },
		Stdin:  io.NopCloser(strings.NewReader("")),
		Stdout: &out, Stderr: &errOut,
	})
	return code, out.String(), errOut.String()
}

// must runs the command and fails the test unless it exits with want.
func (h *duetHome) must(want int, args ...string) string {
	h.t.Helper()
	code, out, errOut := h.duet(h.t.Context(), args...)
	if code != want {
		h.t.Fatalf("duet %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, want, out, errOut)
	}
	return out
}

// apply writes the suite to a file and applies it.
func (h *duetHome) apply(suite string) {
	h.t.Helper()
	file := filepath.Join(h.t.TempDir(), "suite.yaml")
	if err := os.WriteFile(file, []byte(suite), 0o600); err != nil {
		h.t.Fatal(err)
	}
	h.must(0, "apply", "-f", file)
}

var runIDRe = regexp.MustCompile(`run (run_[0-9a-z]+) started`)

func TestReportEndToEnd(t *testing.T) {
	t.Parallel()
	requireBrowser(t)
	h := newHome(t)
	// The wrong case's assertion fails on its first read of #status; its
	// 5s is the budget for that read on a loaded machine (with 1s the step
	// could end in a timeout before reading, not in ASSERTION_FAILED).
	h.apply(`
task: {name: web-shop, baseURL: ` + sampletest.Shop(t) + `, device: iphone-15}
cases:
  - key: status
    title: The order page shows the paid status
    steps:
      - open: /order?orderId=A1001
      - extract: {from: url.query, param: orderId, as: orderId}
      - assertText: {selector: "#status", equals: paid}
      - screenshot: {name: order page}
  - key: wrong
    title: A shipped order is expected
    steps:
      - open: /order?orderId=A1001
      - assertText: {selector: "#status", equals: shipped}
        timeout: 5s
      - click: "#refresh"
`)
	out := h.must(1, "run", "web-shop")
	m := runIDRe.FindStringSubmatch(out)
	if m == nil || !strings.Contains(out, "FAIL A shipped order is expected > 2. assertText #status") {
		t.Fatalf("duet run: got\n%s\nwant progress with the failed step", out)
	}
	runID := m[1]
	dir := t.TempDir()

	// HTML: self-contained, with the failure screenshot inline.
	htmlFile := filepath.Join(dir, "report.html")
	if out := h.must(0, "report", runID, "-o", htmlFile); !strings.Contains(out, "1 of 2 cases passed") {
		t.Errorf("duet report -o: got %q", out)
	}
	b, err := os.ReadFile(htmlFile)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	if n := strings.Count(page, `<img src="data:image/png;base64,iVBORw0KGgo`); n != 2 {
		t.Errorf("HTML report: got %d inline PNG screenshots, want 2 (the failure and the screenshot step)", n)
	}
	for _, want := range []string{"The page when the step failed", "ASSERTION_FAILED", "text of #status is &#34;paid&#34;, want &#34;shipped&#34;",
		"A shipped order is expected", "device iphone-15", "orderId", "A1001", "What went wrong"} {
		if !strings.Contains(page, want) {
			t.Errorf("HTML report: want it to contain %q", want)
		}
	}

	// JUnit XML for CI.
	junitFile := filepath.Join(dir, "junit.xml")
	h.must(0, "report", runID, "--format", "junit", "-o", junitFile)
	b, err = os.ReadFile(junitFile)
	if err != nil {
		t.Fatal(err)
	}
	var suites report.JUnitSuites
	if err := xml.Unmarshal(b, &suites); err != nil {
		t.Fatalf("JUnit output does not parse: %v\n%s", err, b)
	}
	if suites.Tests != 2 || suites.Failures != 1 || suites.Errors != 0 || len(suites.Suites) != 1 || len(suites.Suites[0].Cases) != 2 {
		t.Fatalf("JUnit counts: got %+v", suites)
	}
	c := suites.Suites[0].Cases[1]
	if c.Name != "A shipped order is expected" || c.Failure == nil || c.Failure.Type != "ASSERTION_FAILED" || !strings.Contains(c.Failure.Text, "screenshot: "+runID+"/") {
		t.Errorf("JUnit failing case: got %+v", c)
	}

	// JSON on stdout.
	var r struct {
		Run   duet.Run
		Cases []struct {
			Status    duet.RunStatus
			Variables map[string]any
		}
	}
	if err := json.Unmarshal([]byte(h.must(0, "report", runID, "--format", "json")), &r); err != nil {
		t.Fatalf("JSON report does not parse: %v", err)
	}
	if r.Run.ID != runID || r.Run.Status != duet.StatusFailed || r.Cases[0].Variables["orderId"] != "A1001" {
		t.Errorf("JSON report: got %+v", r)
	}

	// Only people who may see the run get its report; formats are checked.
	if code, _, errOut := h.duet(t.Context(), "report", runID, "--as", "mallory"); code != 1 || !strings.Contains(errOut, "NOT_FOUND") {
		t.Errorf("report as another user: exit %d, %q; want 1 with NOT_FOUND", code, errOut)
	}
	if code, _, errOut := h.duet(t.Context(), "report", runID, "--format", "pdf"); code != 2 || !strings.Contains(errOut, "html, json or junit") {
		t.Errorf("report --format pdf: exit %d, %q; want 2", code, errOut)
	}
}

func TestRunCancelEndToEnd(t *testing.T) {
	t.Parallel()
	requireBrowser(t)
	h := newHome(t)
	h.apply(`
task: {name: slow-shop, baseURL: ` + sampletest.Shop(t) + `}
cases:
  - key: forever
    title: Waits for a text that never comes
    steps:
      - open: /order?orderId=A1001
      - waitFor: {text: "never shown"}
        timeout: 5m
`)
	runID := strings.TrimSpace(h.must(0, "run", "slow-shop", "--detach"))

	ctx, stop := context.WithCancel(context.Background())
	workerDone := make(chan int, 1)
	go func() {
		code, _, _ := h.duet(ctx, "worker")
		workerDone <- code
	}()
	t.Cleanup(func() { stop(); <-workerDone })

	// Wait until the worker is in the waitFor step.
	deadline := time.Now().Add(time.Minute)
	for {
		var shown struct {
			Executions []duet.Execution
		}
		if err := json.Unmarshal([]byte(h.must(0, "run", "show", runID, "--json")), &shown); err != nil {
			t.Fatal(err)
		}
		if len(shown.Executions[0].Results) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the open step did not finish in a minute: %+v", shown.Executions[0])
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)

	start := time.Now()
	out := h.must(0, "run", "cancel", runID)
	// A cancel that waited for the step would take its 5 minutes; a minute
	// is a bound a loaded machine meets when the browser work stops at once.
	if took := time.Since(start); took > time.Minute {
		t.Errorf("duet run cancel took %s, want the browser work stopped at once", took)
	}
	if want := "run " + runID + " is cancelled"; !strings.Contains(out, want) {
		t.Errorf("duet run cancel: got %q, want %q", out, want)
	}
	var suites report.JUnitSuites
	if err := xml.Unmarshal([]byte(h.must(0, "report", runID, "--format", "junit")), &suites); err != nil {
		t.Fatal(err)
	}
	if suites.Skipped != 1 || suites.Suites[0].Cases[0].Skipped == nil {
		t.Errorf("JUnit of the cancelled run: got %+v, want the case skipped", suites)
	}
	stop()
	if code := <-workerDone; code != 0 {
		t.Errorf("duet worker: exit %d after its context ended, want 0", code)
	}
	workerDone <- 0 // for the cleanup
}
