package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestSharedRunOverMCP drives the real binary as outside clients do: alice
// ran her task (shared with bob). Over Streamable HTTP, bob sees that run's
// statuses, timings and codes — in get_test_run, get_execution_result and
// the report resource — but not its outputs, variables or messages; alice
// sees everything. get_test_run pages with a cursor. A 50,000-character
// query is INVALID_ARGUMENT over both dialects, never INTERNAL, and logs no
// error.
func TestSharedRunOverMCP(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	srv := api(t)
	duet(t, home, "apply", "-f", suiteFile(t, srv.URL), "--as", "alice")
	out, errs, code := duet(t, home, "run", "orders-api", "--as", "alice", "--json")
	var run struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal([]byte(out), &run); err != nil || code != 1 {
		t.Fatalf("alice's run: exit %d %v %s %s", code, err, out, errs)
	}
	s := serve(t, home, []string{"DUET_GATEWAY_API_KEYS=" + gatewayKey})

	callTool := func(user, tool string, args map[string]any) map[string]any {
		t.Helper()
		_, _, resp := rpc(t, s.URL, gw(user), "tools/call", map[string]any{"name": tool, "arguments": args})
		return structured(t, resp)
	}
	for user, want := range map[string]string{"alice": "full", "bob": "restricted"} {
		r := callTool(user, "get_test_run", map[string]any{"runId": run.ID, "limit": 1})
		execs, _ := r["executions"].([]any)
		if r["disclosure"] != want || len(execs) != 1 || r["nextCursor"] == nil {
			t.Fatalf("get_test_run as %s: %v", user, r)
		}
		next := callTool(user, "get_test_run", map[string]any{"runId": run.ID, "limit": 1, "cursor": r["nextCursor"]})
		failed := next["executions"].([]any)[0].(map[string]any)
		if next["nextCursor"] != nil || failed["errorCode"] != "ASSERTION_FAILED" {
			t.Fatalf("second page as %s: %v", user, next)
		}
		shipped := strings.Contains(failed["errorMessage"].(string), "A2 should have shipped")
		x := callTool(user, "get_execution_result", map[string]any{"executionId": failed["executionId"]})
		b, _ := json.Marshal(x)
		paid := strings.Contains(string(b), `"status":"paid"`)
		if shipped != (want == "full") || paid != (want == "full") || x["disclosure"] != want {
			t.Errorf("%s's view (%s): message shown %v, output shown %v: %s", user, want, shipped, paid, b)
		}
	}

	// The report resource, as bob.
	client := mcp.NewClient(&mcp.Implementation{Name: "bob", Version: "1"}, nil)
	cs, err := client.Connect(ctxTimeout(t, 30*time.Second), &mcp.StreamableClientTransport{Endpoint: s.URL + "/mcp/http", HTTPClient: &http.Client{Transport: bearer{headers: gw("bob")}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.ReadResource(ctxTimeout(t, 30*time.Second), &mcp.ReadResourceParams{URI: "duet://runs/" + run.ID + "/report.json"})
	if err != nil {
		t.Fatal(err)
	}
	if text := res.Contents[0].Text; !strings.Contains(text, `"disclosure": "restricted"`) || strings.Contains(text, `"body"`) || strings.Contains(text, "should have shipped") {
		t.Errorf("bob's report resource:\n%.1500s", text)
	}

	// Oversized arguments are INVALID_ARGUMENT, and no error is logged.
	long := strings.Repeat("q", 50_000)
	if e, _ := callTool("alice", "list_test_tasks", map[string]any{"query": long})["error"].(map[string]any); e["code"] != "INVALID_ARGUMENT" {
		t.Errorf("a 50,000-character query over MCP: %v", e)
	}
	if code, resp := liteCall(t, s.URL, gw("alice"), "list_test_tasks", map[string]any{"query": long}, ""); !strings.Contains(toJSON(resp), "INVALID_ARGUMENT") {
		t.Errorf("a 50,000-character query over MCP-Lite: %d %v", code, resp)
	}
	s.Stop(t)
	if log := s.Stderr(); strings.Contains(log, "level=ERROR") {
		t.Errorf("bad input logged an error:\n%s", log)
	}
}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
