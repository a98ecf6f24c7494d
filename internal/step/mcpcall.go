package step

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/eval"
)

// MCPCall is the mcpCall step.
var MCPCall = register(&Kind{
	Name:    duet.StepMCPCall,
	Section: Data,
	Order:   30,
	Summary: "Call a tool of a registered MCP server as the person running the test, with their own registration and credentials.",
	Form: Form{
		Keys: []Key{
			{Name: "server", Type: Text, Doc: "the name of a server you registered (duet server add), resolved to its serverKey when compiled"},
			{Name: "serverKey", Type: Text, Doc: "the serverKey of a server you registered (mcp_NAME_8HEX), instead of server"},
			{Name: "tool", Type: Text, Doc: "the tool's name"},
			{Name: "toolName", Type: Text, Doc: "the same as tool"},
			{Name: "input", Type: Bindings, Doc: "one binding per argument of the tool"},
			{Name: "inputBindings", Type: Bindings, Doc: "the same as input"},
			{Name: "saveAs", Type: Ident, Doc: "the variable the result is saved to: {content, structuredContent, isError, text}"},
			{Name: "failurePolicy", Type: Enum(string(duet.FailRequired), string(duet.FailOptional)), Doc: "required (the default) fails the case when the call fails; optional records it and goes on"},
		},
		AtLeastOne: []string{"server", "serverKey"},
	},
	Example: "- mcpCall:\n" +
		"    server: order-query\n" +
		"    tool: query_order\n" +
		"    input:\n" +
		"      orderId: A1001                                   # a fixed value (strings are templates)\n" +
		"      id2: {var: order.structuredContent.order.id}     # an earlier variable, with a path\n" +
		"      id3: {from: page.url, param: orderId}            # a query parameter of the page URL\n" +
		"      seg: {from: page.url, segment: -1}               # a path segment (0 first, -1 last)\n" +
		"      title: {from: page.title}\n" +
		"      text: {from: page.text, selector: \"#status\"}\n" +
		"      attr: {from: page.attr, selector: \"#status\", attr: data-status}\n" +
		"    saveAs: order\n" +
		"    failurePolicy: required\n",
	Doc:     mcpCallDoc,
	Agent:   mcpCallAgent,
	Compile: compileMCPCall,
	Run: func(ctx context.Context, env Env, st *duet.Step) (string, any, error) {
		m := st.MCP
		if m == nil {
			return "", nil, noBody(st)
		}
		v, err := env.CallTool(ctx, m)
		return m.SaveAs, failedCall(v, err), err
	},
	Title: func(st *duet.Step) string {
		if st.MCP == nil {
			return string(st.Kind)
		}
		srv := st.MCP.ServerName
		if srv == "" {
			srv = st.MCP.ServerKey
		}
		return "mcpCall " + srv + "/" + st.MCP.ToolName
	},
})

const mcpCallDoc = `The task stores only the serverKey and the tool name, never a connection or a credential.
When a server's catalog has been synced, the compiler checks the tool exists and its required arguments
are bound. At run time, an executor who has not registered the server gets ` + "`" + `MCP_SERVER_NOT_CONFIGURED` + "`" + `
on that step — the run still starts. (The seed's form of a page binding works too: ` + "`" + `{source: page.url, path: orderId}` + "`" + `.)

**A failed call still sets ` + "`" + `saveAs` + "`" + `**, whatever made it fail — the tool reported an error, the executor
has not configured the server, a binding could not be read, the call timed out: the variable holds what
the server sent, if anything, with ` + "`" + `isError: true` + "`" + ` and ` + "`" + `error: {code, message}` + "`" + `. With
` + "`" + `failurePolicy: optional` + "`" + ` the case goes on, and later steps can branch on it:
` + "`" + "`" + "`" + `yaml
- mcpCall: {server: order-query, tool: query_order, input: {orderId: A1001}, saveAs: order, failurePolicy: optional}
- assert: order.isError == false || order.error.code == "MCP_SERVER_NOT_CONFIGURED"
` + "`" + "`" + "`"

const mcpCallAgent = "`" + `mcpCall:` + "`" + ` — call a tool of a registered MCP server on every run, as the person running the case:

      - mcpCall:
          server: orders                  # the registered server's name
          tool: query_order
          input:                          # one binding per tool argument
            orderId: A1001                          # a fixed value (strings may hold ${...})
            orderId: {var: resp.body.id}            # an earlier variable, with a path
            orderId: {from: page.url, param: orderId}   # a query parameter of the page URL
            orderId: {from: page.url, segment: -1}      # a path segment of the page URL
            title:   {from: page.title}
            label:   {from: page.text, selector: "#label"}
            href:    {from: page.attr, selector: "a.next", attr: href}
          saveAs: order                   # saved as {content, structuredContent, isError, text}
          failurePolicy: required         # or optional (record and go on)

  (each argument takes one binding; the page.* forms need an earlier open). Read the
  tool's result through its structuredContent, e.g. ` + "`" + `order.structuredContent.order.status` + "`" + `.`

func compileMCPCall(c *Compiler, st *duet.Step, n *Node) {
	if !c.mapping(n, "mcpCall must be a mapping (server or serverKey, tool, input, saveAs, failurePolicy)", "server", "serverKey", "tool", "toolName", "input", "inputBindings", "saveAs", "failurePolicy") {
		return
	}
	m := &duet.MCPCallStep{InputBindings: map[string]duet.Binding{}, FailurePolicy: duet.FailRequired}
	st.MCP = m
	ref, refNode := c.CallTarget(n, m, "mcpCall")
	in := n.Get("input")
	if in == nil {
		in = n.Get("inputBindings")
	}
	if c.optionalMapping(in, "input must be a mapping of argument: binding") {
		for j, k := range in.Keys {
			name, _ := k.Str()
			if b, ok := c.Binding(in.Vals[j]); ok {
				m.InputBindings[name] = b
			}
		}
	}
	if fp := c.String(n, "failurePolicy", false); fp != "" {
		switch duet.FailurePolicy(fp) {
		case duet.FailRequired, duet.FailOptional:
			m.FailurePolicy = duet.FailurePolicy(fp)
		default:
			c.Errf(n.Get("failurePolicy"), "failurePolicy must be required or optional, got %q", fp)
		}
	}
	m.SaveAs = c.SaveAs(n.Get("saveAs"))
	if ref == "" {
		return
	}
	c.ResolveServer(refNode, ref, m)
}

// CallTarget reads the server (server or serverKey) and the tool (tool or
// toolName) a call names into m, and returns the server reference and its
// node. what names the call in messages.
func (c *Compiler) CallTarget(n *Node, m *duet.MCPCallStep, what string) (string, *Node) {
	ref := c.String(n, "serverKey", false)
	refNode := n.Get("serverKey")
	if name := c.String(n, "server", false); name != "" {
		if ref != "" {
			c.Errf(n.Get("server"), "use either server or serverKey, not both")
		}
		ref, refNode, m.ServerName = name, n.Get("server"), name
	}
	if ref == "" {
		c.Errf(n, "%s needs server (a registered server's name) or serverKey", what)
	}
	m.ToolName = c.String(n, "tool", false)
	if m.ToolName == "" {
		m.ToolName = c.String(n, "toolName", false)
	}
	if m.ToolName == "" {
		c.Errf(n, "%s needs tool", what)
	}
	return ref, refNode
}

// ResolveServer fills m.ServerKey from ref and checks the tool and its
// arguments against the archived catalog when there is one.
func (c *Compiler) ResolveServer(n *Node, ref string, m *duet.MCPCallStep) {
	switch {
	case c.Servers != nil:
		// A case names only servers its author registered, by name or by
		// serverKey: its steps run with each executor's credentials.
		key, err := c.Servers.ResolveServer(c.Ctx, ref)
		if err != nil {
			c.Errf(n, "%s", duet.ErrorMessage(err))
			return
		}
		m.ServerKey = key
	case serverKeyRe().MatchString(ref):
		m.ServerKey = ref
		return
	default:
		c.Errf(n, "unknown MCP server %q: register it with `duet server add`, or write its serverKey (mcp_<name>_<8 hex>)", ref)
		return
	}
	if m.ToolName == "" {
		return
	}
	info, known, err := c.Servers.Tool(c.Ctx, m.ServerKey, m.ToolName)
	if err != nil {
		c.Errf(n, "%s", duet.ErrorMessage(err))
		return
	}
	if !known || info == nil || len(info.InputSchema) == 0 {
		return
	}
	var schema struct {
		Properties           map[string]json.RawMessage `json:"properties"`
		Required             []string                   `json:"required"`
		AdditionalProperties *bool                      `json:"additionalProperties"`
	}
	if json.Unmarshal(info.InputSchema, &schema) != nil {
		return
	}
	for _, req := range schema.Required {
		if _, ok := m.InputBindings[req]; !ok {
			c.Errf(n, "tool %s requires argument %q; add it to input", m.ToolName, req)
		}
	}
	if schema.Properties != nil && schema.AdditionalProperties != nil && !*schema.AdditionalProperties {
		for _, name := range slices.Sorted(maps.Keys(m.InputBindings)) {
			if _, ok := schema.Properties[name]; !ok {
				c.Errf(n, "tool %s has no argument %q (it takes: %s)", m.ToolName, name, strings.Join(slices.Sorted(maps.Keys(schema.Properties)), ", "))
			}
		}
	}
}

// Binding compiles one input binding. Forms:
//
//	orderId: A1001                              fixed value (string leaves are templates)
//	orderId: {value: A1001}                     fixed value
//	orderId: {var: order.structuredContent.id}  an earlier variable, with a path
//	orderId: {from: page.url, param: orderId}   page context (also source:/path:, as in the seed)
func (c *Compiler) Binding(n *Node) (duet.Binding, bool) {
	before := c.NumErrors()
	src := ""
	if n.Type == MapNode {
		if v := n.Get("from"); v != nil {
			src, _ = v.Str()
		} else if v := n.Get("source"); v != nil {
			src, _ = v.Str()
		} else if n.Get("var") != nil && len(n.Keys) == 1 {
			src = string(duet.BindVar)
		} else if n.Get("value") != nil && len(n.Keys) == 1 {
			b := duet.Binding{Source: duet.BindValue, Value: n.Get("value").Plain()}
			if err := eval.CheckValue(b.Value, c.Scope.Vars); err != nil {
				c.Errf(n, "%v", err)
			}
			return b, c.NumErrors() == before
		}
	}
	if src == "" {
		b := duet.Binding{Source: duet.BindValue, Value: n.Plain()}
		if err := eval.CheckValue(b.Value, c.Scope.Vars); err != nil {
			c.Errf(n, "%v", err)
		}
		return b, c.NumErrors() == before
	}
	b := duet.Binding{Source: duet.BindingSource(src)}
	switch b.Source {
	case duet.BindVar:
		c.AllowKeys(n, "from", "source", "var", "path")
		b.Path = c.String(n, "var", false)
		if b.Path == "" {
			b.Path = c.String(n, "path", true)
		}
		if b.Path != "" {
			if err := eval.Check(b.Path, c.Scope.Vars, false); err != nil {
				c.Errf(n, "var binding %q: %v", b.Path, err)
			}
		}
	case duet.BindPageURL:
		c.AllowKeys(n, "from", "source", "param", "path", "segment")
		b.Path = c.String(n, "param", false)
		if b.Path == "" {
			b.Path = c.String(n, "path", false)
		}
		if sn := n.Get("segment"); sn != nil {
			seg, ok := sn.Int()
			if !ok {
				c.Errf(sn, "segment must be an integer (0 is the first path segment, -1 the last)")
			}
			i := int(seg)
			b.Segment = &i
		}
		if (b.Path == "") == (b.Segment == nil) {
			c.Errf(n, "page.url binding needs param (a query parameter) or segment (a path segment)")
		}
	case duet.BindPageTitle:
		c.AllowKeys(n, "from", "source")
	case duet.BindPageText:
		c.AllowKeys(n, "from", "source", "selector")
		b.Selector = c.String(n, "selector", true)
	case duet.BindPageAttr:
		c.AllowKeys(n, "from", "source", "selector", "attr")
		b.Selector = c.String(n, "selector", true)
		b.Attr = c.String(n, "attr", true)
	default:
		c.Errf(n, "unknown binding source %q (value, var, page.url, page.title, page.text, page.attr)", src)
		return b, false
	}
	if strings.HasPrefix(src, "page.") && !c.Scope.PageOpen {
		c.Errf(n, "a %s binding needs a page: add an open step before this one", src)
	}
	return b, c.NumErrors() == before
}

// failedCall is what an mcpCall saves when it fails, whatever the reason —
// a tool error, a server the executor has not configured, a binding, a
// timeout: the result if the server sent one, with isError true and
// error {code, message}. One rule, so that a later step of a case that
// goes on (failurePolicy optional) can test order.isError or
// order.error.code instead of meeting an unknown variable.
func failedCall(v any, err error) any {
	if err == nil {
		return v
	}
	m, _ := v.(map[string]any)
	if m == nil {
		m = map[string]any{"text": ""}
	}
	m["isError"] = true
	m["error"] = map[string]any{"code": string(duet.ErrorCode(err)), "message": duet.ErrorMessage(err)}
	return m
}

// bindingSchema is the JSON Schema of one input binding: any value is a
// fixed value; the mapping forms read a variable or the page.
func bindingSchema() *jsonschema.Schema {
	text := func(doc string) *jsonschema.Schema { return &jsonschema.Schema{Types: scalarTypes, Description: doc} }
	return &jsonschema.Schema{
		Description: "where an argument's value comes from: a fixed value (strings are templates), {value: ...}, {var: PATH}, or {from: page.url|page.title|page.text|page.attr, ...}",
		AnyOf: []*jsonschema.Schema{
			{Type: "object", Properties: map[string]*jsonschema.Schema{
				"var": text("an earlier variable, with a path: order.structuredContent.id"),
			}, Required: []string{"var"}},
			{Type: "object", Properties: map[string]*jsonschema.Schema{
				"from":     {Enum: []any{"var", "page.url", "page.title", "page.text", "page.attr"}, Description: "where the value is read"},
				"path":     text("var: the variable, with a path; page.url: the query parameter"),
				"param":    text("page.url: the query parameter"),
				"segment":  {Type: "integer", Description: "page.url: the path segment (0 the first, -1 the last)"},
				"selector": text("page.text, page.attr: CSS selector of the element"),
				"attr":     text("page.attr: the attribute's name"),
			}, PropertyOrder: []string{"from", "path", "param", "segment", "selector", "attr"}, Required: []string{"from"}},
			{Description: "a fixed value"},
		},
	}
}
