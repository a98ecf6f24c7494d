package compiler

import (
	"strings"

	"github.com/duet-test/duet"
)

// maxPostRun bounds the post-run actions of one task.
const maxPostRun = 20

// postRun compiles a task's postRun list: the MCP tool calls made when a
// run of the task ends. Each names when (on), the server and the tool like
// an mcpCall step, and input bindings over the run's summary — fixed values
// and templates, or var bindings, over the variables task and run.
//
//	postRun:
//	  - on: failure              # failure | success | always
//	    server: tickets          # or serverKey: mcp_...
//	    tool: create_ticket
//	    input:
//	      title: "${task.name}: run ${run.id} ${run.status}"
//	      failed: {var: run.failedCases}
func (c *compiler) postRun(n *node) []*duet.PostRunAction {
	if n.kind == kindNull {
		return nil
	}
	if n.kind != kindSeq {
		c.errf(n, "postRun must be a list of actions (on, server or serverKey, tool, input)")
		return nil
	}
	if len(n.items) > maxPostRun {
		c.errf(n, "a task may declare at most %d post-run actions, got %d", maxPostRun, len(n.items))
		return nil
	}
	out := []*duet.PostRunAction{}
	for _, item := range n.items {
		if a := c.postRunAction(item); a != nil {
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func (c *compiler) postRunAction(n *node) *duet.PostRunAction {
	if n.kind != kindMap {
		c.errf(n, "a post-run action is a mapping (on, server or serverKey, tool, input, name), got %s", n.kind)
		return nil
	}
	before := len(c.diags)
	c.allowKeys(n, "name", "on", "server", "serverKey", "tool", "toolName", "input", "inputBindings")
	a := &duet.PostRunAction{Line: n.line, Name: strings.TrimSpace(c.stringField(n, "name", false))}
	switch on := duet.PostRunWhen(c.stringField(n, "on", true)); on {
	case duet.PostRunOnFailure, duet.PostRunOnSuccess, duet.PostRunAlways:
		a.On = on
	case "":
	default:
		c.errf(n.get("on"), "on must be failure, success or always, got %q", on)
	}
	m := &duet.MCPCallStep{InputBindings: map[string]duet.Binding{}}
	ref, refNode := c.callTarget(n, m, "a post-run action")
	in := n.get("input")
	if in == nil {
		in = n.get("inputBindings")
	}
	if in != nil && in.kind != kindNull {
		if in.kind != kindMap {
			c.errf(in, "input must be a mapping of argument: binding")
		} else {
			sc := &scope{} // only the builtins: task and run
			for j, k := range in.keys {
				name, _ := k.str()
				v := in.vals[j]
				if src := bindingSource(v); strings.HasPrefix(src, "page.") {
					c.errf(v, "a post-run action runs after the cases, without a page: bind the run's summary (a value, a ${...} template or {var: run...}), not %s", src)
					continue
				}
				if b, ok := c.binding(v, sc); ok {
					m.InputBindings[name] = b
				}
			}
		}
	}
	if ref != "" {
		c.resolveServer(refNode, ref, m)
	}
	if len(c.diags) > before {
		return nil
	}
	a.ServerKey, a.ServerName, a.ToolName, a.InputBindings = m.ServerKey, m.ServerName, m.ToolName, m.InputBindings
	if a.Name == "" {
		srv := a.ServerName
		if srv == "" {
			srv = a.ServerKey
		}
		a.Name = srv + "/" + a.ToolName
	}
	return a
}

// bindingSource is the from (or source) of a binding written as a
// mapping, "" otherwise.
func bindingSource(n *node) string {
	if n.kind != kindMap {
		return ""
	}
	for _, k := range []string{"from", "source"} {
		if v := n.get(k); v != nil {
			s, _ := v.str()
			return s
		}
	}
	return ""
}
