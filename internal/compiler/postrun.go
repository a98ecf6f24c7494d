package compiler

import (
	"strings"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/step"
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
func (c *compiler) postRun(n *step.Node) []*duet.PostRunAction {
	if n.Type == step.NullNode {
		return nil
	}
	if n.Type != step.SeqNode {
		c.Errf(n, "postRun must be a list of actions (on, server or serverKey, tool, input)")
		return nil
	}
	if len(n.Items) > maxPostRun {
		c.Errf(n, "a task may declare at most %d post-run actions, got %d", maxPostRun, len(n.Items))
		return nil
	}
	out := []*duet.PostRunAction{}
	for _, item := range n.Items {
		if a := c.postRunAction(item); a != nil {
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func (c *compiler) postRunAction(n *step.Node) *duet.PostRunAction {
	if n.Type != step.MapNode {
		c.Errf(n, "a post-run action is a mapping (on, server or serverKey, tool, input, name), got %s", n.Type)
		return nil
	}
	before := c.NumErrors()
	c.AllowKeys(n, keyNames(postRunKeys)...)
	a := &duet.PostRunAction{Line: n.Line, Name: strings.TrimSpace(c.String(n, "name", false))}
	switch on := duet.PostRunWhen(c.String(n, "on", true)); on {
	case duet.PostRunOnFailure, duet.PostRunOnSuccess, duet.PostRunAlways:
		a.On = on
	case "":
	default:
		c.Errf(n.Get("on"), "on must be failure, success or always, got %q", on)
	}
	m := &duet.MCPCallStep{InputBindings: map[string]duet.Binding{}}
	ref, refNode := c.CallTarget(n, m, "a post-run action")
	in := n.Get("input")
	if in == nil {
		in = n.Get("inputBindings")
	}
	if in != nil && in.Type != step.NullNode {
		if in.Type != step.MapNode {
			c.Errf(in, "input must be a mapping of argument: binding")
		} else {
			c.Scope = step.Scope{} // only the builtins: task and run
			for j, k := range in.Keys {
				name, _ := k.Str()
				v := in.Vals[j]
				if src := bindingSource(v); strings.HasPrefix(src, "page.") {
					c.Errf(v, "a post-run action runs after the cases, without a page: bind the run's summary (a value, a ${...} template or {var: run...}), not %s", src)
					continue
				}
				if b, ok := c.Binding(v); ok {
					m.InputBindings[name] = b
				}
			}
		}
	}
	if ref != "" {
		c.ResolveServer(refNode, ref, m)
	}
	if c.NumErrors() > before {
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
func bindingSource(n *step.Node) string {
	if n.Type != step.MapNode {
		return ""
	}
	for _, k := range []string{"from", "source"} {
		if v := n.Get(k); v != nil {
			s, _ := v.Str()
			return s
		}
	}
	return ""
}
