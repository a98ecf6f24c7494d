package step

import (
	"encoding/json"
	"maps"
	"slices"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/eval"
)

// secretNames returns the names of the executor's secrets st itself reads
// (not the steps it runs in its turn, which say their own): in the ${...}
// parts of its text, and in its expressions — those of assert, set, var
// bindings, conditions and forEach. A kind that adds an expression field
// adds it to stepExprs.
func secretNames(st *duet.Step) ([]string, error) {
	own := *st
	own.If, own.Loop, own.Use, own.Secrets = nil, nil, nil, nil
	if st.If != nil {
		own.If = &duet.IfStep{Condition: st.If.Condition}
	}
	if st.Loop != nil {
		l := *st.Loop
		l.Steps = nil
		own.Loop = &l
	}
	if st.Use != nil {
		own.Use = &duet.UseStep{With: st.Use.With}
	}
	own.Name = ""
	b, err := json.Marshal(own)
	if err != nil {
		return nil, nil
	}
	var v any
	if json.Unmarshal(b, &v) != nil {
		return nil, nil
	}
	var out []string
	var walk func(v any) error
	walk = func(v any) error {
		switch x := v.(type) {
		case string:
			names, err := eval.TemplateSecretNames(x)
			out = append(out, names...)
			return err
		case map[string]any:
			for _, e := range x {
				if err := walk(e); err != nil {
					return err
				}
			}
		case []any:
			for _, e := range x {
				if err := walk(e); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(v); err != nil {
		return nil, err
	}
	for _, ex := range stepExprs(st) {
		names, err := eval.SecretNames(ex)
		if err != nil {
			return nil, err
		}
		out = append(out, names...)
	}
	slices.Sort(out)
	out = slices.Compact(out)
	for _, n := range out {
		if err := duet.ValidSecretName(n); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// stepExprs returns the expressions (not templates) of st itself.
func stepExprs(st *duet.Step) []string {
	var out []string
	if a := st.Assert; a != nil {
		out = append(out, a.Expr)
	}
	if s := st.Set; s != nil {
		for _, k := range slices.Sorted(maps.Keys(s.Vars)) {
			out = append(out, s.Vars[k])
		}
	}
	if m := st.MCP; m != nil {
		for _, k := range slices.Sorted(maps.Keys(m.InputBindings)) {
			if b := m.InputBindings[k]; b.Source == duet.BindVar {
				out = append(out, b.Path)
			}
		}
	}
	if i := st.If; i != nil && i.Expr != "" {
		out = append(out, i.Expr)
	}
	if l := st.Loop; l != nil {
		if l.In != "" {
			out = append(out, l.In)
		}
		if l.Cond != nil && l.Cond.Expr != "" {
			out = append(out, l.Cond.Expr)
		}
	}
	return out
}
