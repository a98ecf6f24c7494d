package agent_test

import (
	"context"
	"strings"
	"testing"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/agent"
	"github.com/duet-test/duet/internal/compiler"
)

// TestFormatExample: the example in the format reference the model reads
// compiles.
func TestFormatExample(t *testing.T) {
	t.Parallel()
	_, ex, ok := strings.Cut(agent.Format, "## Example\n")
	if !ok {
		t.Fatal("the format reference has no example")
	}
	var src strings.Builder
	for _, line := range strings.Split(ex, "\n") {
		src.WriteString(strings.TrimPrefix(line, "    ") + "\n")
	}
	servers := []*duet.MCPServerAsset{{ServerKey: "mcp_orders_0badcafe", Name: "orders", Tools: []*duet.MCPToolAsset{{Name: "query_order",
		InputSchema: []byte(`{"type":"object","properties":{"orderId":{"type":"string"}},"required":["orderId"],"additionalProperties":false}`)}}}}
	task := &duet.Task{ID: "task_1", Name: "shop", BaseURL: "http://127.0.0.1:8080"}
	c, err := compiler.CompileCase(t.Context(), []byte(src.String()), task, compiler.Options{Servers: agent.ServerResolver(servers)})
	if err != nil {
		t.Fatalf("the example does not compile: %v\n%s", err, src.String())
	}
	if len(c.Steps) != 5 || c.Steps[2].MCP.ServerKey != "mcp_orders_0badcafe" {
		t.Fatalf("got %+v", c.Steps)
	}
}

func TestServerResolver(t *testing.T) {
	t.Parallel()
	r := agent.ServerResolver([]*duet.MCPServerAsset{{ServerKey: "mcp_orders_0badcafe", Name: "orders", Tools: []*duet.MCPToolAsset{{Name: "query_order"}}}})
	ctx := context.Background()
	if key, err := r.ResolveServer(ctx, "orders"); err != nil || key != "mcp_orders_0badcafe" {
		t.Errorf("by name: got %q, %v", key, err)
	}
	if _, err := r.ResolveServer(ctx, "billing"); duet.ErrorCode(err) != duet.CodeNotFound || !strings.Contains(err.Error(), "registered: orders") {
		t.Errorf("unknown: got %v", err)
	}
	if _, known, err := r.Tool(ctx, "mcp_orders_0badcafe", "nope"); !known || duet.ErrorCode(err) != duet.CodeMCPToolNotFound {
		t.Errorf("unknown tool: got known=%v %v", known, err)
	}
	if _, known, err := r.Tool(ctx, "mcp_other_00000000", "x"); known || err != nil {
		t.Errorf("unknown server: got known=%v %v", known, err)
	}
}

// TestPrompts renders the MCP prompts as alice and as bob.
func TestPrompts(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := t.Context()
	for _, a := range []*duet.Asset{
		{Kind: duet.AssetSkill, Name: "checkout", Owner: "alice", Description: "buy things", Body: "Put an item in the cart, then pay."},
		{Kind: duet.AssetRule, Name: "stable-selectors", Owner: "alice", Body: "Use ids, never nth-child."},
		{Kind: duet.AssetPrompt, Name: "smoke", Owner: "alice", Body: "Write a smoke test of the main page."},
	} {
		if _, err := f.db.SaveAsset(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	tasks := func(ctx context.Context, user, ref string) (*duet.Task, error) {
		if ref == f.task.ID || ref == f.task.Name {
			return f.db.FindTaskByID(ctx, user, f.task.ID)
		}
		return nil, duet.Errorf(duet.CodeNotFound, "task %q not found", ref)
	}
	book := map[string]*agent.PromptSpec{}
	for _, p := range agent.Prompts(f.deps(), tasks) {
		book[p.Name] = p
	}
	render := func(user, name string, args map[string]string) (string, error) {
		return book[name].Render(ctx, user, args)
	}
	tests := []struct {
		user, name string
		args       map[string]string
		want       []string
		code       duet.Code
	}{
		{"alice", agent.PromptGenerateCase, map[string]string{"task": "shop", "goal": "pay for an order", "skills": "checkout"},
			[]string{"# Duet case format", "Reply with the case only", "Rule alice/stable-selectors", "Skill alice/checkout — buy things",
				"- orders — registered in a test", "query_order:", `"orderId"`, "Task: shop", "Goal of the new case: pay for an order",
				"Source of order-api:", "/api/orders/A1001"}, ""},
		{"alice", agent.PromptSkill, map[string]string{"name": "checkout"}, []string{"Skill alice/checkout v1 — buy things", "then pay"}, ""},
		{"alice", agent.PromptRules, nil, []string{"Rule alice/stable-selectors v1", "never nth-child"}, ""},
		{"alice", agent.PromptPrompt, map[string]string{"name": "smoke"}, []string{"Write a smoke test of the main page."}, ""},
		{"alice", agent.PromptPrompt, map[string]string{"name": "smoke", "task": "shop"}, []string{"# Duet case format", "Write a smoke test", "Task: shop"}, ""},
		{"alice", agent.PromptMCPTools, nil, []string{"mcpCall: {server: NAME", "- orders", "set_order_status", "input schema"}, ""},
		{"bob", agent.PromptGenerateCase, map[string]string{"task": "shop"}, nil, duet.CodeNotFound},
		{"bob", agent.PromptSkill, map[string]string{"name": "checkout"}, nil, duet.CodeNotFound},
		{"bob", agent.PromptRules, nil, []string{"There are no team rules."}, ""},
		{"bob", agent.PromptMCPTools, nil, []string{"You have registered no MCP servers"}, ""},
		{"alice", agent.PromptGenerateCase, nil, nil, duet.CodeInvalidArgument},
		{"alice", agent.PromptSkill, nil, nil, duet.CodeInvalidArgument},
	}
	for _, tt := range tests {
		got, err := render(tt.user, tt.name, tt.args)
		if duet.ErrorCode(err) != tt.code {
			t.Errorf("%s as %s: got %v, want code %q", tt.name, tt.user, err, tt.code)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s as %s: want the text to contain %q; got:\n%s", tt.name, tt.user, w, got)
			}
		}
		for _, secret := range []string{canaryToken, canaryHeader} {
			if strings.Contains(got, secret) {
				t.Errorf("%s as %s: the prompt holds a credential", tt.name, tt.user)
			}
		}
	}
}
