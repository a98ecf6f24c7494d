package compiler

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/duet-test/duet"
)

const postRunSuite = `task:
  name: t
  postRun:
    - on: failure
      serverKey: mcp_orders_0badcafe
      tool: query_order
      input:
        orderId: "${run.id}"
    - name: tell the channel
      on: always
      serverKey: mcp_chat_0123abcd
      tool: post_message
      input:
        text: "${task.name}: ${run.status}, ${run.failed} failed"
        failed: {var: run.failedCases}
        count: 3
cases:
  - title: c
    steps:
      - assert: "true"
`

func TestCompilePostRun(t *testing.T) {
	t.Parallel()
	s, err := CompileSuite(context.Background(), []byte(postRunSuite), "s.yaml", Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []*duet.PostRunAction{
		{Name: "mcp_orders_0badcafe/query_order", On: duet.PostRunOnFailure, ServerKey: "mcp_orders_0badcafe", ToolName: "query_order", Line: 4,
			InputBindings: map[string]duet.Binding{"orderId": {Source: duet.BindValue, Value: "${run.id}"}}},
		{Name: "tell the channel", On: duet.PostRunAlways, ServerKey: "mcp_chat_0123abcd", ToolName: "post_message", Line: 9,
			InputBindings: map[string]duet.Binding{
				"text":   {Source: duet.BindValue, Value: "${task.name}: ${run.status}, ${run.failed} failed"},
				"failed": {Source: duet.BindVar, Path: "run.failedCases"},
				"count":  {Source: duet.BindValue, Value: float64(3)},
			}},
	}
	if diff := cmp.Diff(want, s.Task.PostRun); diff != "" {
		t.Fatalf("post-run actions (-want +got):\n%s", diff)
	}
	// The same source, the same actions: re-applying changes nothing.
	again, _ := CompileSuite(context.Background(), []byte(postRunSuite), "s.yaml", Options{})
	if duet.PostRunHash(again.Task.PostRun) != duet.PostRunHash(s.Task.PostRun) {
		t.Fatal("same source, different post-run hash")
	}
	// A server name resolves to the author's registration, as in mcpCall.
	named := "task:\n  name: t\n  postRun:\n    - {on: success, server: orders, tool: query_order, input: {orderId: '${run.id}'}}\n" +
		"cases:\n  - {title: c, steps: [{assert: 'true'}]}\n"
	s, err = CompileSuite(context.Background(), []byte(named), "s.yaml", Options{Servers: fakeServers{}})
	if err != nil || s.Task.PostRun[0].ServerKey != "mcp_orders_0badcafe" || s.Task.PostRun[0].ServerName != "orders" || s.Task.PostRun[0].Name != "orders/query_order" {
		t.Fatalf("a named server: got %+v %v", s, err)
	}
}

func TestCompilePostRunErrors(t *testing.T) {
	t.Parallel()
	tail := "cases:\n  - {title: c, steps: [{assert: 'true'}]}\n"
	head := "task:\n  name: t\n  postRun:\n"
	for _, tt := range []struct {
		name, src, want string
	}{
		{"not a list", "task:\n  name: t\n  postRun: {on: failure}\n", "3:12: postRun must be a list"},
		{"no on", head + "    - {serverKey: mcp_a_0123abcd, tool: x}\n", "4:7: missing key on"},
		{"bad on", head + "    - {on: sometimes, serverKey: mcp_a_0123abcd, tool: x}\n", "4:12: on must be failure, success or always"},
		{"no server", head + "    - {on: failure, tool: x}\n", "needs server"},
		{"no tool", head + "    - {on: failure, serverKey: mcp_a_0123abcd}\n", "needs tool"},
		{"unknown key", head + "    - {on: failure, serverKey: mcp_a_0123abcd, tool: x, saveAs: y}\n", "unknown key \"saveAs\""},
		{"page binding", head + "    - {on: failure, serverKey: mcp_a_0123abcd, tool: x, input: {id: {from: page.url, param: id}}}\n", "without a page"},
		{"unknown name", head + "    - {on: failure, serverKey: mcp_a_0123abcd, tool: x, input: {id: '${order.id}'}}\n", "unknown name order"},
		{"unknown var", head + "    - {on: failure, serverKey: mcp_a_0123abcd, tool: x, input: {id: {var: resp.body}}}\n", "unknown name resp"},
		{"unregistered server", head + "    - {on: failure, server: other, tool: query_order}\n", "not registered an MCP server named \"other\""},
		{"missing argument", head + "    - {on: failure, server: orders, tool: query_order}\n", "requires argument \"orderId\""},
		{"too many", head + strings.Repeat("    - {on: failure, serverKey: mcp_a_0123abcd, tool: x}\n", 21), "at most 20 post-run actions"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := CompileSuite(context.Background(), []byte(tt.src+tail), "s.yaml", Options{Servers: fakeServers{}})
			if duet.ErrorCode(err) != duet.CodeInvalidArgument || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want INVALID_ARGUMENT with %q", err, tt.want)
			}
		})
	}
}
