package fast

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strconv"

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
	return appendResult(nil, r, false)
}

// MarshalComplete returns the bytes of r as the SDK marshals a final tool
// result for a 2026-07-28 client: (*mcp.CallToolResult).MarshalJSON's, with
// "resultType":"complete" last. (A task's result in tasks/get, which never
// goes through the SDK's own marking, is written with it.)
func MarshalComplete(r *mcp.CallToolResult) ([]byte, error) { return appendResult(nil, r, true) }

// appendResult appends marshalResult's bytes for r to dst, marked final
// when complete: `"resultType":"complete"` after the result's own fields,
// where the SDK's marshalling writes it for a 2026-07-28 client (the field
// is the SDK's own and cannot be set from outside).
func appendResult(dst []byte, r *mcp.CallToolResult, complete bool) ([]byte, error) {
	text, ok := plainText(r)
	structured, isRaw := r.StructuredContent.(json.RawMessage)
	if !ok || !isRaw || len(structured) == 0 || r.InputRequests != nil || r.RequestState != "" || r.NeedsInput() {
		b, err := r.MarshalJSON()
		if err != nil {
			return nil, err
		}
		return appendComplete(dst, b, complete)
	}
	// The fields in the SDK's order: _meta, content, structuredContent,
	// isError (requestState and inputRequests are empty), resultType.
	if dst == nil {
		dst = make([]byte, 0, 2*len(structured)+len(text.Text)+256)
	}
	out := append(dst, '{')
	if len(r.Meta) > 0 {
		out = append(out, `"_meta":`...)
		var err error
		if out, err = appendMeta(out, r.Meta); err != nil {
			return nil, err
		}
		out = append(out, ',')
	}
	out = append(out, `"content":[{"type":"text","text":`...)
	out = appendString(out, text.Text)
	out = append(out, `}],"structuredContent":`...)
	out = append(out, structured...)
	if r.IsError {
		out = append(out, `,"isError":true`...)
	}
	if complete {
		out = append(out, `,"resultType":"complete"`...)
	}
	return append(out, '}'), nil
}

// appendComplete appends res, a marshalled result, to dst, marked final
// when complete (see appendResult).
func appendComplete(dst, res []byte, complete bool) ([]byte, error) {
	if !complete {
		return append(dst, res...), nil
	}
	if len(res) < 2 || res[len(res)-1] != '}' {
		return nil, errNotObject
	}
	dst = append(dst, res[:len(res)-1]...)
	if len(res) > 2 {
		dst = append(dst, ',')
	}
	return append(dst, `"resultType":"complete"}`...), nil
}

// preEncoded is a value already encoded by json.Marshal (compact, <, > and
// & escaped). Put in a result's _meta, it is spliced in as it is by
// appendMeta, and encoding/json writes the same bytes for it (its pass over
// a Marshaler's output compacts and escapes, which leaves json.Marshal's
// output unchanged). The fast path encodes the server's self-description
// (serverInfo) once this way rather than in every result.
type preEncoded []byte

// MarshalJSON returns the bytes.
func (p preEncoded) MarshalJSON() ([]byte, error) { return p, nil }

// encodeOnce encodes v with json.Marshal, for a preEncoded.
func encodeOnce(v any) (preEncoded, error) {
	b, err := json.Marshal(v)
	return preEncoded(b), err
}

// appendMeta appends what json.Marshal writes for meta: its members sorted
// by name, without reflection when the values are strings or preEncoded
// (the fast path's trace id and serverInfo), by json.Marshal otherwise.
func appendMeta(dst []byte, meta mcp.Meta) ([]byte, error) {
	var keys [4]string
	names := keys[:0]
	for k, v := range meta {
		switch v.(type) {
		case string, preEncoded:
		default:
			names = nil
		}
		if names == nil || len(names) == len(keys) {
			b, err := json.Marshal(map[string]any(meta))
			if err != nil {
				return nil, err
			}
			return append(dst, b...), nil
		}
		names = append(names, k)
	}
	slices.Sort(names)
	dst = append(dst, '{')
	for i, k := range names {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, k)
		dst = append(dst, ':')
		switch v := meta[k].(type) {
		case string:
			dst = appendString(dst, v)
		case preEncoded:
			dst = append(dst, v...)
		}
	}
	return append(dst, '}'), nil
}

// appendString appends s as json.Marshal encodes a string: quoted as it
// is when it holds only printable ASCII that needs no escape (trace ids,
// names), by json.Marshal otherwise.
func appendString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			b, _ := json.Marshal(s) // a string always marshals
			return append(dst, b...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

// appendID appends a reply's id as the SDK writes it (without HTML
// escaping): an int64 in decimal, a string quoted as appendString quotes it
// when it needs no escape, anything else by encodeNoEscape.
func appendID(dst []byte, id any) ([]byte, error) {
	switch v := id.(type) {
	case int64:
		return strconv.AppendInt(dst, v, 10), nil
	case string:
		plain := true
		for i := 0; i < len(v) && plain; i++ {
			c := v[i]
			plain = c >= 0x20 && c <= 0x7e && c != '"' && c != '\\'
		}
		if plain {
			dst = append(dst, '"')
			dst = append(dst, v...)
			return append(dst, '"'), nil
		}
	}
	b, err := encodeNoEscape(id)
	if err != nil {
		return nil, err
	}
	return append(dst, b...), nil
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

// encodeReply encodes a JSON-RPC result message as the SDK does
// (jsonrpc2.EncodeMessage: the result marshalled without HTML escaping,
// then the message). The message is assembled around the result's bytes
// rather than marshalled again: encoding/json would only copy them
// (compacting JSON that is already compact, escaping nothing), and that
// second pass over every result was a tenth of the CPU of a call. The
// result is written straight into the message's buffer.
//
// complete marks the result final, as the SDK does for a 2026-07-28 client
// (its resultType "complete", which the SDK's marshalling writes last, after
// the result's own fields; the field is the SDK's own and cannot be set
// from outside).
func encodeReply(id any, result *mcp.CallToolResult, complete bool) ([]byte, error) {
	out := make([]byte, 0, replySize(result))
	out = append(out, `{"jsonrpc":"2.0"`...)
	if id != nil {
		var err error
		out = append(out, `,"id":`...)
		if out, err = appendID(out, id); err != nil {
			return nil, err
		}
	}
	start := len(out)
	out = append(out, `,"result":`...)
	out, err := appendResult(out, result, complete)
	if err != nil {
		return nil, err
	}
	if len(out) == start+len(`,"result":`) {
		out = out[:start] // an empty result is left out, as the SDK leaves it out
	}
	return append(out, '}'), nil
}

// replySize is a guess of the size of result's reply, to allocate it once.
func replySize(result *mcp.CallToolResult) int {
	n := 512
	if raw, ok := result.StructuredContent.(json.RawMessage); ok {
		n += 2 * len(raw)
	}
	if t, ok := plainText(result); ok {
		n += len(t.Text) + len(t.Text)/8
	}
	return n
}

// errNotObject: a tool result whose marshalling is not a JSON object
// cannot be marked final.
var errNotObject = errors.New("a tool result that is not a JSON object")

// encodeNoEscape marshals v as the SDK does: without HTML escaping, and
// without the encoder's trailing newline.
func encodeNoEscape(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}
