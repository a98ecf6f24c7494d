package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/audit"
	"github.com/duet-test/duet/internal/auth"
	"github.com/duet-test/duet/internal/catalog"
	"github.com/duet-test/duet/internal/compiler"
	"github.com/duet-test/duet/internal/httpapi"
	"github.com/duet-test/duet/internal/mcpserver"
	"github.com/duet-test/duet/internal/sqlite"
)

// BenchmarkToolsCall measures get_test_task, in one run:
//
//	governed-http      the product path: gateway auth, Host check, caps, validation,
//	                   audit to SQLite, over the fast path for plain tools/call
//	governed-http-sdk  the same, with every request through the go-sdk handler
//	bare-http          the go-sdk handler and the same store reads, no governance
//	in-process         catalog.Call alone (governance + tool), no protocol
//	in-process-bare    the same store reads and encoding, no governance
//
// governed-http-sdk / bare-http and in-process / in-process-bare are the cost
// of governance per call on an equal footing.
//
//	go test -run x -bench ToolsCall -benchtime 3s ./internal/httpapi/
func BenchmarkToolsCall(b *testing.B) {
	db, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "duet.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	s, _ := compiler.CompileSuite(context.Background(), []byte("task: {name: shop, description: d}\ncases: [{key: a, title: a, steps: [{assert: 'true'}]}]\n"), "", compiler.Options{})
	res, err := db.ApplySuite(context.Background(), "alice", s)
	if err != nil {
		b.Fatal(err)
	}
	taskID := res.Task.ID

	aw := audit.NewWriter(db, 0, nil)
	defer aw.Close()
	cat := catalog.New(db, catalog.Options{Auditor: aw, Limits: catalog.Limits{MaxConcurrent: 1024, MaxPerCaller: 1024}})
	mcpSrv := mcpserver.New(cat, mcpserver.Options{Codes: httpapi.Codes})
	governed := httptest.NewServer(httpapi.New(httpapi.Options{Catalog: cat, MCP: mcpSrv, Auth: auth.New(db, []string{key}, "")}))
	defer governed.Close()
	governedSDK := httptest.NewServer(httpapi.New(httpapi.Options{Catalog: cat, MCP: mcpSrv, Auth: auth.New(db, []string{key}, ""), NoFastPath: true}))
	defer governedSDK.Close()

	bare := mcp.NewServer(&mcp.Implementation{Name: "bare", Version: "1"}, nil)
	tool, _ := cat.Tool(catalog.ToolGetTask)
	bareTool := func(ctx context.Context, args json.RawMessage) (*mcp.CallToolResult, error) {
		var in catalog.GetTaskIn
		json.Unmarshal(args, &in)
		// The same store reads as get_test_task: the task, its case count,
		// its latest run.
		t, err := db.FindTaskByID(ctx, "alice", in.TaskID)
		if err != nil {
			return nil, err
		}
		n, err := db.CountCases(ctx, t.ID)
		if err != nil {
			return nil, err
		}
		if _, _, err := db.FindRuns(ctx, duet.RunFilter{Viewer: "alice", TaskID: t.ID, Limit: 1}); err != nil {
			return nil, err
		}
		out := catalog.GetTaskOut{CaseCount: n, Task: catalog.TaskView{ID: t.ID, Name: t.Name, Description: t.Description, Owner: t.Owner, SharedWith: t.SharedWith}}
		b, _ := json.Marshal(out)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: out.Text()}}, StructuredContent: json.RawMessage(b)}, nil
	}
	bare.AddTool(mcpserver.SDKTool(tool), func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return bareTool(ctx, req.Params.Arguments)
	})
	bareSrv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return bare }, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}))
	defer bareSrv.Close()

	body := []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_test_task","arguments":{"taskId":%q}}}`, taskID))
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	do := func(b *testing.B, url string) {
		req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		req.Header.Set("X-Api-Key", key)
		req.Header.Set("SSO-Emp-Id", "alice")
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !bytes.Contains(out, []byte(taskID)) || bytes.Contains(out, []byte(`"isError":true`)) {
			b.Fatalf("%d %s", resp.StatusCode, out)
		}
	}
	for _, c := range []struct {
		name string
		url  string
	}{{"governed-http", governed.URL + "/mcp/http"}, {"governed-http-sdk", governedSDK.URL + "/mcp/http"}, {"bare-http", bareSrv.URL}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetParallelism(8)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					do(b, c.url)
				}
			})
		})
	}
	b.Run("in-process", func(b *testing.B) {
		args := json.RawMessage(fmt.Sprintf(`{"taskId":%q}`, taskID))
		caller := duet.Caller{UserID: "alice", Source: duet.SourceMCP, TraceID: "t"}
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				r, _ := cat.Call(context.Background(), catalog.Request{Caller: caller, Tool: catalog.ToolGetTask, Args: args})
				if r.IsError {
					b.Fatal(r.Text)
				}
			}
		})
	})
	b.Run("in-process-bare", func(b *testing.B) {
		args := json.RawMessage(fmt.Sprintf(`{"taskId":%q}`, taskID))
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := bareTool(context.Background(), args); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
}
