package compiler

import (
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/step"
)

var envNameRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`) })

// environments reads the task's environments and its default one.
//
//	environments:
//	  staging: {baseURL: https://staging.shop.example, vars: {currency: EUR}}
//	  prod: {baseURL: https://shop.example}
//	defaultEnvironment: staging
func (c *compiler) environments(n *step.Node, t *duet.Task) {
	if en := n.Get("environments"); en != nil && en.Type != step.NullNode {
		if en.Type != step.MapNode {
			c.Errf(en, "environments must be a mapping of name: {baseURL, vars}")
		} else {
			t.Environments = map[string]*duet.Environment{}
			for j, k := range en.Keys {
				name, _ := k.Str()
				if !envNameRe().MatchString(name) {
					c.Errf(k, "environment name %q: use letters, digits, '.', '_' or '-' (at most 64)", name)
					continue
				}
				if e := c.environment(en.Vals[j], name); e != nil {
					t.Environments[name] = e
				}
			}
		}
	}
	def := c.String(n, "defaultEnvironment", false)
	if def == "" {
		return
	}
	if t.Environments[def] == nil {
		names := slices.Sorted(func(yield func(string) bool) {
			for k := range t.Environments {
				if !yield(k) {
					return
				}
			}
		})
		c.Errf(n.Get("defaultEnvironment"), "defaultEnvironment %q is not one of the task's environments (%s)", def, strings.Join(names, ", "))
		return
	}
	t.DefaultEnvironment = def
}

func (c *compiler) environment(n *step.Node, name string) *duet.Environment {
	if n.Type == step.NullNode {
		return &duet.Environment{}
	}
	if n.Type != step.MapNode {
		c.Errf(n, "environment %s must be a mapping (baseURL, vars)", name)
		return nil
	}
	c.AllowKeys(n, keyNames(environmentKeys)...)
	e := &duet.Environment{}
	base, bn := c.String(n, "baseURL", false), n.Get("baseURL")
	if base == "" {
		base, bn = c.String(n, "baseUrl", false), n.Get("baseUrl")
	}
	if base != "" {
		u, err := url.Parse(base)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			c.Errf(bn, "environment %s: baseURL must be an absolute http(s) URL, got %q", name, base)
		}
		e.BaseURL = strings.TrimRight(base, "/")
	}
	if v := n.Get("vars"); v != nil && v.Type != step.NullNode {
		if v.Type != step.MapNode {
			c.Errf(v, "environment %s: vars must be a mapping of name: value", name)
		} else {
			e.Vars = map[string]any{}
			for j, k := range v.Keys {
				key, _ := k.Str()
				val := v.Vals[j].Plain()
				if s, ok := val.(string); ok && strings.Contains(s, "${") {
					c.Errf(v.Vals[j], "environment %s: vars are values, not templates: a secret is read in a step as ${secrets.NAME}, never written in the task", name)
					continue
				}
				e.Vars[key] = val
			}
		}
	}
	return e
}

// compileTask is the task as the compiler checks steps against it: with
// no base URL of its own, relative URLs are fine when every environment
// gives one.
func (c *compiler) compileTask(t *duet.Task) *duet.Task {
	if t.BaseURL != "" || len(t.Environments) == 0 {
		return t
	}
	ct := *t
	for _, name := range slices.Sorted(mapKeys(t.Environments)) {
		e := t.Environments[name]
		if e.BaseURL == "" {
			return t
		}
		if ct.BaseURL == "" {
			ct.BaseURL = e.BaseURL
		}
	}
	return &ct
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// taskHooks compiles the task's hooks: beforeAll and afterAll (once per
// run), beforeEach and afterEach (compiled into each case). What
// beforeAll and beforeEach save, the cases may read (HookSaves).
func (c *compiler) taskHooks(n *step.Node, t *duet.Task) {
	c.Task = c.compileTask(t)
	c.Scope = step.Scope{}
	t.BeforeAll = c.hookSteps(n, duet.HookBeforeAll)
	all := c.Scope
	t.AfterAll = c.hookSteps(n, duet.HookAfterAll)
	c.Scope = step.Scope{Vars: slices.Clone(all.Vars)}
	t.BeforeEach = c.hookSteps(n, duet.HookBeforeEach)
	each := c.Scope
	t.AfterEach = c.hookSteps(n, duet.HookAfterEach)
	c.Scope = step.Scope{}
	if len(each.Vars) > 0 {
		t.HookSaves = each.Vars
	}
}

// The compiler refuses a step that reads an environment variable
// (env.NAME, env["NAME"]) that none of the task's environments declares:
// at run time it would be null in every environment. It looks where
// expressions are — the ${...} parts of any text, and the values of the
// keys that are expressions — in the steps of the task's hooks, the
// suite's flows and the cases.

var (
	envRefRe = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?:^|[^A-Za-z0-9_.$])env(?:\.([A-Za-z_][A-Za-z0-9_]*)|\[\s*["']([^"']*)["']\s*\])`)
	})
	envTemplateRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\$\{([^}]*)\}`) })
)

// exprKeys are the keys whose values are expressions.
var exprKeys = map[string]bool{"assert": true, "expr": true, "if": true, "while": true, "until": true, "in": true, "path": true}

// checkEnvRefs checks the env.NAME references under the step lists of
// root (a suite) against the task's environments.
func (c *compiler) checkEnvRefs(root *step.Node, t *duet.Task) {
	declared := map[string]bool{}
	for _, e := range t.Environments {
		for k := range e.Vars {
			declared[k] = true
		}
	}
	check := func(n *step.Node, src string) {
		for _, m := range envRefRe().FindAllStringSubmatch(src, -1) {
			name := m[1] + m[2]
			if declared[name] {
				continue
			}
			switch {
			case len(t.Environments) == 0:
				c.Errf(n, "env.%s: the task declares no environments (task: environments: NAME: {vars: {%s: ...}})", name, name)
			case len(declared) == 0:
				c.Errf(n, "env.%s: none of the task's environments (%s) declares it in its vars", name, strings.Join(slices.Sorted(maps.Keys(t.Environments)), ", "))
			default:
				c.Errf(n, "env.%s: none of the task's environments declares it (their vars: %s)", name, strings.Join(slices.Sorted(maps.Keys(declared)), ", "))
			}
		}
	}
	var walk func(n *step.Node, expr bool)
	walk = func(n *step.Node, expr bool) {
		if n == nil {
			return
		}
		switch n.Type {
		case step.ScalarNode:
			s, ok := n.Value.(string)
			if !ok {
				return
			}
			if expr {
				check(n, s)
				return
			}
			for _, m := range envTemplateRe().FindAllStringSubmatch(s, -1) {
				check(n, m[1])
			}
		case step.MapNode:
			for i, k := range n.Keys {
				ks, _ := k.Str()
				if v := n.Vals[i]; ks == "set" && v.Type == step.MapNode {
					for _, val := range v.Vals { // set: {name: expression}
						walk(val, true)
					}
					continue
				}
				walk(n.Vals[i], exprKeys[ks])
			}
		case step.SeqNode:
			for _, it := range n.Items {
				walk(it, false)
			}
		}
	}
	if tn := root.Get("task"); tn != nil {
		for _, h := range []string{duet.HookBeforeAll, duet.HookBeforeEach, duet.HookAfterEach, duet.HookAfterAll} {
			walk(tn.Get(h), false)
		}
	}
	if fn := root.Get("flows"); fn != nil && fn.Type == step.MapNode {
		for _, f := range fn.Vals {
			walk(f.Get("steps"), false)
		}
	}
	if cn := root.Get("cases"); cn != nil && cn.Type == step.SeqNode {
		for _, cs := range cn.Items {
			if cs.Type != step.MapNode {
				continue
			}
			for _, k := range []string{"steps", duet.HookBeforeEach, duet.HookAfterEach} {
				walk(cs.Get(k), false)
			}
		}
	}
}
