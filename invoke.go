package duet

import (
	"context"
	"encoding/json"
	"strings"
)

// InvokeRequest is one call to a tool of a registered MCP server, made as
// Executor: Duet resolves the executor's own registration and credentials,
// never anyone else's.
type InvokeRequest struct {
	Executor  string
	ServerKey string
	Tool      string
	Arguments map[string]any
	Source    CallSource // cli, agent, engine, web, ...
	TraceID   string
}

// ToolResult is an MCP tool result, passed through unchanged: Content is the
// raw content array and StructuredContent the raw structured result (or nil).
type ToolResult struct {
	Content           json.RawMessage `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
	IsError           bool            `json:"isError"`
}

// Text joins the text blocks of the result's content.
func (r *ToolResult) Text() string {
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(r.Content, &blocks) != nil {
		return ""
	}
	var parts []string
	for _, b := range blocks {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// Invoker is the one exit through which every caller (CLI, agent, engine,
// web) calls other teams' MCP tools.
type Invoker interface {
	// Invoke calls the tool as req.Executor and records an invocation.
	// A result with IsError comes back with the result and an error coded
	// MCP_TOOL_ERROR. Returns MCP_SERVER_NOT_CONFIGURED, MCP_TOOL_NOT_FOUND,
	// MCP_CALL_TIMEOUT, MCP_AUTH_FAILED, MCP_TOOL_ERROR, MCP_UNREACHABLE,
	// MCP_PROTOCOL_MISMATCH.
	//
	// The result and the error come back scrubbed, by value, of every
	// credential value the call sent or obtained (header values, OAuth
	// tokens and client secrets, DPoP proofs), wherever the server echoed
	// them: the invoker owns the credentials, so its callers never read
	// them to scrub them.
	Invoke(ctx context.Context, req InvokeRequest) (*ToolResult, error)
}
