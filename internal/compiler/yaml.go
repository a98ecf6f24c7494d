package compiler

import (
	"errors"
	"fmt"
	"math"
	"strings"

	yaml "github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
)

// node is a YAML value with its position, converted once from the parser's
// AST so the compiler can report every error at a line and column.
type node struct {
	kind  nodeKind
	value any // scalars: string, int64, uint64, float64, bool
	keys  []*node
	vals  []*node // mapping values, parallel to keys
	items []*node // sequence items
	line  int
	col   int
	// weight is the number of nodes the value holds with every alias in it
	// expanded; height is its depth so expanded. Both bound what plain and
	// ordered build from a tree in which aliases share nodes.
	weight int
	height int
}

type nodeKind int

const (
	kindNull nodeKind = iota
	kindScalar
	kindMap
	kindSeq
)

func (k nodeKind) String() string {
	return [...]string{"null", "a scalar", "a mapping", "a list"}[k]
}

func (n *node) get(key string) *node {
	if n == nil || n.kind != kindMap {
		return nil
	}
	for i, k := range n.keys {
		if s, _ := k.value.(string); s == key {
			return n.vals[i]
		}
	}
	return nil
}

func (n *node) str() (string, bool) {
	if n == nil || n.kind != kindScalar {
		return "", false
	}
	switch v := n.value.(type) {
	case string:
		return v, true
	case int64, uint64, float64, bool:
		return fmt.Sprint(v), true
	}
	return "", false
}

// plain converts the node to plain JSON-like Go values.
func (n *node) plain() any {
	if n == nil {
		return nil
	}
	switch n.kind {
	case kindScalar:
		switch v := n.value.(type) {
		case int64:
			return float64(v)
		case uint64:
			return float64(v)
		}
		return n.value
	case kindMap:
		m := make(map[string]any, len(n.keys))
		for i, k := range n.keys {
			ks, _ := k.str()
			m[ks] = n.vals[i].plain()
		}
		return m
	case kindSeq:
		l := make([]any, len(n.items))
		for i, it := range n.items {
			l[i] = it.plain()
		}
		return l
	}
	return nil
}

// ordered converts the node to values that marshal back to YAML in source
// order (yaml.MapSlice for mappings): the canonical source of a case.
func (n *node) ordered() any {
	if n == nil {
		return nil
	}
	switch n.kind {
	case kindScalar:
		return n.value
	case kindMap:
		ms := make(yaml.MapSlice, len(n.keys))
		for i, k := range n.keys {
			ms[i] = yaml.MapItem{Key: k.value, Value: n.vals[i].ordered()}
		}
		return ms
	case kindSeq:
		l := make([]any, len(n.items))
		for i, it := range n.items {
			l[i] = it.ordered()
		}
		return l
	}
	return nil
}

// parseYAML parses one YAML document into a node tree.
func parseYAML(src []byte) (*node, error) {
	f, err := parser.ParseBytes(src, 0)
	if err != nil {
		return nil, err
	}
	if len(f.Docs) == 0 || f.Docs[0].Body == nil {
		return &node{kind: kindNull, line: 1, col: 1}, nil
	}
	if len(f.Docs) > 1 {
		// The second document starts at its "---", if it has one, or at its
		// body; it may have neither (DocumentNode.GetToken would panic).
		line, doc := 1, f.Docs[1]
		if t := doc.Start; t != nil && t.Position != nil {
			line = t.Position.Line
		} else if doc.Body != nil {
			if t := doc.Body.GetToken(); t != nil && t.Position != nil {
				line = t.Position.Line
			}
		}
		return nil, &Diagnostic{Line: line, Col: 1, Message: "a suite file holds one YAML document; found more"}
	}
	c := &converter{anchors: map[string]*node{}}
	return c.convert(f.Docs[0].Body)
}

// Limits of a source file's YAML.
const (
	// maxDepth bounds nesting, aliases expanded.
	maxDepth = 100
	// maxAliasNodes bounds the nodes that aliases add when expanded, all
	// aliases together: a handful of anchors reused many times, or nested
	// ("billion laughs"), would otherwise make a small file expand to
	// billions of values.
	maxAliasNodes = 10_000
)

type converter struct {
	anchors map[string]*node
	depth   int
	aliased int // nodes added by expanding aliases so far
}

func pos(n ast.Node) (int, int) {
	t := n.GetToken()
	if t == nil || t.Position == nil {
		return 0, 0
	}
	return t.Position.Line, t.Position.Column
}

func (c *converter) convert(n ast.Node) (*node, error) {
	c.depth++
	defer func() { c.depth-- }()
	if c.depth > maxDepth {
		l, col := pos(n)
		return nil, &Diagnostic{Line: l, Col: col, Message: "nesting too deep"}
	}
	line, col := pos(n)
	out := &node{line: line, col: col, weight: 1, height: 1}
	switch x := n.(type) {
	case *ast.NullNode:
		out.kind = kindNull
	case *ast.StringNode:
		out.kind, out.value = kindScalar, x.Value
	case *ast.LiteralNode:
		out.kind, out.value = kindScalar, x.Value.Value
	case *ast.IntegerNode:
		out.kind, out.value = kindScalar, x.Value
		switch v := x.Value.(type) {
		case int:
			out.value = int64(v)
		case int64, uint64:
		default:
			out.value = fmt.Sprint(v)
		}
	case *ast.FloatNode:
		out.kind, out.value = kindScalar, x.Value
	case *ast.BoolNode:
		out.kind, out.value = kindScalar, x.Value
	case *ast.InfinityNode:
		out.kind, out.value = kindScalar, math.Inf(1)
		if strings.HasPrefix(x.GetToken().Value, "-") {
			out.value = math.Inf(-1)
		}
	case *ast.NanNode:
		return nil, &Diagnostic{Line: line, Col: col, Message: "NaN is not allowed"}
	case *ast.MappingNode:
		out.kind = kindMap
		for _, mv := range x.Values {
			if err := c.addPair(out, mv); err != nil {
				return nil, err
			}
		}
		if !x.IsFlowStyle && len(out.keys) > 0 {
			// A block mapping starts where its first key does.
			out.line, out.col = out.keys[0].line, out.keys[0].col
		}
	case *ast.MappingValueNode:
		out.kind = kindMap
		if err := c.addPair(out, x); err != nil {
			return nil, err
		}
		out.line, out.col = out.keys[0].line, out.keys[0].col
	case *ast.SequenceNode:
		out.kind = kindSeq
		for _, it := range x.Values {
			cv, err := c.convert(it)
			if err != nil {
				return nil, err
			}
			out.items = append(out.items, cv)
			out.weight += cv.weight
			out.height = max(out.height, cv.height+1)
		}
	case *ast.AnchorNode:
		v, err := c.convert(x.Value)
		if err != nil {
			return nil, err
		}
		name := x.Name.GetToken().Value
		c.anchors[name] = v
		return v, nil
	case *ast.AliasNode:
		name := x.Value.GetToken().Value
		v, ok := c.anchors[name]
		if !ok {
			return nil, &Diagnostic{Line: line, Col: col, Message: fmt.Sprintf("unknown alias *%s", name)}
		}
		c.aliased += v.weight
		if c.aliased > maxAliasNodes {
			return nil, &Diagnostic{Line: line, Col: col, Message: fmt.Sprintf("aliases expand to more than %d values in all (here *%s adds %d); write the values out or reuse fewer", maxAliasNodes, name, v.weight)}
		}
		if c.depth-1+v.height > maxDepth {
			return nil, &Diagnostic{Line: line, Col: col, Message: fmt.Sprintf("nesting too deep with *%s expanded", name)}
		}
		return v, nil
	case *ast.TagNode:
		return c.convert(x.Value)
	case *ast.CommentGroupNode, *ast.CommentNode:
		out.kind = kindNull
	default:
		return nil, &Diagnostic{Line: line, Col: col, Message: fmt.Sprintf("unsupported YAML (%s)", n.Type())}
	}
	return out, nil
}

func (c *converter) addPair(m *node, mv *ast.MappingValueNode) error {
	if _, ok := mv.Key.(*ast.MergeKeyNode); ok {
		l, col := pos(mv.Key)
		return &Diagnostic{Line: l, Col: col, Message: "merge keys (<<) are not supported; write the keys out"}
	}
	k, err := c.convert(mv.Key)
	if err != nil {
		return err
	}
	ks, ok := k.str()
	if !ok {
		return &Diagnostic{Line: k.line, Col: k.col, Message: "mapping keys must be strings"}
	}
	k.value = ks
	if m.get(ks) != nil {
		return &Diagnostic{Line: k.line, Col: k.col, Message: fmt.Sprintf("duplicate key %q", ks)}
	}
	v, err := c.convert(mv.Value)
	if err != nil {
		return err
	}
	m.keys = append(m.keys, k)
	m.vals = append(m.vals, v)
	m.weight += k.weight + v.weight
	m.height = max(m.height, k.height+1, v.height+1)
	return nil
}

// yamlError converts a parser error into a Diagnostic with its position.
func yamlError(err error) *Diagnostic {
	var d *Diagnostic
	if errors.As(err, &d) {
		return d
	}
	var ye yaml.Error
	if errors.As(err, &ye) {
		if t := ye.GetToken(); t != nil && t.Position != nil {
			return &Diagnostic{Line: t.Position.Line, Col: t.Position.Column, Message: ye.GetMessage()}
		}
		return &Diagnostic{Line: 1, Col: 1, Message: ye.GetMessage()}
	}
	return &Diagnostic{Line: 1, Col: 1, Message: err.Error()}
}
