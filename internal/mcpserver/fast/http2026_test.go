package fast_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/duet-test/duet/internal/catalog"
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

// TestFastPathLeavesInputRoundsToTheSDK: the fast path never takes a call
// that may need an input round (a tool that declared it asks: the
// multi-round fixtures, test_missing_capability, which answers by what the
// client can be asked), so the SDK path builds the round; and a protocol
// error of a call the fast path did take (CAPABILITY_REQUIRED from a tool
// that never asks) is answered as the SDK answers it — -32021 with its
// status (400 for 2026-07-28), byte for byte — not as an unknown tool.
func TestFastPathLeavesInputRoundsToTheSDK(t *testing.T) {
	t.Parallel()
	needsExt := catalog.Define("needs_extension", "", "needs an extension the client never has", catalog.Annotations{ReadOnly: true}, nil,
		func(ctx context.Context, env *catalog.Env, _ struct{}) (textOut, error) {
			return textOut{}, &catalog.CapabilityError{Message: "declare the x extension", Required: map[string]any{"extensions": map[string]any{"x": map[string]any{}}}}
		})
	extra := []*catalog.Tool{needsExt}
	asking := map[string]bool{conformance.ToolIRElicitation: true, conformance.ToolIRCapabilities: true, conformance.ToolMissingCapability: true}
	for _, tool := range conformance.New().Tools {
		if asking[tool.Name] {
			extra = append(extra, tool)
		}
	}
	p := newTwoPaths(t, extra...)
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{CAPS},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}}`
	call := func(tool, caps string) (string, map[string]string) {
		return `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"` + tool + `","arguments":{},` + strings.Replace(meta, "CAPS", caps, 1) + `}}`,
			map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": tool}
	}
	for _, tt := range []struct {
		tool, caps string
		status     int
		want       string
	}{
		{conformance.ToolIRElicitation, `"elicitation":{}`, 200, `"resultType":"input_required"`},
		{conformance.ToolIRCapabilities, `"sampling":{}`, 200, `"greeting":{"method":"sampling/createMessage"`},
		{conformance.ToolMissingCapability, ``, 400, `"code":-32021`},
		{conformance.ToolMissingCapability, `"sampling":{}`, 200, `tool executed`},
	} {
		body, h := call(tt.tool, tt.caps)
		before := p.srv.FastPathServed()
		r := send(p.fast, body, h)
		if p.srv.FastPathServed() != before {
			t.Errorf("%s {%s}: the fast path took a call that may need an input round", tt.tool, tt.caps)
		}
		if r.status != tt.status || !bytes.Contains(r.body, []byte(tt.want)) {
			t.Errorf("%s {%s}: %d %s, want %d with %s", tt.tool, tt.caps, r.status, r.body, tt.status, tt.want)
		}
	}
	// A protocol error of a call the fast path takes, in both eras.
	body, h := call("needs_extension", "")
	plain := `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"needs_extension","arguments":{}}}`
	for _, c := range []struct {
		body    string
		headers map[string]string
		status  int
	}{{body, h, 400}, {plain, map[string]string{"Mcp-Protocol-Version": "2025-11-25"}, 200}} {
		before := p.srv.FastPathServed()
		f := send(p.fast, c.body, c.headers)
		if p.srv.FastPathServed() != before+1 {
			t.Errorf("needs_extension (%s): the fast path did not take it", c.headers["Mcp-Protocol-Version"])
		}
		s := send(p.sdk, c.body, c.headers)
		if d := differ(f, s); d != "" {
			t.Errorf("needs_extension (%s): %s", c.headers["Mcp-Protocol-Version"], d)
		}
		if f.status != c.status || !bytes.Contains(f.body, []byte(`"code":-32021`)) || !bytes.Contains(f.body, []byte(`"requiredCapabilities"`)) {
			t.Errorf("needs_extension (%s): %d %s, want %d and -32021", c.headers["Mcp-Protocol-Version"], f.status, f.body, c.status)
		}
	}
}
