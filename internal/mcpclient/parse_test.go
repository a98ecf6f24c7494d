package mcpclient

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestCapturedResult(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, ctype, body, want string
	}{
		{"json", "application/json", `{"jsonrpc":"2.0","id":3,"result":{"content":[],"n":12345678901234567891}}`, `{"content":[],"n":12345678901234567891}`},
		{"sse with a notification first", "text/event-stream; charset=utf-8",
			"id: 1\nretry: 500\ndata: \n\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n" +
				"event: message\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\r\ndata: \"result\":{\"isError\":false}}\r\n\r\n", `{"isError":false}`},
		{"error response", "application/json", `{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"x"}}`, ""},
		{"html", "text/html", `<html></html>`, ""},
		{"empty", "application/json", ``, ""},
	}
	for _, tt := range tests {
		o := &observer{capture: true, ctype: tt.ctype}
		o.body.WriteString(tt.body)
		got := capturedResult(o)
		if string(got) != tt.want {
			t.Errorf("%s: got %s, want %s", tt.name, got, tt.want)
		}
	}
}

func TestSanitize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{"a\r\nb\tc", 100, "a b c"},
		{"  lead and trail ", 100, "lead and trail"},
		{"abcdefghij", 5, "abcde…"},
		{"\x00\x1b[31mred", 100, "[31mred"},
	}
	for _, tt := range tests {
		if got := sanitize(tt.in, tt.n); got != tt.want {
			t.Errorf("sanitize(%q, %d): got %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}

// FuzzCapturedResult feeds arbitrary reply bodies to the parsers of what a
// server sends back: they never panic, a result they return is valid JSON,
// and sanitized text is one line of valid UTF-8.
func FuzzCapturedResult(f *testing.F) {
	f.Add("application/json", []byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"x"}]}}`))
	f.Add("text/event-stream", []byte("data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n"))
	f.Add("text/event-stream", []byte("data: {\"jsonrpc\":\"2.0\",\ndata: \"id\":\"a\",\"result\":[1]}\r\n\r\n"))
	f.Add("text/html", []byte("<html><title>Login</title></html>"))
	f.Add("application/json", []byte(`{"orders":[]}`))
	f.Fuzz(func(t *testing.T, ctype string, body []byte) {
		o := &observer{capture: true, ctype: ctype}
		o.body.Write(body)
		if r := capturedResult(o); r != nil && !json.Valid(r) {
			t.Fatalf("invalid JSON result %q", r)
		}
		_ = firstSSEData(body)
		_ = htmlTitle(body)
		s := sanitize(string(body), 50)
		if strings.ContainsAny(s, "\r\n\x00") || !utf8.ValidString(s) && utf8.Valid(body) {
			t.Fatalf("sanitize gave %q", s)
		}
		if bytes.Contains([]byte(s), []byte("\n")) {
			t.Fatal("newline")
		}
	})
}

// TestRepliesAreReadAsTheSDKReadsThem: the result Invoke passes on, taken
// from the bytes the server sent, is the one the go-sdk decoded from the
// same bytes — also when a reply holds keys that differ only in case (the
// SDK matches keys exactly; encoding/json would take "Content" for
// "content"), repeats a key, or carries data after the message.
func TestRepliesAreReadAsTheSDKReadsThem(t *testing.T) {
	t.Parallel()
	bodies := []string{
		`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"plain"}],"structuredContent":{"n":1}}}`,
		"{\"jsonrpc\":\"2.0\", \"id\":1,\n \"result\":{ \"content\":[ {\"type\":\"text\", \"text\":\"spaced \\\" out\"} ] } }",
		`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"as the SDK reads"}],"Content":[{"type":"text","text":"not this"}]}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"Content":[{"type":"text","text":"not this"}],"content":[{"type":"text","text":"as the SDK reads"}]}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"t"}],"structuredContent":{"a":1},"StructuredContent":{"a":2}}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"t"}],"StructuredContent":{"a":2}}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"t"}],"isError":true,"IsError":false}}`,
		`{"jsonrpc":"2.0","id":1,"Result":{"content":[{"type":"text","text":"other"}]},"result":{"content":[{"type":"text","text":"t"}]}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"first"}],"content":[{"type":"text","text":"second"}]}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"t"}]}}` + "\n" + `{"jsonrpc":"2.0","id":2,"result":{"content":[]}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"<&>"}],"structuredContent":{"html":"<b>"}}}`,
	}
	canon := func(b []byte) string {
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			return "invalid: " + string(b)
		}
		out, _ := json.Marshal(v)
		return string(out)
	}
	for _, body := range bodies {
		msg, err := jsonrpc.DecodeMessage([]byte(body))
		if err != nil {
			t.Fatalf("%s: the SDK refused it: %v", body, err)
		}
		var res mcp.CallToolResult
		if err := json.Unmarshal(msg.(*jsonrpc.Response).Result, &res); err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		o := &observer{capture: true, ctype: "application/json"}
		o.body.WriteString(body)
		tr, _ := toolResult(&res, o)
		want, _ := json.Marshal(res.Content)
		if got := canon(tr.Content); got != canon(want) {
			t.Errorf("%s:\ncontent %s\nthe SDK read %s", body, got, canon(want))
		}
		var wantSC []byte
		if res.StructuredContent != nil {
			wantSC, _ = json.Marshal(res.StructuredContent)
		}
		if got := string(tr.StructuredContent); (got == "") != (wantSC == nil) || got != "" && canon(tr.StructuredContent) != canon(wantSC) {
			t.Errorf("%s:\nstructuredContent %s\nthe SDK read %s", body, got, wantSC)
		}
		if tr.IsError != res.IsError {
			t.Errorf("%s: isError %v, the SDK read %v", body, tr.IsError, res.IsError)
		}
		if bytes.ContainsAny(tr.Content, "\n\t") || bytes.Contains(tr.Content, []byte("[ ")) {
			t.Errorf("%s: content not compact: %s", body, tr.Content)
		}
	}
}

// TestListsAreReadAsTheSDKReadsThem: the schemas archived from the bytes of
// a tools/list reply are the ones the go-sdk decoded from the same bytes,
// also when keys differ only in case.
func TestListsAreReadAsTheSDKReadsThem(t *testing.T) {
	t.Parallel()
	body := `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a","inputSchema":{"type":"object"},"InputSchema":{"type":"object","x":1},` +
		`"annotations":{"readOnlyHint":true},"Annotations":{"readOnlyHint":false}}],"Tools":[{"name":"a","inputSchema":{"type":"object","y":1}}]}}`
	msg, err := jsonrpc.DecodeMessage([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	var res mcp.ListToolsResult
	if err := json.Unmarshal(msg.(*jsonrpc.Response).Result, &res); err != nil || len(res.Tools) != 1 {
		t.Fatalf("the SDK read %+v, %v", res, err)
	}
	o := &observer{capture: true, ctype: "application/json"}
	o.body.WriteString(body)
	got := archiveTool(res.Tools[0], rawTools(o)["a"])
	if string(got.InputSchema) != `{"type":"object"}` || string(got.Annotations) != `{"readOnlyHint":true}` {
		t.Errorf("archived %s and %s, want what the SDK read: {\"type\":\"object\"} and {\"readOnlyHint\":true}", got.InputSchema, got.Annotations)
	}
}
