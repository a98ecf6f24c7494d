package step

import (
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// Form is the YAML schema of a step's body, as data: the JSON Schema of
// the suite format and the key tables of docs/suite-format.md are
// generated from it. The compile function is what enforces it (with
// line:col errors, and checks no schema can say, such as the variables an
// expression names); a test checks that every source the compiler accepts
// validates against the schema.
type Form struct {
	// Short is the scalar shorthand (click: "#buy"); nil when the kind has
	// none.
	Short *Short
	// Keys are the keys of the mapping form, in the order the docs list
	// them (and the compiler's "allowed:" messages); nil when the kind has
	// no mapping form.
	Keys []Key
	// Null allows the kind with no value at all (screenshot:).
	Null bool
	// List allows a list of values of List.Type (frame: [a, b]).
	List *Short
	// Open makes the mapping form a mapping of any names (set: {name:
	// expression}) whose values are of type Open.Type; Keys is then nil.
	Open *Key
	// ExactlyOne lists keys of which exactly one must be present.
	ExactlyOne []string
	// AtLeastOne lists keys of which one at least must be present.
	AtLeastOne []string
	// When lists keys that some values of another key require.
	When []When
}

// Short is the scalar shorthand of a kind.
type Short struct {
	Type Type
	Doc  string // what the scalar stands for
}

// shortFor is the form of a step written as the value of its required key
// name alone (the shorthand, of type t; doc says what it is), or as a
// mapping of that key (keyDoc) and the other keys.
func shortFor(name string, t Type, doc, keyDoc string, keys ...Key) Form {
	return Form{
		Short: &Short{Type: t, Doc: doc},
		Keys:  append([]Key{{Name: name, Type: t, Required: true, Doc: keyDoc}}, keys...),
	}
}

// Key is one key of a mapping.
type Key struct {
	Name     string
	Type     Type
	Required bool
	Doc      string

	locator bool // a locator key: the docs list them in one row
}

// When says that Key having one of the values In requires the keys
// Require.
type When struct {
	Key     string
	In      []string
	Require []string
}

// Type is the type of a value in a suite: the name the docs give it and
// its JSON Schema.
type Type struct {
	// Name is how the docs name the type.
	Name string
	// schema returns a fresh JSON Schema of the type; optional says the key
	// is optional, which lets a text value be null (as if absent).
	schema func(optional bool) *jsonschema.Schema
}

// TypeOf returns a type the docs call name, whose JSON Schema schema
// returns (fresh on each call; optional says the key is optional).
func TypeOf(name string, schema func(optional bool) *jsonschema.Schema) Type {
	return Type{Name: name, schema: schema}
}

// Mapping returns the JSON Schema of a mapping with keys and no others.
func Mapping(keys []Key) *jsonschema.Schema {
	f := Form{Keys: keys}
	return f.mapping()
}

// Schema returns the JSON Schema of a value of type t; optional says the
// value is of an optional key.
func (t Type) Schema(optional bool) *jsonschema.Schema { return t.schema(optional) }

// scalarTypes are the YAML scalars the compiler reads as text: a number or
// a boolean is taken as written.
var scalarTypes = []string{"string", "number", "boolean"}

func textSchema(doc string) func(bool) *jsonschema.Schema {
	return func(optional bool) *jsonschema.Schema {
		s := &jsonschema.Schema{Types: scalarTypes, Description: doc}
		if optional {
			s.Types = append(s.Types[:len(s.Types):len(s.Types)], "null")
		}
		return s
	}
}

// Types of values.
var (
	// Text is a plain text value.
	Text = Type{Name: "text", schema: textSchema("")}
	// Template is text that may embed ${expression} parts.
	Template = Type{Name: "template", schema: textSchema("text; may embed ${expression} parts over the variables saved by earlier steps")}
	// Expr is an expression (expr-lang syntax) over the variables.
	Expr = Type{Name: "expression", schema: textSchema("an expression (expr-lang syntax) over the variables saved by earlier steps")}
	// Bool is true or false.
	Bool = Type{Name: "boolean", schema: func(bool) *jsonschema.Schema { return &jsonschema.Schema{Type: "boolean"} }}
	// Int is a whole number.
	Int = Type{Name: "integer", schema: func(bool) *jsonschema.Schema { return &jsonschema.Schema{Type: "integer"} }}
	// Duration is a duration such as 5s or 1500ms, or milliseconds.
	Duration = Type{Name: "duration", schema: ref("duration")}
	// Ident is the name of a variable.
	Ident = Type{Name: "variable name", schema: ref("variable")}
	// Any is any value (JSON-like).
	Any = Type{Name: "any value", schema: func(bool) *jsonschema.Schema { return &jsonschema.Schema{} }}
	// Bindings are the arguments of an MCP tool call: name → binding.
	Bindings = Type{Name: "argument → binding", schema: func(optional bool) *jsonschema.Schema {
		return &jsonschema.Schema{Types: []string{"object", "null"}, AdditionalProperties: &jsonschema.Schema{Ref: "#/$defs/binding"}}
	}}
	// Steps is a list of steps (the steps of a case, or those a step runs
	// in its turn).
	Steps = Type{Name: "list of steps", schema: func(bool) *jsonschema.Schema {
		return &jsonschema.Schema{Type: "array", MinItems: ptr(1), Items: &jsonschema.Schema{Ref: "#/$defs/step"}}
	}}
)

// Enum is text that is one of values.
func Enum(values ...string) Type {
	names := make([]string, len(values))
	for i, v := range values {
		names[i] = "`" + v + "`"
	}
	return Type{Name: "one of " + strings.Join(names, ", "), schema: func(optional bool) *jsonschema.Schema {
		s := &jsonschema.Schema{}
		for _, v := range values {
			s.Enum = append(s.Enum, v)
		}
		if optional {
			s.Enum = append(s.Enum, nil)
		}
		return s
	}}
}

// MapOf is a mapping of names to values of type t.
func MapOf(t Type) Type {
	return Type{Name: "name → " + t.Name, schema: func(bool) *jsonschema.Schema {
		return &jsonschema.Schema{Type: "object", AdditionalProperties: t.schema(false)}
	}}
}

func ref(name string) func(bool) *jsonschema.Schema {
	return func(optional bool) *jsonschema.Schema {
		if optional {
			return &jsonschema.Schema{AnyOf: []*jsonschema.Schema{{Ref: "#/$defs/" + name}, {Type: "null"}}}
		}
		return &jsonschema.Schema{Ref: "#/$defs/" + name}
	}
}

func ptr[T any](v T) *T { return &v }

// Schema returns the JSON Schema of the kind's body.
func (k *Kind) Schema() *jsonschema.Schema {
	f := k.Form
	var forms []*jsonschema.Schema
	if f.Short != nil {
		s := f.Short.Type.schema(false)
		s.Description = f.Short.Doc
		forms = append(forms, s)
	}
	if f.Keys != nil || f.Open != nil {
		forms = append(forms, f.mapping())
	}
	if f.List != nil {
		forms = append(forms, &jsonschema.Schema{Type: "array", MinItems: ptr(1), Items: f.List.Type.schema(false), Description: f.List.Doc})
	}
	if f.Null {
		forms = append(forms, &jsonschema.Schema{Type: "null"})
	}
	s := &jsonschema.Schema{Description: k.Summary}
	if len(forms) == 1 {
		forms[0].Description = joinDoc(k.Summary, forms[0].Description)
		return forms[0]
	}
	s.AnyOf = forms
	return s
}

func joinDoc(a, b string) string {
	if b == "" {
		return a
	}
	return a + " — " + b
}

// mapping is the JSON Schema of the mapping form.
func (f *Form) mapping() *jsonschema.Schema {
	s := &jsonschema.Schema{Type: "object"}
	if f.Open != nil {
		v := f.Open.Type.schema(false)
		v.Description = f.Open.Doc
		s.AdditionalProperties = v
		s.PropertyNames = &jsonschema.Schema{Ref: "#/$defs/variable"}
		s.MinProperties = ptr(1)
		return s
	}
	s.Properties = map[string]*jsonschema.Schema{}
	s.AdditionalProperties = &jsonschema.Schema{Not: &jsonschema.Schema{}}
	for _, key := range f.Keys {
		v := key.Type.schema(!key.Required)
		v.Description = joinDoc(key.Doc, v.Description)
		s.Properties[key.Name] = v
		s.PropertyOrder = append(s.PropertyOrder, key.Name)
		if key.Required {
			s.Required = append(s.Required, key.Name)
		}
	}
	if len(f.ExactlyOne) > 0 {
		for _, name := range f.ExactlyOne {
			s.OneOf = append(s.OneOf, &jsonschema.Schema{Required: []string{name}})
		}
	}
	if len(f.AtLeastOne) > 0 {
		for _, name := range f.AtLeastOne {
			s.AnyOf = append(s.AnyOf, &jsonschema.Schema{Required: []string{name}})
		}
	}
	for _, w := range f.When {
		in := &jsonschema.Schema{}
		for _, v := range w.In {
			in.Enum = append(in.Enum, v)
		}
		s.AllOf = append(s.AllOf, &jsonschema.Schema{
			If:   &jsonschema.Schema{Required: []string{w.Key}, Properties: map[string]*jsonschema.Schema{w.Key: in}},
			Then: &jsonschema.Schema{Required: w.Require},
		})
	}
	return s
}

// KeyNames returns the names of the keys of the mapping form, in order:
// what the compile function allows.
func (f *Form) KeyNames() []string {
	out := make([]string, len(f.Keys))
	for i, k := range f.Keys {
		out[i] = k.Name
	}
	return out
}

// Definitions returns the JSON Schemas that the step schemas refer to
// (#/$defs/NAME): every kind's body (under "step.KIND"), the step itself
// ("step"), and the shared types.
func Definitions() map[string]*jsonschema.Schema {
	defs := map[string]*jsonschema.Schema{
		"duration": {
			Description: "a duration such as 5s, 1500ms or 2m, or a number of milliseconds",
			AnyOf: []*jsonschema.Schema{
				{Type: "string", Pattern: `^\+?([0-9]*(\.[0-9]*)?(ns|us|µs|μs|ms|s|m|h))+$`},
				{Type: "integer", Minimum: ptr(1.0)},
			},
		},
		"variable": {
			Description: "a variable name: letters, digits and _, not starting with a digit",
			Type:        "string", Pattern: identPattern,
		},
		"binding":   bindingSchema(),
		"step":      stepSchema(),
		"condition": conditionSchema(),
		"locator":   locatorSchema(),
	}
	for _, k := range sorted() {
		defs["step."+string(k.Name)] = k.Schema()
	}
	return defs
}

// conditionSchema is the JSON Schema of a repeat's while or until: an
// expression, or an element's state.
func conditionSchema() *jsonschema.Schema {
	return &jsonschema.Schema{
		Description: "an expression, or {visible: SELECTOR} / {hidden: SELECTOR} (the page as it is, not waited for)",
		AnyOf: []*jsonschema.Schema{
			{Types: scalarTypes},
			(&Form{Keys: conditionKeys, ExactlyOne: []string{"expr", "visible", "hidden"}}).mapping(),
		},
	}
}

// stepSchema is the JSON Schema of one step: a mapping with exactly one
// kind key, and the optional name and timeout.
func stepSchema() *jsonschema.Schema {
	s := &jsonschema.Schema{
		Type:                 "object",
		Description:          "a step: exactly one step kind, with an optional name, timeout and (an assertion) soft",
		Properties:           map[string]*jsonschema.Schema{},
		AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}},
	}
	for _, k := range sorted() {
		name := string(k.Name)
		s.Properties[name] = &jsonschema.Schema{Ref: "#/$defs/step." + name, Description: k.Summary}
		s.PropertyOrder = append(s.PropertyOrder, name)
		s.OneOf = append(s.OneOf, &jsonschema.Schema{Required: []string{name}})
	}
	s.Properties["name"] = &jsonschema.Schema{Types: append(scalarTypes[:len(scalarTypes):len(scalarTypes)], "null"), Description: "the step's name in results and reports (default: the kind and its first parameter)"}
	s.Properties["timeout"] = &jsonschema.Schema{Ref: "#/$defs/duration", Description: fmt.Sprintf("the step's time limit, at most %s (default DUET_STEP_TIMEOUT)", MaxStepTimeout)}
	s.Properties["soft"] = &jsonschema.Schema{Type: "boolean", Description: "an assertion's failure is recorded and the case goes on; the case fails at its end"}
	s.PropertyOrder = append(s.PropertyOrder, "name", "timeout", "soft")
	return s
}
