package app_test

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/agent"
	"github.com/duet-test/duet/internal/app"
	"github.com/duet-test/duet/internal/compiler"
	"github.com/duet-test/duet/internal/config"
)

// servers is a registry with one server and no credentials to hide.
type servers struct{}

func (servers) MCPAssets(_ context.Context, user string) ([]*duet.MCPServerAsset, error) {
	if user != "alice" {
		return nil, nil
	}
	return []*duet.MCPServerAsset{{ServerKey: "mcp_orders_0badcafe", Name: "orders", Tools: []*duet.MCPToolAsset{
		{Name: "query_order", Description: "Read one order.", InputSchema: []byte(`{"type":"object","properties":{"orderId":{"type":"string"}}}`)}}}}, nil
}

func openApp(t *testing.T) *app.App {
	t.Helper()
	env := map[string]string{"DUET_HOME": t.TempDir(), "DUET_LOG_LEVEL": "error"}
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.Open(t.Context(), cfg, app.Options{Stderr: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	return a
}

// stdio connects an MCP client to the app's server over `duet mcp`'s stdio
// transport, as user.
func stdio(t *testing.T, a *app.App, user string) *mcp.ClientSession {
	t.Helper()
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		a.MCP.ServeStdio(ctx, duet.Caller{UserID: user}, sr, sw)
	}()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := c.Connect(t.Context(), &mcp.IOTransport{Reader: cr, Writer: cw}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); cancel(); cw.Close(); sw.Close(); <-done })
	return cs
}

// TestMCPPrompts: Duet's MCP server offers the case-generation prompts,
// rendered for the caller of the transport, with MCP servers wired after
// Open.
func TestMCPPrompts(t *testing.T) {
	t.Parallel()
	a := openApp(t)
	a.Agent.Servers = servers{}
	suite, err := compiler.CompileSuite(t.Context(), []byte("task: {name: shop, baseURL: 'http://127.0.0.1:9'}\ncases: [{key: smoke, title: smoke, steps: [{http: GET /}]}]\n"), "", compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Store.ApplySuite(t.Context(), "alice", suite); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Store.SaveAsset(t.Context(), &duet.Asset{Kind: duet.AssetRule, Name: "ids", Owner: "alice", Body: "Select by id."}); err != nil {
		t.Fatal(err)
	}

	cs := stdio(t, a, "alice")
	list, err := cs.ListPrompts(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range list.Prompts {
		names = append(names, p.Name)
	}
	if got, want := strings.Join(names, " "), "generate_test_case mcp_tools prompt rules skill"; got != want {
		t.Fatalf("prompts: got %s, want %s", got, want)
	}
	res, err := cs.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: agent.PromptGenerateCase, Arguments: map[string]string{"task": "shop", "goal": "the home page loads"}})
	if err != nil {
		t.Fatal(err)
	}
	text := res.Messages[0].Content.(*mcp.TextContent).Text
	for _, want := range []string{"# Duet case format", "Rule alice/ids", "- orders: tools query_order", "Task: shop", "Goal of the new case: the home page loads", "Source of smoke:"} {
		if !strings.Contains(text, want) {
			t.Errorf("generate_test_case: want %q in:\n%s", want, text)
		}
	}
	// Bob sees none of alice's task.
	if _, err := stdio(t, a, "bob").GetPrompt(t.Context(), &mcp.GetPromptParams{Name: agent.PromptGenerateCase, Arguments: map[string]string{"task": "shop"}}); err == nil || !strings.Contains(err.Error(), "NOT_FOUND") {
		t.Errorf("bob: got %v, want NOT_FOUND", err)
	}
}

func TestNewAgentNotConfigured(t *testing.T) {
	t.Parallel()
	a := openApp(t)
	_, _, err := a.NewAgent(func(string) string { return "" }, agent.Options{})
	if duet.ErrorCode(err) != duet.CodeLLMNotConfigured {
		t.Fatalf("got %v, want LLM_NOT_CONFIGURED", err)
	}
}
