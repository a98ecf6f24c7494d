package mcpclient

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"strings"
)

// Mcp-Param-* headers (SEP-2243, MCP 2026-07-28). A tool may mark
// arguments with "x-mcp-header": NAME in its input schema; a client then
// mirrors the argument's value into the HTTP header Mcp-Param-NAME of the
// tools/call request, so that gateways can route on it without reading the
// body. The go-sdk client does this only for tools it listed on the same
// session; Duet calls on a long-lived session from the archived catalog, so
// it computes the headers from the archived input schema itself, with the
// SDK's rules: strings, booleans and safe integers only; a value with
// characters outside printable ASCII, or with leading or trailing
// whitespace, travels base64-encoded as =?base64?...?=; null and absent
// arguments are left out.

const (
	paramHeaderPrefix = "Mcp-Param-"
	b64Prefix         = "=?base64?"
	b64Suffix         = "?="
	// headersRevision is the first revision with the standard headers.
	headersRevision = "2026-07-28"
)

type headerProp struct {
	XMCPHeader json.RawMessage       `json:"x-mcp-header,omitempty"`
	Properties map[string]headerProp `json:"properties,omitempty"`
}

// paramHeaders returns the Mcp-Param-* headers of a call of a tool with
// input schema schema and arguments args.
func paramHeaders(schema json.RawMessage, args map[string]any) map[string]string {
	if len(schema) == 0 || len(args) == 0 {
		return nil
	}
	var root headerProp
	if json.Unmarshal(schema, &root) != nil || len(root.Properties) == 0 {
		return nil
	}
	out := map[string]string{}
	var walk func(props map[string]headerProp, vals map[string]any)
	walk = func(props map[string]headerProp, vals map[string]any) {
		for name, p := range props {
			v, ok := vals[name]
			if !ok || v == nil {
				continue
			}
			var header string
			if json.Unmarshal(p.XMCPHeader, &header) == nil && header != "" {
				if s, ok := headerValue(v); ok {
					out[paramHeaderPrefix+header] = s
				}
			}
			if sub, ok := v.(map[string]any); ok && len(p.Properties) > 0 {
				walk(p.Properties, sub)
			}
		}
	}
	walk(root.Properties, normalize(args))
	if len(out) == 0 {
		return nil
	}
	return out
}

// normalize gives args the shapes JSON decoding gives them (numbers as
// float64, nested objects as maps), whatever Go types the caller used.
func normalize(args map[string]any) map[string]any {
	b, err := json.Marshal(args)
	if err != nil {
		return args
	}
	var out map[string]any
	if json.Unmarshal(b, &out) != nil {
		return args
	}
	return out
}

// headerValue is the header form of an argument value; false for a value
// that cannot travel in a header (a fraction, an object, an array).
func headerValue(v any) (string, bool) {
	var s string
	switch x := v.(type) {
	case string:
		s = x
	case bool:
		s = strconv.FormatBool(x)
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) || x != math.Trunc(x) || math.Abs(x) > 1<<53-1 {
			return "", false
		}
		s = strconv.FormatInt(int64(x), 10)
	default:
		return "", false
	}
	if needsBase64(s) {
		return b64Prefix + base64.StdEncoding.EncodeToString([]byte(s)) + b64Suffix, true
	}
	return s, true
}

func needsBase64(s string) bool {
	if s == "" {
		return false
	}
	if s[0] == ' ' || s[0] == '\t' || s[len(s)-1] == ' ' || s[len(s)-1] == '\t' {
		return true
	}
	for _, c := range s {
		if c < 0x20 || c > 0x7e {
			return true
		}
	}
	return strings.HasPrefix(s, b64Prefix) && strings.HasSuffix(s, b64Suffix)
}

type paramHeadersKey struct{}

// withParamHeaders makes the tools/call requests of ctx carry h.
func withParamHeaders(ctx context.Context, h map[string]string) context.Context {
	if len(h) == 0 {
		return ctx
	}
	return context.WithValue(ctx, paramHeadersKey{}, h)
}

// setParamHeaders adds the Mcp-Param-* headers of ctx to r when it is a
// tools/call of a revision that has them (the SDK set Mcp-Method).
func setParamHeaders(r *http.Request) {
	h, _ := r.Context().Value(paramHeadersKey{}).(map[string]string)
	if h == nil || r.Method != http.MethodPost || r.Header.Get("Mcp-Method") != "tools/call" ||
		r.Header.Get("Mcp-Protocol-Version") < headersRevision {
		return
	}
	for k, v := range h {
		if r.Header.Get(k) == "" {
			r.Header.Set(k, v)
		}
	}
}
