package agent_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/serverkey"
)

// registry is a small MCP client side for tests: per-user registrations of
// real MCP servers (URL plus credentials: a bearer token and extra
// headers), an archived catalog per server, and an Invoker that calls the
// tools over the go-sdk client as the executor. It records every call.
type registry struct {
	mu    sync.Mutex
	regs  map[string][]*registration // by user
	calls []duet.InvokeRequest
}

type registration struct {
	key, name, url string
	token          string
	headers        map[string]string
	tools          []*duet.MCPToolAsset
}

var (
	_ duet.Invoker        = (*registry)(nil)
	_ duet.MCPAssetLister = (*registry)(nil)
)

func newRegistry() *registry { return &registry{regs: map[string][]*registration{}} }

// credentials adds the registration's token and headers to every request.
type credentials struct {
	r    *registration
	base http.RoundTripper
}

func (c credentials) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	if c.r.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.r.token)
	}
	for k, v := range c.r.headers {
		req.Header.Set(k, v)
	}
	return c.base.RoundTrip(req)
}

func (r *registration) connect(ctx context.Context) (*mcp.ClientSession, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "duet-test", Version: "1"}, nil)
	return c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: r.url, MaxRetries: -1,
		HTTPClient: &http.Client{Transport: credentials{r: r, base: http.DefaultTransport}}}, nil)
}

// register registers the server at url for user under name and archives
// its catalog (initialize, tools/list).
func (g *registry) register(t *testing.T, user, name, url, token string, headers map[string]string) string {
	t.Helper()
	key, err := serverkey.Key(url)
	if err != nil {
		t.Fatal(err)
	}
	reg := &registration{key: key, name: name, url: url, token: token, headers: headers}
	cs, err := reg.connect(t.Context())
	if err != nil {
		t.Fatalf("connecting to %s: %v", url, err)
	}
	defer cs.Close()
	for tool, err := range cs.Tools(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		in, _ := json.Marshal(tool.InputSchema)
		out, _ := json.Marshal(tool.OutputSchema)
		var ann json.RawMessage
		if tool.Annotations != nil {
			ann, _ = json.Marshal(tool.Annotations)
		}
		reg.tools = append(reg.tools, &duet.MCPToolAsset{Name: tool.Name, Title: tool.Title, Description: tool.Description, InputSchema: in, OutputSchema: out, Annotations: ann})
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.regs[user] = append(g.regs[user], reg)
	return key
}

func (g *registry) MCPAssets(_ context.Context, user string) ([]*duet.MCPServerAsset, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []*duet.MCPServerAsset
	for _, r := range g.regs[user] {
		out = append(out, &duet.MCPServerAsset{ServerKey: r.key, Name: r.name, Description: "registered in a test", Tools: slices.Clone(r.tools)})
	}
	return out, nil
}

func (g *registry) Invoke(ctx context.Context, req duet.InvokeRequest) (*duet.ToolResult, error) {
	g.mu.Lock()
	g.calls = append(g.calls, req)
	var reg *registration
	for _, r := range g.regs[req.Executor] {
		if r.key == req.ServerKey {
			reg = r
		}
	}
	g.mu.Unlock()
	if reg == nil {
		return nil, duet.Errorf(duet.CodeMCPServerNotConfigured, "%s has not configured MCP server %s", req.Executor, req.ServerKey)
	}
	cs, err := reg.connect(ctx)
	if err != nil {
		return nil, duet.WrapError(duet.CodeMCPUnreachable, err, "cannot reach %s", reg.name)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: req.Tool, Arguments: req.Arguments})
	if err != nil {
		return nil, duet.WrapError(duet.CodeMCPToolError, err, "calling %s", req.Tool)
	}
	content, _ := json.Marshal(res.Content)
	tr := &duet.ToolResult{Content: content, IsError: res.IsError}
	if res.StructuredContent != nil {
		tr.StructuredContent, _ = json.Marshal(res.StructuredContent)
	}
	if res.IsError {
		return tr, duet.Errorf(duet.CodeMCPToolError, "%s", tr.Text())
	}
	return tr, nil
}

func (g *registry) Calls() []duet.InvokeRequest {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.calls)
}
