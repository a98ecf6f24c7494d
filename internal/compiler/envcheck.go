package compiler

import (
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/step"
)

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
