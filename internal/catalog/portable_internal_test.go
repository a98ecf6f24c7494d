package catalog

import (
	"reflect"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// TestEmptyWithoutEncoding: the shortcut isEmpty takes (a keyword that an
// encoding always carries) agrees with the encoding on every schema
// reflected for the catalog's tools — before and after portable rewrote
// them — and on the corner cases; the tools/list golden file
// (internal/httpapi) pins the rewritten schemas byte for byte.
func TestEmptyWithoutEncoding(t *testing.T) {
	t.Parallel()
	byEncoding := func(s *jsonschema.Schema) bool {
		c := *s
		c.Description, c.Title = "", ""
		b, err := c.MarshalJSON()
		return err == nil && (string(b) == "true" || string(b) == "{}")
	}
	var all []*jsonschema.Schema
	var walk func(s *jsonschema.Schema)
	walk = func(s *jsonschema.Schema) {
		if s == nil {
			return
		}
		all = append(all, s)
		for _, m := range []map[string]*jsonschema.Schema{s.Properties, s.PatternProperties, s.Defs, s.Definitions, s.DependentSchemas} {
			for _, sub := range m {
				walk(sub)
			}
		}
		for _, sub := range []*jsonschema.Schema{s.Items, s.AdditionalProperties, s.Contains, s.PropertyNames, s.UnevaluatedItems, s.UnevaluatedProperties, s.Not} {
			walk(sub)
		}
		for _, l := range [][]*jsonschema.Schema{s.AnyOf, s.OneOf, s.AllOf, s.PrefixItems} {
			for _, sub := range l {
				walk(sub)
			}
		}
	}
	// As reflection makes them (before portable), and as served.
	for _, typ := range []reflect.Type{reflect.TypeFor[StartRunIn](), reflect.TypeFor[StartRunOut](), reflect.TypeFor[GetRunOut](),
		reflect.TypeFor[GetExecutionOut](), reflect.TypeFor[struct {
			Any   any            `json:"any"`
			Map   map[string]any `json:"map"`
			Slice []any          `json:"slice"`
		}]()} {
		s, err := jsonschema.ForType(typ, schemaOptions())
		if err != nil {
			t.Fatal(err)
		}
		walk(s)
	}
	for _, tool := range productTools() {
		walk(tool.InputSchema)
		walk(tool.OutputSchema)
	}
	walk(&jsonschema.Schema{})
	walk(&jsonschema.Schema{Description: "only words", Title: "t"})
	walk(&jsonschema.Schema{Properties: map[string]*jsonschema.Schema{}})
	walk(&jsonschema.Schema{Items: &jsonschema.Schema{}})
	walk(&jsonschema.Schema{Not: &jsonschema.Schema{}})
	walk(&jsonschema.Schema{Format: "date-time"})
	empty := 0
	for _, s := range all {
		got, want := isEmpty(s), byEncoding(s)
		if got != want {
			b, _ := s.MarshalJSON()
			t.Errorf("isEmpty(%s) = %v, the encoding says %v", b, got, want)
		}
		if got {
			empty++
		}
	}
	if empty < 3 || len(all) < 100 {
		t.Errorf("%d schemas, %d empty: the walk missed the catalog's schemas", len(all), empty)
	}
}

// BenchmarkDefineCatalog is the catalog's share of a cold start: every
// tool's schemas reflected, made portable and resolved.
func BenchmarkDefineCatalog(b *testing.B) {
	for b.Loop() {
		productTools()
	}
}

// TestInputSchemasResolve: every tool's input schema resolves (Define
// resolves it at the tool's first call, not when the catalog is built).
func TestInputSchemasResolve(t *testing.T) {
	t.Parallel()
	for _, tool := range productTools() {
		if r, err := tool.resolve(); err != nil || r == nil {
			t.Errorf("%s: %v", tool.Name, err)
		}
	}
}
