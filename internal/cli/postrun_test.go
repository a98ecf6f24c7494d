package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/sample"
)

const postRunSuiteYAML = `task:
  name: shop-post-run
  sharedWith: [bob]
  postRun:
    - name: hold the order
      on: failure
      server: orders
      tool: set_order_status
      input: {orderId: A1002, status: cancelled}
    - name: look up a missing order
      on: always
      server: orders
      tool: query_order
      input: {orderId: "${run.status}"}
cases:
  - key: paid
    title: A1001 is paid
    steps:
      - mcpCall: {server: orders, tool: query_order, input: {orderId: A1001}, saveAs: o}
      - assert: o.structuredContent.order.status == "shipped"
`

// TestPostRunActionsEndToEnd: a task's post-run actions call the sample
// order server when a run ends, as the run's executor with their own
// registration: the failing run makes set_order_status change an order
// (the order book records the call), a failing action is a note that
// leaves the verdict alone, and the invocation records say post-run. Bob,
// running alice's shared task with his own token, needs to approve the
// actions before any is made with his credentials (the read-only lookup
// too: it is sent the run's summary).
func TestPostRunActionsEndToEnd(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	e := &duetEnv{tr: &transcript{}, vars: map[string]string{
		"DUET_HOME": home, "HOME": home, "DUET_MCP_ALLOW_LOOPBACK": "true", "ORDERS_TOKEN": canary, "DUET_LOG_LEVEL": "error",
	}}
	orders := sample.NewOrders()
	url, stop, err := sample.StartOrderServer(t.Context(), "127.0.0.1:0", orders, canary)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	for _, u := range []string{"alice", "bob"} {
		e.must(t, "server", "add", "--as", u, "--name", "orders", "--url", url, "--bearer-token-env", "ORDERS_TOKEN")
	}
	suite := filepath.Join(home, "suite.yaml")
	if err := os.WriteFile(suite, []byte(postRunSuiteYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	e.must(t, "apply", "-f", suite, "--as", "alice")

	out, _, code := e.run(t, "run", "shop-post-run", "--as", "alice")
	if code != 1 || !strings.Contains(out, "FAILED") {
		t.Fatalf("alice's run: exit %d, want 1 (the case fails; post-run actions do not change that)\n%s", code, out)
	}
	if o, _ := orders.Get("A1002"); o.Status != sample.StatusCancelled {
		t.Fatalf("A1002 is %s: the failure action did not reach the order server", o.Status)
	}
	for _, want := range []string{"post-run hold the order (set_order_status): passed", "post-run look up a missing order (query_order): failed: MCP_TOOL_ERROR", "verdict does not depend on it"} {
		if !strings.Contains(out, want) {
			t.Errorf("duet run output lacks %q:\n%s", want, out)
		}
	}
	var recs []*duet.Invocation
	json.Unmarshal([]byte(e.must(t, "server", "invocations", "--as", "alice", "--source", "post-run", "--json")), &recs)
	if len(recs) != 2 || recs[0].Executor != "alice" || recs[0].Tool != "query_order" || recs[0].Outcome != duet.CodeMCPToolError ||
		recs[1].Tool != "set_order_status" || recs[1].Outcome != duet.OutcomeOK {
		b, _ := json.Marshal(recs)
		t.Fatalf("post-run invocation records: %s", b)
	}
	runID := strings.Fields(e.must(t, "run", "list", "--as", "alice"))[0]
	report := e.must(t, "report", runID, "--format", "json", "--as", "alice")
	if !strings.Contains(report, `"postRun"`) || !strings.Contains(report, "hold the order") {
		t.Errorf("the JSON report lacks the post-run notes:\n%s", report)
	}

	// Bob runs alice's task with his own registration: the write and the
	// read-only lookup both need his approval.
	orders.SetStatus("A1002", sample.StatusPending)
	if out, _, code := e.run(t, "run", "shop-post-run", "--as", "bob"); code != 2 || !strings.Contains(out, "post-run hold the order (set_order_status): failed: APPROVAL_REQUIRED") ||
		!strings.Contains(out, "post-run look up a missing order (query_order): failed: APPROVAL_REQUIRED") {
		t.Fatalf("bob's first run: exit %d\n%s", code, out)
	}
	if o, _ := orders.Get("A1002"); o.Status != sample.StatusPending {
		t.Fatalf("A1002 is %s: the write was made with bob's credentials without his approval", o.Status)
	}
	show := e.must(t, "task", "show", "shop-post-run", "--as", "bob")
	if !strings.Contains(show, "post-run actions (written by alice)") || !strings.Contains(show, "needs your approval: duet task approve-post-run") {
		t.Fatalf("duet task show for bob:\n%s", show)
	}
	e.must(t, "task", "approve-post-run", "shop-post-run", "--as", "bob")
	if out, _, _ := e.run(t, "run", "shop-post-run", "--as", "bob"); !strings.Contains(out, "post-run hold the order (set_order_status): passed") {
		t.Fatalf("bob's approved run:\n%s", out)
	}
	if o, _ := orders.Get("A1002"); o.Status != sample.StatusCancelled {
		t.Fatalf("A1002 is %s after bob approved", o.Status)
	}
	recs = nil
	json.Unmarshal([]byte(e.must(t, "server", "invocations", "--as", "bob", "--executor", "bob", "--source", "post-run", "--json")), &recs)
	if len(recs) != 2 {
		t.Fatalf("bob's post-run calls: got %d records, want 2 (lookup and write, after he approved)", len(recs))
	}
	if strings.Contains(e.tr.all.String(), canary) {
		t.Error("the token appears in command output")
	}
}
