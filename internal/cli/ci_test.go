package cli_test

import (
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/duet-test/duet/internal/sample"
	"github.com/duet-test/duet/internal/sample/sampletest"
)

// TestRunExitCodes: `duet run --wait` as a CI job runs it, real runs end to
// end — a passing api case against the sample shop (0, with the JUnit,
// JSON and HTML reports written at the end), a failing one (1), usage and
// configuration errors (2), and an MCP server that went away (3).
func TestRunExitCodes(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	shop := sampletest.Shop(t)
	h.apply(`
task: {name: api, baseURL: ` + shop + `}
cases:
  - key: ok
    title: the order API answers
    steps:
      - http: {method: GET, url: /api/orders/A1001, saveAs: order}
      - assert: order.status == 200
`)
	h.apply(`
task: {name: api-broken, baseURL: ` + shop + `}
cases:
  - key: ok
    title: the order API answers
    steps:
      - http: {method: GET, url: /api/orders/A1001, saveAs: order}
      - assert: order.status == 200
  - key: wrong
    title: a missing order is found
    steps:
      - http: {method: GET, url: /api/orders/NOPE, saveAs: missing}
      - assert: missing.status == 200
`)
	dir := t.TempDir()
	junit, js, html := filepath.Join(dir, "junit.xml"), filepath.Join(dir, "run.json"), filepath.Join(dir, "report.html")

	out := h.must(0, "run", "api", "--wait", "--junit", junit, "--json="+js, "--report", html)
	for _, f := range []string{junit, js, html} {
		if !strings.Contains(out, "report to "+f) {
			t.Errorf("no word of %s: %s", f, out)
		}
	}
	var suites struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
	}
	b, _ := os.ReadFile(junit)
	if err := xml.Unmarshal(b, &suites); err != nil || suites.Tests != 1 || suites.Failures != 0 {
		t.Fatalf("junit: %+v %v\n%s", suites, err, b)
	}
	var rep struct {
		Run struct{ Status string }
	}
	b, _ = os.ReadFile(js)
	if err := json.Unmarshal(b, &rep); err != nil || rep.Run.Status != "passed" {
		t.Fatalf("json report: %+v %v\n%.300s", rep, err, b)
	}
	if b, _ := os.ReadFile(html); !strings.Contains(string(b), "<html") {
		t.Fatalf("html report: %.200s", b)
	}

	// A failing case: 1, and the files are still written.
	h.must(1, "run", "api-broken", "--junit", junit)
	b, _ = os.ReadFile(junit)
	if err := xml.Unmarshal(b, &suites); err != nil || suites.Tests != 2 || suites.Failures != 1 {
		t.Fatalf("junit of the failing run: %+v %v\n%s", suites, err, b)
	}

	// The run's origin: from the flags, the rest from GitHub Actions'
	// variables; listed by branch.
	for k, v := range map[string]string{"GITHUB_ACTIONS": "true", "GITHUB_SERVER_URL": "https://github.example", "GITHUB_REPOSITORY": "acme/shop",
		"GITHUB_RUN_ID": "99", "GITHUB_REF": "refs/pull/12/merge", "GITHUB_HEAD_REF": "feature/pay", "GITHUB_SHA": "from-env"} {
		h.env[k] = v
	}
	h.must(0, "run", "api", "--commit", "abc123")
	var shown struct {
		Run struct{ Origin map[string]string }
	}
	json.Unmarshal([]byte(h.must(0, "run", "show", "latest", "--json")), &shown)
	if o := shown.Run.Origin; o["commit"] != "abc123" || o["branch"] != "feature/pay" || o["pullRequest"] != "https://github.example/acme/shop/pull/12" || o["pipeline"] != "https://github.example/acme/shop/actions/runs/99" {
		t.Fatalf("the run's origin: %+v", o)
	}
	if out := h.must(0, "run", "list", "--branch", "feature/pay"); strings.Count(out, "run_") != 1 {
		t.Fatalf("runs of the branch: %s", out)
	}
	h.env["GITHUB_ACTIONS"] = ""

	// Usage and configuration: 2.
	h.must(2, "run", "no-such-task")
	h.must(2, "run", "api", "--case", "case_nope")
	h.must(2, "run", "api", "--junit", filepath.Join(dir, "missing-dir", "junit.xml"))
	h.must(2, "run", "api", "--detach", "--junit", junit)
	h.must(2, "run")

	// An MCP server that is down: 3.
	h.env["DUET_MCP_ALLOW_LOOPBACK"] = "true"
	h.env["ORDERS_TOKEN"] = canary
	url, stop, err := sample.StartOrderServer(t.Context(), "127.0.0.1:0", sample.NewOrders(), canary)
	if err != nil {
		t.Fatal(err)
	}
	h.must(0, "server", "add", "--name", "orders", "--url", url, "--bearer-token-env", "ORDERS_TOKEN")
	h.apply(`
task: {name: orders}
cases:
  - key: status
    title: an order's status
    steps:
      - mcpCall: {server: orders, tool: query_order, input: {orderId: A1001}, saveAs: o}
      - assert: o.structuredContent.order.status == "paid"
`)
	h.must(0, "run", "orders")
	stop()
	code, out, errs := h.duet(t.Context(), "run", "orders", "--junit", junit)
	if code != 3 || !strings.Contains(errs, "MCP_UNREACHABLE") {
		t.Fatalf("run against a server that is down: exit %d\n%s%s", code, out, errs)
	}
	b, _ = os.ReadFile(junit)
	if !strings.Contains(string(b), "MCP_UNREACHABLE") {
		t.Fatalf("junit of the unreachable run: %s", b)
	}
}
