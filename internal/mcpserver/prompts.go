package mcpserver

import (
	"context"

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
	// established; never one from the request). It runs inside the
	// governance pipeline (identity, caps, timeout, result size, audit). A
	// *duet.Error becomes the JSON-RPC error "CODE: message"; any other
	// error "INTERNAL: internal error" (logged with the trace id).
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
			// govern checked the caller and put it in ctx.
			caller := callerOf(ctx, req.Params.Meta)
			for _, a := range p.Arguments {
				if a.Required && req.Params.Arguments[a.Name] == "" {
					return nil, duet.Errorf(duet.CodeInvalidArgument, "prompt %s needs the argument %s", p.Name, a.Name)
				}
			}
			text, err := p.Get(ctx, caller, req.Params.Arguments)
			if err != nil {
				return nil, err
			}
			return &mcp.GetPromptResult{
				Description: p.Description,
				Messages:    []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: text}}},
			}, nil
		})
	}
}
