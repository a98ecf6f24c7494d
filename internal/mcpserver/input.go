//lint:file-ignore SA1019 a client asked in band may be asked for sampling or roots (deprecated in 2026-07-28, still in the protocol)

package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/catalog"
)

// Multi-round calls (SEP-2322) over MCP: a catalog tool may ask the client
// for input in the middle of a call (catalog.Env.Ask). How the question
// travels depends on the client:
//
//   - a client of the 2026-07-28 revision gets an input-required result
//     (inputRequests and a sealed requestState) and calls again with its
//     answers: no session needed, any instance answers the next round;
//   - a handshake-era client with a session (stdio, or /mcp/http with
//     --sessions) is asked with a server-to-client request over its
//     session — the SDK does that for the tool and calls it again with the
//     answers (the same round trip, carried by the session);
//   - a handshake-era client without a session cannot be asked: the tool
//     sees CanAsk false and takes its fallback.
//
// Either way the client is asked only what it declared it can answer.

// oneShotKey marks a context whose MCP session lives for one HTTP request
// (the stateless handlers): it cannot carry a server-to-client request.
type oneShotKey struct{}

// callInput is what the tool of req may ask, and the answers req carries.
func callInput(ctx context.Context, req *mcp.CallToolRequest) *catalog.Input {
	in := &catalog.Input{State: req.Params.RequestState}
	if len(req.Params.InputResponses) > 0 {
		in.Responses = map[string]json.RawMessage{}
		for k, v := range req.Params.InputResponses {
			if b, err := json.Marshal(v); err == nil {
				in.Responses[k] = b
			}
		}
	}
	inBand := req.ProtocolVersion() >= statelessRevision
	overSession := !inBand && req.Session != nil && ctx.Value(oneShotKey{}) == nil
	if !inBand && !overSession {
		return in // Can nil: this client cannot be asked during a call
	}
	caps := req.ClientCapabilities()
	in.Can = func(method string) bool {
		if caps == nil {
			return false
		}
		switch method {
		case catalog.AskElicit:
			return caps.Elicitation != nil
		case catalog.AskSample:
			return caps.Sampling != nil
		case catalog.AskListRts:
			return caps.RootsV2 != nil || caps.Roots.ListChanged
		}
		return false
	}
	return in
}

// extensionsOf lists the extensions a client declared.
func extensionsOf(caps *mcp.ClientCapabilities) []string {
	if caps == nil {
		return nil
	}
	var out []string
	for k := range caps.Extensions {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// inputRequests converts the catalog's questions into the SDK's.
func inputRequests(reqs map[string]catalog.InputRequest) (mcp.InputRequestMap, error) {
	out := mcp.InputRequestMap{}
	for k, r := range reqs {
		b, err := json.Marshal(r.Params)
		if err != nil {
			return nil, err
		}
		var v mcp.InputRequest
		switch r.Method {
		case catalog.AskElicit:
			v = &mcp.ElicitParams{}
		case catalog.AskSample:
			v = &mcp.CreateMessageParams{}
		case catalog.AskListRts:
			v = &mcp.ListRootsParams{}
		default:
			return nil, fmt.Errorf("input request %q: unknown method %q", k, r.Method)
		}
		if string(b) != "null" {
			if err := json.Unmarshal(b, v); err != nil {
				return nil, fmt.Errorf("input request %q: %w", k, err)
			}
		}
		out[k] = v
	}
	return out, nil
}

// protocolError is the JSON-RPC error of a call the catalog refused as a
// protocol error: a missing client capability (-32021, with the
// capabilities it needs), a bad request state (-32602), an unknown tool.
func protocolError(err error) error {
	var capErr *catalog.CapabilityError
	if errors.As(err, &capErr) {
		data, _ := json.Marshal(mcp.MissingRequiredClientCapabilityData{})
		if capErr.Required != nil {
			data, _ = json.Marshal(map[string]any{"requiredCapabilities": capErr.Required})
		}
		return &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities, Message: capErr.Error(), Data: data}
	}
	if errors.Is(err, catalog.ErrBadState) {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: string(duet.CodeInvalidArgument) + ": " + duet.ErrorMessage(err)}
	}
	if errors.Is(err, catalog.ErrUnknownTool) {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	}
	return err
}
