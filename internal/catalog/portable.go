package catalog

import (
	"slices"

	"github.com/google/jsonschema-go/jsonschema"
)

// anyJSON is the schema of a value that may be any JSON value, spelled so
// that every major client accepts it: one type per anyOf branch, rather
// than a bare true (which jsonschema-go makes of an interface type) or a
// schema without a validation keyword.
func anyJSON(description string) *jsonschema.Schema {
	s := &jsonschema.Schema{Description: description}
	for _, t := range []string{"object", "array", "string", "number", "boolean", "null"} {
		s.AnyOf = append(s.AnyOf, &jsonschema.Schema{Type: t})
	}
	return s
}

// portable rewrites a schema reflected from Go types into the shape every
// major client accepts (what `duet scan` and MCP Inspector's --strict mode
// check): a ["null", T] type, which reflection makes of pointers, slices and
// maps, becomes T — the catalog omits or fills such fields rather than
// sending null — and an empty schema (an interface type) accepts any JSON
// value through anyOf branches of one type each.
func portable(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	if len(s.Types) == 2 && slices.Contains(s.Types, "null") {
		for _, t := range s.Types {
			if t != "null" {
				s.Type = t
			}
		}
		s.Types = nil
	}
	for _, m := range []map[string]*jsonschema.Schema{s.Properties, s.PatternProperties, s.Defs, s.Definitions, s.DependentSchemas} {
		for k, sub := range m {
			if isEmpty(sub) {
				m[k] = anyJSON(sub.Description)
				continue
			}
			portable(sub)
		}
	}
	for _, p := range []**jsonschema.Schema{&s.Items, &s.AdditionalProperties, &s.Contains, &s.PropertyNames, &s.UnevaluatedItems, &s.UnevaluatedProperties} {
		if *p != nil && isEmpty(*p) && p != &s.AdditionalProperties && p != &s.UnevaluatedProperties {
			*p = anyJSON((*p).Description)
			continue
		}
		portable(*p)
	}
	for _, l := range [][]*jsonschema.Schema{s.AnyOf, s.OneOf, s.AllOf, s.PrefixItems} {
		for _, sub := range l {
			portable(sub)
		}
	}
}

// isEmpty reports whether s constrains nothing (jsonschema-go writes an
// empty schema as true).
func isEmpty(s *jsonschema.Schema) bool {
	if s == nil || constrains(s) {
		return false
	}
	c := *s
	c.Description, c.Title = "", ""
	b, err := c.MarshalJSON()
	return err == nil && (string(b) == "true" || string(b) == "{}")
}

// constrains reports, without encoding s, whether it sets a keyword that
// its encoding always carries — so that it is not empty. Reflected schemas
// nearly all do; encoding each property's whole subtree to find out made
// portable quadratic in the depth, the largest part of a cold start.
func constrains(s *jsonschema.Schema) bool {
	return s.Type != "" || len(s.Types) > 0 || len(s.Properties) > 0 || s.Items != nil || s.Ref != "" ||
		s.Not != nil || len(s.AnyOf) > 0 || len(s.OneOf) > 0 || len(s.AllOf) > 0 || len(s.Enum) > 0
}

// Portable rewrites s, a schema reflected from Go types, in place into
// the shape the catalog's own schemas have (see portable): no ["null", T]
// types, and any JSON value spelled as one type per anyOf branch. The
// REST API's document is written with it, as the catalog's tools are.
func Portable(s *jsonschema.Schema) { portable(s) }
