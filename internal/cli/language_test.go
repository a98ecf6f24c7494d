package cli_test

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/duet-test/duet/internal/browser"
	"github.com/duet-test/duet/internal/browser/chromiumtest"
	"github.com/duet-test/duet/internal/cli"
	"github.com/duet-test/duet/internal/sample/sampletest"
)

// vaultSet runs `duet vault set NAME` with value on standard input.
func (h *duetHome) vaultSet(name, value string) {
	h.t.Helper()
	var out, errOut syncBuffer
	code := cli.Main(h.t.Context(), []string{"vault", "set", name}, cli.Env{
		Getenv: func(k string) string { return h.env[k] },
		Stdin:  io.NopCloser(strings.NewReader(value + "\n")),
		Stdout: &out, Stderr: &errOut,
	})
	if code != 0 {
		h.t.Fatalf("duet vault set %s: exit %d\n%s%s", name, code, out.String(), errOut.String())
	}
}

// TestFlowsExample runs examples/flows.yaml — flows, if/repeat/forEach,
// hooks, data rows from a CSV file and inline, an environment, a secret
// from the vault — against the sample shop from the command line, as its
// header says: in a local Chromium, then in a remote one (--browser). The
// run passes; each data row is an execution named from its row; the
// secret is nowhere in the report; an unknown environment is refused
// before a run starts.
func TestFlowsExample(t *testing.T) {
	t.Parallel()
	requireBrowser(t)
	shop := sampletest.Shop(t)
	h := newHome(t)
	h.vaultSet("SHOP_PASSWORD", "pw-from-the-vault")
	if out := h.must(0, "vault", "list"); !strings.Contains(out, "SHOP_PASSWORD") || strings.Contains(out, "pw-from-the-vault") {
		t.Errorf("vault list: %s", out)
	}
	h.must(0, "apply", "-f", filepath.Join("..", "..", "examples", "flows.yaml"), "--base-url", shop)

	out := h.must(0, "run", "flows", "--env", "local", "--json")
	var run struct {
		ID          string `json:"id"`
		Status      string `json:"status"`
		Environment string `json:"environment"`
		Hooks       []struct {
			Hook, Status string
		} `json:"hooks"`
	}
	if err := json.Unmarshal([]byte(out[strings.LastIndex(out, "\n{")+1:]), &run); err != nil {
		t.Fatalf("run --json: %v\n%s", err, out)
	}
	if run.Status != "passed" || run.Environment != "local" || len(run.Hooks) != 3 {
		t.Fatalf("run: %+v\n%s", run, out)
	}
	report := h.must(0, "report", run.ID, "--format", "json")
	for _, want := range []string{`"alice signs in and is welcomed in their language"`, `"bob signs in and is welcomed in their language"`,
		`"Order A1003 is priced in EUR"`, `"iteration": 5`, `"branch": "else"`} {
		if !strings.Contains(report, want) {
			t.Errorf("the report lacks %s", want)
		}
	}
	if strings.Contains(report, "pw-from-the-vault") {
		t.Errorf("the report holds the secret's value")
	}

	// An environment the task does not have: refused, naming the ones it has.
	code, _, errOut := h.duet(t.Context(), "run", "flows", "--env", "prod")
	if code == 0 || !strings.Contains(errOut, `no environment "prod" (it has: local, staging)`) {
		t.Errorf("--env prod: exit %d, %s", code, errOut)
	}

	// The same suite in a remote browser.
	chrome := chromiumtest.Start(t, func(dir string) []string { return browser.CommandLine(dir, 0) })
	h.env["DUET_BROWSER_URL"] = chrome.WS
	h.env["DUET_CHROME_PATH"] = "/nonexistent/chromium"
	if out := h.must(0, "run", "flows"); !strings.Contains(out, "PASSED: 6 passed") {
		t.Errorf("remote browser: %s", out)
	}
}

// TestFlowAsset: a flow saved as an asset (`duet asset add flow`) is
// checked when it is saved, and a suite of another user it is shared with
// runs it with use: OWNER/NAME, as the version it was when the suite was
// applied.
func TestFlowAsset(t *testing.T) {
	t.Parallel()
	shop := sampletest.Shop(t)
	h := newHome(t)
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	code, _, errOut := h.duet(t.Context(), "asset", "add", "flow", "broken", "-f", write("broken.yaml", "params: [id]\nsteps:\n  - htp: {url: /x}\n"))
	if code == 0 || !strings.Contains(errOut, "3:5") || !strings.Contains(errOut, "htp") {
		t.Errorf("a broken flow: exit %d, %s", code, errOut)
	}
	h.must(0, "asset", "add", "flow", "order-status", "--share-with", "bob", "-f", write("flow.yaml", `
params: {id: null, status: paid}
steps:
  - http: {url: "/api/orders/${id}", saveAs: order}
  - assert: order.body.status == status
`))
	h.must(0, "apply", "--as", "bob", "--base-url", shop, "-f", write("suite.yaml", `
task: {name: uses-asset, baseURL: http://127.0.0.1:9}
cases:
  - title: an order is paid
    steps:
      - use: {flow: alice/order-status, with: {id: A1001}}
      - assert: order.body.id == "A1001"
  - title: another is shipped
    steps:
      - use: {flow: alice/order-status@1, with: {id: A1003, status: shipped}}
`))
	if out := h.must(0, "run", "uses-asset", "--as", "bob"); !strings.Contains(out, "PASSED: 2 passed") {
		t.Errorf("run: %s", out)
	}
	code, _, errOut = h.duet(t.Context(), "apply", "--as", "carol", "-f", filepath.Join(dir, "suite.yaml"))
	if code == 0 || !strings.Contains(errOut, `unknown flow "alice/order-status"`) {
		t.Errorf("carol, who cannot read the flow: exit %d, %s", code, errOut)
	}
}
