package cli_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/app"
	"github.com/duet-test/duet/internal/catalog"
	"github.com/duet-test/duet/internal/config"
	"github.com/duet-test/duet/internal/sample"
)

const sharedOrdersYAML = `task:
  name: order-ops
  sharedWith: [bob]
cases:
  - key: cancel-order
    title: cancel order A1002 and read it back
    steps:
      - mcpCall: {server: orders, tool: query_order, input: {orderId: A1002}, saveAs: before}
      - mcpCall: {server: orders, tool: set_order_status, input: {orderId: A1002, status: cancelled}, saveAs: changed}
      - mcpCall: {server: orders, tool: query_order, input: {orderId: A1002}, saveAs: after}
      - assert: after.structuredContent.order.status == "cancelled"
`

// TestSharedTaskProtectsTheExecutor is the shared-task story of issue 10
// through the command line, with the real MCP client and the sample order
// server: alice shares a case that cancels an order; bob, who registered the
// server himself, runs it. Its first call — a read-only query — already
// fails with APPROVAL_REQUIRED, nothing is called with his credentials and
// the order is untouched, while the run starts and ends. bob lists what
// needs his approval, reviews where the case can send data, approves the
// case version, and the next run cancels the order. alice giving the task a
// base URL changes where the case can send data: bob's approval no longer
// holds. alice's edit needs a new approval. alice sees bob's run as statuses, timings and codes only
// (run show, report, get_execution_result); bob sees it all. A case naming a
// serverKey its author has not registered is refused at apply.
func TestSharedTaskProtectsTheExecutor(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	e := &duetEnv{tr: &transcript{}, vars: map[string]string{
		"DUET_HOME": home, "DUET_MCP_ALLOW_LOOPBACK": "true", "ORDERS_TOKEN": "orders-token-5c1e", "HOME": home,
	}}
	orders := sample.NewOrders()
	url, stop, err := sample.StartOrderServer(t.Context(), "127.0.0.1:0", orders, "orders-token-5c1e")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	for _, u := range []string{"alice", "bob"} {
		e.must(t, "server", "add", "--as", u, "--name", "orders", "--url", url, "--bearer-token-env", "ORDERS_TOKEN")
	}
	suite := filepath.Join(home, "ops.yaml")
	write := func(src string) {
		if err := os.WriteFile(suite, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(sharedOrdersYAML)
	e.must(t, "apply", "-f", suite, "--as", "alice")
	status := func() string {
		o, err := orders.Get("A1002")
		if err != nil {
			t.Fatal(err)
		}
		return string(o.Status)
	}
	before := status()
	if before == "cancelled" {
		t.Fatalf("the sample order A1002 starts cancelled")
	}
	run := func(user string) (duet.Run, *duet.Execution) {
		t.Helper()
		out, _, _ := e.run(t, "run", "order-ops", "--as", user, "--json")
		var r duet.Run
		if err := json.Unmarshal([]byte(out), &r); err != nil || r.StartedAt == nil {
			t.Fatalf("%s's run: %v %s", user, err, out)
		}
		var shown struct {
			Executions []*duet.Execution `json:"executions"`
		}
		json.Unmarshal([]byte(e.must(t, "run", "show", r.ID, "--as", user, "--json")), &shown)
		return r, shown.Executions[0]
	}

	bobRun, x := run("bob")
	if x.Status != duet.StatusFailed || x.ErrorCode != duet.CodeApprovalRequired || x.Results[0].ErrorCode != duet.CodeApprovalRequired {
		t.Fatalf("bob's first run: case %s %s; steps %+v", x.Status, x.ErrorCode, x.Results)
	}
	if got := status(); got != before {
		t.Fatalf("order A1002 changed to %s without bob's approval", got)
	}
	list := e.must(t, "case", "approvals", "--as", "bob")
	if !strings.Contains(list, x.CaseID) || !strings.Contains(list, "needs approval") || !strings.Contains(list, "orders/set_order_status") ||
		!strings.Contains(list, "step 1 orders/query_order") {
		t.Fatalf("bob's approvals list:\n%s", list)
	}
	shown := e.must(t, "case", "show", x.CaseID, "--as", "bob")
	for _, want := range []string{"version 1 written by alice", "set_order_status of orders", "query_order of orders", "(needs approval)",
		"where it can send data", "MCP tool set_order_status of orders (mcp_", "status: cancelled"} {
		if !strings.Contains(shown, want) {
			t.Errorf("case show does not say %q:\n%s", want, shown)
		}
	}
	if out := e.must(t, "case", "approvals", "--as", "alice"); !strings.Contains(out, "no case") {
		t.Fatalf("alice wrote the case; nothing needs her approval:\n%s", out)
	}
	approved := e.must(t, "case", "approve", x.CaseID, "--as", "bob")
	if !strings.Contains(approved, "approved version 1") || !strings.Contains(approved, "set_order_status") {
		t.Fatalf("approve: %s", approved)
	}
	okRun, okX := run("bob")
	if x = okX; x.Status != duet.StatusPassed || status() != "cancelled" {
		t.Fatalf("bob's approved run: %s %s %q; order %s", x.Status, x.ErrorCode, x.ErrorMessage, status())
	}
	if out := e.must(t, "case", "show", x.CaseID, "--as", "bob"); !strings.Contains(out, "(approved)") {
		t.Fatalf("case show after bob approved:\n%s", out)
	}

	// alice gives the task a base URL: the case's version stays, but where
	// it can send data changed, so bob's approval no longer holds.
	write(strings.Replace(sharedOrdersYAML, "  sharedWith: [bob]", "  sharedWith: [bob]\n  baseURL: https://shop.example", 1))
	e.must(t, "apply", "-f", suite, "--as", "alice")
	if out := e.must(t, "case", "show", x.CaseID, "--as", "bob"); !strings.Contains(out, "needs approval again") || !strings.Contains(out, "host shop.example (the task's base URL") ||
		!strings.Contains(out, "version 1 written by alice") {
		t.Fatalf("case show after the base URL changed:\n%s", out)
	}
	if out := e.must(t, "case", "approve", x.CaseID, "--as", "bob"); !strings.Contains(out, "host shop.example") {
		t.Fatalf("approving the new destinations:\n%s", out)
	}
	if out := e.must(t, "case", "approvals", "--as", "bob"); !strings.Contains(out, "approved") || strings.Contains(out, "needs approval") {
		t.Fatalf("after bob approved the new destinations:\n%s", out)
	}

	// alice edits the case: a new version, not approved.
	write(strings.Replace(sharedOrdersYAML, "saveAs: changed}", "saveAs: changed, failurePolicy: required}", 1))
	e.must(t, "apply", "-f", suite, "--as", "alice")
	if out := e.must(t, "case", "approvals", "--as", "bob"); !strings.Contains(out, "v2") || !strings.Contains(out, "needs approval") {
		t.Fatalf("after alice's edit:\n%s", out)
	}
	if _, errs, code := e.run(t, "case", "approve", x.CaseID, "--version", "1", "--as", "bob"); code != 1 || !strings.Contains(errs, "CONFLICT") {
		t.Fatalf("approving the old version: exit %d %s", code, errs)
	}
	if _, x = run("bob"); x.ErrorCode != duet.CodeApprovalRequired || x.CaseVersion != 2 {
		t.Fatalf("bob's run of version 2: %s v%d", x.ErrorCode, x.CaseVersion)
	}
	e.must(t, "case", "revoke", x.CaseID, "--as", "bob")

	// alice sees bob's runs restricted; bob sees his in full.
	var aliceView struct {
		Run        duet.Run          `json:"run"`
		Executions []*duet.Execution `json:"executions"`
	}
	json.Unmarshal([]byte(e.must(t, "run", "show", bobRun.ID, "--as", "alice", "--json")), &aliceView)
	ax := aliceView.Executions[0]
	if ax.ErrorCode != duet.CodeApprovalRequired || ax.Results[0].Output != nil || len(ax.Vars) != 0 || !strings.Contains(ax.ErrorMessage, "shown only to bob") {
		t.Fatalf("alice's view of bob's run: %+v", ax)
	}
	aliceReport := e.must(t, "report", okRun.ID, "--as", "alice", "--format", "json")
	bobReport := e.must(t, "report", okRun.ID, "--as", "bob", "--format", "json")
	if strings.Contains(aliceReport, "Bob Martin") || !strings.Contains(bobReport, "Bob Martin") || !strings.Contains(aliceReport, `"disclosure": "restricted"`) ||
		!strings.Contains(bobReport, `"disclosure": "full"`) || !strings.Contains(bobReport, "structuredContent") {
		t.Fatalf("reports of bob's run:\nalice: %.600s\nbob: %.600s", aliceReport, bobReport)
	}
	cfg, err := config.Load(func(k string) string { return e.vars[k] })
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.Open(context.Background(), cfg, app.Options{Stderr: &strings.Builder{}, Getenv: func(k string) string { return e.vars[k] }})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	for user, want := range map[string]duet.Disclosure{"alice": duet.DiscloseRestricted, "bob": duet.DiscloseFull} {
		args, _ := json.Marshal(catalog.GetExecutionIn{ExecutionID: okX.ID})
		res, err := a.Catalog.Call(t.Context(), catalog.Request{Caller: duet.Caller{UserID: user, Source: duet.SourceMCP}, Tool: catalog.ToolGetExecutionResult, Args: args})
		if err != nil || res.IsError {
			t.Fatalf("get_execution_result as %s: %v %s", user, err, res.Text)
		}
		var out catalog.GetExecutionOut
		json.Unmarshal(res.Structured, &out)
		if out.Disclosure != want || (want == duet.DiscloseRestricted) != (out.Execution.Steps[0].Output == nil) {
			t.Errorf("get_execution_result as %s: disclosure %s, first output %s", user, out.Disclosure, out.Execution.Steps[0].Output)
		}
	}

	// A case may name only servers its author registered.
	reg, err := a.Store.FindMCPServer(t.Context(), "alice", "orders")
	if err != nil {
		t.Fatal(err)
	}
	carol := filepath.Join(home, "carol.yaml")
	os.WriteFile(carol, []byte(strings.NewReplacer("order-ops", "carol-ops", "server: orders", "serverKey: "+reg.ServerKey, "[bob]", "[alice]").Replace(sharedOrdersYAML)), 0o600)
	if _, errs, code := e.run(t, "apply", "-f", carol, "--as", "carol"); code != 1 || !strings.Contains(errs, "have not registered MCP server "+reg.ServerKey) {
		t.Fatalf("carol applying a case with alice's serverKey: exit %d %s", code, errs)
	}
}
