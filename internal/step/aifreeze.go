package step

import (
	"github.com/goccy/go-yaml"

	"github.com/duet-test/duet"
)

// Freezing: the source of a case whose acting AI steps are replaced by the
// written steps their plans resolved to — what a healed step proposes as
// a draft version of its case, and what `duet case freeze` makes of a
// case's cached plans.

// FrozenStep is an acting AI step of a case's source (its kind and its
// prompt as written) and the actions its plan resolved to.
type FrozenStep struct {
	Kind    duet.StepKind
	Prompt  string
	Value   string // an aiFill's value as written (a template)
	Actions []duet.AIAction
}

// Freeze returns the case source src (one case, as Case.Source holds it)
// with each top-level step that is one of steps (same kind and prompt as
// written) replaced by the written steps of its actions, and how many it
// replaced; key, when not "", becomes the case's key. A step inside a
// flow (if, repeat, forEach) is left as it is.
func Freeze(src, key string, steps []FrozenStep) (string, int, error) {
	root, derr := Parse([]byte(src))
	if derr != nil {
		return "", 0, duet.Errorf(duet.CodeInvalidArgument, "the case's source: %s", derr.Message)
	}
	if root.Type != MapNode || root.Get("steps") == nil || root.Get("steps").Type != SeqNode {
		return "", 0, duet.Errorf(duet.CodeInvalidArgument, "the case's source has no steps")
	}
	doc, ok := root.Ordered().(yaml.MapSlice)
	if !ok {
		return "", 0, duet.Errorf(duet.CodeInvalidArgument, "the case's source is not a mapping")
	}
	n := 0
	if key != "" {
		keyed := false
		for i := range doc {
			if doc[i].Key == "key" {
				doc[i].Value, keyed = key, true
			}
		}
		if !keyed {
			doc = append(yaml.MapSlice{{Key: "key", Value: key}}, doc...)
		}
	}
	for i, item := range doc {
		if item.Key != "steps" {
			continue
		}
		var out []any
		for j, sn := range root.Get("steps").Items {
			if fs, ok := frozenFor(sn, steps); ok {
				out = append(out, writtenSteps(fs)...)
				n++
				continue
			}
			out = append(out, item.Value.([]any)[j])
		}
		doc[i].Value = out
	}
	b, err := yaml.MarshalWithOptions(doc, yaml.Indent(2), yaml.IndentSequence(true))
	if err != nil {
		return "", 0, duet.WrapError(duet.CodeInternal, err, "re-encoding the case: %v", err)
	}
	return string(b), n, nil
}

// frozenFor returns the frozen step the source step sn is.
func frozenFor(sn *Node, steps []FrozenStep) (FrozenStep, bool) {
	if sn.Type != MapNode {
		return FrozenStep{}, false
	}
	for _, fs := range steps {
		body := sn.Get(string(fs.Kind))
		if body == nil {
			continue
		}
		prompt, ok := body.Str()
		if !ok {
			if p := body.Get("prompt"); p != nil {
				prompt, _ = p.Str()
			}
		}
		if prompt == fs.Prompt {
			return fs, true
		}
	}
	return FrozenStep{}, false
}

// writtenSteps are the written steps of a frozen step's actions.
func writtenSteps(fs FrozenStep) []any {
	var out []any
	for _, a := range fs.Actions {
		// The plan's locator and value are replayed as they are: they are
		// written as literals. An aiFill's value is its step's template.
		body := LocatorYAML(a.Locator)
		switch a.Do {
		case "fill":
			v := Literal(a.Value)
			if fs.Kind == StepAIFill {
				v = fs.Value
			}
			body = append(body, yaml.MapItem{Key: "value", Value: v})
		case "select":
			body = append(body, yaml.MapItem{Key: "value", Value: Literal(a.Value)})
		case "press":
			body = append(body, yaml.MapItem{Key: "key", Value: Literal(a.Value)})
		}
		out = append(out, yaml.MapSlice{{Key: a.Do, Value: body}})
	}
	return out
}
