package mcpserver

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMarshalResultIsTheSDKs: results of every shape, with the characters
// JSON encoders treat differently, marshal to the SDK's bytes.
func TestMarshalResultIsTheSDKs(t *testing.T) {
	t.Parallel()
	structured := func(v any) json.RawMessage {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	texts := []string{"", "plain", `quotes " and \ backslash`, "<b>&amp;</b>", "line\u2028sep\u2029", "ünïcode ✓ 用户", "bad \xff utf-8", "ctl \x00\x1f\t\n"}
	metas := []mcp.Meta{nil, {}, {TraceMetaKey: "0123456789abcdef0123456789abcdef"},
		{TraceMetaKey: "t<&>", mcp.MetaKeyServerInfo: &mcp.Implementation{Name: "duet <&>", Version: "1"}}}
	var results []*mcp.CallToolResult
	for _, text := range texts {
		for _, meta := range metas {
			for _, isErr := range []bool{false, true} {
				results = append(results, &mcp.CallToolResult{Meta: meta, Content: []mcp.Content{&mcp.TextContent{Text: text}},
					StructuredContent: structured(map[string]any{"text": text, "n": 1.5, "list": []any{nil, true, "<&>"}}), IsError: isErr})
			}
		}
	}
	// Shapes left to the SDK.
	results = append(results,
		&mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "a"}, &mcp.TextContent{Text: "b"}}, StructuredContent: structured(1)},
		&mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "a", Meta: mcp.Meta{"k": "v"}}}, StructuredContent: structured(1)},
		&mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "a", Annotations: &mcp.Annotations{Priority: 1}}}, StructuredContent: structured(1)},
		&mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: []byte("x"), MIMEType: "image/png"}}, StructuredContent: structured(1)},
		&mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "a"}}, StructuredContent: map[string]any{"a": "<"}},
		&mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "a"}}, StructuredContent: json.RawMessage(nil)},
		&mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "a"}}},
		&mcp.CallToolResult{Content: []mcp.Content{}, StructuredContent: structured(1)},
		&mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "a"}}, StructuredContent: structured(1), RequestState: "s"},
	)
	for _, r := range results {
		got, err1 := marshalResult(r)
		want, err2 := r.MarshalJSON()
		if !bytes.Equal(got, want) || (err1 == nil) != (err2 == nil) {
			t.Errorf("got %s (%v)\nwant %s (%v)", got, err1, want, err2)
		}
	}
}

// BenchmarkMarshalResult: a get_test_task result, by marshalResult and by
// the SDK.
func BenchmarkMarshalResult(b *testing.B) {
	out := map[string]any{"task": map[string]any{"id": "task_01h8x2k3m4n5p6q7r8s9t0v1w2", "name": "shop", "description": "the shop's checkout",
		"owner": "alice", "sharedWith": []string{}}, "caseCount": 3, "lastRun": map[string]any{"id": "run_01h8x2k3m4n5p6q7r8s9t0v1w2", "status": "passed"}}
	s, _ := json.Marshal(out)
	r := &mcp.CallToolResult{Meta: mcp.Meta{TraceMetaKey: "0123456789abcdef0123456789abcdef"}, Content: []mcp.Content{&mcp.TextContent{Text: "task shop (task_01h8x2k3m4n5p6q7r8s9t0v1w2): 3 cases, last run passed"}}, StructuredContent: json.RawMessage(s)}
	for _, f := range []struct {
		name string
		m    func() ([]byte, error)
	}{{"marshalResult", func() ([]byte, error) { return marshalResult(r) }}, {"sdk", r.MarshalJSON}} {
		b.Run(f.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := f.m(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
