package llmtest_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/llm"
	"github.com/duet-test/duet/internal/llm/llmtest"
	"github.com/google/go-cmp/cmp"
)

// recorder is a testing.TB that records Errorf calls instead of failing,
// so that the server's own failure reports can be tested.
type recorder struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func (r *recorder) errors() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.errs...)
}

func newClient(t *testing.T, srv *llmtest.Server) *llm.Client {
	t.Helper()
	c, err := llm.New(srv.Config())
	if err != nil {
		t.Fatalf("llm.New: got error %v, want nil", err)
	}
	return c
}

func ask(text string) llm.Request {
	return llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: text}}}
}

func TestServerScript(t *testing.T) {
	t.Parallel()
	var seen []string
	srv := llmtest.New(t,
		llmtest.Reply("one"),
		llmtest.Func(func(req llm.Request) llmtest.Turn {
			seen = append(seen, req.Messages[0].Content)
			return llmtest.ToolCalls(llmtest.Call("f", `{"x":1}`), llm.ToolCall{ID: "mine", Function: llm.FunctionCall{Name: "g"}})
		}),
		llmtest.Reply("three").WithoutUsage().WithFinishReason("length"),
	)
	c := newClient(t, srv)
	ctx := t.Context()

	r1, err := c.Chat(ctx, ask("first"))
	if err != nil {
		t.Fatalf("Chat 1: got error %v, want nil", err)
	}
	if got, want := r1.Choices[0].Message.Content, "one"; got != want {
		t.Errorf("Chat 1: got content %q, want %q", got, want)
	}
	wantUsage := llm.Usage{PromptTokens: llmtest.DefaultPromptTokens, CompletionTokens: llmtest.DefaultCompletionTokens,
		TotalTokens: llmtest.DefaultPromptTokens + llmtest.DefaultCompletionTokens}
	if r1.Usage != wantUsage {
		t.Errorf("Chat 1: got usage %+v, want %+v", r1.Usage, wantUsage)
	}
	if got, want := srv.Remaining(), 2; got != want {
		t.Errorf("Remaining: got %d, want %d", got, want)
	}

	r2, err := c.Chat(ctx, ask("second"))
	if err != nil {
		t.Fatalf("Chat 2: got error %v, want nil", err)
	}
	wantCalls := []llm.ToolCall{
		{ID: "call_2_0", Type: "function", Function: llm.FunctionCall{Name: "f", Arguments: `{"x":1}`}},
		{ID: "mine", Type: "function", Function: llm.FunctionCall{Name: "g", Arguments: "{}"}},
	}
	if diff := cmp.Diff(wantCalls, r2.Choices[0].Message.ToolCalls); diff != "" {
		t.Errorf("Chat 2 tool calls mismatch (-want +got):\n%s", diff)
	}
	if got, want := r2.Choices[0].FinishReason, "tool_calls"; got != want {
		t.Errorf("Chat 2: got finish reason %q, want %q", got, want)
	}

	r3, err := c.Chat(ctx, ask("third"))
	if err != nil {
		t.Fatalf("Chat 3: got error %v, want nil", err)
	}
	if r3.Usage != (llm.Usage{}) || r3.Choices[0].FinishReason != "length" {
		t.Errorf("Chat 3: got usage %+v and finish reason %q, want no usage and %q", r3.Usage, r3.Choices[0].FinishReason, "length")
	}

	if diff := cmp.Diff([]string{"second"}, seen); diff != "" {
		t.Errorf("Func saw mismatch (-want +got):\n%s", diff)
	}
	var texts []string
	for _, r := range srv.Requests() {
		texts = append(texts, r.Messages[0].Content)
	}
	if diff := cmp.Diff([]string{"first", "second", "third"}, texts); diff != "" {
		t.Errorf("Requests mismatch (-want +got):\n%s", diff)
	}
	for i, r := range srv.Received() {
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" || len(r.Body) == 0 {
			t.Errorf("Received[%d]: got %s with Content-Type %q and %d body bytes, want a JSON POST",
				i, r.Method, r.Header.Get("Content-Type"), len(r.Body))
		}
	}
	if got := srv.Remaining(); got != 0 {
		t.Errorf("Remaining: got %d, want 0", got)
	}
}

func TestServerPathsAndRawAnswers(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t,
		llmtest.Reply("a"),
		llmtest.RateLimited("7"),
		llmtest.Raw(0, `{"choices":[]}`),
	)
	post := func(path string) (*http.Response, string) {
		t.Helper()
		body := strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
		resp, err := http.Post(strings.TrimSuffix(srv.URL(), "/v1")+path, "application/json", body)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp, string(data)
	}

	resp, body := post("/chat/completions")
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"object":"chat.completion"`) {
		t.Errorf("POST /chat/completions: got %d %s, want 200 with a chat completion", resp.StatusCode, body)
	}
	resp, body = post("/v1/chat/completions")
	if got := resp.Header.Get("Retry-After"); resp.StatusCode != http.StatusTooManyRequests || got != "7" {
		t.Errorf("RateLimited: got %d with Retry-After %q, want 429 with %q", resp.StatusCode, got, "7")
	}
	var e struct {
		Error struct{ Message, Type, Code string }
	}
	if err := json.Unmarshal([]byte(body), &e); err != nil || e.Error.Code != "rate_limit_exceeded" || e.Error.Message == "" {
		t.Errorf("RateLimited body: got %s, want an OpenAI-style error", body)
	}
	resp, body = post("/v1/chat/completions")
	if resp.StatusCode != http.StatusOK || body != `{"choices":[]}` {
		t.Errorf("Raw: got %d %s, want 200 {\"choices\":[]}", resp.StatusCode, body)
	}
}

// TestServerFailures checks that misuse fails the test with a clear message.
func TestServerFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		do       func(t *testing.T, srv *llmtest.Server) error
		wantCode duet.Code
		wantErr  string // in the recorded test failure
	}{
		{
			name: "out of turns",
			do: func(t *testing.T, srv *llmtest.Server) error {
				_, err := newClient(t, srv).Chat(t.Context(), ask("one too many"))
				return err
			},
			wantCode: duet.CodeLLMError,
			wantErr:  `request 1 has no scripted turn (the script has 0); its last message: user: "one too many"`,
		},
		{
			name: "wrong path",
			do: func(t *testing.T, srv *llmtest.Server) error {
				cfg := srv.Config()
				cfg.BaseURL = strings.TrimSuffix(cfg.BaseURL, "/v1") + "/api"
				c, err := llm.New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				_, err = c.Chat(t.Context(), ask("hi"))
				return err
			},
			wantCode: duet.CodeLLMError,
			wantErr:  "got POST /api/chat/completions, want POST /v1/chat/completions",
		},
		{
			name: "not a chat request",
			do: func(t *testing.T, srv *llmtest.Server) error {
				resp, err := http.Post(srv.URL()+"/chat/completions", "application/json", strings.NewReader(`[1]`))
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				return nil
			},
			wantErr: "not a chat completion request",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := &recorder{TB: t}
			srv := llmtest.New(rec)
			err := tt.do(t, srv)
			if code := duet.ErrorCode(err); code != tt.wantCode {
				t.Errorf("Chat: got code %q (error %v), want %q", code, err, tt.wantCode)
			}
			errs := rec.errors()
			if len(errs) != 1 || !strings.Contains(errs[0], tt.wantErr) {
				t.Errorf("test failures: got %q, want one containing %q", errs, tt.wantErr)
			}
			if got := len(srv.Received()); got != 1 {
				t.Errorf("Received: got %d requests, want 1 (not retried)", got)
			}
		})
	}
}

func TestAssertNotSent(t *testing.T) {
	t.Parallel()
	const secret = `pa<ss>"word&1`
	tests := []struct {
		name    string
		msg     llm.Message
		wantErr string
	}{
		{"clean", llm.Message{Role: llm.RoleTool, Content: "order 42 is paid", ToolCallID: "c"}, ""},
		{"in a tool result", llm.Message{Role: llm.RoleTool, Content: "token=" + secret, ToolCallID: "c"}, "request 1 sent a secret"},
		{"in tool call arguments", llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{llmtest.Call("login", `{"p":"`+strings.ReplaceAll(secret, `"`, `\"`)+`"}`)}}, "request 1 sent a secret"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := &recorder{TB: t}
			srv := llmtest.New(rec, llmtest.Reply("ok"))
			req := ask("check the order")
			req.Messages = append(req.Messages, tt.msg)
			if _, err := newClient(t, srv).Chat(t.Context(), req); err != nil {
				t.Fatalf("Chat: got error %v, want nil", err)
			}
			srv.AssertNotSent(secret, "")
			errs := rec.errors()
			switch {
			case tt.wantErr == "" && len(errs) != 0:
				t.Errorf("AssertNotSent: got failures %q, want none", errs)
			case tt.wantErr != "" && (len(errs) != 1 || !strings.Contains(errs[0], tt.wantErr)):
				t.Errorf("AssertNotSent: got failures %q, want one containing %q", errs, tt.wantErr)
			}
			for _, e := range errs {
				if strings.Contains(e, secret) {
					t.Errorf("AssertNotSent: got failure %q, want it not to repeat the secret", e)
				}
			}
		})
	}
}

func TestServerAdd(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t)
	srv.Add(llmtest.Reply("late addition"))
	resp, err := newClient(t, srv).Chat(t.Context(), ask("hi"))
	if err != nil {
		t.Fatalf("Chat: got error %v, want nil", err)
	}
	if got, want := resp.Choices[0].Message.Content, "late addition"; got != want {
		t.Errorf("Chat: got %q, want %q", got, want)
	}
}
