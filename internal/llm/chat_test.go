package llm

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

func TestDecodeResponse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file    string
		want    *Response
		wantErr string // substring; the response is then nil
	}{
		{
			file: "openai_tool_calls.json",
			want: &Response{ID: "chatcmpl-abc123", Model: "gpt-4.1-mini-2025-04-14",
				Choices: []Choice{{Message: Message{Role: RoleAssistant, ToolCalls: []ToolCall{
					{ID: "call_Xy1", Type: "function", Function: FunctionCall{Name: "get_test_task", Arguments: `{"taskId":"t1"}`}},
				}}, FinishReason: "tool_calls"}},
				Usage: Usage{PromptTokens: 82, CompletionTokens: 17, TotalTokens: 99}},
		},
		{
			file: "ollama_no_usage.json",
			want: &Response{ID: "chatcmpl-42", Model: "qwen3:8b",
				Choices: []Choice{{Message: Message{Role: RoleAssistant, Content: "Hello."}, FinishReason: "stop"}}},
		},
		{
			file: "content_parts.json",
			want: &Response{ID: "r1", Model: "m",
				Choices: []Choice{{Message: Message{Role: RoleAssistant, Content: "Hello, world.", Images: []string{"data:,"}}, FinishReason: "stop"}},
				Usage:   Usage{PromptTokens: 3, CompletionTokens: 2, TotalTokens: 5}},
		},
		{
			file: "tool_call_loose.json",
			want: &Response{ID: "r2", Model: "llama3.1",
				Choices: []Choice{{Message: Message{Role: RoleAssistant, ToolCalls: []ToolCall{
					{ID: "call_0_0", Type: "function", Function: FunctionCall{Name: "click", Arguments: `{"selector":"#buy"}`}},
					{ID: "c2", Type: "function", Function: FunctionCall{Name: "screenshot", Arguments: "{}"}},
				}}, FinishReason: "stop"}},
				Usage: Usage{PromptTokens: 7, CompletionTokens: 4, TotalTokens: 11}},
		},
		{
			file: "vllm_reasoning.json",
			want: &Response{ID: "chatcmpl-v", Model: "Qwen/Qwen3-8B",
				Choices: []Choice{{Message: Message{Role: RoleAssistant, Content: "ok"}, FinishReason: "stop"}},
				Usage:   Usage{PromptTokens: 10, CompletionTokens: 2, TotalTokens: 12}},
		},
		{file: "error_in_200.json", wantErr: "Provider returned error (code 502)"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(filepath.Join("testdata", "responses", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			got, err := decodeResponse(data)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("decodeResponse: got error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("decodeResponse: got error %v, want nil", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("decodeResponse mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecodeResponseErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body string
		wantErr    error // checked with errors.Is when set
		wantText   string
	}{
		{name: "no choices", body: `{"id":"x","choices":[]}`, wantErr: errNoChoices},
		{name: "null", body: `null`, wantErr: errNoChoices},
		{name: "html", body: `<html>bad gateway</html>`, wantText: "invalid character"},
		{name: "content number", body: `{"choices":[{"message":{"content":5}}]}`, wantText: "content: want a string"},
		{name: "error string", body: `{"error":"model not loaded"}`, wantText: "model not loaded"},
		{name: "vllm error object", body: `{"object":"error","message":"bad","type":"BadRequestError","code":400}`,
			wantText: "bad (type BadRequestError, code 400)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := decodeResponse([]byte(tt.body))
			if got != nil {
				t.Errorf("decodeResponse: got response %+v, want nil", got)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("decodeResponse: got error %v, want %v", err, tt.wantErr)
			}
			if tt.wantText != "" && (err == nil || !strings.Contains(err.Error(), tt.wantText)) {
				t.Errorf("decodeResponse: got error %v, want one containing %q", err, tt.wantText)
			}
		})
	}
}

func TestMessageJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		msg  Message
		want string
	}{
		{name: "user", msg: Message{Role: RoleUser, Content: "hi"}, want: `{"role":"user","content":"hi"}`},
		{name: "empty content is a string", msg: Message{Role: RoleUser}, want: `{"role":"user","content":""}`},
		{
			name: "tool calls without text send null content and default the type",
			msg: Message{Role: RoleAssistant, ToolCalls: []ToolCall{
				{ID: "c1", Function: FunctionCall{Name: "f", Arguments: `{"a":1}`}}}},
			want: `{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]}`,
		},
		{
			name: "tool result",
			msg:  Message{Role: RoleTool, Content: `{"ok":true}`, ToolCallID: "c1"},
			want: `{"role":"tool","content":"{\"ok\":true}","tool_call_id":"c1"}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := json.Marshal(tt.msg)
			if err != nil {
				t.Fatalf("Marshal: got error %v, want nil", err)
			}
			if string(got) != tt.want {
				t.Errorf("Marshal: got %s, want %s", got, tt.want)
			}
			var back Message
			if err := json.Unmarshal(got, &back); err != nil {
				t.Fatalf("Unmarshal: got error %v, want nil", err)
			}
			want := tt.msg
			for i := range want.ToolCalls {
				want.ToolCalls[i].Type = ToolTypeFunction
			}
			if diff := cmp.Diff(want, back); diff != "" {
				t.Errorf("round trip mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRequestJSON(t *testing.T) {
	t.Parallel()
	req := Request{
		Model:       "m",
		Messages:    []Message{{Role: RoleUser, Content: "hi"}},
		Tools:       []Tool{{Function: FunctionDef{Name: "f", Parameters: json.RawMessage(`{"type":"object"}`)}}},
		ToolChoice:  "auto",
		Temperature: new(0.0),
	}
	got, err := json.Marshal(req)
	if err != nil {
		t.Fatalf("Marshal: got error %v, want nil", err)
	}
	want := `{"model":"m","messages":[{"role":"user","content":"hi"}],` +
		`"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],` +
		`"tool_choice":"auto","temperature":0}`
	if string(got) != want {
		t.Errorf("Marshal: got %s, want %s", got, want)
	}
}

func TestUsageAdd(t *testing.T) {
	t.Parallel()
	got := Usage{1, 2, 3}.Add(Usage{10, 20, 30})
	if want := (Usage{11, 22, 33}); got != want {
		t.Errorf("Add: got %+v, want %+v", got, want)
	}
}

// FuzzDecodeResponse checks that decoding any body neither panics nor
// breaks the guarantees Chat documents, and that a decoded response
// survives an encode/decode round trip unchanged.
func FuzzDecodeResponse(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "responses", "*.json"))
	if err != nil {
		f.Fatal(err)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range []string{
		``, `null`, `{}`, `[]`, `"x"`, `{"choices":null}`, `{"choices":[{}]}`,
		`{"choices":[{"message":{"content":{"text":"one part"}}}]}`,
		`{"choices":[{"message":{"content":["a",null,{"text":1},{"text":"b"}]}}]}`,
		`{"choices":[{"message":{"tool_calls":[{"function":{"arguments":[1,2]}}]}}]}`,
		`{"choices":[{"message":{"tool_calls":[null]}}],"usage":null}`,
		`{"error":{"message":"m","type":"t","code":null}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := decodeResponse(data)
		if err != nil {
			if r != nil {
				t.Fatalf("decodeResponse: got response and error %v, want one of them", err)
			}
			return
		}
		if len(r.Choices) == 0 {
			t.Fatal("decodeResponse: got no choices, want at least one")
		}
		for _, c := range r.Choices {
			if c.Message.Role == "" {
				t.Error("decodeResponse: got an empty role, want a default")
			}
			for _, tc := range c.Message.ToolCalls {
				if tc.ID == "" || tc.Type == "" || tc.Function.Arguments == "" {
					t.Errorf("decodeResponse: got tool call %+v, want ID, Type and Arguments set", tc)
				}
			}
		}
		enc, err := json.Marshal(r)
		if err != nil {
			t.Fatalf("Marshal: got error %v, want nil", err)
		}
		again, err := decodeResponse(enc)
		if err != nil {
			t.Fatalf("decodeResponse(Marshal(r)): got error %v, want nil", err)
		}
		if !utf8.Valid(data) {
			return // invalid UTF-8 is replaced differently by the two paths
		}
		if diff := cmp.Diff(r, again); diff != "" {
			t.Errorf("round trip mismatch (-first +second):\n%s", diff)
		}
	})
}

// TestMessageWithImages: a message with images is sent as the
// OpenAI-compatible content parts (the text, then one image_url part per
// image) and decodes back; without images the content stays a string.
func TestMessageWithImages(t *testing.T) {
	t.Parallel()
	m := Message{Role: RoleUser, Content: "the page", Images: []string{"data:image/jpeg;base64,AAAA"}}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"role":"user","content":[{"type":"text","text":"the page"},{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,AAAA"}}]}`
	if string(b) != want {
		t.Fatalf("encoded:\n%s\nwant\n%s", b, want)
	}
	var back Message
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(m, back); diff != "" {
		t.Fatalf("decoded (-want +got):\n%s", diff)
	}
	b, _ = json.Marshal(Message{Role: RoleUser, Content: "text only"})
	if string(b) != `{"role":"user","content":"text only"}` {
		t.Fatalf("without images: %s", b)
	}
}
