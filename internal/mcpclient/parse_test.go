package mcpclient

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
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
