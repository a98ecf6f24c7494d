package engine_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/engine"
)

// brokenServers is a duet.Invoker for two serverKeys: on one the executor
// has no registration, the other's tool reports an error.
type brokenServers struct{}

func (brokenServers) Invoke(_ context.Context, req duet.InvokeRequest) (*duet.ToolResult, error) {
	if req.ServerKey == "mcp_unset_0badcafe" {
		return nil, duet.Errorf(duet.CodeMCPServerNotConfigured, "%s has not configured MCP server %s", req.Executor, req.ServerKey)
	}
	content, _ := json.Marshal([]map[string]any{{"type": "text", "text": "no such order"}})
	return &duet.ToolResult{Content: content, IsError: true}, duet.Errorf(duet.CodeMCPToolError, "tool %s reported an error: no such order", req.Tool)
}

// TestFailedMCPCallSavesAs: an optional mcpCall that fails sets its saveAs
// whatever the cause, with isError and error.code, so the steps after it
// read one shape (issue 18: MCP_SERVER_NOT_CONFIGURED left it unset while
// a tool error set it).
func TestFailedMCPCallSavesAs(t *testing.T) {
	t.Parallel()
	db := openStore(t)
	res := apply(t, db, "alice", `
task: {name: calls}
cases:
  - key: a-unset
    title: a server alice has not registered
    steps:
      - mcpCall: {serverKey: mcp_unset_0badcafe, tool: query_order, input: {orderId: A1}, saveAs: order, failurePolicy: optional}
      - assert: order.isError && order.error.code == "MCP_SERVER_NOT_CONFIGURED"
  - key: b-tool
    title: a tool that reports an error
    steps:
      - mcpCall: {serverKey: mcp_orders_0badcafe, tool: query_order, input: {orderId: A1}, saveAs: order, failurePolicy: optional}
      - assert: order.isError && order.error.code == "MCP_TOOL_ERROR" && order.text == "no such order"
`)
	w, _, _ := worker(t, db, engine.Options{Invoker: brokenServers{}}, engine.WorkerOptions{})
	run := startRun(t, db, res.Task, "alice")
	w.Notify()
	if final := waitFinal(t, db, run.ID); final.Status != duet.StatusPassed {
		t.Errorf("run: got %s (%s), want passed: the steps after the failed calls read their saveAs", final.Status, final.ErrorMessage)
	}
	execs, err := db.FindExecutions(t.Context(), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range execs {
		r := x.Results[0]
		if !r.Optional || r.SavedAs != "order" || !strings.Contains(string(r.Output), `"isError":true`) {
			t.Errorf("%s: step 1 got optional %v, savedAs %q, output %s", x.CaseKey, r.Optional, r.SavedAs, r.Output)
		}
		if x.Results[1].Status != duet.StatusPassed {
			t.Errorf("%s: step 2 got %s %s", x.CaseKey, x.Results[1].Status, x.Results[1].ErrorMessage)
		}
	}
}
