package sample

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/duet-test/duet"
)

const testToken = "test-token-not-a-secret"

// startOrderServer serves orders over MCP for the duration of the test and
// returns the /mcp URL.
func startOrderServer(t *testing.T, orders *Orders, token string, opts ...OrderServerOption) string {
	t.Helper()
	url, stop, err := StartOrderServer(context.Background(), "127.0.0.1:0", orders, token, opts...)
	if err != nil {
		t.Fatalf("StartOrderServer: got error %v, want nil", err)
	}
	t.Cleanup(stop)
	return url
}

// bearer adds "Authorization: Bearer token" to every request.
type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

// dial connects an SDK client to url, sending token when not empty.
func dial(t *testing.T, url, token string) (*mcp.ClientSession, error) {
	t.Helper()
	hc := &http.Client{Timeout: 30 * time.Second}
	if token != "" {
		hc.Transport = bearer{token: token, base: http.DefaultTransport}
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "sample-test", Version: "0.0.1"}, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc, MaxRetries: -1}, nil)
	if err != nil {
		return nil, err
	}
	// Registered after the server's stop, so it runs first.
	t.Cleanup(func() { _ = cs.Close() })
	return cs, nil
}

// connect is dial that fails the test on error.
func connect(t *testing.T, url, token string) *mcp.ClientSession {
	t.Helper()
	cs, err := dial(t, url, token)
	if err != nil {
		t.Fatalf("Connect(%s): got error %v, want nil", url, err)
	}
	return cs
}

// call calls a tool and decodes structuredContent into out.
func call(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any, out any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("CallTool(%s, %v): got error %v, want nil", tool, args, err)
	}
	if out != nil && res.StructuredContent != nil {
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			t.Fatalf("marshal structuredContent: %v", err)
		}
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("structuredContent %s: got decode error %v, want a %T", b, err, out)
		}
	}
	return res
}

// text joins the text contents of res.
func text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func mustGet(t *testing.T, o *Orders, id string) *Order {
	t.Helper()
	ord, err := o.Get(id)
	if err != nil {
		t.Fatalf("Get(%q): got error %v, want nil", id, err)
	}
	return &ord
}

func TestOrderServerListTools(t *testing.T) {
	t.Parallel()
	cs := connect(t, startOrderServer(t, NewOrders(), testToken), testToken)
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatalf("ListTools: got error %v, want nil", err)
	}
	tools := map[string]*mcp.Tool{}
	var names []string
	for _, tool := range res.Tools {
		tools[tool.Name] = tool
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	if diff := cmp.Diff([]string{ToolListOrders, ToolQueryOrder, ToolSetOrderStatus}, names); diff != "" {
		t.Fatalf("tool names (-want +got):\n%s", diff)
	}

	tests := []struct {
		name         string
		wantRequired []string
		wantInput    []string // input properties
		wantOutput   []string // output properties
		wantReadOnly bool
	}{
		{name: ToolQueryOrder, wantRequired: []string{"orderId"}, wantInput: []string{"orderId"},
			wantOutput: []string{"error", "order"}, wantReadOnly: true},
		{name: ToolSetOrderStatus, wantRequired: []string{"orderId", "status"}, wantInput: []string{"orderId", "status"},
			wantOutput: []string{"error", "order", "previousStatus"}},
		{name: ToolListOrders, wantRequired: nil, wantInput: []string{"cursor", "limit", "status"},
			wantOutput: []string{"error", "nextCursor", "orders"}, wantReadOnly: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tool := tools[tt.name]
			if tool.Description == "" || tool.Title == "" {
				t.Errorf("got description %q, title %q, want both set", tool.Description, tool.Title)
			}
			in := schemaOf(t, tool.InputSchema)
			if in.Type != "object" {
				t.Errorf("inputSchema.type: got %q, want object", in.Type)
			}
			if diff := cmp.Diff(tt.wantInput, in.propertyNames()); diff != "" {
				t.Errorf("inputSchema properties (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantRequired, in.Required); diff != "" {
				t.Errorf("inputSchema required (-want +got):\n%s", diff)
			}
			for name, p := range in.Properties {
				if p.Description == "" {
					t.Errorf("inputSchema property %s: got no description, want one", name)
				}
			}
			out := schemaOf(t, tool.OutputSchema)
			if diff := cmp.Diff(tt.wantOutput, out.propertyNames()); diff != "" {
				t.Errorf("outputSchema properties (-want +got):\n%s", diff)
			}
			if tool.Annotations == nil {
				t.Fatalf("annotations: got nil, want set")
			}
			if got := tool.Annotations.ReadOnlyHint; got != tt.wantReadOnly {
				t.Errorf("readOnlyHint: got %v, want %v", got, tt.wantReadOnly)
			}
			if ow := tool.Annotations.OpenWorldHint; ow == nil || *ow {
				t.Errorf("openWorldHint: got %v, want false", ow)
			}
		})
	}
}

// schema is the part of a JSON Schema the tests look at.
type schema struct {
	Type        any                `json:"type"` // a string or a list of strings
	Required    []string           `json:"required"`
	Properties  map[string]*schema `json:"properties"`
	Description string             `json:"description"`
}

func (s *schema) propertyNames() []string {
	var names []string
	for n := range s.Properties {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func schemaOf(t *testing.T, v any) *schema {
	t.Helper()
	if v == nil {
		t.Fatalf("schema: got nil, want one")
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal schema: %v", err)
	}
	var s schema
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("decode schema %s: %v", b, err)
	}
	return &s
}

func TestOrderServerReadTools(t *testing.T) {
	t.Parallel()
	orders := NewOrders()
	cs := connect(t, startOrderServer(t, orders, testToken), testToken)

	type listOut = ListOrdersOutput
	tests := []struct {
		name          string
		tool          string
		args          map[string]any
		wantIsError   bool
		wantText      string // substring of the text content
		wantQuery     *QueryOrderOutput
		wantListIDs   []string
		wantNext      bool
		wantErrorCode duet.Code
	}{
		{name: "query known order", tool: ToolQueryOrder, args: map[string]any{"orderId": "A1001"},
			wantQuery: &QueryOrderOutput{Order: mustGet(t, orders, "A1001")},
			wantText:  "Order A1001 for Alice Chen is paid: 3 items, total $67.97"},
		{name: "query unknown order", tool: ToolQueryOrder, args: map[string]any{"orderId": "A9999"},
			wantIsError: true, wantErrorCode: duet.CodeNotFound, wantText: `NOT_FOUND: order "A9999" not found`},
		{name: "query empty id", tool: ToolQueryOrder, args: map[string]any{"orderId": ""},
			wantIsError: true, wantErrorCode: duet.CodeInvalidArgument, wantText: "INVALID_ARGUMENT: orderId is required"},
		{name: "query without orderId", tool: ToolQueryOrder, args: map[string]any{},
			wantIsError: true, wantText: "orderId"},
		{name: "list all", tool: ToolListOrders, args: map[string]any{},
			wantListIDs: []string{"A1001", "A1002", "A1003", "A1004", "A1005"}, wantText: "5 orders:"},
		{name: "list by status", tool: ToolListOrders, args: map[string]any{"status": "shipped"},
			wantListIDs: []string{"A1003"}, wantText: "1 order:\n- A1003 Chloé Dubois: shipped, €88.90"},
		{name: "list first page", tool: ToolListOrders, args: map[string]any{"limit": 2},
			wantListIDs: []string{"A1001", "A1002"}, wantNext: true, wantText: "call list_orders again with cursor"},
		{name: "list invalid status", tool: ToolListOrders, args: map[string]any{"status": "lost"},
			wantIsError: true, wantErrorCode: duet.CodeInvalidArgument, wantText: `INVALID_ARGUMENT: invalid status "lost"`},
		{name: "list bad cursor", tool: ToolListOrders, args: map[string]any{"cursor": "nope!"},
			wantIsError: true, wantErrorCode: duet.CodeInvalidArgument, wantText: "INVALID_ARGUMENT: invalid cursor"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var q QueryOrderOutput
			var l listOut
			var out any = &q
			if tt.tool == ToolListOrders {
				out = &l
			}
			res := call(t, cs, tt.tool, tt.args, out)
			if res.IsError != tt.wantIsError {
				t.Fatalf("isError: got %v (text %q), want %v", res.IsError, text(res), tt.wantIsError)
			}
			if got := text(res); !strings.Contains(got, tt.wantText) {
				t.Errorf("text: got %q, want it to contain %q", got, tt.wantText)
			}
			if tt.wantErrorCode != "" {
				var te *ToolError = q.Error
				if tt.tool == ToolListOrders {
					te = l.Error
				}
				if te == nil || te.Code != tt.wantErrorCode || te.Message == "" {
					t.Errorf("structuredContent.error: got %+v, want code %s and a message", te, tt.wantErrorCode)
				}
				return
			}
			if tt.wantIsError {
				return // SDK schema validation: text only
			}
			if res.StructuredContent == nil {
				t.Fatalf("structuredContent: got nil, want set")
			}
			if tt.wantQuery != nil {
				if diff := cmp.Diff(*tt.wantQuery, q); diff != "" {
					t.Errorf("structuredContent (-want +got):\n%s", diff)
				}
			}
			if tt.tool == ToolListOrders {
				if diff := cmp.Diff(tt.wantListIDs, ids(l.Orders)); diff != "" {
					t.Errorf("orders (-want +got):\n%s", diff)
				}
				if (l.NextCursor != "") != tt.wantNext {
					t.Errorf("nextCursor: got %q, want one: %v", l.NextCursor, tt.wantNext)
				}
			}
		})
	}
}

func TestOrderServerListPagination(t *testing.T) {
	t.Parallel()
	cs := connect(t, startOrderServer(t, NewOrders(), testToken), testToken)
	var got []string
	args := map[string]any{"limit": 2}
	for range 10 {
		var out ListOrdersOutput
		if res := call(t, cs, ToolListOrders, args, &out); res.IsError {
			t.Fatalf("list_orders %v: got isError %q, want success", args, text(res))
		}
		got = append(got, ids(out.Orders)...)
		if out.NextCursor == "" {
			break
		}
		args = map[string]any{"limit": 2, "cursor": out.NextCursor}
	}
	if diff := cmp.Diff([]string{"A1001", "A1002", "A1003", "A1004", "A1005"}, got); diff != "" {
		t.Errorf("paged ids (-want +got):\n%s", diff)
	}
}

func TestOrderServerSetStatus(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		args         map[string]any
		wantCode     duet.Code
		wantText     string
		wantStatus   Status // of A1001 afterwards, through query_order
		wantPrevious Status
	}{
		{name: "paid to shipped", args: map[string]any{"orderId": "A1001", "status": "shipped"},
			wantText: "Order A1001 status changed from paid to shipped.", wantStatus: StatusShipped, wantPrevious: StatusPaid},
		{name: "same status", args: map[string]any{"orderId": "A1001", "status": "paid"},
			wantText: "Order A1001 is already paid; nothing changed.", wantStatus: StatusPaid, wantPrevious: StatusPaid},
		{name: "invalid status", args: map[string]any{"orderId": "A1001", "status": "lost"},
			wantCode: duet.CodeInvalidArgument, wantText: `INVALID_ARGUMENT: invalid status "lost": want one of pending, paid, shipped, delivered, cancelled`,
			wantStatus: StatusPaid},
		{name: "unknown order", args: map[string]any{"orderId": "A9999", "status": "paid"},
			wantCode: duet.CodeNotFound, wantText: `NOT_FOUND: order "A9999" not found`, wantStatus: StatusPaid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			orders := NewOrders()
			cs := connect(t, startOrderServer(t, orders, testToken), testToken)
			var out SetOrderStatusOutput
			res := call(t, cs, ToolSetOrderStatus, tt.args, &out)
			if res.IsError != (tt.wantCode != "") {
				t.Fatalf("isError: got %v (text %q), want %v", res.IsError, text(res), tt.wantCode != "")
			}
			if got := text(res); got != tt.wantText {
				t.Errorf("text: got %q, want %q", got, tt.wantText)
			}
			if tt.wantCode != "" {
				if out.Error == nil || out.Error.Code != tt.wantCode {
					t.Errorf("structuredContent.error: got %+v, want code %s", out.Error, tt.wantCode)
				}
			} else {
				if out.Order == nil || out.Order.Status != tt.wantStatus || out.PreviousStatus != tt.wantPrevious {
					t.Errorf("structuredContent: got %+v, want order status %s and previousStatus %s", out, tt.wantStatus, tt.wantPrevious)
				}
			}

			var q QueryOrderOutput
			call(t, cs, ToolQueryOrder, map[string]any{"orderId": "A1001"}, &q)
			if q.Order == nil || q.Order.Status != tt.wantStatus {
				t.Errorf("query_order after set_order_status: got %+v, want status %s", q.Order, tt.wantStatus)
			}
			if diff := cmp.Diff(mustGet(t, orders, "A1001"), q.Order); diff != "" {
				t.Errorf("query_order vs the shared book (-book +tool):\n%s", diff)
			}
		})
	}
}

func TestOrderServerAuth(t *testing.T) {
	t.Parallel()
	url := startOrderServer(t, NewOrders(), testToken)
	tests := []struct {
		name       string
		header     string // Authorization header; "" sends none
		wantStatus int
	}{
		{name: "missing token", header: "", wantStatus: http.StatusUnauthorized},
		{name: "wrong token", header: "Bearer wrong", wantStatus: http.StatusUnauthorized},
		{name: "token prefix", header: "Bearer " + testToken[:5], wantStatus: http.StatusUnauthorized},
		{name: "not bearer", header: "Basic " + testToken, wantStatus: http.StatusUnauthorized},
		{name: "right token", header: "Bearer " + testToken, wantStatus: http.StatusOK},
		{name: "scheme is case-insensitive", header: "bearer " + testToken, wantStatus: http.StatusOK},
	}
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",` +
		`"capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(initialize))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if tt.header != "" {
				req.Header.Set("Authorization", tt.header)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("POST %s: got error %v, want a response", url, err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("status: got %d (%s), want %d", resp.StatusCode, body, tt.wantStatus)
			}
			wa := resp.Header.Get("WWW-Authenticate")
			if tt.wantStatus == http.StatusUnauthorized {
				if want := `Bearer scope="orders"`; wa != want {
					t.Errorf("WWW-Authenticate: got %q, want %q", wa, want)
				}
			} else if !strings.Contains(string(body), `"serverInfo"`) {
				t.Errorf("body: got %q, want an initialize result", body)
			}
		})
	}

	t.Run("SDK client with wrong token", func(t *testing.T) {
		t.Parallel()
		_, err := dial(t, url, "wrong")
		if err == nil || !strings.Contains(err.Error(), "Unauthorized") {
			t.Errorf("Connect with a wrong token: got error %v, want one mentioning Unauthorized (401)", err)
		}
	})
	t.Run("SDK client without token", func(t *testing.T) {
		t.Parallel()
		_, err := dial(t, url, "")
		if err == nil || !strings.Contains(err.Error(), "Unauthorized") {
			t.Errorf("Connect without a token: got error %v, want one mentioning Unauthorized (401)", err)
		}
	})
}

func TestOrderServerTransports(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		token       string
		opts        []OrderServerOption
		path        string // replaces the trailing /mcp
		wantSession bool
	}{
		{name: "stateful", token: testToken, path: "/mcp", wantSession: true},
		{name: "stateful at root", token: testToken, path: "/", wantSession: true},
		{name: "stateless", token: testToken, opts: []OrderServerOption{WithStateless()}, path: "/mcp"},
		{name: "stateless JSON", token: testToken, opts: []OrderServerOption{WithStateless(), WithJSONResponse()}, path: "/mcp"},
		{name: "stateful JSON", token: testToken, opts: []OrderServerOption{WithJSONResponse()}, path: "/mcp", wantSession: true},
		{name: "no token configured", token: "", path: "/mcp", wantSession: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			url := strings.TrimSuffix(startOrderServer(t, NewOrders(), tt.token, tt.opts...), "/mcp") + tt.path
			cs := connect(t, url, tt.token)
			if got := cs.ID() != ""; got != tt.wantSession {
				t.Errorf("session id %q: got session %v, want %v", cs.ID(), got, tt.wantSession)
			}
			var q QueryOrderOutput
			res := call(t, cs, ToolQueryOrder, map[string]any{"orderId": "A1002"}, &q)
			if res.IsError || q.Order == nil || q.Order.Status != StatusPending {
				t.Errorf("query_order A1002: got isError %v, order %+v, want the pending order", res.IsError, q.Order)
			}
		})
	}
}

func TestOrderServerUnknownPath(t *testing.T) {
	t.Parallel()
	url := strings.TrimSuffix(startOrderServer(t, NewOrders(), ""), "/mcp") + "/elsewhere"
	resp, err := http.Post(url, "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("status: got %d, want 404", resp.StatusCode)
	}
}

func TestRunOrderServer(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- RunOrderServer(ctx, "127.0.0.1:0", testToken, pw)
		pw.Close()
	}()

	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the listening line: got error %v, want a line", err)
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	m := regexp.MustCompile(`^order MCP server listening on (http://127\.0\.0\.1:\d+/mcp)\n$`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("output: got %q, want \"order MCP server listening on http://127.0.0.1:PORT/mcp\"", line)
	}

	cs := connect(t, m[1], testToken)
	var q QueryOrderOutput
	if res := call(t, cs, ToolQueryOrder, map[string]any{"orderId": "A1004"}, &q); res.IsError || q.Order.Status != StatusDelivered {
		t.Errorf("query_order A1004: got isError %v, order %+v, want the delivered order", res.IsError, q.Order)
	}
	_ = cs.Close()

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("RunOrderServer after cancel: got %v, want nil", err)
		}
	case <-time.After(2 * shutdownTimeout):
		t.Fatalf("RunOrderServer: still running %v after cancel, want it to return", 2*shutdownTimeout)
	}
	if _, err := http.Post(m[1], "application/json", strings.NewReader(`{}`)); err == nil {
		t.Errorf("POST after shutdown: got a response, want a connection error")
	}
}

func TestStopWithOpenSession(t *testing.T) {
	t.Parallel()
	url, stop, err := StartOrderServer(context.Background(), "127.0.0.1:0", NewOrders(), testToken)
	if err != nil {
		t.Fatalf("StartOrderServer: %v", err)
	}
	connect(t, url, testToken) // keeps its standalone SSE stream open
	start := time.Now()
	stop()
	stop() // idempotent
	if d := time.Since(start); d >= shutdownTimeout {
		t.Errorf("stop with an open session took %v, want well under %v", d, shutdownTimeout)
	}
}

func TestListenLoopback(t *testing.T) {
	t.Parallel()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { taken.Close() })
	busy := taken.Addr().String()
	tests := []struct {
		addr     string
		wantHost string
		wantCode duet.Code
		wantMsg  string
	}{
		{addr: "127.0.0.1:0", wantHost: "127.0.0.1"},
		{addr: ":0", wantHost: "127.0.0.1"},
		{addr: "", wantHost: "127.0.0.1"},
		{addr: "localhost:0", wantHost: "127.0.0.1"},
		{addr: "0.0.0.0:0", wantCode: duet.CodeInvalidArgument},
		{addr: "[::]:0", wantCode: duet.CodeInvalidArgument},
		{addr: "192.0.2.1:0", wantCode: duet.CodeInvalidArgument},
		{addr: "example.com:0", wantCode: duet.CodeInvalidArgument},
		{addr: "127.0.0.1", wantCode: duet.CodeInvalidArgument},
		{addr: busy, wantCode: duet.CodeUnavailable, wantMsg: "cannot listen on " + busy + ": the address is in use by another process"},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			t.Parallel()
			ln, err := listenLoopback(t.Context(), tt.addr)
			if code := duet.ErrorCode(err); code != tt.wantCode {
				t.Fatalf("listenLoopback(%q): got code %q (err %v), want %q", tt.addr, code, err, tt.wantCode)
			}
			if msg := duet.ErrorMessage(err); tt.wantMsg != "" && msg != tt.wantMsg {
				t.Errorf("listenLoopback(%q): got message %q, want %q", tt.addr, msg, tt.wantMsg)
			}
			if err != nil {
				return
			}
			defer ln.Close()
			if got := ln.Addr().String(); !strings.HasPrefix(got, tt.wantHost+":") {
				t.Errorf("listenLoopback(%q) address: got %s, want host %s", tt.addr, got, tt.wantHost)
			}
		})
	}
}
