package mcpserver_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/duet-test/duet/internal/conformance"
)

// TestFastPath2026IsByteEquivalent: 2026-07-28 calls, answered both by the
// fast path and by the SDK alone, get the same status, headers and bytes;
// the fast path serves exactly the calls the SDK would accept as they are,
// of read-only tools that answer in the call, and leaves everything else —
// every request the SDK refuses (missing or mismatched Mcp-* headers,
// _meta disagreeing with the header), sessions, Mcp-Param-* headers,
// extensions, progress tokens, tools that write — to the SDK.
func TestFastPath2026IsByteEquivalent(t *testing.T) {
	t.Parallel()
	p := newTwoPaths(t)
	id := p.taskID
	const triple = `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}`
	call := func(name, args, meta string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + name + `","arguments":` + args + `,"_meta":{` + meta + `}}}`
	}
	task := `{"taskId":"` + id + `"}`
	bodies := []struct {
		name, body string
		fast       bool
	}{
		{"get_test_task", call("get_test_task", task, triple), true},
		{"get_test_task", call("get_test_task", `{"taskId":"task_missing"}`, triple), true},
		{"get_test_task", call("get_test_task", `{"taskId":42}`, triple), true},
		{"get_test_task", call("get_test_task", `{"taskId":"x","extra":1}`, triple), true},
		{"list_test_tasks", call("list_test_tasks", `{}`, triple), true},
		{"list_test_cases", call("list_test_cases", `{"taskId":"`+id+`","limit":1}`, triple), true},
		{"get_test_task", call("get_test_task", task, triple+`,"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"`), true},
		{"get_test_task", `{"jsonrpc":"2.0","id":"s<&>","method":"tools/call","params":{"name":"get_test_task","arguments":` + task + `,"_meta":{` + triple + `}}}`, true},
		// What the SDK refuses or treats otherwise.
		{"get_test_task", call("get_test_task", task, `"io.modelcontextprotocol/protocolVersion":"2025-11-25","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}`), false},
		{"get_test_task", call("get_test_task", task, `"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}`), false},
		{"get_test_task", call("get_test_task", task, `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}`), true}, // the self-description is optional
		{"get_test_task", call("get_test_task", task, `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":null`), false},
		{"get_test_task", call("get_test_task", task, `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":5}`), false},
		{"get_test_task", call("get_test_task", task, `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":5},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}`), false},
		{"get_test_task", call("get_test_task", task, triple+`,"io.modelcontextprotocol/logLevel":"debug"`), false},
		{"get_test_task", call("get_test_task", task, `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}`), false},
		{"get_test_task", call("get_test_task", task, triple+`,"progressToken":"p"`), false},
		{"get_test_task", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_test_task","arguments":` + task + `}}`, false},
		{"no_such_tool", call("no_such_tool", `{}`, triple), false},
		{conformance.ToolMixed, call(conformance.ToolMixed, `{}`, triple), true}, // read-only, replaces its content
		{"get_test_task", call("get_test_task", task, triple) + ` {"x":1}`, false},
	}
	variants := []struct {
		name    string
		headers func(tool string) map[string]string
		fast    bool
	}{
		{"complete headers", func(tool string) map[string]string {
			return map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": tool}
		}, true},
		{"no Mcp-Name", func(string) map[string]string {
			return map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call"}
		}, false},
		{"no Mcp-Method", func(tool string) map[string]string {
			return map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Name": tool}
		}, false},
		{"another Mcp-Name", func(string) map[string]string {
			return map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "no_such_tool"}
		}, false},
		{"Mcp-Method of another method", func(tool string) map[string]string {
			return map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list", "Mcp-Name": tool}
		}, false},
		{"a session named", func(tool string) map[string]string {
			return map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": tool, "Mcp-Session-Id": "s1"}
		}, false},
		{"an Mcp-Param header", func(tool string) map[string]string {
			return map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": tool, "Mcp-Param-TaskId": "x"}
		}, false},
		{"a 2025-11-25 header", func(tool string) map[string]string {
			return map[string]string{"Mcp-Protocol-Version": "2025-11-25", "Mcp-Method": "tools/call", "Mcp-Name": tool}
		}, false},
		{"accept json only", func(tool string) map[string]string {
			return map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": tool, "Accept": "application/json"}
		}, false},
		{"another user", func(tool string) map[string]string {
			return map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": tool, "X-Test-User": "mallory"}
		}, true},
	}
	served := 0
	for _, v := range variants {
		for i, b := range bodies {
			name := fmt.Sprintf("%s, body %d", v.name, i)
			h := v.headers(b.name)
			before := p.srv.FastPathServed()
			f := send(p.fast, b.body, h)
			want := v.fast && b.fast
			if v.name == "a 2025-11-25 header" && !strings.Contains(b.body, "_meta") {
				want = true // a plain 2025-11-25 call: the fast path of that era
			}
			if got := p.srv.FastPathServed() - before; got != 0 != want {
				t.Errorf("%s: the fast path served %d requests, want %v: %s", name, got, want, b.body)
			}
			s := send(p.sdk, b.body, h)
			if d := differ(f, s); d != "" {
				t.Errorf("%s: %s", name, d)
			}
			if v.fast && b.fast {
				served++
			}
		}
	}
	if served < 16 {
		t.Errorf("the fast path served only %d requests; the comparison is too thin", served)
	}
}

// BenchmarkFastPathCall: one governed get_test_task through the fast path
// in process, as make bench's clients send it, in each era (-benchmem: the
// allocations per call; the time includes the SQLite read and the audit).
func BenchmarkFastPathCall(b *testing.B) {
	p := newTwoPaths(b)
	args := `{"taskId":"` + p.taskID + `"}`
	for _, era := range []struct {
		name, meta string
		headers    map[string]string
	}{
		{"2025-11-25", "", map[string]string{"Mcp-Protocol-Version": "2025-11-25"}},
		{"2026-07-28", `,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"}}`,
			map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "get_test_task"}},
	} {
		body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"get_test_task","arguments":` + args + era.meta + `}}`
		b.Run(era.name, func(b *testing.B) {
			b.ReportAllocs()
			before := p.srv.FastPathServed()
			for b.Loop() {
				if r := send(p.fast, body, era.headers); r.status != 200 {
					b.Fatalf("status %d: %s", r.status, r.body)
				}
			}
			if p.srv.FastPathServed() == before {
				b.Fatal("the fast path served nothing")
			}
		})
	}
}
