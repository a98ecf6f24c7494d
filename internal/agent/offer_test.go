package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/duet-test/duet/internal/agent"
	"github.com/duet-test/duet/internal/llm"
	"github.com/duet-test/duet/internal/llm/llmtest"
)

// bigTools is how many tools the large server has (the review's server).
const bigTools = 1234

// startPlant starts an MCP server with bigTools read-only tools,
// metric_0001 to metric_1234, each reading one sensor. It records the
// tools called.
func startPlant(t *testing.T) (url string, called func() []string) {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "plant", Version: "1"}, nil)
	var mu sync.Mutex
	var calls []string
	schema := json.RawMessage(`{"type":"object","properties":{"unit":{"type":"string","description":"the unit to convert the value to; optional"}}}`)
	for i := 1; i <= bigTools; i++ {
		name := fmt.Sprintf("metric_%04d", i)
		s.AddTool(&mcp.Tool{Name: name, Description: fmt.Sprintf("Reads sensor %04d of the plant and returns its current value in SI units, with the time it was read.", i),
			InputSchema: schema, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
			func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				mu.Lock()
				calls = append(calls, req.Params.Name)
				mu.Unlock()
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(`{"sensor":%q,"value":21.5}`, req.Params.Name)}}}, nil
			})
	}
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(srv.Close)
	return srv.URL, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(calls)
	}
}

func toolNames(req llm.Request) []string {
	var names []string
	for _, tool := range req.Tools {
		names = append(names, tool.Function.Name)
	}
	return names
}

// TestBoundedToolOffer: with a registered server of 1,234 read-only tools,
// every request declares at most 128 tools within the size bound: Duet's
// own, the tools the goal names and find_tools; the instructions stay
// small too. find_tools finds a tool outside that set, which the next
// request declares and the model then calls: the server receives it.
func TestBoundedToolOffer(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	plantURL, called := startPlant(t)
	f.reg.register(t, "alice", "plant", plantURL, "", nil)
	if n := len(mustAssets(t, f.reg, "alice")[1].Tools); n != bigTools {
		t.Fatalf("the plant server lists %d tools, want %d", n, bigTools)
	}

	check := func(req llm.Request) []string {
		names := toolNames(req)
		size, _ := json.Marshal(req.Tools)
		body, _ := json.Marshal(req)
		t.Logf("request: %d tools, %d bytes of tool definitions, %d bytes in all (system prompt %d bytes)",
			len(names), len(size), len(body), len(req.Messages[0].Content))
		if len(names) > agent.DefaultMaxTools || len(size) > agent.DefaultMaxToolBytes {
			t.Errorf("request declares %d tools in %d bytes, want at most %d in %d", len(names), len(size), agent.DefaultMaxTools, agent.DefaultMaxToolBytes)
		}
		if len(req.Messages[0].Content) > 48<<10 {
			t.Errorf("system prompt: %d bytes, want it bounded", len(req.Messages[0].Content))
		}
		return names
	}
	srv := llmtest.New(t,
		llmtest.Func(func(req llm.Request) llmtest.Turn {
			names := check(req)
			for _, want := range []string{agent.ToolGetTask, agent.ToolSubmitCase, agent.ToolFindTools, "orders__query_order"} {
				if !slices.Contains(names, want) {
					t.Errorf("first request: %s not declared (tools %q)", want, names)
				}
			}
			if slices.Contains(names, "plant__metric_1177") {
				t.Errorf("first request: plant__metric_1177 declared, want it found with find_tools")
			}
			if sys := req.Messages[0].Content; !strings.Contains(sys, "find_tools") || !strings.Contains(sys, "- plant — registered in a test: 1234 tools") ||
				!strings.Contains(sys, "orders/set_order_status (changes data: NOT callable now") {
				t.Errorf("system prompt: want the servers with their tool counts, find_tools and the goal's server's write tool; got %s", sys[strings.Index(sys, "# Registered"):])
			}
			return llmtest.ToolCalls(llmtest.Call(agent.ToolFindTools, `{"query":"sensor 1177"}`))
		}),
		llmtest.Func(func(req llm.Request) llmtest.Turn {
			names := check(req)
			if got := lastToolResult(req, "call_1_0"); !strings.Contains(got, "- plant__metric_1177 (callable now; server plant, tool metric_1177): Reads sensor 1177") {
				t.Errorf("find_tools: got %s", got)
			}
			if !slices.Contains(names, "plant__metric_1177") {
				t.Errorf("second request: the found plant__metric_1177 is not declared (tools %q)", names)
			}
			return llmtest.ToolCalls(llmtest.Call("plant__metric_1177", `{}`))
		}),
		llmtest.Func(func(req llm.Request) llmtest.Turn {
			check(req)
			if got := lastToolResult(req, "call_2_0"); !strings.Contains(got, `"value":21.5`) {
				t.Errorf("plant__metric_1177: got %s", got)
			}
			return llmtest.ToolCalls(submit(goodCase))
		}),
	)
	_, err := newAgent(t, srv, f.deps(), agent.Options{}).Generate(t.Context(), agent.Request{User: "alice", Task: f.task,
		Goal: "the order page shows the status that orders/query_order returns"})
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	if got := called(); !slices.Equal(got, []string{"metric_1177"}) {
		t.Errorf("the plant server received calls of %q, want metric_1177", got)
	}
}

// TestToolOfferFitsAll: when every tool fits, every tool is declared and
// there is no find_tools.
func TestToolOfferFitsAll(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	srv := llmtest.New(t, llmtest.Func(func(req llm.Request) llmtest.Turn {
		if names := toolNames(req); slices.Contains(names, agent.ToolFindTools) || !slices.Contains(names, "orders__list_orders") {
			t.Errorf("tools: got %q, want every tool and no find_tools", names)
		}
		return llmtest.ToolCalls(submit(goodCase))
	}))
	if _, err := newAgent(t, srv, f.deps(), agent.Options{}).Generate(t.Context(), agent.Request{User: "alice", Task: f.task}); err != nil {
		t.Fatal(err)
	}
}
