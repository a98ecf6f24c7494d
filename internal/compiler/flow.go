package compiler

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/step"
)

// The suite's reusable flows (flows:) and the flow assets its use steps
// name: both read as step.FlowDef, their steps compiled at each use.

// FlowAssets returns the flow asset ref names ("name" or "owner/name") at
// version (0: the latest) as the suite's author may read it. Returns
// NOT_FOUND.
type FlowAssets func(ctx context.Context, ref string, version int) (*duet.Asset, error)

var flowNameRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`) })

// flows reads the suite's flows: a mapping of name → {params, steps}.
func (c *compiler) flows(n *step.Node) map[string]*step.FlowDef {
	out := map[string]*step.FlowDef{}
	if n == nil || n.Type == step.NullNode {
		return out
	}
	if n.Type != step.MapNode {
		c.Errf(n, "flows must be a mapping of name: {params, steps}")
		return out
	}
	for j, k := range n.Keys {
		name, _ := k.Str()
		if !flowNameRe().MatchString(name) {
			c.Errf(k, "flow name %q: use lower-case letters, digits, '.', '_' or '-' (at most 64)", name)
			continue
		}
		def := &step.FlowDef{Name: name, Line: k.Line}
		if c.ReadFlow(n.Vals[j], def) {
			out[name] = def
		}
	}
	return out
}

// flowResolver finds the flows use steps name: the suite's, then flow
// assets.
type flowResolver struct {
	suite  map[string]*step.FlowDef
	assets FlowAssets
	cache  map[string]*step.FlowDef
}

// Flow implements step.FlowResolver.
func (r *flowResolver) Flow(ctx context.Context, ref string) (*step.FlowDef, error) {
	if def := r.suite[ref]; def != nil {
		return def, nil
	}
	if def := r.cache[ref]; def != nil {
		return def, nil
	}
	name, version := ref, 0
	if i := strings.LastIndexByte(ref, '@'); i >= 0 {
		v, err := strconv.Atoi(ref[i+1:])
		if err != nil || v < 1 {
			return nil, duet.Errorf(duet.CodeInvalidArgument, "flow %q: @ pins a version, a whole number from 1", ref)
		}
		name, version = ref[:i], v
	}
	suiteNames := make([]string, 0, len(r.suite))
	for n := range r.suite {
		suiteNames = append(suiteNames, n)
	}
	slices.Sort(suiteNames)
	known := "the suite declares none"
	if len(suiteNames) > 0 {
		known = "the suite's flows: " + strings.Join(suiteNames, ", ")
	}
	if r.assets == nil {
		return nil, duet.Errorf(duet.CodeNotFound, "unknown flow %q (%s)", ref, known)
	}
	a, err := r.assets(ctx, name, version)
	if duet.ErrorCode(err) == duet.CodeNotFound {
		return nil, duet.Errorf(duet.CodeNotFound, "unknown flow %q: neither a flow of the suite (%s) nor a flow asset you can read (duet asset list flow)", ref, known)
	} else if err != nil {
		return nil, err
	}
	def := &step.FlowDef{Name: ref, Asset: a.Ref(), Version: a.Version}
	root, d := step.Parse([]byte(a.Body))
	if d != nil {
		return nil, duet.Errorf(duet.CodeInvalidArgument, "flow asset %s@%d is not YAML Duet reads: %d:%d: %s", a.Ref(), a.Version, d.Line, d.Col, d.Message)
	}
	sub := &step.Compiler{Ctx: ctx}
	if !sub.ReadFlow(root, def) {
		d := sub.Diagnostics()[0]
		return nil, duet.Errorf(duet.CodeInvalidArgument, "flow asset %s@%d is not a flow: its line %d:%d: %s", a.Ref(), a.Version, d.Line, d.Col, d.Message)
	}
	if r.cache == nil {
		r.cache = map[string]*step.FlowDef{}
	}
	r.cache[ref] = def
	return def, nil
}

// CheckFlow checks the body of a flow asset before it is saved: YAML with
// params and steps, each step of a known kind with known keys, its
// expressions reading its parameters and what its steps save, the flows it
// uses (as assets finds them: those the saving user may read) taking the
// parameters given. What depends on the task that uses it (its base URL,
// the variables a caller saved) is checked where a case uses it. Returns
// INVALID_ARGUMENT naming the line and column.
func CheckFlow(ctx context.Context, body string, assets FlowAssets) error {
	root, d := step.Parse([]byte(body))
	if d != nil {
		return duet.Errorf(duet.CodeInvalidArgument, "the flow is not YAML Duet reads: %d:%d: %s", d.Line, d.Col, d.Message)
	}
	c := newCompiler(ctx, Options{Flows: assets})
	def := &step.FlowDef{Name: "flow"}
	if c.ReadFlow(root, def) {
		// Any task's: relative URLs resolve against the task that uses it.
		c.Task, c.Scope = &duet.Task{BaseURL: "http://flow.invalid"}, step.Scope{PageOpen: true}
		for _, p := range def.Params {
			c.Scope.Save(p.Name)
		}
		c.Steps(def.Steps)
	}
	if diags := c.Diagnostics(); len(diags) > 0 {
		return duet.Errorf(duet.CodeInvalidArgument, "%d:%d: %s", diags[0].Line, diags[0].Col, diags[0].Message)
	}
	return nil
}

// hookSteps compiles the steps of a hook (key of the mapping n) with the
// steps marked as the hook's.
func (c *compiler) hookSteps(n *step.Node, key string) []duet.Step {
	v := n.Get(key)
	if v == nil || v.Type == step.NullNode {
		return nil
	}
	if v.Type != step.SeqNode || len(v.Items) == 0 {
		c.Errf(v, "%s must be a non-empty list of steps", key)
		return nil
	}
	c.Hook = key
	defer func() { c.Hook = "" }()
	return c.Steps(v)
}

// renumber numbers steps from 0 in order (a case's steps joined with its
// hooks').
func renumber(steps []duet.Step) []duet.Step {
	for i := range steps {
		steps[i].Index = i
	}
	return steps
}

// dedupe drops repeated diagnostics: a flow or a task's hook compiled at
// each use reports a problem of its own once.
func dedupe(list []*Diagnostic) []*Diagnostic {
	seen := map[string]bool{}
	out := list[:0]
	for _, d := range list {
		k := fmt.Sprintf("%d:%d:%s", d.Line, d.Col, d.Message)
		if !seen[k] {
			seen[k] = true
			out = append(out, d)
		}
	}
	return out
}
