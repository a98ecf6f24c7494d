package mcpserver

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/duet-test/duet"
)

// Prompt is an MCP prompt the server offers (prompts/list, prompts/get),
// such as the case-generation prompts of internal/agent, so that a client's
// own model can write Duet cases.
type Prompt struct {
	Name        string
	Title       string
	Description string
	Arguments   []PromptArgument
	// Get renders the prompt's text for caller (the identity the transport
	// established; never one from the request). A *duet.Error with
	// INVALID_ARGUMENT or NOT_FOUND becomes an invalid-params JSON-RPC
	// error "CODE: message"; any other error an internal error.
	Get func(ctx context.Context, caller duet.Caller, args map[string]string) (string, error)
}

// PromptArgument is an argument of a Prompt.
type PromptArgument struct {
	Name        string
	Description string
	Required    bool
}

// addPrompts registers prompts on srv. Every prompts/get renders one user
// message for the caller in the context.
func (s *Server) addPrompts(prompts []*Prompt) {
	for _, p := range prompts {
		mp := &mcp.Prompt{Name: p.Name, Title: p.Title, Description: p.Description}
		for _, a := range p.Arguments {
			mp.Arguments = append(mp.Arguments, &mcp.PromptArgument{Name: a.Name, Description: a.Description, Required: a.Required})
		}
		s.srv.AddPrompt(mp, func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			caller := callerOf(ctx, req.Params.Meta)
			if caller.UserID == "" {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "UNAUTHENTICATED: no caller identity"}
			}
			for _, a := range p.Arguments {
				if a.Required && req.Params.Arguments[a.Name] == "" {
					return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
						Message: fmt.Sprintf("%s: prompt %s needs the argument %s", duet.CodeInvalidArgument, p.Name, a.Name)}
				}
			}
			text, err := p.Get(ctx, caller, req.Params.Arguments)
			if err != nil {
				code := duet.ErrorCode(err)
				rpc := int64(jsonrpc.CodeInternalError)
				if code == duet.CodeInvalidArgument || code == duet.CodeNotFound {
					rpc = jsonrpc.CodeInvalidParams
				} else {
					s.log.ErrorContext(ctx, "mcp: prompts/get", "prompt", p.Name, "trace", caller.TraceID, "err", err)
				}
				return nil, &jsonrpc.Error{Code: rpc, Message: string(code) + ": " + duet.ErrorMessage(err)}
			}
			return &mcp.GetPromptResult{
				Description: p.Description,
				Messages:    []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: text}}},
			}, nil
		})
	}
}
