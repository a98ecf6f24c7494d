package webui_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/app/apptest"
	"github.com/duet-test/duet/internal/catalog"
	"github.com/duet-test/duet/internal/mcpclient"
	"github.com/duet-test/duet/internal/sample"
)

// TestSampleServerChangeFlagsCase: the team behind the sample order server
// changes query_order (it now requires a region) while Duet holds a
// session to it. The server's tools/list_changed notification makes Duet
// sync the catalog again; the case calling query_order is flagged broken by
// a dependency change before it runs again (no run exists), and the console
// (task and case pages) and get_test_task say so. The case on list_orders,
// which did not change, has no alert.
func TestSampleServerChangeFlagsCase(t *testing.T) {
	t.Parallel()
	srv := sample.NewOrderServer(sample.NewOrders())
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(hs.Close) // after Duet closed its session (cleanups run last first)
	e := apptest.New(t, nil)
	reg, err := e.App.MCPClient.Register(t.Context(), mcpclient.Registration{Owner: "alice", Name: "orders", URL: hs.URL})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.App.MCPClient.Sync(t.Context(), "alice", "orders"); err != nil {
		t.Fatal(err)
	}
	alice := signIn(t, e, "alice")
	suite := "task:\n  name: orders\n  baseURL: http://127.0.0.1:9\ncases:\n" +
		"  - key: one\n    title: one order\n    steps:\n      - mcpCall: {server: orders, tool: " + sample.ToolQueryOrder + ", input: {orderId: A1001}}\n" +
		"  - key: list\n    title: the list\n    steps:\n      - mcpCall: {server: orders, tool: " + sample.ToolListOrders + ", input: {limit: 2}}\n"
	status, body, resp := alice.post("/tasks/apply", url.Values{"source": {suite}})
	if status != http.StatusSeeOther {
		t.Fatalf("apply: %d %.1000s", status, body)
	}
	taskPath := strings.Split(resp.Header.Get("Location"), "?")[0]
	taskID := strings.TrimPrefix(taskPath, "/tasks/")
	// A call opens the session the notification comes on.
	if _, err := e.App.MCPClient.Invoke(t.Context(), duet.InvokeRequest{Executor: "alice", ServerKey: reg.ServerKey, Tool: sample.ToolQueryOrder,
		Arguments: map[string]any{"orderId": "A1001"}, Source: duet.SourceCLI}); err != nil {
		t.Fatal(err)
	}

	// The other team's change: query_order now requires a region.
	srv.AddTool(&mcp.Tool{Name: sample.ToolQueryOrder, Description: "Read one order of one region.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"orderId":{"type":"string"},"region":{"type":"string","enum":["eu","us"]}},"required":["orderId","region"]}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "{}"}}}, nil
		})
	// Wait for the flag (a bound for a broken build only, not a timing
	// claim: it takes well under a second).
	giveUp := time.After(2 * time.Minute)
	var alerts []*duet.ContractAlert
	for len(alerts) == 0 {
		select {
		case <-giveUp:
			t.Fatal("the tools/list_changed notification flagged nothing")
		case <-time.After(50 * time.Millisecond):
		}
		if alerts, err = e.App.Store.FindContractAlerts(t.Context(), "alice", taskID); err != nil {
			t.Fatal(err)
		}
	}
	if len(alerts) != 1 || !alerts[0].Broken || alerts[0].CaseKey != "one" || !strings.Contains(strings.Join(alerts[0].Problems, ";"), `now requires argument "region"`) {
		t.Fatalf("alerts: %+v", alerts)
	}
	if runs, _, err := e.App.Store.FindRuns(t.Context(), duet.RunFilter{Viewer: "alice", TaskID: taskID, Limit: 10}); err != nil || len(runs) != 0 {
		t.Fatalf("runs: %v %v (the flag comes before any run)", runs, err)
	}
	_, body, _ = alice.get(taskPath)
	if !strings.Contains(body, `id="dependency-alerts"`) || !strings.Contains(body, "Broken by a dependency change") ||
		!strings.Contains(body, "now requires argument &#34;region&#34;") || strings.Contains(body, sample.ToolListOrders+"</") {
		t.Fatalf("the task page's alerts: %.4000s", body)
	}
	_, body, _ = alice.get("/cases/" + alerts[0].CaseID)
	if !strings.Contains(body, `id="case-alert"`) || !strings.Contains(body, sample.ToolQueryOrder) {
		t.Fatalf("the case page's alert: %.3000s", body)
	}
	res, err := e.App.Catalog.Call(t.Context(), catalog.Request{Caller: duet.Caller{UserID: "alice", Source: duet.SourceMCP},
		Tool: catalog.ToolGetTask, Args: json.RawMessage(`{"taskId":"` + taskID + `"}`)})
	if err != nil || res.IsError {
		t.Fatal(res, err)
	}
	var got catalog.GetTaskOut
	if err := json.Unmarshal(res.Structured, &got); err != nil || len(got.DependencyAlerts) != 1 || got.DependencyAlerts[0].Tool != sample.ToolQueryOrder {
		t.Fatalf("get_test_task: %+v %v", got.DependencyAlerts, err)
	}
}
