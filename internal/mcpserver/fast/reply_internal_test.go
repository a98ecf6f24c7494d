package fast

import (
	"bytes"
	"encoding/json"
	"strings"
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
	texts := []string{"", "plain", `quotes " and \ backslash`, "<b>&amp;</b>", "line\u2028sep\u2029", "ünïcode ✓ 用户", "bad \xff utf-8", "ctl \x00\x1f\t\n",
		"a<b", "a>b", "a&b", `a"b`, `a\b`, "a\x7fb", "a\x1fb", "é"}
	metas := []mcp.Meta{nil, {}, {"io.duet/traceId": "0123456789abcdef0123456789abcdef"},
		{"io.duet/traceId": "t<&>", mcp.MetaKeyServerInfo: &mcp.Implementation{Name: "duet <&>", Version: "1"}}}
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
		// The fast path's serverInfo, encoded once, writes the bytes the
		// SDK writes for the Implementation itself, on both marshallings.
		if impl, ok := r.Meta[mcp.MetaKeyServerInfo].(*mcp.Implementation); ok {
			pre, err := encodeOnce(impl)
			if err != nil {
				t.Fatal(err)
			}
			r2 := *r
			r2.Meta = mcp.Meta{}
			for k, v := range r.Meta {
				r2.Meta[k] = v
			}
			r2.Meta[mcp.MetaKeyServerInfo] = pre
			for _, f := range []func() ([]byte, error){func() ([]byte, error) { return marshalResult(&r2) }, r2.MarshalJSON} {
				if got, err := f(); err != nil || !bytes.Equal(got, want) {
					t.Errorf("pre-encoded serverInfo: got %s (%v)\nwant %s", got, err, want)
				}
			}
		}
	}
}

// TestAppendIDIsTheSDKs: reply ids are written as the SDK's encoder writes
// them (no HTML escaping; U+2028 and controls escaped).
func TestAppendIDIsTheSDKs(t *testing.T) {
	t.Parallel()
	for _, id := range []any{int64(0), int64(-1), int64(1<<53 - 1), int64(-(1<<53 - 1)), "", "a", "<&>", `q"b\s`, "\x00\x1f", "\x7f", "line\u2028", "ü", "bad \xff", `a"b`, `a\b`, "a<b", "a\nb", "a\x7fb"} {
		got, err1 := appendID([]byte("x"), id)
		want, err2 := encodeNoEscape(id)
		if !bytes.Equal(got, append([]byte("x"), want...)) || (err1 == nil) != (err2 == nil) {
			t.Errorf("id %#v: got %s (%v), want x%s (%v)", id, got, err1, want, err2)
		}
	}
}

// TestAppendMetaIsJSONMarshals: metadata of every shape, with keys out of
// order and values the fast encoder does not know, as json.Marshal writes it.
func TestAppendMetaIsJSONMarshals(t *testing.T) {
	t.Parallel()
	pre, err := encodeOnce(&mcp.Implementation{Name: "duet <&>", Title: "T", Version: "1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, meta := range []mcp.Meta{
		{}, {"b": "1", "a": "2", "c": "<"}, {"z": pre, "a": "x"}, {"k\u2028": "v\x00"}, {"a": 1.5}, {"a": nil, "b": "c"},
		{"1": "a", "2": "b", "3": "c", "4": "d", "5": "e"}, {"io.duet/traceId": "t", mcp.MetaKeyServerInfo: pre},
	} {
		got, err1 := appendMeta(nil, meta)
		m := map[string]any(meta)
		for k, v := range m {
			if p, ok := v.(preEncoded); ok {
				m[k] = json.RawMessage(p)
			}
		}
		want, err2 := json.Marshal(m)
		if !bytes.Equal(got, want) || (err1 == nil) != (err2 == nil) {
			t.Errorf("got %s (%v), want %s (%v)", got, err1, want, err2)
		}
	}
}

// BenchmarkMarshalResult: a get_test_task result, by marshalResult and by
// the SDK.
func BenchmarkMarshalResult(b *testing.B) {
	out := map[string]any{"task": map[string]any{"id": "task_01h8x2k3m4n5p6q7r8s9t0v1w2", "name": "shop", "description": "the shop's checkout",
		"owner": "alice", "sharedWith": []string{}}, "caseCount": 3, "lastRun": map[string]any{"id": "run_01h8x2k3m4n5p6q7r8s9t0v1w2", "status": "passed"}}
	s, _ := json.Marshal(out)
	r := &mcp.CallToolResult{Meta: mcp.Meta{"io.duet/traceId": "0123456789abcdef0123456789abcdef"}, Content: []mcp.Content{&mcp.TextContent{Text: "task shop (task_01h8x2k3m4n5p6q7r8s9t0v1w2): 3 cases, last run passed"}}, StructuredContent: json.RawMessage(s)}
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

// TestHasPrefixFold: the header-name check agrees with lowering the name.
func TestHasPrefixFold(t *testing.T) {
	t.Parallel()
	for _, k := range []string{"", "Mcp-Param-Task", "MCP-PARAM-X", "mcp-param-", "Mcp-Param", "Mcp-Params-X", "Mcp-Name", "X-Mcp-Param-A", "mcp_param-a", "Mcp-Param-\u212a"} {
		if got, want := hasPrefixFold(k, "mcp-param-"), strings.HasPrefix(strings.ToLower(k), "mcp-param-"); got != want {
			t.Errorf("%q: got %v, want %v", k, got, want)
		}
	}
}
