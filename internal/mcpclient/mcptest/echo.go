package mcptest

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Echoed is what the tools of [EchoServer] answer with: the credentials a
// request carried — the token of its Authorization header (without the
// scheme, which would make it look like a secret anyway), its X-Api-Key
// and its DPoP proof — joined by spaces.
func Echoed(r *mcp.CallToolRequest) string {
	h := r.Extra.Header
	_, tok, _ := strings.Cut(h.Get("Authorization"), " ")
	return strings.Join([]string{tok, h.Get("X-Api-Key"), h.Get("Dpop")}, " ")
}

// EchoServer returns a go-sdk MCP server whose tools give back the
// credentials their request carried (Echoed) in every place a server can
// put them, under innocent names:
//
//   - echo {} → a log message and a progress notification quoting them,
//     then text content, a text with characters JSON escapes (quotes,
//     <, &, a newline), structuredContent nested two levels deep (in a
//     value, in an array, as an object key) — annotated read-only;
//   - fails {} → an isError result quoting them;
//   - rejects {} → a JSON-RPC error whose message quotes them.
func EchoServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "echo", Version: "1.0.0"}, nil)
	obj := json.RawMessage(`{"type":"object"}`)
	s.AddTool(&mcp.Tool{Name: "echo", InputSchema: obj, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			e := Echoed(r)
			//lint:ignore SA1019 servers still log during the deprecation window; what they log must not leak either
			_ = r.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Logger: "echo", Data: "you called with " + e})
			_ = r.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: "echo", Progress: 1, Message: "called with " + e})
			return &mcp.CallToolResult{
				Content: []mcp.Content{
					&mcp.TextContent{Text: "you called with " + e},
					&mcp.TextContent{Text: "<b>\"quoted\" & kept</b>\n" + e},
				},
				StructuredContent: map[string]any{
					"outer":   map[string]any{"memo": "seen " + e, "list": []any{e, map[string]any{"again": e}}},
					"by " + e: true,
					"plain":   "nothing secret here",
				},
			}, nil
		})
	s.AddTool(&mcp.Tool{Name: "fails", InputSchema: obj}, func(_ context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "refused the caller " + Echoed(r)}}}, nil
	})
	s.AddTool(&mcp.Tool{Name: "rejects", InputSchema: obj}, func(_ context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, &jsonrpc.Error{Code: -32001, Message: "unknown caller " + Echoed(r)}
	})
	return s
}
