package compiler

import (
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
