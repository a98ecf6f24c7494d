// Package llmtest provides a scripted OpenAI-compatible chat-completions
// server for tests of code that uses package llm.
//
// A test scripts the server's answers as Turns, served in order, one per
// request, and afterwards asserts on the requests it received:
//
//	srv := llmtest.New(t,
//		llmtest.ToolCalls(llmtest.Call("read_file", `{"path":"a.txt"}`)),
//		llmtest.Func(func(req llm.Request) llmtest.Turn {
//			last := req.Messages[len(req.Messages)-1]
//			if last.Role != llm.RoleTool {
//				t.Errorf("got last role %q, want %q", last.Role, llm.RoleTool)
//			}
//			return llmtest.Reply("done")
//		}),
//	)
//	client, err := llm.New(srv.Config())
//	...
//	srv.AssertNotSent("s3cr3t")
package llmtest

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/duet-test/duet/internal/llm"
)

// Model is the model name that Server.Config sets.
const Model = "llmtest-model"

// Token counts reported for a reply Turn that sets no usage.
const (
	DefaultPromptTokens     = 10
	DefaultCompletionTokens = 5
)

// Turn is one scripted answer. Build it with Reply, ToolCalls, Error,
// RateLimited, Raw, Disconnect or Func, and adjust it with the With
// methods. The zero Turn replies with empty assistant content.
type Turn struct {
	content      string
	toolCalls    []llm.ToolCall
	finishReason string
	usage        *llm.Usage
	omitUsage    bool
	status       int    // an error status, or Raw's status
	errMessage   string // for Error and RateLimited
	raw          *string
	header       http.Header
	delay        time.Duration
	disconnect   bool
	fn           func(llm.Request) Turn
}

// Reply returns a Turn that answers with assistant text content and finish
// reason "stop".
func Reply(content string) Turn { return Turn{content: content} }

// ToolCalls returns a Turn that answers with an assistant message calling
// tools (content null, finish reason "tool_calls"). Calls without an ID get
// "call_<n>_<i>", where n numbers the requests received from 1 and i the
// calls from 0: the first call answering the first request is "call_1_0".
func ToolCalls(calls ...llm.ToolCall) Turn { return Turn{toolCalls: calls} }

// Call returns a call of the function name with arguments, JSON text sent
// as is (so a test can script malformed arguments too).
func Call(name, arguments string) llm.ToolCall {
	return llm.ToolCall{Type: llm.ToolTypeFunction, Function: llm.FunctionCall{Name: name, Arguments: arguments}}
}

// Error returns a Turn that answers with HTTP status, 400 or more, and an
// OpenAI-style error body {"error":{"message","type","code"}}.
func Error(status int, message string) Turn {
	return Turn{status: status, errMessage: message}
}

// RateLimited returns a Turn that answers HTTP 429 with an OpenAI-style
// error body and, when retryAfter is not empty, a Retry-After header with
// that value (seconds, or an HTTP date).
func RateLimited(retryAfter string) Turn {
	t := Error(http.StatusTooManyRequests, "Rate limit reached for requests")
	if retryAfter != "" {
		t = t.WithHeader("Retry-After", retryAfter)
	}
	return t
}

// Raw returns a Turn that answers with status (0 means 200) and body
// exactly, with Content-Type application/json, for response shapes the
// other constructors do not make.
func Raw(status int, body string) Turn { return Turn{status: status, raw: &body} }

// Disconnect returns a Turn that closes the connection without answering,
// as a crashing server or a reset connection does.
func Disconnect() Turn { return Turn{disconnect: true} }

// Func returns a Turn decided by f from the decoded request, so a test can
// check what was sent (a tool result, a compiler error) and answer
// accordingly. f runs on the server's goroutine: report problems with
// t.Errorf, not t.Fatal.
func Func(f func(req llm.Request) Turn) Turn { return Turn{fn: f} }

// WithHeader returns t with a response header added.
func (t Turn) WithHeader(key, value string) Turn {
	h := make(http.Header)
	maps.Copy(h, t.header)
	h.Add(key, value)
	t.header = h
	return t
}

// WithUsage returns t reporting usage u instead of the defaults.
func (t Turn) WithUsage(u llm.Usage) Turn {
	t.usage, t.omitUsage = &u, false
	return t
}

// WithoutUsage returns t with no "usage" in the response, as some local
// servers answer.
func (t Turn) WithoutUsage() Turn {
	t.usage, t.omitUsage = nil, true
	return t
}

// WithFinishReason returns t with finish reason r.
func (t Turn) WithFinishReason(r string) Turn {
	t.finishReason = r
	return t
}

// WithDelay returns t answered after d, or never if the client gives up
// first (use it to make a client time out).
func (t Turn) WithDelay(d time.Duration) Turn {
	t.delay = d
	return t
}

// Received is one request the server received.
type Received struct {
	Method  string
	Path    string
	Header  http.Header
	Body    []byte      // raw body
	Request llm.Request // decoded body; zero when it did not decode
}

// Server is a scripted chat-completions server on 127.0.0.1, closed when
// the test ends. It answers POST /v1/chat/completions and
// POST /chat/completions.
type Server struct {
	t   testing.TB
	srv *httptest.Server

	mu       sync.Mutex
	turns    []Turn
	next     int
	received []Received
}

// New starts a Server answering with turns in order. A request beyond the
// last turn, a request to another path, or a body that is not a chat
// request fails the test (with t.Errorf) and is answered with an HTTP 4xx
// error that llm.Client does not retry.
func New(t testing.TB, turns ...Turn) *Server {
	t.Helper()
	s := &Server{t: t, turns: turns}
	s.srv = httptest.NewServer(http.HandlerFunc(s.handle))
	t.Cleanup(s.srv.Close)
	return s
}

// URL returns the base URL, ending in /v1, for llm.Config.BaseURL.
func (s *Server) URL() string { return s.srv.URL + "/v1" }

// Config returns a Config for the server: its URL, Model, its HTTP client,
// and a 1ms RetryBaseWait so that retries do not slow tests down. Every
// other field is zero (defaults); set APIKey or Timeout as the test needs.
func (s *Server) Config() llm.Config {
	return llm.Config{
		BaseURL:       s.URL(),
		Model:         Model,
		RetryBaseWait: time.Millisecond,
		HTTPClient:    s.srv.Client(),
	}
}

// Add appends turns to the script.
func (s *Server) Add(turns ...Turn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.turns = append(s.turns, turns...)
}

// Remaining returns how many scripted turns have not been served.
func (s *Server) Remaining() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.turns) - s.next
}

// Requests returns the decoded chat requests received so far, in order.
func (s *Server) Requests() []llm.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	reqs := make([]llm.Request, len(s.received))
	for i, r := range s.received {
		reqs[i] = r.Request
	}
	return reqs
}

// Received returns every request received so far, in order, with raw
// bodies and headers.
func (s *Server) Received() []Received {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Received, len(s.received))
	for i, r := range s.received {
		r.Header = r.Header.Clone()
		r.Body = bytes.Clone(r.Body)
		out[i] = r
	}
	return out
}

// AssertNotSent fails the test for every secret that appears in a request
// body received so far (prompts, tool results, tool schemas): as raw text,
// JSON-escaped, or in a message's content or tool call arguments, including
// inside JSON they hold. Headers are not checked: the API
// key belongs in Authorization. Call it from the test goroutine.
func (s *Server) AssertNotSent(secrets ...string) {
	s.t.Helper()
	for i, r := range s.Received() {
		for _, secret := range secrets {
			if secret == "" {
				continue
			}
			if where := find(r, secret); where != "" {
				s.t.Errorf("llmtest: request %d sent a secret in %s; want it never sent to the model", i+1, where)
			}
		}
	}
}

// find says where secret occurs in r, or "" if nowhere.
func find(r Received, secret string) string {
	if bytes.Contains(r.Body, []byte(secret)) {
		return "the raw body"
	}
	if bytes.Contains(r.Body, []byte(jsonEscape(secret))) {
		return "the JSON-escaped body"
	}
	for j, m := range r.Request.Messages {
		if containsSecret(m.Content, secret) {
			return fmt.Sprintf("message %d (%s)", j+1, m.Role)
		}
		for _, c := range m.ToolCalls {
			if containsSecret(c.Function.Arguments, secret) {
				return fmt.Sprintf("the tool call arguments of message %d", j+1)
			}
		}
	}
	return ""
}

// containsSecret reports whether text holds secret as is, JSON-escaped, or
// in any string of the JSON value text may be (tool results and arguments
// usually are JSON, so a secret in them is escaped twice in the body).
func containsSecret(text, secret string) bool {
	if strings.Contains(text, secret) || strings.Contains(text, jsonEscape(secret)) {
		return true
	}
	var v any
	if json.Unmarshal([]byte(text), &v) != nil {
		return false
	}
	var walk func(v any) bool
	walk = func(v any) bool {
		switch v := v.(type) {
		case string:
			return strings.Contains(v, secret)
		case []any:
			return slices.ContainsFunc(v, walk)
		case map[string]any:
			for k, e := range v {
				if strings.Contains(k, secret) || walk(e) {
					return true
				}
			}
		}
		return false
	}
	return walk(v)
}

// jsonEscape returns s as it appears inside a JSON string.
func jsonEscape(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		s.t.Errorf("llmtest: reading the request body: %v", err)
		return
	}
	rec := Received{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body}

	if r.Method != http.MethodPost || (r.URL.Path != "/v1/chat/completions" && r.URL.Path != "/chat/completions") {
		s.record(rec)
		s.t.Errorf("llmtest: got %s %s, want POST /v1/chat/completions", r.Method, r.URL.Path)
		writeError(w, http.StatusNotFound, "llmtest: unknown path "+r.URL.Path)
		return
	}
	if err := json.Unmarshal(body, &rec.Request); err != nil {
		s.record(rec)
		s.t.Errorf("llmtest: the request body is not a chat completion request: %v", err)
		writeError(w, http.StatusBadRequest, "llmtest: malformed request body")
		return
	}

	s.mu.Lock()
	s.received = append(s.received, rec)
	n := len(s.received)
	turn, ok := Turn{}, s.next < len(s.turns)
	if ok {
		turn = s.turns[s.next]
		s.next++
	}
	scripted := len(s.turns)
	s.mu.Unlock()

	if !ok {
		s.t.Errorf("llmtest: request %d has no scripted turn (the script has %d); its last message: %s",
			n, scripted, describeLast(rec.Request))
		writeError(w, http.StatusBadRequest, "llmtest: no scripted turn left")
		return
	}
	for depth := 0; turn.fn != nil; depth++ {
		if depth == 10 {
			s.t.Errorf("llmtest: request %d: Func turns nested more than 10 deep", n)
			writeError(w, http.StatusInternalServerError, "llmtest: Func nesting too deep")
			return
		}
		turn = turn.fn(rec.Request)
	}
	s.serve(w, r, n, rec.Request, turn)
}

func (s *Server) record(rec Received) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.received = append(s.received, rec)
}

// serve writes turn as the answer to request number n.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, n int, req llm.Request, turn Turn) {
	if turn.delay > 0 {
		t := time.NewTimer(turn.delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
			return
		}
	}
	if turn.disconnect {
		hj, ok := w.(http.Hijacker)
		if !ok {
			s.t.Errorf("llmtest: cannot hijack the connection to disconnect")
			return
		}
		conn, _, err := hj.Hijack()
		if err != nil {
			s.t.Errorf("llmtest: hijacking the connection: %v", err)
			return
		}
		if tc, ok := conn.(*net.TCPConn); ok {
			_ = tc.SetLinger(0) // send RST, like a crash
		}
		_ = conn.Close()
		return
	}
	maps.Copy(w.Header(), turn.header)
	switch {
	case turn.raw != nil:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(cmp.Or(turn.status, http.StatusOK))
		_, _ = io.WriteString(w, *turn.raw)
	case turn.status != 0 && turn.status != http.StatusOK:
		writeError(w, turn.status, turn.errMessage)
	default:
		writeJSON(w, http.StatusOK, reply(n, req, turn))
	}
}

// response is the wire form of a reply, with the fields real servers send.
type response struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []llm.Choice `json:"choices"`
	Usage   *llm.Usage   `json:"usage,omitempty"`
}

func reply(n int, req llm.Request, turn Turn) response {
	msg := llm.Message{Role: llm.RoleAssistant, Content: turn.content}
	finish := "stop"
	if len(turn.toolCalls) > 0 {
		finish = "tool_calls"
		msg.ToolCalls = make([]llm.ToolCall, len(turn.toolCalls))
		for i, c := range turn.toolCalls {
			if c.ID == "" {
				c.ID = fmt.Sprintf("call_%d_%d", n, i)
			}
			msg.ToolCalls[i] = c
		}
	}
	if turn.finishReason != "" {
		finish = turn.finishReason
	}
	var usage *llm.Usage
	switch {
	case turn.omitUsage:
	case turn.usage != nil:
		usage = turn.usage
	default:
		usage = &llm.Usage{PromptTokens: DefaultPromptTokens, CompletionTokens: DefaultCompletionTokens,
			TotalTokens: DefaultPromptTokens + DefaultCompletionTokens}
	}
	return response{
		ID:      fmt.Sprintf("chatcmpl-llmtest-%d", n),
		Object:  "chat.completion",
		Created: time.Now().Unix(),
		Model:   req.Model,
		Choices: []llm.Choice{{Index: 0, Message: msg, FinishReason: finish}},
		Usage:   usage,
	}
}

// writeError writes an OpenAI-style error body.
func writeError(w http.ResponseWriter, status int, message string) {
	typ, code := "invalid_request_error", ""
	switch {
	case status == http.StatusTooManyRequests:
		typ, code = "requests", "rate_limit_exceeded"
	case status == http.StatusUnauthorized:
		code = "invalid_api_key"
	case status >= 500:
		typ = "server_error"
	}
	var body struct {
		Error struct {
			Message string  `json:"message"`
			Type    string  `json:"type"`
			Param   *string `json:"param"`
			Code    *string `json:"code"`
		} `json:"error"`
	}
	body.Error.Message, body.Error.Type = message, typ
	if code != "" {
		body.Error.Code = &code
	}
	writeJSON(w, status, body)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(data)
}

// describeLast summarizes a request's last message for a failure message.
func describeLast(req llm.Request) string {
	if len(req.Messages) == 0 {
		return "(none)"
	}
	m := req.Messages[len(req.Messages)-1]
	text := m.Content
	if len(m.ToolCalls) > 0 {
		text = fmt.Sprintf("%d tool calls", len(m.ToolCalls))
	}
	if r := []rune(text); len(r) > 120 {
		text = string(r[:120]) + "…"
	}
	return fmt.Sprintf("%s: %q", m.Role, text)
}
