//lint:file-ignore SA1019 the conformance suite exercises logging, deprecated in 2026-07-28 but still in the scenarios

package conformance_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/catalog"
	"github.com/duet-test/duet/internal/conformance"
	"github.com/duet-test/duet/internal/mcpserver"
	"github.com/duet-test/duet/internal/sqlite"
)

// setup mounts the fixtures the way duet serve --conformance-fixtures does
// and connects a go-sdk client over an in-memory transport (a session that
// can be asked things).
func setup(t *testing.T, copts *mcp.ClientOptions) (*catalog.Catalog, *mcp.ClientSession) {
	t.Helper()
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "duet.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	fx := conformance.New()
	cat := catalog.New(db, catalog.Options{Extra: fx.Tools})
	srv := mcpserver.New(cat, *fx.MCP)
	st, ct := mcp.NewInMemoryTransports()
	ctx := duet.NewContextWithCaller(t.Context(), duet.Caller{UserID: conformance.User, Source: duet.SourceMCP})
	ss, err := srv.SDK().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	// The suite's clients speak 2025-11-25: server-to-client requests and
	// session-wide log levels belong to that revision (2026-07-28 replaces
	// them with in-band input requests and per-request _meta).
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, copts).Connect(t.Context(), ct,
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cat, cs
}

func TestFixtures(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var logs []string
	cat, cs := setup(t, &mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			mu.Lock()
			logs = append(logs, r.Params.Data.(string))
			mu.Unlock()
		},
		ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"username": "ada", "email": "ada@example.com"}}, nil
		},
	})
	call := func(name string, args map[string]any) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return res
	}

	types := func(res *mcp.CallToolResult) string {
		var s []string
		for _, c := range res.Content {
			switch c.(type) {
			case *mcp.TextContent:
				s = append(s, "text")
			case *mcp.ImageContent:
				s = append(s, "image")
			case *mcp.AudioContent:
				s = append(s, "audio")
			case *mcp.EmbeddedResource:
				s = append(s, "resource")
			}
		}
		return strings.Join(s, ",")
	}
	for tool, want := range map[string]string{
		conformance.ToolSimpleText: "text", conformance.ToolImage: "image", conformance.ToolAudio: "audio",
		conformance.ToolEmbeddedResource: "resource", conformance.ToolMixed: "text,image,resource",
	} {
		if res := call(tool, nil); res.IsError || types(res) != want || res.StructuredContent == nil {
			t.Errorf("%s: content %s (isError %v), want %s with structuredContent", tool, types(res), res.IsError, want)
		}
	}
	if res := call(conformance.ToolError, nil); !res.IsError {
		t.Errorf("%s: not an error", conformance.ToolError)
	}

	if err := cs.SetLoggingLevel(t.Context(), &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	call(conformance.ToolLogging, nil)
	// Notifications are handled concurrently with the result: give the
	// last one a moment to arrive (a minute: a loaded machine's budget; the
	// wait ends with the third).
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		mu.Lock()
		n := len(logs)
		mu.Unlock()
		if n >= 3 || time.Now().After(deadline) {
			break
		}
	}
	mu.Lock()
	if len(logs) != 3 {
		t.Errorf("got %d log messages %q, want 3", len(logs), logs)
	}
	mu.Unlock()

	res := call(conformance.ToolElicitation, map[string]any{"message": "who are you?"})
	if res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "ada@example.com") {
		t.Errorf("elicitation: %+v", res.Content[0])
	}

	// Over any other transport (MCP-Lite, CLI) a media tool is its text
	// block, and a tool that talks back is refused.
	r, err := cat.Call(t.Context(), catalog.Request{Caller: duet.Caller{UserID: "x"}, Tool: conformance.ToolImage})
	if err != nil || r.IsError || r.Text != "a 1x1 red PNG image" {
		t.Errorf("image outside MCP: %+v %v", r, err)
	}
	r, err = cat.Call(t.Context(), catalog.Request{Caller: duet.Caller{UserID: "x"}, Tool: conformance.ToolElicitation, Args: []byte(`{"message":"x"}`)})
	if err != nil || !r.IsError || r.Code != duet.CodeUnavailable {
		t.Errorf("elicitation outside MCP: %+v %v", r, err)
	}

	comp, err := cs.Complete(t.Context(), &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: conformance.PromptWithArguments},
		Argument: mcp.CompleteParamsArgument{Name: "arg1", Value: "par"}})
	if err != nil || strings.Join(comp.Completion.Values, ",") != "paris,park,party" {
		t.Errorf("complete: %+v %v", comp, err)
	}
	tmpl, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "test://template/123/data"})
	if err != nil || !strings.Contains(tmpl.Contents[0].Text, `"id":"123"`) {
		t.Errorf("template: %+v %v", tmpl, err)
	}
}
