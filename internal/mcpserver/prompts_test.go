package mcpserver_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/catalog"
	"github.com/duet-test/duet/internal/httpapi"
	"github.com/duet-test/duet/internal/mcpserver"
	"github.com/duet-test/duet/internal/sqlite"
)

func TestPrompts(t *testing.T) {
	t.Parallel()
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "duet.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	prompts := []*mcpserver.Prompt{{
		Name: "greet", Title: "Greet", Description: "says hello",
		Arguments: []mcpserver.PromptArgument{{Name: "task", Description: "a task", Required: true}, {Name: "goal"}},
		Get: func(_ context.Context, c duet.Caller, args map[string]string) (string, error) {
			switch args["task"] {
			case "missing":
				return "", duet.Errorf(duet.CodeNotFound, "task %q not found", args["task"])
			case "boom":
				return "", context.DeadlineExceeded
			}
			return "hello " + c.UserID + " about " + args["task"] + "/" + args["goal"], nil
		},
	}}
	s := mcpserver.New(catalog.New(db, catalog.Options{}), mcpserver.Options{Version: "test", Prompts: prompts, Codes: httpapi.Codes})
	srv := httptest.NewServer(asUser(s.HTTPHandler(mcpserver.HTTPOptions{})))
	defer srv.Close()

	cs := connectHTTP(t, srv.URL, "alice", nil)
	list, err := cs.ListPrompts(t.Context(), nil)
	if err != nil || len(list.Prompts) != 1 || list.Prompts[0].Name != "greet" || len(list.Prompts[0].Arguments) != 2 || !list.Prompts[0].Arguments[0].Required {
		t.Fatalf("prompts/list: got %+v, %v", list, err)
	}
	res, err := cs.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: "greet", Arguments: map[string]string{"task": "shop", "goal": "pay"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Messages) != 1 || res.Messages[0].Role != "user" || res.Messages[0].Content.(*mcp.TextContent).Text != "hello alice about shop/pay" {
		t.Fatalf("prompts/get: got %+v", res.Messages[0])
	}
	for args, want := range map[string]string{
		"":        "INVALID_ARGUMENT: prompt greet needs the argument task",
		"missing": `NOT_FOUND: task "missing" not found`,
		"boom":    "INTERNAL: internal error",
	} {
		_, err := cs.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: "greet", Arguments: map[string]string{"task": args}})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("task=%q: got %v, want %q", args, err, want)
		}
	}
	// Without a caller, prompts/get (like every method) is refused before
	// it runs.
	req, _ := http.NewRequest("POST", srv.URL, strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"prompts/get","params":{"name":"greet","arguments":{"task":"shop"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(b), `"UNAUTHENTICATED: no caller identity"`) || !strings.Contains(string(b), `"id":7`) {
		t.Errorf("no caller: got %d %s", resp.StatusCode, b)
	}
}
