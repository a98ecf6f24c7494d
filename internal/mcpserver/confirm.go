package mcpserver

import (
	"context"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/duet-test/duet/internal/catalog"
)

// elicitConfirmer returns the catalog.Confirmer of a tools/call that came in
// session ss: an MCP elicitation (a form with one boolean) when the client
// declared the elicitation capability and the session can send it requests
// — a stateful session (stdio, Streamable HTTP with --sessions) of a
// handshake-era protocol version. A stateless HTTP request has no way back
// to the client, and 2026-07-28 asks through multi-round requests instead
// (the protocol's own mechanism): nil then, and the tool falls back to an
// approval by other means.
func elicitConfirmer(ss *mcp.ServerSession) catalog.Confirmer {
	if ss == nil {
		return nil
	}
	ip := ss.InitializeParams()
	if ip == nil || ip.Capabilities == nil || ip.Capabilities.Elicitation == nil || ip.ProtocolVersion >= "2026-07-28" {
		return nil
	}
	if e := ip.Capabilities.Elicitation; e.Form == nil && e.URL != nil {
		return nil // URL elicitation only: no form to confirm in
	}
	return catalog.ConfirmFunc(func(ctx context.Context, prompt string) (bool, error) {
		// No default in the form: the SDK fills a default into an empty
		// answer, and an empty or defaulted answer is never a
		// confirmation. Only confirm: true is.
		res, err := ss.Elicit(ctx, &mcp.ElicitParams{
			Mode:    "form",
			Message: prompt,
			RequestedSchema: map[string]any{
				"type": "object",
				"properties": map[string]any{
					"confirm": map[string]any{"type": "boolean", "title": "Confirm", "description": "true to go ahead"},
				},
				"required": []string{"confirm"},
			},
		})
		if err != nil {
			msg := err.Error()
			switch {
			case strings.Contains(msg, "cannot make requests") || strings.Contains(msg, "does not support"):
				return false, catalog.ErrConfirmUnsupported // the session could not ask after all
			case strings.Contains(msg, "does not match requested schema"):
				return false, nil // an answer without confirm: true is no confirmation
			}
			return false, err
		}
		v, ok := res.Content["confirm"].(bool)
		return res.Action == "accept" && ok && v, nil // declined, dismissed, empty: no
	})
}

// listed removes from a tools/list result the tools the caller may not see
// (a gray release: catalog.Hidden).
func (s *Server) listed(ctx context.Context, user string, res mcp.Result) mcp.Result {
	lt, ok := res.(*mcp.ListToolsResult)
	if !ok {
		return res
	}
	hidden := s.cat.Hidden(ctx, user)
	if len(hidden) == 0 {
		return res
	}
	out := *lt
	out.Tools = make([]*mcp.Tool, 0, len(lt.Tools))
	for _, t := range lt.Tools {
		if !hidden[t.Name] {
			out.Tools = append(out.Tools, t)
		}
	}
	return &out
}
