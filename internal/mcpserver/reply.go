package mcpserver

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// marshalResult returns what (*mcp.CallToolResult).MarshalJSON returns for
// r, without the reflection over the SDK's wire struct, for the shape of
// result the catalog's tools answer with: metadata, one plain text block
// (no metadata or annotations of its own), structured content as the
// catalog encoded it (json.Marshal's output, which encoding/json's own
// pass over a RawMessage — compacting, escaping <, > and & — leaves as it
// is), isError. Any other result is marshalled by the SDK.
// TestMarshalResultIsTheSDKs compares the two byte for byte.
func marshalResult(r *mcp.CallToolResult) ([]byte, error) {
	text, ok := plainText(r)
	structured, isRaw := r.StructuredContent.(json.RawMessage)
	if !ok || !isRaw || len(structured) == 0 || r.InputRequests != nil || r.RequestState != "" || r.NeedsInput() {
		return r.MarshalJSON()
	}
	// The fields in the SDK's order: _meta, content, structuredContent,
	// isError (requestState, resultType and inputRequests are empty).
	out := make([]byte, 0, 2*len(structured)+len(text.Text)+128)
	out = append(out, '{')
	if len(r.Meta) > 0 {
		meta, err := json.Marshal(map[string]any(r.Meta))
		if err != nil {
			return nil, err
		}
		out = append(out, `"_meta":`...)
		out = append(out, meta...)
		out = append(out, ',')
	}
	s, err := json.Marshal(text.Text)
	if err != nil {
		return nil, err
	}
	out = append(out, `"content":[{"type":"text","text":`...)
	out = append(out, s...)
	out = append(out, `}],"structuredContent":`...)
	out = append(out, structured...)
	if r.IsError {
		out = append(out, `,"isError":true`...)
	}
	return append(out, '}'), nil
}

// plainText returns r's content when it is one text block without
// metadata or annotations.
func plainText(r *mcp.CallToolResult) (*mcp.TextContent, bool) {
	if len(r.Content) != 1 {
		return nil, false
	}
	t, ok := r.Content[0].(*mcp.TextContent)
	if !ok || t == nil || t.Meta != nil || t.Annotations != nil {
		return nil, false
	}
	return t, true
}
