package compiler

import (
	"encoding/json"
	"regexp"
	"strings"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/eval"
)

func (c *compiler) mcpCall(st *duet.Step, n *node, sc *scope) {
	if n.kind != kindMap {
		c.errf(n, "mcpCall must be a mapping (server or serverKey, tool, input, saveAs, failurePolicy)")
		return
	}
	c.allowKeys(n, "server", "serverKey", "tool", "toolName", "input", "inputBindings", "saveAs", "failurePolicy")
	m := &duet.MCPCallStep{InputBindings: map[string]duet.Binding{}, FailurePolicy: duet.FailRequired}
	st.MCP = m
	ref, refNode := c.callTarget(n, m, "mcpCall")
	in := n.get("input")
	if in == nil {
		in = n.get("inputBindings")
	}
	if in != nil && in.kind != kindNull {
		if in.kind != kindMap {
			c.errf(in, "input must be a mapping of argument: binding")
		} else {
			for j, k := range in.keys {
				name, _ := k.str()
				if b, ok := c.binding(in.vals[j], sc); ok {
					m.InputBindings[name] = b
				}
			}
		}
	}
	if fp := c.stringField(n, "failurePolicy", false); fp != "" {
		switch duet.FailurePolicy(fp) {
		case duet.FailRequired, duet.FailOptional:
			m.FailurePolicy = duet.FailurePolicy(fp)
		default:
			c.errf(n.get("failurePolicy"), "failurePolicy must be required or optional, got %q", fp)
		}
	}
	m.SaveAs = c.saveAs(n.get("saveAs"), sc)
	if ref == "" {
		return
	}
	c.resolveServer(refNode, ref, m)
}

// callTarget reads the server (server or serverKey) and the tool (tool or
// toolName) a call names into m, and returns the server reference and its
// node. what names the call in messages.
func (c *compiler) callTarget(n *node, m *duet.MCPCallStep, what string) (string, *node) {
	ref := c.stringField(n, "serverKey", false)
	refNode := n.get("serverKey")
	if name := c.stringField(n, "server", false); name != "" {
		if ref != "" {
			c.errf(n.get("server"), "use either server or serverKey, not both")
		}
		ref, refNode, m.ServerName = name, n.get("server"), name
	}
	if ref == "" {
		c.errf(n, "%s needs server (a registered server's name) or serverKey", what)
	}
	m.ToolName = c.stringField(n, "tool", false)
	if m.ToolName == "" {
		m.ToolName = c.stringField(n, "toolName", false)
	}
	if m.ToolName == "" {
		c.errf(n, "%s needs tool", what)
	}
	return ref, refNode
}

// resolveServer fills m.ServerKey from ref and checks the tool and its
// arguments against the archived catalog when there is one.
func (c *compiler) resolveServer(n *node, ref string, m *duet.MCPCallStep) {
	switch {
	case c.opts.Servers != nil:
		// A case names only servers its author registered, by name or by
		// serverKey: its steps run with each executor's credentials.
		key, err := c.opts.Servers.ResolveServer(c.ctx, ref)
		if err != nil {
			c.errf(n, "%s", duet.ErrorMessage(err))
			return
		}
		m.ServerKey = key
	case serverKeyRe().MatchString(ref):
		m.ServerKey = ref
		return
	default:
		c.errf(n, "unknown MCP server %q: register it with `duet server add`, or write its serverKey (mcp_<name>_<8 hex>)", ref)
		return
	}
	if m.ToolName == "" {
		return
	}
	info, known, err := c.opts.Servers.Tool(c.ctx, m.ServerKey, m.ToolName)
	if err != nil {
		c.errf(n, "%s", duet.ErrorMessage(err))
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
			c.errf(n, "tool %s requires argument %q; add it to input", m.ToolName, req)
		}
	}
	if schema.Properties != nil && schema.AdditionalProperties != nil && !*schema.AdditionalProperties {
		for _, name := range sortedKeys(m.InputBindings) {
			if _, ok := schema.Properties[name]; !ok {
				c.errf(n, "tool %s has no argument %q (it takes: %s)", m.ToolName, name, strings.Join(sortedKeys(schema.Properties), ", "))
			}
		}
	}
}

// binding compiles one input binding. Forms:
//
//	orderId: A1001                              fixed value (string leaves are templates)
//	orderId: {value: A1001}                     fixed value
//	orderId: {var: order.structuredContent.id}  an earlier variable, with a path
//	orderId: {from: page.url, param: orderId}   page context (also source:/path:, as in the seed)
func (c *compiler) binding(n *node, sc *scope) (duet.Binding, bool) {
	before := len(c.diags)
	src := ""
	if n.kind == kindMap {
		if v := n.get("from"); v != nil {
			src, _ = v.str()
		} else if v := n.get("source"); v != nil {
			src, _ = v.str()
		} else if n.get("var") != nil && len(n.keys) == 1 {
			src = string(duet.BindVar)
		} else if n.get("value") != nil && len(n.keys) == 1 {
			b := duet.Binding{Source: duet.BindValue, Value: n.get("value").plain()}
			if err := eval.CheckValue(b.Value, sc.vars); err != nil {
				c.errf(n, "%v", err)
			}
			return b, len(c.diags) == before
		}
	}
	if src == "" {
		b := duet.Binding{Source: duet.BindValue, Value: n.plain()}
		if err := eval.CheckValue(b.Value, sc.vars); err != nil {
			c.errf(n, "%v", err)
		}
		return b, len(c.diags) == before
	}
	b := duet.Binding{Source: duet.BindingSource(src)}
	switch b.Source {
	case duet.BindVar:
		c.allowKeys(n, "from", "source", "var", "path")
		b.Path = c.stringField(n, "var", false)
		if b.Path == "" {
			b.Path = c.stringField(n, "path", true)
		}
		if b.Path != "" {
			if err := eval.Check(b.Path, sc.vars, false); err != nil {
				c.errf(n, "var binding %q: %v", b.Path, err)
			}
		}
	case duet.BindPageURL:
		c.allowKeys(n, "from", "source", "param", "path", "segment")
		b.Path = c.stringField(n, "param", false)
		if b.Path == "" {
			b.Path = c.stringField(n, "path", false)
		}
		if sn := n.get("segment"); sn != nil {
			seg, ok := sn.value.(int64)
			if !ok {
				c.errf(sn, "segment must be an integer (0 is the first path segment, -1 the last)")
			}
			i := int(seg)
			b.Segment = &i
		}
		if (b.Path == "") == (b.Segment == nil) {
			c.errf(n, "page.url binding needs param (a query parameter) or segment (a path segment)")
		}
	case duet.BindPageTitle:
		c.allowKeys(n, "from", "source")
	case duet.BindPageText:
		c.allowKeys(n, "from", "source", "selector")
		b.Selector = c.stringField(n, "selector", true)
	case duet.BindPageAttr:
		c.allowKeys(n, "from", "source", "selector", "attr")
		b.Selector = c.stringField(n, "selector", true)
		b.Attr = c.stringField(n, "attr", true)
	default:
		c.errf(n, "unknown binding source %q (value, var, page.url, page.title, page.text, page.attr)", src)
		return b, false
	}
	if strings.HasPrefix(src, "page.") && !sc.pageOpen {
		c.errf(n, "a %s binding needs a page: add an open step before this one", src)
	}
	return b, len(c.diags) == before
}

func (c *compiler) browser(st *duet.Step, n *node, task *duet.Task, sc *scope) {
	b := &duet.BrowserStep{}
	st.Browser = b
	short, isShort := n.str()
	isMap := n.kind == kindMap
	if !isShort && !isMap && !(st.Kind == duet.StepScreenshot && n.kind == kindNull) {
		c.errf(n, "%s must be a string or a mapping", st.Kind)
		return
	}
	field := func(key string, required bool) string {
		if !isMap {
			return ""
		}
		s := c.stringField(n, key, required)
		if s != "" {
			c.template(n.get(key), key, s, sc)
		}
		return s
	}
	needPage := func() {
		if !sc.pageOpen {
			c.errf(n, "%s needs a page: add an open step before it", st.Kind)
		}
	}
	checkRegexp := func(key, re string) {
		if re != "" && !eval.IsTemplate(re) {
			if _, err := regexp.Compile(re); err != nil {
				c.errf(n.get(key), "%s: invalid regular expression: %v", key, err)
			}
		}
	}
	switch st.Kind {
	case duet.StepOpen:
		if isMap {
			c.allowKeys(n, "url")
			b.URL = field("url", true)
		} else {
			b.URL = short
			c.template(n, "open", short, sc)
		}
		if b.URL != "" {
			c.relativeURL(n, "open", b.URL, task)
		}
		sc.pageOpen = true
	case duet.StepClick, duet.StepAssertVisible:
		needPage()
		if isMap {
			keys := []string{"selector"}
			if st.Kind == duet.StepAssertVisible {
				keys = append(keys, "visible")
			}
			c.allowKeys(n, keys...)
			b.Selector = field("selector", true)
			if v := n.get("visible"); v != nil {
				vb, ok := v.value.(bool)
				if !ok {
					c.errf(v, "visible must be true or false")
				}
				b.Visible = &vb
			}
		} else {
			b.Selector = short
			c.template(n, string(st.Kind), short, sc)
		}
	case duet.StepFill, duet.StepSelect:
		needPage()
		if !isMap {
			c.errf(n, "%s needs {selector, value}", st.Kind)
			return
		}
		c.allowKeys(n, "selector", "value")
		b.Selector = field("selector", true)
		if vn := n.get("value"); vn == nil {
			c.errf(n, "missing key value")
		} else if s, ok := vn.str(); ok {
			b.Value = s
			c.template(vn, "value", s, sc)
		} else {
			c.errf(vn, "value must be a string")
		}
	case duet.StepPress:
		needPage()
		if isMap {
			c.allowKeys(n, "key", "selector")
			b.Key = field("key", true)
			b.Selector = field("selector", false)
		} else {
			b.Key = short
		}
	case duet.StepWaitFor:
		needPage()
		if isMap {
			c.allowKeys(n, "selector", "text", "urlContains", "urlMatches", "visible")
			b.Selector, b.Text = field("selector", false), field("text", false)
			b.URLContains, b.URLMatches = field("urlContains", false), field("urlMatches", false)
			checkRegexp("urlMatches", b.URLMatches)
			if v := n.get("visible"); v != nil {
				vb, _ := v.value.(bool)
				b.Visible = &vb
			}
			if b.Selector == "" && b.Text == "" && b.URLContains == "" && b.URLMatches == "" {
				c.errf(n, "waitFor needs selector, text, urlContains or urlMatches")
			}
		} else {
			b.Selector = short
		}
	case duet.StepAssertText, duet.StepAssertURL:
		needPage()
		if !isMap {
			if st.Kind == duet.StepAssertURL {
				b.Contains = short
				c.template(n, "assertURL", short, sc)
				return
			}
			c.errf(n, "assertText needs {selector, equals|contains|matches}")
			return
		}
		keys := []string{"equals", "contains", "matches"}
		if st.Kind == duet.StepAssertText {
			keys = append(keys, "selector")
			b.Selector = field("selector", true)
		}
		c.allowKeys(n, keys...)
		b.Equals, b.Contains, b.Matches = field("equals", false), field("contains", false), field("matches", false)
		checkRegexp("matches", b.Matches)
		set := 0
		for _, s := range []string{"equals", "contains", "matches"} {
			if n.get(s) != nil {
				set++
			}
		}
		if set != 1 {
			c.errf(n, "%s needs exactly one of equals, contains, matches", st.Kind)
		}
	case duet.StepExtract:
		needPage()
		if !isMap {
			c.errf(n, "extract needs {from, as, ...}")
			return
		}
		c.allowKeys(n, "from", "selector", "attr", "param", "segment", "as", "saveAs")
		b.From = c.stringField(n, "from", true)
		switch b.From {
		case "text", "value":
			b.Selector = field("selector", true)
		case "attr":
			b.Selector, b.Attr = field("selector", true), field("attr", true)
		case "url.query":
			b.Param = field("param", true)
		case "url.segment":
			sn := n.get("segment")
			seg, ok := int64(0), false
			if sn != nil {
				seg, ok = sn.value.(int64)
			}
			if !ok {
				c.errf(n, "extract from url.segment needs segment: N (0 first, -1 last)")
			}
			i := int(seg)
			b.Segment = &i
		case "url", "title":
		case "":
		default:
			c.errf(n.get("from"), "extract from must be text, value, attr, url, url.query, url.segment or title; got %q", b.From)
		}
		as := n.get("as")
		if as == nil {
			as = n.get("saveAs")
		}
		if as == nil {
			c.errf(n, "extract needs as: (the variable to save to)")
		}
		b.SaveAs = c.saveAs(as, sc)
	case duet.StepScreenshot:
		needPage()
		if isMap {
			c.allowKeys(n, "fullPage", "name")
			if fp := n.get("fullPage"); fp != nil {
				v, ok := fp.value.(bool)
				if !ok {
					c.errf(fp, "fullPage must be true or false")
				}
				b.FullPage = v
			}
			if nm := c.stringField(n, "name", false); nm != "" && st.Name == "" {
				st.Name = nm
			}
		} else if isShort && st.Name == "" {
			st.Name = short
		}
	default:
		c.errf(n, "unknown browser step %s", st.Kind)
	}
}
