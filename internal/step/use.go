package step

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/eval"
)

// FlowDef is a reusable flow as the compiler reads it: a flow of the suite
// (flows:) or a flow asset, with the same shape — its parameters and its
// steps.
type FlowDef struct {
	// Name is the flow's name: its key under flows:, or "owner/name" of
	// an asset.
	Name string
	// Asset is "owner/name" of a flow asset, Version its version; "" and
	// 0 for a flow of the suite.
	Asset   string
	Version int
	Params  []FlowParam
	// Steps is the list of the flow's steps, at its place in its source.
	Steps *Node
	// Line is where the flow is declared (a flow of the suite).
	Line int
}

// Label is how messages name the flow.
func (f *FlowDef) Label() string {
	if f.Asset != "" {
		return fmt.Sprintf("%s@%d", f.Asset, f.Version)
	}
	return f.Name
}

// FlowParam is a parameter of a flow: a variable of the flow's steps, set
// from the use step's with, else its default. A parameter without a default
// is required.
type FlowParam struct {
	Name     string
	Default  any
	Required bool
}

// FlowResolver finds the flows use steps name.
type FlowResolver interface {
	// Flow returns the flow ref names: a flow of the suite by its name,
	// else a flow asset its author may read ("name", "owner/name", with
	// "@VERSION" to pin one). Returns NOT_FOUND, with a message that says
	// which flows there are.
	Flow(ctx context.Context, ref string) (*FlowDef, error)
}

// ReadFlow reads the definition of a flow — the mapping {params, steps}
// under a suite's flows:, or the body of a flow asset — into def (Params
// and Steps). Problems are recorded at their nodes; it reports whether
// the flow can be used.
func (c *Compiler) ReadFlow(n *Node, def *FlowDef) bool {
	before := c.NumErrors()
	if !c.mapping(n, fmt.Sprintf("flow %s must be a mapping with steps (and params)", def.Name), "description", "params", "steps") {
		return false
	}
	if d := n.Get("description"); d != nil {
		if _, ok := d.Str(); !ok && d.Type != NullNode {
			c.Errf(d, "description must be text")
		}
	}
	if p := n.Get("params"); p != nil && p.Type != NullNode {
		switch p.Type {
		case SeqNode:
			for _, it := range p.Items {
				if name := c.paramName(it); name != "" {
					def.Params = append(def.Params, FlowParam{Name: name, Required: true})
				}
			}
		case MapNode:
			for j, k := range p.Keys {
				name := c.paramName(k)
				if name == "" {
					continue
				}
				v := p.Vals[j]
				fp := FlowParam{Name: name, Required: v.Type == NullNode}
				if !fp.Required {
					fp.Default = v.Plain()
				}
				def.Params = append(def.Params, fp)
			}
		default:
			c.Errf(p, "params must be a list of names (each required) or a mapping of name: default (null: required)")
		}
	}
	s := n.Get("steps")
	switch {
	case s == nil:
		c.Errf(n, "flow %s needs steps", def.Name)
	case s.Type != SeqNode || len(s.Items) == 0:
		c.Errf(s, "flow %s: steps must be a non-empty list", def.Name)
	default:
		def.Steps = s
	}
	return c.NumErrors() == before
}

// paramName reads the name of a flow's parameter.
func (c *Compiler) paramName(n *Node) string {
	s, ok := n.Value.(string)
	switch {
	case !ok || !identRe().MatchString(s):
		c.Errf(n, "a parameter's name is a variable name (letters, digits, _), got %v", n.Value)
	case slices.Contains(eval.Builtins, s) || eval.IsFunction(s):
		c.Errf(n, "%q is a built-in name; choose another parameter name", s)
	default:
		return s
	}
	return ""
}

var useForm = shortFor("flow", Text, "the flow's name",
	"a flow of the suite (flows:), or a flow asset: name, owner/name, with @VERSION to pin one (default: the latest when the suite is applied)",
	Key{Name: "with", Type: MapOf(Any), Doc: "the flow's parameters: name → value (strings are templates over the variables here)"})

// Use is the use step.
var Use = register(&Kind{
	Name:    duet.StepUse,
	Section: Flow,
	Order:   330,
	Summary: "Run a reusable flow — a flow of the suite, or a flow asset shared across tasks — with parameters.",
	Form:    useForm,
	Example: "- use: accept-cookies\n" +
		"- use:\n" +
		"    flow: login\n" +
		"    with: {user: alice, password: \"${secrets.ALICE_PASSWORD}\"}\n",
	Doc: "A flow is declared once under the suite's `flows:` (or saved as a flow asset, `duet asset add flow NAME -f FILE`, " +
		"and shared like the other assets): `params` (a list of names, or name: default — null for a required one) and " +
		"`steps`. The flow's steps see its parameters (and the built-in variables), not the caller's variables; the " +
		"parameters and what the flow saves are the caller's variables after it. Flows can use flows, " +
		fmt.Sprintf("at most %d deep; a cycle is refused when the suite is compiled, with the chain. ", MaxFlowDepth) +
		"A flow asset is copied into the case when the suite is applied (its version is in the step): a new version " +
		"of the asset changes a case when its suite is applied again.\n\n" +
		"```yaml\nflows:\n  login:\n    params: {user: null, password: null}   # null: required\n    steps:\n" +
		"      - open: /login\n      - fill: {selector: \"#user\", value: \"${user}\"}\n" +
		"      - fill: {selector: \"#password\", value: \"${password}\"}\n      - click: \"#sign-in\"\n```",
	Agent:   "`use: {flow: login, with: {user: alice, password: \"${secrets.ALICE_PASSWORD}\"}}` or `use: accept-cookies` — run a reusable flow (flows: of the suite, or a flow asset). A password or API key is never written in a case: it is the executor's secret, `${secrets.NAME}` (duet vault set NAME).",
	Compile: compileUse,
	Run: func(ctx context.Context, env Env, st *duet.Step) (string, any, error) {
		u := st.Use
		if u == nil {
			return "", nil, noBody(st)
		}
		if err := saveEach(env, u.With, eval.RenderValue, func(name string) string { return "use " + u.Flow + ": parameter " + name }); err != nil {
			return "", nil, err
		}
		return "", nil, env.RunSteps(ctx, u.Steps, 0)
	},
	Title: func(st *duet.Step) string {
		if st.Use == nil {
			return string(st.Kind)
		}
		return "use " + st.Use.Flow
	},
})

func compileUse(c *Compiler, st *duet.Step, n *Node) {
	u := &duet.UseStep{}
	st.Use = u
	with, ok := readUse(c, u, n)
	if !ok {
		return
	}
	def := c.resolveFlow(n, u.Flow)
	if def == nil {
		return
	}
	u.Asset, u.Version = def.Asset, def.Version
	u.With = c.flowArgs(n, with, def)
	if def.Steps != nil {
		u.Steps = c.flowSteps(n, def)
	}
}

// readUse reads the use step's body — a flow's name, or {flow, with} —
// into u.Flow, and returns the with node (nil when there is none). It
// reports whether the step names a flow.
func readUse(c *Compiler, u *duet.UseStep, n *Node) (with *Node, ok bool) {
	if s, isStr := n.Str(); isStr {
		u.Flow = strings.TrimSpace(s)
	} else if n.Type == MapNode {
		c.AllowKeys(n, useForm.KeyNames()...)
		u.Flow = strings.TrimSpace(c.String(n, "flow", true))
		with = n.Get("with")
	} else {
		c.Errf(n, "use must be a flow's name or {flow, with}")
		return nil, false
	}
	if u.Flow == "" {
		if n.Type != MapNode {
			c.Errf(n, "use needs a flow's name")
		}
		return nil, false
	}
	return with, true
}

// resolveFlow finds the flow a use step at n names, and refuses it when
// using it here would close a cycle or nest flows deeper than
// MaxFlowDepth. It returns nil when the flow cannot be used (the problem
// recorded at n).
func (c *Compiler) resolveFlow(n *Node, ref string) *FlowDef {
	if c.Flows == nil {
		c.Errf(n, "unknown flow %q: declare it under flows: in the suite, or save it as a flow asset", ref)
		return nil
	}
	def, err := c.Flows.Flow(c.Ctx, ref)
	if err != nil {
		c.Errf(n, "%s", duet.ErrorMessage(err))
		return nil
	}
	if i := slices.Index(c.flowChain, def.Label()); i >= 0 {
		c.Errf(n, "flow cycle: %s → %s; a flow cannot use itself, directly or through other flows", strings.Join(c.flowChain[i:], " → "), def.Label())
		return nil
	}
	if len(c.flowChain) >= MaxFlowDepth {
		c.Errf(n, "flows use flows more than %d deep here (%s → %s)", MaxFlowDepth, strings.Join(c.flowChain, " → "), def.Label())
		return nil
	}
	return def
}

// flowArgs returns the flow's parameters for a use step at n: what with
// gives, else the defaults. A parameter the flow does not take, and a
// required one with gives no value, are problems.
func (c *Compiler) flowArgs(n, with *Node, def *FlowDef) map[string]any {
	args := map[string]any{}
	given := map[string]bool{}
	if c.optionalMapping(with, "use: with must be a mapping of parameter: value") {
		for j, k := range with.Keys {
			name, _ := k.Str()
			if !slices.ContainsFunc(def.Params, func(p FlowParam) bool { return p.Name == name }) {
				c.Errf(k, "flow %s has no parameter %q (it takes: %s)", def.Label(), name, flowNames(paramNames(def.Params)))
				continue
			}
			v := with.Vals[j].Plain()
			if err := eval.CheckValue(v, c.Scope.Vars); err != nil {
				c.Errf(with.Vals[j], "use %s: %s: %v", def.Label(), name, err)
			}
			args[name], given[name] = v, true
		}
	}
	for _, p := range def.Params {
		switch {
		case given[p.Name]:
		case p.Required:
			c.Errf(n, "flow %s needs parameter %q: add it to with", def.Label(), p.Name)
		default:
			args[p.Name] = p.Default
		}
	}
	return args
}

// flowSteps compiles the flow's steps for a use step at n, in the flow's
// own scope: its parameters (the built-ins aside), and the page as the
// caller has it. After it, the caller's scope holds what the flow saves,
// and the page is open when either had it open.
func (c *Compiler) flowSteps(n *Node, def *FlowDef) []duet.Step {
	caller := c.Scope
	c.Scope = Scope{PageOpen: caller.PageOpen}
	for _, p := range def.Params {
		c.Scope.Save(p.Name)
	}
	c.flowChain = append(c.flowChain, def.Label())
	before := len(c.diags)
	steps := c.Steps(def.Steps)
	c.flowChain = c.flowChain[:len(c.flowChain)-1]
	if def.Asset != "" {
		// An asset's lines are not the suite's: its errors are reported
		// at the use step, with the asset's own line.
		for _, d := range c.diags[before:] {
			d.Message = fmt.Sprintf("flow %s, its line %d:%d: %s", def.Label(), d.Line, d.Col, d.Message)
			d.Line, d.Col = n.Line, n.Col
		}
	}
	inner := c.Scope
	c.Scope = caller
	for _, v := range inner.Vars {
		c.Scope.Save(v)
	}
	c.Scope.PageOpen = caller.PageOpen || inner.PageOpen
	return steps
}

func paramNames(ps []FlowParam) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Name
	}
	return out
}
