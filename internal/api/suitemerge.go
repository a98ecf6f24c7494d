package api

import (
	"strings"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
)

// mergeCase returns the suite source src with item, one case as the
// recorder saves it (a mapping with its key), in place of the item of its
// cases: list with that key, or added at the list's end. The YAML is
// edited where its syntax tree places that item: every other line —
// comments, blank lines, quoting — stays as written. ok is false when src
// cannot be edited so (it does not parse, has no block-style cases: list,
// or item is not a mapping).
func mergeCase(src, key, item string) (string, bool) {
	item = strings.TrimRight(item, "\n")
	if item == "" || strings.HasPrefix(strings.TrimSpace(item), "-") {
		return "", false
	}
	f, err := parser.ParseBytes([]byte(src), 0)
	if err != nil || len(f.Docs) != 1 {
		return "", false
	}
	seq, ok := mappingValue(f.Docs[0].Body, "cases").(*ast.SequenceNode)
	if !ok || seq.IsFlowStyle || len(seq.Entries) == 0 {
		return "", false
	}
	lines := strings.Split(strings.TrimRight(src, "\n"), "\n")
	col := seq.Entries[0].Start.Position.Column // of each item's "-"
	indent := strings.Repeat(" ", col-1)
	var repl []string
	for i, l := range strings.Split(item, "\n") {
		switch {
		case i == 0:
			repl = append(repl, indent+"- "+l)
		case strings.TrimSpace(l) == "":
			repl = append(repl, "")
		default:
			repl = append(repl, indent+"  "+l)
		}
	}
	// An item's lines: from its "-" to the line before the next item's
	// (the last item: while lines are indented past the "-"), less the
	// blank and comment lines that end them (the next item's, or the
	// list's).
	span := func(i int) (int, int) {
		first := seq.Entries[i].Start.Position.Line - 1
		end := len(lines) - 1
		if i+1 < len(seq.Entries) {
			end = seq.Entries[i+1].Start.Position.Line - 2
		} else {
			for j := first + 1; j < len(lines); j++ {
				if t := strings.TrimSpace(lines[j]); t != "" && len(lines[j])-len(strings.TrimLeft(lines[j], " ")) < col {
					end = j - 1
					break
				}
			}
		}
		for end > first && (strings.TrimSpace(lines[end]) == "" || strings.HasPrefix(strings.TrimSpace(lines[end]), "#")) {
			end--
		}
		return first, end
	}
	at, cut := -1, 0
	for i, e := range seq.Entries {
		if e.Start.Position.Column != col {
			return "", false
		}
		if k, ok := mappingValue(e.Value, "key").(ast.ScalarNode); ok && k.GetToken() != nil && k.GetToken().Value == key {
			first, end := span(i)
			at, cut = first, end-first+1
			break
		}
	}
	if at < 0 { // a new case: after the last item
		_, end := span(len(seq.Entries) - 1)
		at = end + 1
	}
	out := append(append(append([]string{}, lines[:at]...), repl...), lines[at+cut:]...)
	return strings.Join(out, "\n") + "\n", true
}

// mappingValue is the value of key in the mapping n, nil if n is not a
// mapping or has no such key.
func mappingValue(n ast.Node, key string) ast.Node {
	var values []*ast.MappingValueNode
	switch m := n.(type) {
	case *ast.MappingNode:
		values = m.Values
	case *ast.MappingValueNode:
		values = []*ast.MappingValueNode{m}
	}
	for _, v := range values {
		if v.Key != nil && v.Key.GetToken() != nil && v.Key.GetToken().Value == key {
			return v.Value
		}
	}
	return nil
}
