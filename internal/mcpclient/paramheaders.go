package mcpclient

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
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

// headerNode is what an input schema asks of one level of arguments: the
// header each property is mirrored into, and the nested properties that
// ask for headers. Only properties that lead to a header are kept.
type headerNode map[string]*headerProperty

type headerProperty struct {
	header string     // "" when only nested properties carry headers
	nested headerNode // nil when none does
}

// compileHeaders returns the header plan of an input schema, or nil when no
// property asks for a header (most tools): a call then has nothing to do.
func compileHeaders(schema json.RawMessage) headerNode {
	var root headerProp
	if len(schema) == 0 || json.Unmarshal(schema, &root) != nil {
		return nil
	}
	return compileNode(root.Properties)
}

func compileNode(props map[string]headerProp) headerNode {
	var out headerNode
	for name, p := range props {
		var hp headerProperty
		var header string
		if json.Unmarshal(p.XMCPHeader, &header) == nil {
			hp.header = header
		}
		hp.nested = compileNode(p.Properties)
		if hp.header == "" && hp.nested == nil {
			continue
		}
		if out == nil {
			out = headerNode{}
		}
		out[name] = &hp
	}
	return out
}

// headerPlans keeps the compiled header plan of each input schema seen, by
// the schema's bytes: an archived schema is read once, not on every call.
// Plans depend on nothing but those bytes, so they never go stale.
type headerPlans struct {
	mu sync.RWMutex
	m  map[string]headerNode
}

// maxHeaderPlans bounds the plans kept; reaching it starts afresh.
const maxHeaderPlans = 4096

func (hp *headerPlans) plan(schema json.RawMessage) headerNode {
	hp.mu.RLock()
	n, ok := hp.m[string(schema)]
	hp.mu.RUnlock()
	if ok {
		return n
	}
	n = compileHeaders(schema)
	hp.mu.Lock()
	if hp.m == nil || len(hp.m) >= maxHeaderPlans {
		hp.m = map[string]headerNode{}
	}
	hp.m[string(schema)] = n
	hp.mu.Unlock()
	return n
}

// headers returns the Mcp-Param-* headers of a call of a tool with input
// schema schema and arguments argJSON (a JSON object).
func (hp *headerPlans) headers(schema, argJSON json.RawMessage) map[string]string {
	if len(schema) == 0 || len(argJSON) <= 2 {
		return nil
	}
	plan := hp.plan(schema)
	if plan == nil {
		return nil
	}
	// The values in the shapes JSON decoding gives them (numbers as
	// float64, nested objects as maps), whatever Go types the caller used.
	var args map[string]any
	if json.Unmarshal(argJSON, &args) != nil {
		return nil
	}
	out := map[string]string{}
	var walk func(node headerNode, vals map[string]any)
	walk = func(node headerNode, vals map[string]any) {
		for name, p := range node {
			v, ok := vals[name]
			if !ok || v == nil {
				continue
			}
			if p.header != "" {
				if s, ok := headerValue(v); ok {
					out[paramHeaderPrefix+p.header] = s
				}
			}
			if sub, ok := v.(map[string]any); ok && p.nested != nil {
				walk(p.nested, sub)
			}
		}
	}
	walk(plan, args)
	if len(out) == 0 {
		return nil
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
	if r.Method != http.MethodPost || r.Header.Get("Mcp-Method") != "tools/call" ||
		r.Header.Get("Mcp-Protocol-Version") < headersRevision {
		return
	}
	h, _ := r.Context().Value(paramHeadersKey{}).(map[string]string)
	for k, v := range h {
		if r.Header.Get(k) == "" {
			r.Header.Set(k, v)
		}
	}
}
