package llm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Message roles.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// ToolTypeFunction is the only tool type of the chat-completions API, and
// the Type that Tool and ToolCall default to.
const ToolTypeFunction = "function"

// toolType is typ, or ToolTypeFunction when typ is empty.
func toolType(typ string) string {
	if typ == "" {
		return ToolTypeFunction
	}
	return typ
}

// Message is one chat message.
//
// Decoding tolerates what real servers send: a null content, or content as
// an array of parts (the text parts are concatenated, the URLs of image
// parts kept in Images, others skipped). Encoding sends content as a
// string, as null for an assistant message that has tool calls and no
// text, or — when the message has Images — as an array of parts: the text,
// then one image_url part per image.
type Message struct {
	Role    string `json:"role"`    // RoleSystem, RoleUser, RoleAssistant or RoleTool
	Content string `json:"content"` // the text
	// Images are the URLs of images shown with the text, such as
	// data:image/jpeg;base64,... (for a model that takes images; a user
	// message's).
	Images     []string   `json:"-"`
	Refusal    string     `json:"refusal,omitempty"`      // set instead of Content when the model refuses
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`   // tools the assistant wants called
	ToolCallID string     `json:"tool_call_id,omitempty"` // for RoleTool: the ToolCall.ID answered
	Name       string     `json:"name,omitempty"`         // optional participant name
}

// MarshalJSON encodes m in the chat-completions wire format.
func (m Message) MarshalJSON() ([]byte, error) {
	var content any
	switch {
	case len(m.Images) > 0:
		parts := []any{textPart{Type: "text", Text: m.Content}}
		for _, u := range m.Images {
			parts = append(parts, imagePart{Type: "image_url", ImageURL: imageURL{URL: u}})
		}
		content = parts
	case m.Content != "" || len(m.ToolCalls) == 0:
		content = m.Content
	}
	return json.Marshal(struct {
		Role       string     `json:"role"`
		Content    any        `json:"content"`
		Refusal    string     `json:"refusal,omitempty"`
		ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
		ToolCallID string     `json:"tool_call_id,omitempty"`
		Name       string     `json:"name,omitempty"`
	}{m.Role, content, m.Refusal, m.ToolCalls, m.ToolCallID, m.Name})
}

// The content parts of a message with images.
type textPart struct {
	Type string `json:"type"` // "text"
	Text string `json:"text"`
}

type imagePart struct {
	Type     string   `json:"type"` // "image_url"
	ImageURL imageURL `json:"image_url"`
}

type imageURL struct {
	URL string `json:"url"`
}

// UnmarshalJSON decodes m, accepting content as a string, null, an array of
// parts or a single part.
func (m *Message) UnmarshalJSON(data []byte) error {
	var w struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		Refusal    string          `json:"refusal"`
		ToolCalls  []ToolCall      `json:"tool_calls"`
		ToolCallID string          `json:"tool_call_id"`
		Name       string          `json:"name"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	content, images, err := decodeContent(w.Content)
	if err != nil {
		return err
	}
	if len(w.ToolCalls) == 0 {
		w.ToolCalls = nil // "tool_calls": [] means none
	}
	*m = Message{Role: w.Role, Content: content, Images: images, Refusal: w.Refusal, ToolCalls: w.ToolCalls,
		ToolCallID: w.ToolCallID, Name: w.Name}
	return nil
}

// decodeContent returns the text of a message's content (a string, null,
// an array of parts, or one part) and the URLs of its image parts.
func decodeContent(raw json.RawMessage) (string, []string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil, nil
	}
	switch raw[0] {
	case '"':
		var s string
		err := json.Unmarshal(raw, &s)
		return s, nil, err
	case '[':
		var parts []json.RawMessage
		if err := json.Unmarshal(raw, &parts); err != nil {
			return "", nil, err
		}
		var b strings.Builder
		var images []string
		for _, p := range parts {
			b.WriteString(partText(p))
			if u := partImage(p); u != "" {
				images = append(images, u)
			}
		}
		return b.String(), images, nil
	case '{':
		if !json.Valid(raw) {
			return "", nil, errors.New("content: invalid JSON object")
		}
		var images []string
		if u := partImage(raw); u != "" {
			images = []string{u}
		}
		return partText(raw), images, nil
	}
	return "", nil, fmt.Errorf("content: want a string, null or an array of parts, got %s", truncate(string(raw), 40))
}

// partImage returns the URL of an image_url part, "" for other parts.
func partImage(raw json.RawMessage) string {
	var p imagePart
	if json.Unmarshal(raw, &p) != nil || p.Type != "image_url" {
		return ""
	}
	return p.ImageURL.URL
}

// partText returns the text of a content part: the part itself when it is a
// string, its "text" when that is a string, and "" for other parts.
func partText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var part struct {
		Text json.RawMessage `json:"text"`
	}
	if json.Unmarshal(raw, &part) != nil {
		return ""
	}
	if json.Unmarshal(part.Text, &s) == nil {
		return s
	}
	return ""
}

// ToolCall is a call the assistant asks for. Decoding defaults a missing
// Type to "function"; encoding does the same.
type ToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"` // ToolTypeFunction
	Function FunctionCall `json:"function"`
}

// MarshalJSON encodes tc, defaulting an empty Type to "function".
func (tc ToolCall) MarshalJSON() ([]byte, error) {
	type wire ToolCall
	tc.Type = toolType(tc.Type)
	return json.Marshal(wire(tc))
}

// UnmarshalJSON decodes tc, defaulting a missing Type to "function".
func (tc *ToolCall) UnmarshalJSON(data []byte) error {
	type wire ToolCall
	var w wire
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	w.Type = toolType(w.Type)
	if w.Function.Arguments == "" { // "function" missing or null
		w.Function.Arguments = "{}"
	}
	*tc = ToolCall(w)
	return nil
}

// FunctionCall names the function to call and holds its arguments as JSON
// text, as the model wrote them: they may be invalid JSON, so parse them
// with care.
//
// Decoding accepts arguments sent as a JSON value rather than a string (some
// local servers do this) and keeps the value's text; missing, null or empty
// arguments become "{}".
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// UnmarshalJSON decodes fc, accepting arguments as a string or a JSON value.
func (fc *FunctionCall) UnmarshalJSON(data []byte) error {
	var w struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	args := bytes.TrimSpace(w.Arguments)
	var s string
	switch {
	case len(args) == 0 || string(args) == "null":
	case args[0] == '"':
		if err := json.Unmarshal(args, &s); err != nil {
			return err
		}
	default:
		var b bytes.Buffer
		if err := json.Compact(&b, args); err != nil {
			return err
		}
		s = b.String()
	}
	if strings.TrimSpace(s) == "" {
		s = "{}"
	}
	*fc = FunctionCall{Name: w.Name, Arguments: s}
	return nil
}

// Tool declares a function the model may call. Encoding defaults an empty
// Type to "function".
type Tool struct {
	Type     string      `json:"type"` // ToolTypeFunction
	Function FunctionDef `json:"function"`
}

// MarshalJSON encodes t, defaulting an empty Type to "function".
func (t Tool) MarshalJSON() ([]byte, error) {
	type wire Tool
	t.Type = toolType(t.Type)
	return json.Marshal(wire(t))
}

// FunctionDef describes a callable function: its name, what it does, and a
// JSON Schema of its arguments object (nil means no parameters).
type FunctionDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// Request is a chat-completions request. Only Messages is required; an
// empty Model means Config.Model.
type Request struct {
	Model    string    `json:"model"`
	Messages []Message `json:"messages"`
	Tools    []Tool    `json:"tools,omitempty"`

	// ToolChoice is "auto", "none", "required", or an object such as
	// {"type":"function","function":{"name":"x"}}. Nil leaves the choice to
	// the server.
	ToolChoice any `json:"tool_choice,omitempty"`

	// Temperature is the sampling temperature; nil means the server default.
	// In Go 1.26, new(0.2) makes the pointer.
	Temperature *float64 `json:"temperature,omitempty"`

	// MaxTokens caps the completion; zero means the server default.
	MaxTokens int `json:"max_tokens,omitempty"`

	// ResponseFormat is, for example, {"type":"json_object"}; nil means text.
	ResponseFormat any `json:"response_format,omitempty"`
}

// Response is a chat-completions response.
//
// A Response returned by Client.Chat has at least one Choice; its messages
// have a Role (default "assistant") and every tool call an ID (a missing one
// becomes "call_<choice>_<call>", so the tool result can answer it). Usage
// is zero when the server does not report it.
type Response struct {
	ID      string   `json:"id"`
	Model   string   `json:"model"`
	Choices []Choice `json:"choices"`
	Usage   Usage    `json:"usage"`

	// Attempts is how many HTTP requests Client.Chat sent to get this
	// response: 1, plus one per retry. It is not part of the wire format.
	Attempts int `json:"-"`
}

// Choice is one completion of a Response.
type Choice struct {
	Index   int     `json:"index"`
	Message Message `json:"message"`

	// FinishReason is "stop", "length", "tool_calls", "content_filter" or
	// empty. Servers disagree on it when tools are called, so look at
	// Message.ToolCalls rather than at FinishReason.
	FinishReason string `json:"finish_reason"`
}

// Usage counts the tokens of one response, or of several when summed with
// Add.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// Add returns the sum of u and v.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		PromptTokens:     u.PromptTokens + v.PromptTokens,
		CompletionTokens: u.CompletionTokens + v.CompletionTokens,
		TotalTokens:      u.TotalTokens + v.TotalTokens,
	}
}

// errNoChoices reports a well-formed response without any choice.
var errNoChoices = errors.New("the response has no choices")

// providerError is an error object found in a response body.
type providerError struct{ text string }

func (e *providerError) Error() string { return e.text }

// decodeResponse decodes and normalizes a successful response body. It
// returns *providerError when the body is an error object (some servers
// answer errors with status 200), errNoChoices when it has no choices, and
// a JSON error when it does not decode.
func decodeResponse(data []byte) (*Response, error) {
	var r Response
	if err := json.Unmarshal(data, &r); err != nil {
		if text := errorText(data); text != "" {
			return nil, &providerError{text}
		}
		return nil, err
	}
	if len(r.Choices) == 0 {
		if text := errorText(data); text != "" {
			return nil, &providerError{text}
		}
		return nil, errNoChoices
	}
	for i := range r.Choices {
		m := &r.Choices[i].Message
		if m.Role == "" {
			m.Role = RoleAssistant
		}
		for j := range m.ToolCalls {
			if m.ToolCalls[j].ID == "" {
				m.ToolCalls[j].ID = fmt.Sprintf("call_%d_%d", i, j)
			}
		}
	}
	if r.Usage.TotalTokens == 0 {
		r.Usage.TotalTokens = r.Usage.PromptTokens + r.Usage.CompletionTokens
	}
	return &r, nil
}
