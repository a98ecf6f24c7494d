// Command benchserver serves one tool equivalent to Duet's get_test_task
// (same arguments, same result shape: a text block and structuredContent)
// over Streamable HTTP with no governance, as a point of comparison:
//
//	benchserver -kind gosdk   bare go-sdk server (stateless, JSON replies, raw Server.AddTool)
//	benchserver -kind mcpgo   bare mark3labs/mcp-go server (stateless, JSON replies)
//	benchserver -kind floor   hand-written net/http JSON-RPC: the floor
//
// It prints "listening ADDR" on stdout once it accepts connections. With
// -stdio it serves the same tool over stdio instead (newline-delimited
// JSON-RPC on stdin/stdout): go-sdk's StdioTransport, mcp-go's ServeStdio,
// and for the floor a hand-written loop.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	mcpgoserver "github.com/mark3labs/mcp-go/server"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const inputSchema = `{"type":"object","properties":{"taskId":{"type":"string","minLength":1,"description":"the task's id"}},"required":["taskId"],"additionalProperties":false}`

type task struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Description string   `json:"description"`
	BaseURL     string   `json:"baseUrl"`
	Owner       string   `json:"owner"`
	SharedWith  []string `json:"sharedWith"`
	CreatedAt   string   `json:"createdAt"`
	UpdatedAt   string   `json:"updatedAt"`
}

type getTaskOut struct {
	Task      task `json:"task"`
	CaseCount int  `json:"caseCount"`
}

func lookup(id string) (getTaskOut, string) {
	out := getTaskOut{Task: task{ID: id, Name: "api-smoke", Description: "Smoke tests of the sample shop's JSON API.",
		BaseURL: "http://127.0.0.1:8431", Owner: "alice", SharedWith: []string{},
		CreatedAt: "2026-11-30T03:15:14.43652Z", UpdatedAt: "2026-11-30T03:15:14.43652Z"}, CaseCount: 2}
	text := fmt.Sprintf("Task %s: %s\n%s\nBase URL: %s\nOwner: %s\nCases: %d", id, out.Task.Name, out.Task.Description, out.Task.BaseURL, out.Task.Owner, out.CaseCount)
	return out, text
}

func main() {
	kind := flag.String("kind", "floor", "gosdk, mcpgo or floor")
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	stdio := flag.Bool("stdio", false, "serve over stdio instead of HTTP")
	flag.Parse()
	if *stdio {
		serveStdio(*kind)
		return
	}
	var h http.Handler
	switch *kind {
	case "gosdk":
		h = goSDK()
	case "mcpgo":
		h = mcpGo()
	case "floor":
		h = http.HandlerFunc(floor)
	default:
		log.Fatalf("unknown kind %q", *kind)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Fprintf(os.Stdout, "listening %s\n", ln.Addr())
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	log.Fatal(http.Serve(ln, mux))
}

func serveStdio(kind string) {
	var err error
	switch kind {
	case "gosdk":
		err = goSDKServer().Run(context.Background(), &mcp.StdioTransport{})
	case "mcpgo":
		err = mcpgoserver.ServeStdio(mcpGoServer())
	case "floor":
		err = floorStdio(os.Stdin, os.Stdout)
	default:
		log.Fatalf("unknown kind %q", kind)
	}
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, context.Canceled) {
		log.Fatal(err)
	}
}

// floorStdio answers newline-delimited JSON-RPC: initialize, the
// notification after it, and tools/call — decode, look up, encode.
func floorStdio(in io.Reader, out io.Writer) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	w := bufio.NewWriter(out)
	enc := json.NewEncoder(w)
	for sc.Scan() {
		var req floorRequest
		if json.Unmarshal(sc.Bytes(), &req) != nil {
			continue
		}
		switch {
		case req.ID == nil:
			continue // a notification
		case req.Method == "initialize":
			enc.Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": map[string]any{
				"protocolVersion": "2025-11-25", "capabilities": map[string]any{"tools": map[string]any{}},
				"serverInfo": map[string]any{"name": "floor", "version": "1"}}})
		default:
			enc.Encode(floorReply(req))
		}
		if err := w.Flush(); err != nil {
			return err
		}
	}
	return sc.Err()
}

type floorRequest struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Name      string `json:"name"`
		Arguments struct {
			TaskID string `json:"taskId"`
		} `json:"arguments"`
	} `json:"params"`
}

func floorReply(req floorRequest) map[string]any {
	out, text := lookup(req.Params.Arguments.TaskID)
	return map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": map[string]any{
		"content": []map[string]any{{"type": "text", "text": text}}, "structuredContent": out}}
}

func goSDK() http.Handler {
	s := goSDKServer()
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
}

func goSDKServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "bench-gosdk", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "get_test_task", Description: "Get one test task by id.", InputSchema: json.RawMessage(inputSchema)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct {
				TaskID string `json:"taskId"`
			}
			json.Unmarshal(req.Params.Arguments, &in)
			out, text := lookup(in.TaskID)
			b, _ := json.Marshal(out)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, StructuredContent: json.RawMessage(b)}, nil
		})
	return s
}

func mcpGo() http.Handler {
	return mcpgoserver.NewStreamableHTTPServer(mcpGoServer(), mcpgoserver.WithStateLess(true), mcpgoserver.WithDisableStreaming(true))
}

func mcpGoServer() *mcpgoserver.MCPServer {
	s := mcpgoserver.NewMCPServer("bench-mcpgo", "1", mcpgoserver.WithToolCapabilities(false))
	s.AddTool(mcpgo.NewToolWithRawSchema("get_test_task", "Get one test task by id.", json.RawMessage(inputSchema)),
		func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			out, text := lookup(req.GetString("taskId", ""))
			return mcpgo.NewToolResultStructured(out, text), nil
		})
	return s
}

// floor answers a JSON-RPC tools/call with the same result and nothing else:
// decode, look up, encode.
func floor(w http.ResponseWriter, r *http.Request) {
	var req floorRequest
	if r.Method != http.MethodPost || json.NewDecoder(r.Body).Decode(&req) != nil || req.Method != "tools/call" {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(floorReply(req))
}
