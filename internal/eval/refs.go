package eval

import (
	"fmt"
	"slices"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/parser"
)

// Secrets is the built-in variable that holds the executor's secrets a
// step reads: secrets.NAME.
const Secrets = "secrets"

// secretRefs collects the names an expression reads from Secrets, and
// whether it reads Secrets otherwise than by a fixed name.
type secretRefs struct {
	names []string
	ids   []ast.Node        // every identifier secrets
	named map[ast.Node]bool // those read as secrets.NAME
}

func (s *secretRefs) Visit(node *ast.Node) {
	switch x := (*node).(type) {
	case *ast.MemberNode:
		id, ok := x.Node.(*ast.IdentifierNode)
		if !ok || id.Value != Secrets {
			return
		}
		if p, ok := x.Property.(*ast.StringNode); ok {
			s.names = append(s.names, p.Value)
			s.named[id] = true
		}
	case *ast.IdentifierNode:
		if x.Value == Secrets {
			s.ids = append(s.ids, x)
		}
	}
}

// SecretNames returns the names NAME of the executor's secrets an
// expression reads as secrets.NAME (or secrets["NAME"]), sorted and
// unique. It is an error for the expression to read secrets otherwise —
// secrets[x], secrets alone — since the secrets a step reads must be known
// before it runs. An expression that does not parse reads none.
func SecretNames(src string) ([]string, error) {
	tree, err := parser.Parse(src)
	if err != nil {
		return nil, nil
	}
	v := &secretRefs{named: map[ast.Node]bool{}}
	ast.Walk(&tree.Node, v)
	if slices.ContainsFunc(v.ids, func(id ast.Node) bool { return !v.named[id] }) {
		return nil, fmt.Errorf("read a secret by its name, secrets.NAME: %s reads secrets otherwise", src)
	}
	slices.Sort(v.names)
	return slices.Compact(v.names), nil
}

// TemplateSecretNames returns the names of the secrets the ${...} parts of
// the template s read (SecretNames of each).
func TemplateSecretNames(s string) ([]string, error) {
	parts, err := parseTemplate(s)
	if err != nil {
		return nil, nil
	}
	var out []string
	for _, p := range parts {
		if !p.isEx {
			continue
		}
		names, err := SecretNames(p.expr)
		if err != nil {
			return nil, err
		}
		out = append(out, names...)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}
