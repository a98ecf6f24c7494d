package step

import (
	"errors"
	"fmt"
	"math"
	"strings"

	yaml "github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
)

// Node is a YAML value with its position, converted once from the parser's
// AST so that every error can be reported at a line and a column. The
// compile function of a step kind reads its body as a Node.
type Node struct {
	Type  NodeType
	Value any     // scalars: string, int64, uint64, float64, bool
	Keys  []*Node // mapping keys (strings), in source order
	Vals  []*Node // mapping values, parallel to Keys
	Items []*Node // sequence items
	Line  int
	Col   int
	// weight is the number of nodes the value holds with every alias in it
	// expanded; height is its depth so expanded. Both bound what Plain and
	// Ordered build from a tree in which aliases share nodes.
	weight int
	height int
}

// NodeType says what a Node holds.
type NodeType int

// Node types.
const (
	NullNode NodeType = iota
	ScalarNode
	MapNode
	SeqNode
)

func (k NodeType) String() string {
	return [...]string{"null", "a scalar", "a mapping", "a list"}[k]
}

// Get returns the value of key in a mapping, nil when n is not a mapping or
// lacks key.
func (n *Node) Get(key string) *Node {
	if n == nil || n.Type != MapNode {
		return nil
	}
	for i, k := range n.Keys {
		if s, _ := k.Value.(string); s == key {
			return n.Vals[i]
		}
	}
	return nil
}

// Str returns a scalar as text (numbers and booleans as written in Go);
// false for anything else.
func (n *Node) Str() (string, bool) {
	if n == nil || n.Type != ScalarNode {
		return "", false
	}
	switch v := n.Value.(type) {
	case string:
		return v, true
	case int64, uint64, float64, bool:
		return fmt.Sprint(v), true
	}
	return "", false
}

// Int returns a whole number (YAML reads 7 as unsigned and -7 as signed);
// false for anything else, or a number beyond int64.
func (n *Node) Int() (int64, bool) {
	if n == nil || n.Type != ScalarNode {
		return 0, false
	}
	switch v := n.Value.(type) {
	case int64:
		return v, true
	case uint64:
		if v <= math.MaxInt64 {
			return int64(v), true
		}
	}
	return 0, false
}

// Float returns a number, whole or not; false for anything else.
func (n *Node) Float() (float64, bool) {
	if n == nil || n.Type != ScalarNode {
		return 0, false
	}
	switch v := n.Value.(type) {
	case int64:
		return float64(v), true
	case uint64:
		return float64(v), true
	case float64:
		return v, true
	}
	return 0, false
}

// Plain converts the node to plain JSON-like Go values.
func (n *Node) Plain() any {
	if n == nil {
		return nil
	}
	switch n.Type {
	case ScalarNode:
		switch v := n.Value.(type) {
		case int64:
			return float64(v)
		case uint64:
			return float64(v)
		}
		return n.Value
	case MapNode:
		m := make(map[string]any, len(n.Keys))
		for i, k := range n.Keys {
			ks, _ := k.Str()
			m[ks] = n.Vals[i].Plain()
		}
		return m
	case SeqNode:
		return n.items((*Node).Plain)
	}
	return nil
}

// items converts the items of a sequence node with f.
func (n *Node) items(f func(*Node) any) []any {
	l := make([]any, len(n.Items))
	for i, it := range n.Items {
		l[i] = f(it)
	}
	return l
}

// Ordered converts the node to values that marshal back to YAML in source
// order (yaml.MapSlice for mappings): the canonical source of a case.
func (n *Node) Ordered() any {
	if n == nil {
		return nil
	}
	switch n.Type {
	case ScalarNode:
		return n.Value
	case MapNode:
		ms := make(yaml.MapSlice, len(n.Keys))
		for i, k := range n.Keys {
			ms[i] = yaml.MapItem{Key: k.Value, Value: n.Vals[i].Ordered()}
		}
		return ms
	case SeqNode:
		return n.items((*Node).Ordered)
	}
	return nil
}

// Parse parses one YAML document (a suite file, or one case) into a Node
// tree. Its error says where the source is not YAML Duet reads.
func Parse(src []byte) (*Node, *Diagnostic) {
	n, err := parseYAML(src)
	if err != nil {
		return nil, yamlError(err)
	}
	return n, nil
}

func parseYAML(src []byte) (*Node, error) {
	f, err := parser.ParseBytes(src, 0)
	if err != nil {
		return nil, err
	}
	if len(f.Docs) == 0 || f.Docs[0].Body == nil {
		return &Node{Type: NullNode, Line: 1, Col: 1}, nil
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
	c := &converter{anchors: map[string]*Node{}}
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
	anchors map[string]*Node
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

func (c *converter) convert(n ast.Node) (*Node, error) {
	c.depth++
	defer func() { c.depth-- }()
	if c.depth > maxDepth {
		l, col := pos(n)
		return nil, &Diagnostic{Line: l, Col: col, Message: "nesting too deep"}
	}
	line, col := pos(n)
	out := &Node{Line: line, Col: col, weight: 1, height: 1}
	if ok, err := scalar(out, n); ok || err != nil {
		return out, err
	}
	switch x := n.(type) {
	case *ast.MappingNode:
		out.Type = MapNode
		for _, mv := range x.Values {
			if err := c.addPair(out, mv); err != nil {
				return nil, err
			}
		}
		if !x.IsFlowStyle && len(out.Keys) > 0 {
			// A block mapping starts where its first key does.
			out.Line, out.Col = out.Keys[0].Line, out.Keys[0].Col
		}
	case *ast.MappingValueNode:
		out.Type = MapNode
		if err := c.addPair(out, x); err != nil {
			return nil, err
		}
		out.Line, out.Col = out.Keys[0].Line, out.Keys[0].Col
	case *ast.SequenceNode:
		out.Type = SeqNode
		for _, it := range x.Values {
			cv, err := c.convert(it)
			if err != nil {
				return nil, err
			}
			out.Items = append(out.Items, cv)
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
	default:
		return nil, &Diagnostic{Line: line, Col: col, Message: fmt.Sprintf("unsupported YAML (%s)", n.Type())}
	}
	return out, nil
}

// scalar fills out when n is a scalar (or null, or a comment) and reports
// whether it was one.
func scalar(out *Node, n ast.Node) (bool, error) {
	switch x := n.(type) {
	case *ast.NullNode:
		out.Type = NullNode
	case *ast.StringNode:
		out.Type, out.Value = ScalarNode, x.Value
	case *ast.LiteralNode:
		out.Type, out.Value = ScalarNode, x.Value.Value
	case *ast.IntegerNode:
		out.Type, out.Value = ScalarNode, x.Value
		switch v := x.Value.(type) {
		case int:
			out.Value = int64(v)
		case int64, uint64:
		default:
			out.Value = fmt.Sprint(v)
		}
	case *ast.FloatNode:
		out.Type, out.Value = ScalarNode, x.Value
	case *ast.BoolNode:
		out.Type, out.Value = ScalarNode, x.Value
	case *ast.InfinityNode:
		out.Type, out.Value = ScalarNode, math.Inf(1)
		if strings.HasPrefix(x.GetToken().Value, "-") {
			out.Value = math.Inf(-1)
		}
	case *ast.NanNode:
		return false, &Diagnostic{Line: out.Line, Col: out.Col, Message: "NaN is not allowed"}
	case *ast.CommentGroupNode, *ast.CommentNode:
		out.Type = NullNode
	default:
		return false, nil
	}
	return true, nil
}

func (c *converter) addPair(m *Node, mv *ast.MappingValueNode) error {
	if _, ok := mv.Key.(*ast.MergeKeyNode); ok {
		l, col := pos(mv.Key)
		return &Diagnostic{Line: l, Col: col, Message: "merge keys (<<) are not supported; write the keys out"}
	}
	k, err := c.convert(mv.Key)
	if err != nil {
		return err
	}
	ks, ok := k.Str()
	if !ok {
		return &Diagnostic{Line: k.Line, Col: k.Col, Message: "mapping keys must be strings"}
	}
	k.Value = ks
	if m.Get(ks) != nil {
		return &Diagnostic{Line: k.Line, Col: k.Col, Message: fmt.Sprintf("duplicate key %q", ks)}
	}
	v, err := c.convert(mv.Value)
	if err != nil {
		return err
	}
	m.Keys = append(m.Keys, k)
	m.Vals = append(m.Vals, v)
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
