package cli_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/duet-test/duet/internal/api"
)

// setTool adds (or replaces) a tool of srv with the input schema given.
func setTool(srv *mcp.Server, name, inputSchema string) {
	srv.AddTool(&mcp.Tool{Name: name, InputSchema: json.RawMessage(inputSchema)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "{}"}}, StructuredContent: map[string]any{"ok": true}}, nil
	})
}

// TestContractAlerts: another team's server (the official go-sdk) changes
// its tools under two cases. After a sync, the case whose fixed value an
// enum no longer allows is broken by a dependency change, and the case
// whose tool gained an optional argument is marked changed, with the
// difference — before either runs again; duet task check exits 1. A third
// case, on a tool that did not change, has no alert.
func TestContractAlerts(t *testing.T) {
	t.Parallel()
	srv := mcp.NewServer(&mcp.Implementation{Name: "orders", Version: "1"}, nil)
	setTool(srv, "query_order", `{"type":"object","properties":{"orderId":{"type":"string"},"status":{"type":"string","enum":["paid","shipped"]}},"required":["orderId"]}`)
	setTool(srv, "list_orders", `{"type":"object","properties":{"limit":{"type":"integer"}}}`)
	setTool(srv, "ping", `{"type":"object"}`)
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}))
	t.Cleanup(hs.Close)

	h := newHome(t)
	h.env["DUET_MCP_ALLOW_LOOPBACK"] = "true"
	h.must(0, "server", "add", "--name", "orders", "--url", hs.URL)
	h.apply(`
task: {name: shop}
cases:
  - key: paid
    title: a paid order
    steps:
      - mcpCall: {server: orders, tool: query_order, input: {orderId: A1001, status: paid}}
  - key: list
    title: the order list
    steps:
      - mcpCall: {server: orders, tool: list_orders, input: {limit: 2}}
  - key: ping
    title: ping
    steps:
      - mcpCall: {server: orders, tool: ping}
`)
	if out := h.must(0, "task", "check", "shop"); !strings.Contains(out, "no dependency changes") {
		t.Fatalf("check before any change: %s", out)
	}
	// Nothing changed: a sync flags nothing.
	h.must(0, "server", "sync", "orders")
	h.must(0, "task", "check", "shop")
	if out := h.must(0, "server", "diff", "orders"); !strings.Contains(out, "no sync has changed its catalog yet") {
		t.Fatalf("server diff before a change: %s", out)
	}

	// The other team drops the status "paid" and adds an optional filter.
	setTool(srv, "query_order", `{"type":"object","properties":{"orderId":{"type":"string"},"status":{"type":"string","enum":["shipped","delivered"]}},"required":["orderId"]}`)
	setTool(srv, "list_orders", `{"type":"object","properties":{"limit":{"type":"integer"},"status":{"type":"string"}}}`)
	h.must(0, "server", "sync", "orders")

	out := h.must(1, "task", "check", "shop")
	if !strings.Contains(out, "BROKEN by a dependency change  a paid order") || !strings.Contains(out, `option(s) paid removed`) ||
		!strings.Contains(out, `argument "status": the value the case passes ("paid") no longer fits`) {
		t.Fatalf("check after the change: %s", out)
	}
	if !strings.Contains(out, "dependency changed  the order list") || !strings.Contains(out, `argument "status" added`) || strings.Contains(out, "ping") {
		t.Fatalf("check after the change (compatible, unchanged): %s", out)
	}
	// duet server diff: the catalog against the one the sync replaced.
	out = h.must(0, "server", "diff", "orders")
	if !strings.Contains(out, `list_orders: argument "status" added`) || !strings.Contains(out, `query_order: argument "status": option(s) paid removed; argument "status": option(s) delivered added`) || strings.Contains(out, "ping") {
		t.Fatalf("server diff: %s", out)
	}
	var list api.AlertList
	json.Unmarshal([]byte(h.must(1, "task", "check", "shop", "--json")), &list)
	if list.Broken != 1 || len(list.Alerts) != 2 || !list.Alerts[0].Broken || list.Alerts[0].CaseKey != "paid" {
		t.Fatalf("alerts: %+v", list)
	}

	// The tool is removed: the list case is broken too.
	srv.RemoveTools("list_orders")
	h.must(0, "server", "sync", "orders")
	if out := h.must(0, "server", "diff", "orders"); !strings.Contains(out, "list_orders: tool removed") || strings.Contains(out, "query_order") {
		t.Fatalf("server diff after the removal: %s", out)
	}
	if out := h.must(0, "server", "diff", "orders", "--back", "2"); !strings.Contains(out, "list_orders: tool removed") || !strings.Contains(out, "query_order: ") {
		t.Fatalf("server diff two syncs back: %s", out)
	}
	h.must(1, "server", "diff", "orders", "--back", "3") // INVALID_ARGUMENT: two are kept
	json.Unmarshal([]byte(h.must(1, "task", "check", "shop", "--json")), &list)
	if list.Broken != 2 {
		t.Fatalf("after the tool's removal: %+v", list)
	}

	// The author fixes the paid case (a new version, compiled against the
	// new catalog): its alert is gone.
	h.apply(`
task: {name: shop}
cases:
  - key: paid
    title: a paid order
    steps:
      - mcpCall: {server: orders, tool: query_order, input: {orderId: A1001, status: shipped}}
  - key: list
    title: the order list
    steps:
      - mcpCall: {server: orders, tool: query_order, input: {orderId: A1002}}
  - key: ping
    title: ping
    steps:
      - mcpCall: {server: orders, tool: ping}
`)
	if out := h.must(0, "task", "check", "shop"); !strings.Contains(out, "no dependency changes") {
		t.Fatalf("after fixing the cases: %s", out)
	}
}
