package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/llm"
)

// Tool is one function the model may call: a platform read tool, an MCP
// tool of the user's behind the adapter, or submit_case.
type Tool struct {
	Name        string          // ^[A-Za-z0-9_-]{1,64}$, unique in a registry
	Description string          // what the model reads to decide when to call it
	Parameters  json.RawMessage // JSON Schema of the arguments object; nil means none
	// Server is the serverKey of an MCP tool's server ("" for Duet's own
	// tools), ServerName its registered name: what such a tool returns
	// is that server's data, and its arguments reach that server.
	Server, ServerName string
	// ServerTool is an MCP tool's name on its server.
	ServerTool string

	// Call runs the tool with the model's arguments (a JSON object, already
	// checked to parse) and returns the text the model reads. An error is
	// shown to the model as "error: CODE: message".
	Call func(ctx context.Context, args json.RawMessage) (string, error)
}

var toolNameRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`) })

// ToolRegistry is the set of tools offered to the model in one generation,
// in the order they were added.
type ToolRegistry struct {
	tools   []*Tool
	byName  map[string]*Tool
	refused map[string]string // names the model may not call, with the reason
}

// NewToolRegistry returns an empty registry.
func NewToolRegistry() *ToolRegistry {
	return &ToolRegistry{byName: map[string]*Tool{}, refused: map[string]string{}}
}

// Refuse makes calls of name (not offered to the model) answer
// PERMISSION_DENIED with reason instead of "no such tool": a tool the
// model knows of but may not call now.
func (r *ToolRegistry) Refuse(name, reason string) { r.refused[name] = reason }

// Refused reports whether calls of name are refused.
func (r *ToolRegistry) Refused(name string) bool { _, ok := r.refused[name]; return ok }

// Add adds tools. Returns INVALID_ARGUMENT for a bad or duplicate name.
func (r *ToolRegistry) Add(tools ...*Tool) error {
	for _, t := range tools {
		if !toolNameRe().MatchString(t.Name) {
			return duet.Errorf(duet.CodeInvalidArgument, "tool name %q: want letters, digits, '_' or '-' (at most 64)", t.Name)
		}
		if _, dup := r.byName[t.Name]; dup {
			return duet.Errorf(duet.CodeInvalidArgument, "tool %q is already registered", t.Name)
		}
		r.tools = append(r.tools, t)
		r.byName[t.Name] = t
	}
	return nil
}

// Has reports whether a tool of that name is registered.
func (r *ToolRegistry) Has(name string) bool { _, ok := r.byName[name]; return ok }

// Tool returns the tool registered under name.
func (r *ToolRegistry) Tool(name string) (*Tool, bool) { t, ok := r.byName[name]; return t, ok }

// Names returns the names of the tools, in order.
func (r *ToolRegistry) Names() []string {
	out := make([]string, len(r.tools))
	for i, t := range r.tools {
		out[i] = t.Name
	}
	return out
}

// LLMTools returns the tools as the chat-completions request declares
// them: those named, in that order, or every tool when names is nil.
func (r *ToolRegistry) LLMTools(names ...string) []llm.Tool {
	tools := r.tools
	if names != nil {
		tools = make([]*Tool, 0, len(names))
		for _, n := range names {
			if t, ok := r.byName[n]; ok {
				tools = append(tools, t)
			}
		}
	}
	out := make([]llm.Tool, len(tools))
	for i, t := range tools {
		out[i] = t.llmTool()
	}
	return out
}

// llmTool is t as a request declares it.
func (t *Tool) llmTool() llm.Tool {
	params := t.Parameters
	if len(params) == 0 {
		params = json.RawMessage(`{"type":"object","properties":{}}`)
	}
	return llm.Tool{Function: llm.FunctionDef{Name: t.Name, Description: t.Description, Parameters: params}}
}

// definitionSize is the size in bytes of t's declaration in a request.
func (t *Tool) definitionSize() int {
	b, err := json.Marshal(t.llmTool())
	if err != nil {
		return 0
	}
	return len(b)
}

// Call runs the named tool with the model's arguments (JSON text as the
// model wrote it) and returns what the model reads next: the result, or
// "error: CODE: message". Results longer than limit bytes are cut.
func (r *ToolRegistry) Call(ctx context.Context, name, args string, limit int) string {
	t, ok := r.byName[name]
	if reason, refused := r.refused[name]; !ok && refused {
		return errorText(duet.Errorf(duet.CodePermissionDenied, "%s", reason))
	}
	if !ok {
		names := r.Names()
		list := strings.Join(names, ", ")
		if len(names) > maxNamesListed {
			list = strings.Join(names[:maxNamesListed], ", ") + fmt.Sprintf(", … (%d more", len(names)-maxNamesListed)
			if r.Has(ToolFindTools) {
				list += "; find_tools searches them"
			}
			list += ")"
		}
		return errorText(duet.Errorf(duet.CodeNotFound, "there is no tool %q; the tools are: %s", name, list))
	}
	raw := json.RawMessage(strings.TrimSpace(args))
	if len(raw) == 0 {
		raw = json.RawMessage("{}")
	}
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		return errorText(duet.Errorf(duet.CodeInvalidArgument, "the arguments of %s are not a JSON object: %v", name, err))
	}
	out, err := t.Call(ctx, raw)
	if err != nil {
		return errorText(err)
	}
	return truncate(out, limit)
}

// maxNamesListed bounds the tool names an unknown tool's error lists.
const maxNamesListed = 40

// errorText is an error as the model reads it: code and caller-safe
// message, never internal details.
func errorText(err error) string {
	return fmt.Sprintf("error: %s: %s", duet.ErrorCode(err), duet.ErrorMessage(err))
}

// truncate keeps at most limit bytes of s (cut at a rune boundary) and
// says how much was cut. limit <= 0 keeps everything.
func truncate(s string, limit int) string {
	if limit <= 0 || len(s) <= limit {
		return s
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("\n…(%d more bytes cut)", len(s)-cut)
}
