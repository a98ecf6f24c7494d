package agent

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/duet-test/duet"
)

func TestExtractYAML(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
	}{
		{"yaml fence", "Here:\n```yaml\ntitle: a\nsteps: []\n```\nDone.", "title: a\nsteps: []\n"},
		{"plain fence", "```\ntitle: a\nsteps: []\n```", "title: a\nsteps: []\n"},
		{"fence with steps wins", "```yaml\nnote: x\n```\n```yaml\ntitle: a\nsteps: []\n```", "title: a\nsteps: []\n"},
		{"bare case", "title: a\nsteps:\n  - assert: 'true'", "title: a\nsteps:\n  - assert: 'true'\n"},
		{"prose", "I would test the login page.", ""},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		if got := extractYAML(tt.in); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestSubmittedSource(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args, want string
	}{
		{`{"yaml":"title: a\nsteps: []\n"}`, "title: a\nsteps: []\n"},
		{`{"yaml":"` + "```yaml\\ntitle: a\\n```" + `"}`, "title: a\n"},
		{`{"yaml":{"title":"a","steps":[]}}`, `{"title":"a","steps":[]}`},
		{`{"title":"a","steps":[]}`, `{"title":"a","steps":[]}`},
		{`{"case":"x"}`, ""},
		{`not json`, ""},
	}
	for _, tt := range tests {
		if got := submittedSource(json.RawMessage(tt.args)); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.args, got, tt.want)
		}
	}
}

func TestPageURL(t *testing.T) {
	t.Parallel()
	base := "http://127.0.0.1:8080/shop"
	tests := []struct {
		path, want string
		ok         bool
	}{
		{"/order?orderId=A1", "http://127.0.0.1:8080/shop/order?orderId=A1", true},
		{"login", "http://127.0.0.1:8080/shop/login", true},
		{"http://127.0.0.1:8080/other", "http://127.0.0.1:8080/other", true},
		{"http://169.254.169.254/latest/meta-data", "", false},
		{"//evil.example/x", "", false},
		{"https://127.0.0.1:8080/", "", false},
		{"file:///etc/passwd", "", false},
	}
	for _, tt := range tests {
		got, err := pageURL(base, tt.path)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("pageURL(%q): got %q, %v; want %q, ok=%v", tt.path, got, err, tt.want, tt.ok)
		}
	}
}

func TestToolNames(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 70)
	servers := []*duet.MCPServerAsset{
		{ServerKey: "mcp_a_00000001", Name: "order query", Tools: []*duet.MCPToolAsset{{Name: "query.order"}, {Name: "query_order"}}},
		{ServerKey: "mcp_b_00000002", Name: long, Tools: []*duet.MCPToolAsset{{Name: "t"}, {Name: "t2"}}},
	}
	var got []string
	callable, _ := MCPTools(servers, nil, "alice", "", MCPPolicy{Allow: []string{"*"}})
	for _, tool := range callable {
		got = append(got, tool.Name)
		if !toolNameRe().MatchString(tool.Name) {
			t.Errorf("invalid tool name %q", tool.Name)
		}
	}
	want := []string{"order_query__query_order", "order_query__query_order_2", long[:64], long[:62] + "_2"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("got %q, want %q", got, want)
	}
	if err := NewToolRegistry().Add(&Tool{Name: "bad name"}); duet.ErrorCode(err) != duet.CodeInvalidArgument {
		t.Errorf("bad name: got %v", err)
	}
}

func TestRegistryCall(t *testing.T) {
	t.Parallel()
	r := NewToolRegistry()
	echo := &Tool{Name: "echo", Call: func(_ context.Context, raw json.RawMessage) (string, error) { return string(raw), nil }}
	fail := &Tool{Name: "fail", Call: func(context.Context, json.RawMessage) (string, error) {
		return "", duet.WrapError(duet.CodeNotFound, context.Canceled, "no such order")
	}}
	if err := r.Add(echo, fail); err != nil {
		t.Fatal(err)
	}
	if err := r.Add(echo); duet.ErrorCode(err) != duet.CodeInvalidArgument {
		t.Errorf("duplicate: got %v", err)
	}
	tests := []struct{ name, args, want string }{
		{"echo", `{"a":1}`, `{"a":1}`},
		{"echo", ``, `{}`},
		{"echo", `[1]`, "error: INVALID_ARGUMENT: the arguments of echo are not a JSON object"},
		{"fail", `{}`, "error: NOT_FOUND: no such order"},
		{"nope", `{}`, "error: NOT_FOUND: there is no tool \"nope\"; the tools are: echo, fail"},
		{"echo", `{"s":"` + strings.Repeat("é", 20) + `"}`, `{"s":"ééééééé` + "\n…(28 more bytes cut)"},
	}
	for _, tt := range tests {
		if got := r.Call(context.Background(), tt.name, tt.args, 20); !strings.HasPrefix(got, tt.want) {
			t.Errorf("%s(%s): got %q, want prefix %q", tt.name, tt.args, got, tt.want)
		}
	}
	tools := r.LLMTools()
	if len(tools) != 2 || string(tools[0].Function.Parameters) != `{"type":"object","properties":{}}` {
		t.Errorf("LLMTools: got %+v", tools)
	}
}

func TestResultView(t *testing.T) {
	t.Parallel()
	r := &duet.ToolResult{
		Content:           json.RawMessage(`[{"type":"text","text":"Order A1 is paid."}]`),
		StructuredContent: json.RawMessage(`{"order":{"id":"A1","status":"paid"},"session":{"accessToken":"s3cr3t"}}`),
	}
	got := resultView("orders", "query_order", r, func(string, string) bool { return false })
	if strings.Contains(got, "s3cr3t") || !strings.Contains(got, `"status":"paid"`) || !strings.Contains(got, "Order A1 is paid.") ||
		!strings.HasPrefix(got, `{"from":"orders/query_order","note":"data returned by another team's service`) {
		t.Errorf("got %s", got)
	}
	// What the screen flags is withheld: a string value, a key, a text
	// that is not JSON; the rest of the data stays. JSON text is screened
	// value by value and its secret-looking values masked too.
	r = &duet.ToolResult{
		Content:           json.RawMessage(`[{"type":"text","text":"{\"sku\":\"B-17\",\"note\":\"EVIL\",\"password\":\"hunter2\"}"}]`),
		StructuredContent: json.RawMessage(`{"sku":"B-17","note":"EVIL","EVIL key":1,"lines":[{"n":"ok"},{"n":"EVIL"}]}`),
	}
	var paths []string
	got = resultView("inventory", "check_stock", r, func(path, text string) bool {
		if strings.Contains(text, "EVIL") {
			paths = append(paths, path)
			return true
		}
		return false
	})
	if strings.Contains(got, "EVIL") || strings.Contains(got, "hunter2") || !strings.Contains(got, `"sku":"B-17"`) || !strings.Contains(got, `"n":"ok"`) {
		t.Errorf("got %s", got)
	}
	want := []string{"result.text.note", "result.structuredContent.EVIL key (key)", "result.structuredContent.lines[1].n", "result.structuredContent.note"}
	if strings.Join(paths, "|") != strings.Join(want, "|") {
		t.Errorf("screened paths: got %q, want %q", paths, want)
	}
	got = resultView("inventory", "check_stock", &duet.ToolResult{Content: json.RawMessage(`[{"type":"text","text":"EVIL plain text"}]`)},
		func(_, text string) bool { return strings.Contains(text, "EVIL") })
	if strings.Contains(got, "EVIL") || !strings.Contains(got, withheldResult) {
		t.Errorf("plain text: got %s", got)
	}
}

// FuzzModelOutput: whatever a model answers, reading a case out of it
// neither panics nor invents text.
func FuzzModelOutput(f *testing.F) {
	f.Add("```yaml\ntitle: a\nsteps: []\n```")
	f.Add("title: a\nsteps:\n  - assert: 'true'")
	f.Add("```\n```yaml\n")
	f.Add(`{"yaml":{"steps":[1]}}`)
	f.Fuzz(func(t *testing.T, text string) {
		if got := extractYAML(text); got != "" && !strings.Contains(text, strings.TrimSuffix(got, "\n")) {
			t.Fatalf("extractYAML(%q) = %q, not part of the input", text, got)
		}
		args, _ := json.Marshal(map[string]string{"yaml": text})
		_ = submittedSource(args)
		_ = submittedSource(json.RawMessage(text))
	})
}
