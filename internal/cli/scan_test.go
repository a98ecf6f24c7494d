package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/duet-test/duet/internal/sample"
	"github.com/duet-test/duet/internal/scan"
)

// TestScanDuetCatalogIsClean: Duet's own catalog, as tools/list describes
// it, has no finding at all (descriptions, parameters, enum options,
// portable schemas, names, no text aimed at the model).
func TestScanDuetCatalogIsClean(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	e := &duetEnv{tr: &transcript{}, vars: map[string]string{"DUET_HOME": home, "HOME": home}}
	out, errs, code := e.run(t, "scan", "--duet", "--strict", "--as", "alice")
	if code != 0 || !strings.Contains(out, "0 errors, 0 warnings across 1 source.") {
		t.Fatalf("duet scan --duet --strict: exit %d\n%s%s", code, out, errs)
	}
}

// TestScanServersAndCoverage: a registered server's archived tools are
// scanned beside Duet's catalog, and --task measures which tools,
// parameters and enum options the task's cases exercise.
func TestScanServersAndCoverage(t *testing.T) {
	t.Parallel()
	e := ordersSuiteEnv(t)

	out := e.must(t, "scan", "--mcp-server", "orders", "--task", "shop-orders", "--json", "--as", "alice")
	var got struct {
		scan.Report
		Coverage []*scan.Coverage `json:"coverage"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(got.Sources) != 1 || got.Sources[0].Name != "orders" || got.Sources[0].Tools != 3 {
		t.Fatalf("sources: got %+v, want only orders with 3 tools", got.Sources)
	}
	if len(got.Coverage) != 1 {
		t.Fatalf("coverage: got %d servers, want 1", len(got.Coverage))
	}
	c := got.Coverage[0]
	if c.Server != "orders" || c.ToolsCovered != 2 || c.ToolsTotal != 3 {
		t.Errorf("coverage: got %s tools %d/%d, want orders 2/3", c.Server, c.ToolsCovered, c.ToolsTotal)
	}
	for _, tc := range c.Tools {
		if want := map[string]int{"query_order": 2, "list_orders": 1, "set_order_status": 0}[tc.Tool]; tc.Calls != want {
			t.Errorf("%s: got %d calls, want %d", tc.Tool, tc.Calls, want)
		}
	}

	text := e.must(t, "scan", "--task", "shop-orders", "--as", "alice")
	for _, want := range []string{"duet: 8 tools", "orders (mcp_127-0-0-1_", "coverage of orders", "+ query_order [readOnly]: 2 calls in order-status",
		"- set_order_status: not called"} {
		if !strings.Contains(text, want) {
			t.Errorf("text output lacks %q:\n%s", want, text)
		}
	}
	if _, errs, code := e.run(t, "scan", "--mcp-server", "nope", "--as", "alice"); code != 1 || !strings.Contains(errs, "NOT_FOUND") {
		t.Errorf("unknown server: exit %d %s", code, errs)
	}
}

// TestReportScanEndToEnd: alice runs a task whose cases call her registered
// order server; `duet report` shows, in JSON and HTML, the scan of the
// tools the cases call and the coverage of the server — the same numbers as
// `duet scan --task`.
func TestReportScanEndToEnd(t *testing.T) {
	t.Parallel()
	e := ordersSuiteEnv(t)
	e.must(t, "run", "shop-orders", "--as", "alice")

	var rep struct {
		Scan *scan.TaskReport `json:"scan"`
	}
	out := e.must(t, "report", "latest", "--as", "alice", "--format", "json")
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Scan == nil || len(rep.Scan.Coverage) != 1 {
		t.Fatalf("report JSON: scan %+v, %v\n%s", rep.Scan, err, out)
	}
	var scanned struct {
		Coverage []*scan.Coverage `json:"coverage"`
	}
	if err := json.Unmarshal([]byte(e.must(t, "scan", "--task", "shop-orders", "--json", "--as", "alice")), &scanned); err != nil || len(scanned.Coverage) != 1 {
		t.Fatalf("duet scan --task: %+v, %v", scanned, err)
	}
	got, want := rep.Scan.Coverage[0], scanned.Coverage[0]
	if got.Server != "orders" || got.ToolsCovered != 2 || got.ToolsTotal != 3 || got.ParamsCovered != want.ParamsCovered ||
		got.ParamsTotal != want.ParamsTotal || got.OptionsCovered != want.OptionsCovered || got.OptionsTotal != want.OptionsTotal || got.CatalogHash == "" {
		t.Errorf("report coverage %+v differs from duet scan --task %+v", got, want)
	}
	if len(rep.Scan.Findings) != 1 || rep.Scan.Findings[0].Tools != 2 {
		t.Errorf("report findings: got %+v, want the orders server's 2 called tools", rep.Scan.Findings)
	}
	html := e.must(t, "report", "latest", "--as", "alice")
	for _, w := range []string{"MCP tools the cases call", "tools 2/3", "query_order", "set_order_status", "not called"} {
		if !strings.Contains(html, w) {
			t.Errorf("HTML report lacks %q", w)
		}
	}
	if strings.Contains(out+html, canary) {
		t.Errorf("the report shows the server's token")
	}
}

// ordersSuiteEnv is a Duet home where alice registered the sample order
// server (its token in ORDERS_TOKEN) and applied suiteYAML.
func ordersSuiteEnv(t *testing.T) *duetEnv {
	t.Helper()
	home := t.TempDir()
	e := &duetEnv{tr: &transcript{}, vars: map[string]string{
		"DUET_HOME": home, "DUET_MCP_ALLOW_LOOPBACK": "true", "ORDERS_TOKEN": canary, "HOME": home,
	}}
	url, stop, err := sample.StartOrderServer(t.Context(), "127.0.0.1:0", sample.NewOrders(), canary)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	e.must(t, "server", "add", "--as", "alice", "--name", "orders", "--url", url, "--bearer-token-env", "ORDERS_TOKEN")
	suite := filepath.Join(home, "suite.yaml")
	if err := os.WriteFile(suite, []byte(suiteYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	e.must(t, "apply", "-f", suite, "--as", "alice")
	return e
}
