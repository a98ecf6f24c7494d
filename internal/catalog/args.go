package catalog

import (
	"encoding/json"
	"math"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
)

// A quick check of a call's arguments. The validator of the resolved input
// schema (jsonschema.Resolved.Validate) was the largest part of a read-only
// call's argument handling — reflection over the decoded value, an error
// value built per keyword. The catalog's own tools have simple input
// schemas: an object of named strings, integers, booleans and arrays of
// strings, with length, range and count bounds, required names and no
// other names. For such a schema quickSchema decides, in a walk over the
// decoded arguments, that they are valid; it only ever says "valid" or
// "ask the validator": arguments it does not pass — and every tool whose
// schema uses anything beyond that subset — go to Validate as before, so
// every invalid input is refused by the same validator, with the same
// message (TestQuickCheckAgreesWithTheValidator, FuzzQuickCheck).

// quickSchema is an object schema the quick check understands.
type quickSchema struct {
	props    map[string]*quickValue
	required []string
}

// quickValue is the schema of one argument (or of an array's items).
type quickValue struct {
	typ              string // string, integer, boolean or array
	minLen, maxLen   *int
	minimum, maximum *float64
	maxItems         *int
	items            *quickValue
}

// quickObjectKeys and quickValueKeys are the keywords the quick check
// understands; a schema with any other is left to the validator.
var (
	quickObjectKeys = map[string]bool{"type": true, "properties": true, "required": true, "additionalProperties": true, "description": true, "title": true}
	quickValueKeys  = map[string]bool{"type": true, "description": true, "title": true, "default": true,
		"minLength": true, "maxLength": true, "minimum": true, "maximum": true, "items": true, "maxItems": true}
)

// compileQuick returns the quick check of s, or nil when s is not an
// object schema of the subset (then every call is validated in full).
func compileQuick(s *jsonschema.Schema) *quickSchema {
	if s == nil || s.Type != "object" || !onlyKeys(s, quickObjectKeys) ||
		s.AdditionalProperties == nil || !isFalseSchema(s.AdditionalProperties) {
		return nil
	}
	q := &quickSchema{props: map[string]*quickValue{}, required: s.Required}
	for _, name := range s.Required {
		if s.Properties[name] == nil {
			return nil
		}
	}
	for name, p := range s.Properties {
		v := compileQuickValue(p, true)
		if v == nil {
			return nil
		}
		q.props[name] = v
	}
	return q
}

func compileQuickValue(s *jsonschema.Schema, arrayOK bool) *quickValue {
	if s == nil || !onlyKeys(s, quickValueKeys) {
		return nil
	}
	v := &quickValue{typ: s.Type, minLen: s.MinLength, maxLen: s.MaxLength, minimum: s.Minimum, maximum: s.Maximum, maxItems: s.MaxItems}
	strs := s.MinLength != nil || s.MaxLength != nil
	nums := s.Minimum != nil || s.Maximum != nil
	switch s.Type {
	case "string":
		if nums || s.Items != nil || s.MaxItems != nil {
			return nil
		}
	case "integer":
		if strs || s.Items != nil || s.MaxItems != nil {
			return nil
		}
	case "boolean":
		if strs || nums || s.Items != nil || s.MaxItems != nil {
			return nil
		}
	case "array":
		if !arrayOK || strs || nums || s.Items == nil {
			return nil
		}
		if v.items = compileQuickValue(s.Items, false); v.items == nil {
			return nil
		}
	default:
		return nil
	}
	return v
}

// onlyKeys reports whether s, as JSON, has no keyword outside keys.
func onlyKeys(s *jsonschema.Schema, keys map[string]bool) bool {
	b, err := json.Marshal(s)
	if err != nil {
		return false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return false
	}
	for k := range m {
		if !keys[k] {
			return false
		}
	}
	return true
}

// isFalseSchema reports whether s is {"not": {}} (written false): it
// admits nothing.
func isFalseSchema(s *jsonschema.Schema) bool {
	b, err := json.Marshal(s)
	return err == nil && (string(b) == "false" || string(b) == `{"not":{}}`)
}

// valid reports whether obj — arguments as encoding/json decodes them
// into an any — is certainly valid against the schema; false means "ask
// the validator".
func (q *quickSchema) valid(obj map[string]any) bool {
	for _, name := range q.required {
		if _, ok := obj[name]; !ok {
			return false
		}
	}
	for name, val := range obj {
		p, ok := q.props[name]
		if !ok || !p.valid(val) {
			return false
		}
	}
	return true
}

func (p *quickValue) valid(val any) bool {
	switch p.typ {
	case "string":
		s, ok := val.(string)
		if !ok {
			return false
		}
		if p.minLen != nil || p.maxLen != nil {
			n := utf8.RuneCountInString(s)
			if p.minLen != nil && n < *p.minLen || p.maxLen != nil && n > *p.maxLen {
				return false
			}
		}
		return true
	case "integer":
		f, ok := val.(float64)
		if !ok || math.IsInf(f, 0) || math.IsNaN(f) {
			return false
		}
		if _, frac := math.Modf(f); frac != 0 {
			return false
		}
		return (p.minimum == nil || f >= *p.minimum) && (p.maximum == nil || f <= *p.maximum)
	case "boolean":
		_, ok := val.(bool)
		return ok
	case "array":
		items, ok := val.([]any)
		if !ok || p.maxItems != nil && len(items) > *p.maxItems {
			return false
		}
		for _, it := range items {
			if !p.items.valid(it) {
				return false
			}
		}
		return true
	}
	return false
}
