package llm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/llm"
	"github.com/duet-test/duet/internal/llm/llmtest"
	"github.com/google/go-cmp/cmp"
)

// newClient returns a Client for srv with cfg's changes applied by edit.
func newClient(t *testing.T, srv *llmtest.Server, edit func(*llm.Config)) *llm.Client {
	t.Helper()
	cfg := srv.Config()
	if edit != nil {
		edit(&cfg)
	}
	c, err := llm.New(cfg)
	if err != nil {
		t.Fatalf("New: got error %v, want nil", err)
	}
	return c
}

func userRequest(text string) llm.Request {
	return llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: text}}}
}

// TestChatToolRoundTrip drives a two-turn tool-calling exchange and checks
// both what the server received and what the client returned.
func TestChatToolRoundTrip(t *testing.T) {
	t.Parallel()
	readFile := llm.Tool{Function: llm.FunctionDef{
		Name:        "read_file",
		Description: "Reads a file.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`),
	}}
	srv := llmtest.New(t,
		llmtest.ToolCalls(llmtest.Call("read_file", `{"path":"a.txt"}`)).
			WithUsage(llm.Usage{PromptTokens: 50, CompletionTokens: 7, TotalTokens: 57}),
		llmtest.Func(func(req llm.Request) llmtest.Turn {
			last := req.Messages[len(req.Messages)-1]
			want := llm.Message{Role: llm.RoleTool, Content: "hello from a.txt", ToolCallID: "call_1_0"}
			if diff := cmp.Diff(want, last); diff != "" {
				t.Errorf("tool result sent back mismatch (-want +got):\n%s", diff)
			}
			return llmtest.Reply("The file says hello.")
		}),
	)
	c := newClient(t, srv, func(cfg *llm.Config) { cfg.APIKey = testKey })
	ctx := t.Context()

	req := llm.Request{
		Messages:    []llm.Message{{Role: llm.RoleSystem, Content: "You write tests."}, {Role: llm.RoleUser, Content: "Read a.txt"}},
		Tools:       []llm.Tool{readFile},
		ToolChoice:  "auto",
		Temperature: new(0.2),
	}
	resp, err := c.Chat(ctx, req)
	if err != nil {
		t.Fatalf("Chat 1: got error %v, want nil", err)
	}
	wantMsg := llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "call_1_0", Type: "function",
		Function: llm.FunctionCall{Name: "read_file", Arguments: `{"path":"a.txt"}`}}}}
	if diff := cmp.Diff(wantMsg, resp.Choices[0].Message); diff != "" {
		t.Errorf("Chat 1 message mismatch (-want +got):\n%s", diff)
	}
	if got, want := resp.Choices[0].FinishReason, "tool_calls"; got != want {
		t.Errorf("Chat 1 finish reason: got %q, want %q", got, want)
	}
	if got, want := resp.Usage, (llm.Usage{PromptTokens: 50, CompletionTokens: 7, TotalTokens: 57}); got != want {
		t.Errorf("Chat 1 usage: got %+v, want %+v", got, want)
	}

	req.Messages = append(req.Messages, resp.Choices[0].Message,
		llm.Message{Role: llm.RoleTool, Content: "hello from a.txt", ToolCallID: resp.Choices[0].Message.ToolCalls[0].ID})
	resp, err = c.Chat(ctx, req)
	if err != nil {
		t.Fatalf("Chat 2: got error %v, want nil", err)
	}
	if got, want := resp.Choices[0].Message.Content, "The file says hello."; got != want {
		t.Errorf("Chat 2 content: got %q, want %q", got, want)
	}
	if got, want := resp.Attempts, 1; got != want {
		t.Errorf("Chat 2 attempts: got %d, want %d", got, want)
	}

	received := srv.Received()
	if got, want := len(received), 2; got != want {
		t.Fatalf("requests received: got %d, want %d", got, want)
	}
	for i, r := range received {
		if got, want := r.Header.Get("Authorization"), "Bearer "+testKey; got != want {
			t.Errorf("request %d Authorization: got %q, want %q", i+1, got, want)
		}
		if got, want := r.Header.Get("Content-Type"), "application/json"; got != want {
			t.Errorf("request %d Content-Type: got %q, want %q", i+1, got, want)
		}
		if got, want := r.Path, "/v1/chat/completions"; got != want {
			t.Errorf("request %d path: got %q, want %q", i+1, got, want)
		}
		if got, want := r.Request.Model, llmtest.Model; got != want {
			t.Errorf("request %d model: got %q, want %q", i+1, got, want)
		}
		if diff := cmp.Diff([]llm.Tool{{Type: "function", Function: readFile.Function}}, r.Request.Tools); diff != "" {
			t.Errorf("request %d tools mismatch (-want +got):\n%s", i+1, diff)
		}
		if r.Request.Temperature == nil || *r.Request.Temperature != 0.2 {
			t.Errorf("request %d temperature: got %v, want 0.2", i+1, r.Request.Temperature)
		}
	}
	if !bytes.Contains(received[1].Body, []byte(`"content":null,"tool_calls"`)) {
		t.Errorf("request 2 body: got %s, want the assistant tool-call message with null content", received[1].Body)
	}

	wantStats := llm.Stats{Calls: 2, Attempts: 2, Usage: llm.Usage{PromptTokens: 60, CompletionTokens: 12, TotalTokens: 72}}
	if diff := cmp.Diff(wantStats, c.Stats()); diff != "" {
		t.Errorf("Stats mismatch (-want +got):\n%s", diff)
	}
	srv.AssertNotSent(testKey)
}

// TestChatRetries covers which failures are retried and how they end.
func TestChatRetries(t *testing.T) {
	t.Parallel()
	const keyEcho = "Incorrect API key provided: " + testKey
	tests := []struct {
		name         string
		turns        []llmtest.Turn
		maxRetries   int
		wantCode     duet.Code // "" for success
		wantRequests int
		wantText     []string // substrings of the error message
		wantContent  string
	}{
		{
			name:         "429 then success",
			turns:        []llmtest.Turn{llmtest.RateLimited(""), llmtest.Reply("ok")},
			wantRequests: 2,
			wantContent:  "ok",
		},
		{
			name:         "5xx then success",
			turns:        []llmtest.Turn{llmtest.Error(502, "bad gateway"), llmtest.Error(503, "overloaded"), llmtest.Reply("ok")},
			wantRequests: 3,
			wantContent:  "ok",
		},
		{
			name:         "408 retried",
			turns:        []llmtest.Turn{llmtest.Error(408, "slow upload"), llmtest.Reply("ok")},
			wantRequests: 2,
			wantContent:  "ok",
		},
		{
			name:         "connection dropped then success",
			turns:        []llmtest.Turn{llmtest.Disconnect(), llmtest.Reply("ok")},
			wantRequests: 2,
			wantContent:  "ok",
		},
		{
			name:         "500 every time",
			turns:        []llmtest.Turn{llmtest.Error(500, "boom"), llmtest.Error(500, "boom"), llmtest.Error(500, "boom")},
			maxRetries:   2,
			wantCode:     duet.CodeLLMError,
			wantRequests: 3,
			wantText:     []string{"HTTP 500", "boom", "after 3 attempts"},
		},
		{
			name:         "429 every time",
			turns:        []llmtest.Turn{llmtest.RateLimited(""), llmtest.RateLimited("")},
			maxRetries:   1,
			wantCode:     duet.CodeRateLimited,
			wantRequests: 2,
			wantText:     []string{"HTTP 429", "Rate limit reached", "after 2 attempts"},
		},
		{
			name:         "default MaxRetries is 4",
			turns:        []llmtest.Turn{llmtest.Error(503, "x"), llmtest.Error(503, "x"), llmtest.Error(503, "x"), llmtest.Error(503, "x"), llmtest.Error(503, "x")},
			wantCode:     duet.CodeLLMError,
			wantRequests: 5,
			wantText:     []string{"after 5 attempts"},
		},
		{
			name:         "negative MaxRetries means none",
			turns:        []llmtest.Turn{llmtest.Error(503, "x")},
			maxRetries:   -1,
			wantCode:     duet.CodeLLMError,
			wantRequests: 1,
		},
		{
			name:         "400 not retried",
			turns:        []llmtest.Turn{llmtest.Error(400, "Invalid 'messages[1].content'")},
			wantCode:     duet.CodeLLMError,
			wantRequests: 1,
			wantText:     []string{"HTTP 400 Bad Request", "Invalid 'messages[1].content'", "invalid_request_error"},
		},
		{
			name:         "401 not retried, key redacted, hint given",
			turns:        []llmtest.Turn{llmtest.Error(401, keyEcho)},
			wantCode:     duet.CodeLLMError,
			wantRequests: 1,
			wantText:     []string{"HTTP 401", "Incorrect API key provided: [REDACTED]", "DUET_LLM_API_KEY"},
		},
		{
			name:         "404 names the settings",
			turns:        []llmtest.Turn{llmtest.Raw(404, "404 page not found")},
			wantCode:     duet.CodeLLMError,
			wantRequests: 1,
			wantText:     []string{"HTTP 404", "404 page not found", "DUET_LLM_BASE_URL", "DUET_LLM_MODEL"},
		},
		{
			name:         "501 not retried",
			turns:        []llmtest.Turn{llmtest.Error(501, "no")},
			wantCode:     duet.CodeLLMError,
			wantRequests: 1,
		},
		{
			name: "spent quota not retried",
			turns: []llmtest.Turn{llmtest.Raw(429,
				`{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}`)},
			wantCode:     duet.CodeRateLimited,
			wantRequests: 1,
			wantText:     []string{"exceeded your current quota"},
		},
		{
			name:         "Retry-After beyond the limit ends retries",
			turns:        []llmtest.Turn{llmtest.RateLimited("3600")},
			wantCode:     duet.CodeRateLimited,
			wantRequests: 1,
			wantText:     []string{"retry after 1h0m0s", "more than the 1m0s limit"},
		},
		{
			name:         "error body with status 200",
			turns:        []llmtest.Turn{llmtest.Raw(200, `{"error":{"message":"upstream failed","code":502}}`)},
			wantCode:     duet.CodeLLMError,
			wantRequests: 1,
			wantText:     []string{"upstream failed"},
		},
		{
			name:         "HTML with status 200",
			turns:        []llmtest.Turn{llmtest.Raw(200, `<html>login</html>`)},
			wantCode:     duet.CodeLLMError,
			wantRequests: 1,
			wantText:     []string{"not a chat completion", "DUET_LLM_BASE_URL"},
		},
		{
			name:         "no choices",
			turns:        []llmtest.Turn{llmtest.Raw(200, `{"id":"x","choices":[]}`)},
			wantCode:     duet.CodeLLMError,
			wantRequests: 1,
			wantText:     []string{"no choices"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.New(t, tt.turns...)
			c := newClient(t, srv, func(cfg *llm.Config) {
				cfg.APIKey = testKey
				cfg.MaxRetries = tt.maxRetries
			})
			resp, err := c.Chat(t.Context(), userRequest("hi"))
			if code := duet.ErrorCode(err); code != tt.wantCode {
				t.Fatalf("Chat: got code %q (error %v), want %q", code, err, tt.wantCode)
			}
			if got := len(srv.Requests()); got != tt.wantRequests {
				t.Errorf("requests received: got %d, want %d", got, tt.wantRequests)
			}
			stats := c.Stats()
			if stats.Attempts != tt.wantRequests || stats.Retries != tt.wantRequests-1 {
				t.Errorf("Stats: got %d attempts and %d retries, want %d and %d",
					stats.Attempts, stats.Retries, tt.wantRequests, tt.wantRequests-1)
			}
			if err != nil {
				msg := duet.ErrorMessage(err)
				for _, s := range tt.wantText {
					if !strings.Contains(msg, s) {
						t.Errorf("Chat: got message %q, want it to contain %q", msg, s)
					}
				}
				if s := fmt.Sprintf("%v %+v", err, err); strings.Contains(s, testKey) {
					t.Errorf("Chat: got error %q, want no API key in it", s)
				}
				if stats.Failures != 1 {
					t.Errorf("Stats.Failures: got %d, want 1", stats.Failures)
				}
				return
			}
			if got := resp.Choices[0].Message.Content; got != tt.wantContent {
				t.Errorf("Chat: got content %q, want %q", got, tt.wantContent)
			}
			if resp.Attempts != tt.wantRequests {
				t.Errorf("Response.Attempts: got %d, want %d", resp.Attempts, tt.wantRequests)
			}
		})
	}
}

// TestChatRetryAfterHonoured checks that the client waits as long as the
// server asks, in each of the header forms.
func TestChatRetryAfterHonoured(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		turn llmtest.Turn
		want time.Duration
	}{
		{"Retry-After seconds", llmtest.RateLimited("1"), time.Second},
		{"retry-after-ms", llmtest.RateLimited("").WithHeader("retry-after-ms", "300"), 300 * time.Millisecond},
		{"503 with Retry-After", llmtest.Error(503, "busy").WithHeader("Retry-After", "1"), time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.New(t, tt.turn, llmtest.Reply("ok"))
			// A long backoff base shows that Retry-After, not backoff, set the wait.
			c := newClient(t, srv, func(cfg *llm.Config) { cfg.RetryBaseWait = time.Minute })
			start := time.Now()
			resp, err := c.Chat(t.Context(), userRequest("hi"))
			elapsed := time.Since(start)
			if err != nil {
				t.Fatalf("Chat: got error %v, want nil", err)
			}
			if resp.Attempts != 2 {
				t.Errorf("Response.Attempts: got %d, want 2", resp.Attempts)
			}
			if elapsed < tt.want || elapsed > tt.want+5*time.Second {
				t.Errorf("Chat took %v, want about %v", elapsed, tt.want)
			}
		})
	}
}

func TestChatTimeouts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		timeout  time.Duration          // Config.Timeout
		ctx      func() context.Context // the caller's context
		wantText string
	}{
		{
			name:     "attempt timeout, not retried",
			timeout:  100 * time.Millisecond,
			ctx:      context.Background,
			wantText: "did not answer within 100ms",
		},
		{
			name:    "caller deadline",
			timeout: time.Minute,
			ctx: func() context.Context {
				ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
				t.Cleanup(cancel)
				return ctx
			},
			wantText: "caller's deadline",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.New(t, llmtest.Reply("late").WithDelay(time.Minute))
			c := newClient(t, srv, func(cfg *llm.Config) { cfg.Timeout = tt.timeout })
			start := time.Now()
			_, err := c.Chat(tt.ctx(), userRequest("hi"))
			if code := duet.ErrorCode(err); code != duet.CodeTimeout {
				t.Fatalf("Chat: got code %q (error %v), want %q", code, err, duet.CodeTimeout)
			}
			if msg := duet.ErrorMessage(err); !strings.Contains(msg, tt.wantText) {
				t.Errorf("Chat: got message %q, want it to contain %q", msg, tt.wantText)
			}
			if elapsed := time.Since(start); elapsed > 5*time.Second {
				t.Errorf("Chat took %v, want about 100ms", elapsed)
			}
			if got := len(srv.Requests()); got != 1 {
				t.Errorf("requests received: got %d, want 1", got)
			}
		})
	}
}

// TestChatTimeoutMidBody checks that the attempt timeout also covers
// reading the body, for a server that sends headers and then stalls.
func TestChatTimeoutMidBody(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		w.Write([]byte(`{"choices":[`))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	c, err := llm.New(llm.Config{BaseURL: srv.URL + "/v1", Model: "m", Timeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Chat(t.Context(), userRequest("hi"))
	if code := duet.ErrorCode(err); code != duet.CodeTimeout {
		t.Fatalf("Chat: got code %q (error %v), want %q", code, err, duet.CodeTimeout)
	}
	if got := c.Stats().Attempts; got != 1 {
		t.Errorf("Stats.Attempts: got %d, want 1", got)
	}
}

// TestChatCancel checks that cancelling the context ends a call promptly,
// whether it is waiting out a backoff or waiting for an answer.
func TestChatCancel(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		turns []llmtest.Turn
	}{
		{"during backoff", []llmtest.Turn{llmtest.Error(503, "busy").WithHeader("Retry-After", "30")}},
		{"during a request", []llmtest.Turn{llmtest.Reply("late").WithDelay(time.Minute)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.New(t, tt.turns...)
			c := newClient(t, srv, nil)
			ctx, cancel := context.WithCancel(t.Context())
			time.AfterFunc(200*time.Millisecond, cancel)
			start := time.Now()
			_, err := c.Chat(ctx, userRequest("hi"))
			if code := duet.ErrorCode(err); code != duet.CodeCancelled {
				t.Fatalf("Chat: got code %q (error %v), want %q", code, err, duet.CodeCancelled)
			}
			if !errors.Is(err, context.Canceled) {
				t.Errorf("Chat: got error %v, want it to wrap context.Canceled", err)
			}
			if elapsed := time.Since(start); elapsed > 3*time.Second {
				t.Errorf("Chat took %v after a cancel at 200ms, want it to return promptly", elapsed)
			}
		})
	}

	t.Run("already cancelled", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.New(t)
		c := newClient(t, srv, nil)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := c.Chat(ctx, userRequest("hi"))
		if code := duet.ErrorCode(err); code != duet.CodeCancelled {
			t.Fatalf("Chat: got code %q (error %v), want %q", code, err, duet.CodeCancelled)
		}
		if got := c.Stats(); got.Attempts != 0 || got.Failures != 1 {
			t.Errorf("Stats: got %+v, want 0 attempts and 1 failure", got)
		}
	})
}

// TestChatConnectionRefused checks that a dead endpoint is retried and then
// reported with its address.
func TestChatConnectionRefused(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()

	c, err := llm.New(llm.Config{BaseURL: "http://user:hunter2@" + addr + "/v1", Model: "m", APIKey: testKey,
		MaxRetries: 2, RetryBaseWait: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Chat(t.Context(), userRequest("hi"))
	if code := duet.ErrorCode(err); code != duet.CodeLLMError {
		t.Fatalf("Chat: got code %q (error %v), want %q", code, err, duet.CodeLLMError)
	}
	msg := duet.ErrorMessage(err)
	for _, want := range []string{"cannot reach the LLM endpoint at http://user:xxxxx@" + addr + "/v1/chat/completions", "after 3 attempts"} {
		if !strings.Contains(msg, want) {
			t.Errorf("Chat: got message %q, want it to contain %q", msg, want)
		}
	}
	for _, secret := range []string{testKey, "hunter2"} {
		if strings.Contains(err.Error(), secret) {
			t.Errorf("Chat: got error %q, want no %q in it", err, secret)
		}
	}
	if got := c.Stats().Attempts; got != 3 {
		t.Errorf("Stats.Attempts: got %d, want 3", got)
	}
}

func TestChatInvalidRequest(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		req  llm.Request
	}{
		{"no messages", llm.Request{}},
		{"bad parameters schema", llm.Request{
			Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}},
			Tools:    []llm.Tool{{Function: llm.FunctionDef{Name: "f", Parameters: json.RawMessage(`{not json`)}}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.New(t)
			c := newClient(t, srv, nil)
			_, err := c.Chat(t.Context(), tt.req)
			if code := duet.ErrorCode(err); code != duet.CodeInvalidArgument {
				t.Fatalf("Chat: got code %q (error %v), want %q", code, err, duet.CodeInvalidArgument)
			}
			if got := len(srv.Requests()); got != 0 {
				t.Errorf("requests received: got %d, want 0", got)
			}
		})
	}
}

// TestChatResponseVariations runs real-world response shapes through the
// whole client.
func TestChatResponseVariations(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		body      string
		wantMsg   llm.Message
		wantUsage llm.Usage
	}{
		{
			name:      "null content",
			body:      `{"id":"a","choices":[{"index":0,"message":{"role":"assistant","content":null},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":0,"total_tokens":1}}`,
			wantMsg:   llm.Message{Role: "assistant"},
			wantUsage: llm.Usage{PromptTokens: 1, TotalTokens: 1},
		},
		{
			name:    "content parts",
			body:    `{"id":"b","choices":[{"index":0,"message":{"role":"assistant","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}}]}`,
			wantMsg: llm.Message{Role: "assistant", Content: "ab"},
		},
		{
			name:    "no usage (Ollama)",
			body:    `{"id":"c","object":"chat.completion","model":"qwen3:8b","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`,
			wantMsg: llm.Message{Role: "assistant", Content: "hi"},
		},
		{
			name: "tool call without type or id, arguments as an object, extra fields",
			body: `{"id":"d","x_extra":{"a":1},"choices":[{"index":0,"logprobs":null,"message":{"content":"","tool_calls":[{"index":0,"function":{"name":"f","arguments":{"a":1}}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":2,"completion_tokens":3}}`,
			wantMsg: llm.Message{Role: "assistant", ToolCalls: []llm.ToolCall{
				{ID: "call_0_0", Type: "function", Function: llm.FunctionCall{Name: "f", Arguments: `{"a":1}`}}}},
			wantUsage: llm.Usage{PromptTokens: 2, CompletionTokens: 3, TotalTokens: 5},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.New(t, llmtest.Raw(200, tt.body))
			resp, err := newClient(t, srv, nil).Chat(t.Context(), userRequest("hi"))
			if err != nil {
				t.Fatalf("Chat: got error %v, want nil", err)
			}
			if diff := cmp.Diff(tt.wantMsg, resp.Choices[0].Message); diff != "" {
				t.Errorf("message mismatch (-want +got):\n%s", diff)
			}
			if resp.Usage != tt.wantUsage {
				t.Errorf("usage: got %+v, want %+v", resp.Usage, tt.wantUsage)
			}
		})
	}
}

// TestChatBaseURLForms checks the URL the client posts to.
func TestChatBaseURLForms(t *testing.T) {
	t.Parallel()
	tests := []struct {
		suffix   string // appended to the server's root URL
		wantPath string
		wantRaw  string
	}{
		{"/v1", "/v1/chat/completions", ""},
		{"/v1/", "/v1/chat/completions", ""},
		{"/v1/chat/completions", "/v1/chat/completions", ""},
		{"", "/chat/completions", ""},
		{"/openai/deployments/gpt?api-version=2024-10-21", "/openai/deployments/gpt/chat/completions", "api-version=2024-10-21"},
	}
	for _, tt := range tests {
		t.Run(tt.suffix, func(t *testing.T) {
			t.Parallel()
			var gotPath, gotQuery string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				gotPath, gotQuery = r.URL.Path, r.URL.RawQuery
				w.Write([]byte(`{"choices":[{"message":{"content":"ok"}}]}`))
			}))
			t.Cleanup(srv.Close)
			c, err := llm.New(llm.Config{BaseURL: srv.URL + tt.suffix, Model: "m"})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Chat(t.Context(), userRequest("hi")); err != nil {
				t.Fatalf("Chat: got error %v, want nil", err)
			}
			if gotPath != tt.wantPath || gotQuery != tt.wantRaw {
				t.Errorf("request URL: got %q?%q, want %q?%q", gotPath, gotQuery, tt.wantPath, tt.wantRaw)
			}
		})
	}
}

// TestChatRedirectNotFollowed checks that a redirect is reported rather than
// followed as a GET.
func TestChatRedirectNotFollowed(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "https://llm.example/v1/chat/completions", http.StatusMovedPermanently)
	}))
	t.Cleanup(srv.Close)
	c, err := llm.New(llm.Config{BaseURL: srv.URL + "/v1", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Chat(t.Context(), userRequest("hi"))
	if code := duet.ErrorCode(err); code != duet.CodeLLMError {
		t.Fatalf("Chat: got code %q (error %v), want %q", code, err, duet.CodeLLMError)
	}
	if msg, want := duet.ErrorMessage(err), "redirects to https://llm.example/v1/chat/completions"; !strings.Contains(msg, want) {
		t.Errorf("Chat: got message %q, want it to contain %q", msg, want)
	}
}

// TestChatLogging checks that the logger gets status, attempt and duration,
// and never bodies or the key.
func TestChatLogging(t *testing.T) {
	t.Parallel()
	const prompt = "PROMPT-TEXT-do-not-log"
	const answer = "ANSWER-TEXT-do-not-log"
	srv := llmtest.New(t, llmtest.Error(500, "ERROR-BODY-do-not-log"), llmtest.Reply(answer))
	var buf bytes.Buffer
	c := newClient(t, srv, func(cfg *llm.Config) {
		cfg.APIKey = testKey
		cfg.Logger = slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	if _, err := c.Chat(t.Context(), userRequest(prompt)); err != nil {
		t.Fatalf("Chat: got error %v, want nil", err)
	}
	logs := buf.String()
	for _, want := range []string{`"attempt":1`, `"attempt":2`, `"status":500`, `"status":200`, `"duration"`, `"llm: retrying chat completion"`} {
		if !strings.Contains(logs, want) {
			t.Errorf("logs: got %s, want them to contain %s", logs, want)
		}
	}
	for _, secret := range []string{prompt, answer, "ERROR-BODY-do-not-log", testKey} {
		if strings.Contains(logs, secret) {
			t.Errorf("logs: got %s, want no %q in them", logs, secret)
		}
	}
}

// TestChatConcurrent checks that one Client serves concurrent calls and
// counts them all (run with -race).
func TestChatConcurrent(t *testing.T) {
	t.Parallel()
	const n = 8
	turns := make([]llmtest.Turn, n)
	for i := range turns {
		turns[i] = llmtest.Reply("ok")
	}
	srv := llmtest.New(t, turns...)
	c := newClient(t, srv, nil)
	errs := make(chan error, n)
	for range n {
		go func() {
			_, err := c.Chat(t.Context(), userRequest("hi"))
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Errorf("Chat: got error %v, want nil", err)
		}
	}
	want := llm.Stats{Calls: n, Attempts: n, Usage: llm.Usage{
		PromptTokens:     n * llmtest.DefaultPromptTokens,
		CompletionTokens: n * llmtest.DefaultCompletionTokens,
		TotalTokens:      n * (llmtest.DefaultPromptTokens + llmtest.DefaultCompletionTokens),
	}}
	if diff := cmp.Diff(want, c.Stats()); diff != "" {
		t.Errorf("Stats mismatch (-want +got):\n%s", diff)
	}
}
