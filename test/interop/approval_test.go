package interop_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/duet-test/duet/internal/sample"
)

const approvalSuite = `task:
  name: order-ops
  sharedWith: [bob]
cases:
  - key: cancel-order
    title: cancel order A1002 and read it back
    steps:
      - mcpCall: {server: orders, tool: set_order_status, input: {orderId: A1002, status: cancelled}, saveAs: changed}
      - mcpCall: {server: orders, tool: query_order, input: {orderId: A1002}, saveAs: after}
      - assert: after.structuredContent.order.status == "cancelled"
`

// TestApprovalOverMCP: a 2026-07-28 client we did not write (the TypeScript
// SDK v2 client) completes the executor's approval of a shared case through
// a multi-round request (SEP-2322), against `duet serve`. alice shares a case
// that cancels an order with set_order_status (not read-only); bob, who
// registered the order server himself, calls start_test_run over
// /mcp/http. Falsified by: bob not being asked before anything runs; a
// declined question starting a run or touching the order; an approved one
// not starting the run, or the run failing with APPROVAL_REQUIRED (the
// approval was not recorded); any negotiated version but 2026-07-28.
func TestApprovalOverMCP(t *testing.T) {
	nt := requireNode(t)
	home := t.TempDir()
	const token = "orders-token-7a3f"
	orders := sample.NewOrders()
	url, stop, err := sample.StartOrderServer(t.Context(), "127.0.0.1:0", orders, token)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	env := []string{"DUET_HOME=" + home, "DUET_MCP_ALLOW_LOOPBACK=true", "ORDERS_TOKEN=" + token}
	for _, u := range []string{"alice", "bob"} {
		duet(t, env, "server", "add", "--as", u, "--name", "orders", "--url", url, "--bearer-token-env", "ORDERS_TOKEN")
	}
	suite := filepath.Join(home, "ops.yaml")
	if err := os.WriteFile(suite, []byte(approvalSuite), 0o600); err != nil {
		t.Fatal(err)
	}
	duet(t, env, "apply", "-f", suite, "--as", "alice")
	status := func() string {
		o, err := orders.Get("A1002")
		if err != nil {
			t.Fatal(err)
		}
		return string(o.Status)
	}
	before := status()
	const key = "gw-key-approval-test"
	srv := startServe(t, append(env, "DUET_GATEWAY_API_KEYS="+key))

	type outcome struct {
		ProtocolVersion string   `json:"protocolVersion"`
		Asked           []string `json:"asked"`
		Result          struct {
			RunID string `json:"runId"`
		} `json:"result"`
		IsError bool   `json:"isError"`
		Text    string `json:"text"`
	}
	client := func(approve bool, idem string) outcome {
		t.Helper()
		plan, _ := json.Marshal(map[string]any{"url": srv.url, "headers": map[string]string{"X-Api-Key": key, "SSO-Emp-Id": "bob"},
			"taskName": "order-ops", "idempotencyKey": idem, "approve": approve})
		ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, nt.node, filepath.Join(nt.dir, "v2-approve.mjs"), string(plan))
		cmd.Dir = nt.dir
		cmd.Env = baseEnv(t)
		out, err := cmd.Output()
		if err != nil {
			var stderr []byte
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = ee.Stderr
			}
			t.Fatalf("TS SDK v2 client: %v\n%s%s", err, out, stderr)
		}
		var o outcome
		if err := json.Unmarshal(out, &o); err != nil {
			t.Fatalf("client output %s: %v", out, err)
		}
		return o
	}

	no := client(false, "declined-1")
	if no.ProtocolVersion != "2026-07-28" {
		t.Errorf("negotiated %q, want 2026-07-28", no.ProtocolVersion)
	}
	if len(no.Asked) != 1 || !strings.Contains(no.Asked[0], "set_order_status") || !strings.Contains(no.Asked[0], "by alice") {
		t.Fatalf("bob was not asked about set_order_status: %+v", no)
	}
	if !no.IsError || !strings.HasPrefix(no.Text, "APPROVAL_REQUIRED") || no.Result.RunID != "" {
		t.Fatalf("declined: %+v; want APPROVAL_REQUIRED and no run", no)
	}
	if got := status(); got != before {
		t.Fatalf("order A1002 changed to %s though bob declined", got)
	}

	yes := client(true, "approved-1")
	if len(yes.Asked) != 1 || yes.IsError || yes.Result.RunID == "" {
		t.Fatalf("approved: %+v; want one question and a run", yes)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		var shown struct {
			Run struct {
				Status string `json:"status"`
			} `json:"run"`
			Executions []struct {
				Status, ErrorCode string
			} `json:"executions"`
		}
		json.Unmarshal([]byte(duet(t, env, "run", "show", yes.Result.RunID, "--as", "bob", "--json")), &shown)
		if len(shown.Executions) == 1 && shown.Executions[0].Status != "queued" && shown.Executions[0].Status != "running" && shown.Executions[0].Status != "" {
			if shown.Executions[0].Status != "passed" {
				t.Fatalf("bob's approved run: %+v", shown)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run did not finish: %+v", shown)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if got := status(); got != "cancelled" {
		t.Fatalf("order A1002 is %s after the approved run, want cancelled", got)
	}
	if out := duet(t, env, "case", "approvals", "--as", "bob"); strings.Contains(out, "needs approval") {
		t.Errorf("the approval over MCP was not recorded:\n%s", out)
	}
	// Approved: the next start asks nothing.
	if again := client(true, "approved-2"); len(again.Asked) != 0 || again.IsError {
		t.Errorf("asked again after approving: %+v", again)
	}
}
