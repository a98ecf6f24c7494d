package api

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestAnswersHoldNoNull: no answer of any route holds a JSON null where
// the document promises an array or an object. Every struct type an
// answer can contain, at any depth, is encoded as the API encodes it
// (MarshalJSON) at its zero value — nil slices, nil maps, nil pointers —
// and the encoding is searched for null: what holds for each type's
// zero value holds for every value, since a field encodes the same
// wherever its struct sits.
func TestAnswersHoldNoNull(t *testing.T) {
	seen := map[reflect.Type]string{}
	var walk func(tp reflect.Type, where string)
	walk = func(tp reflect.Type, where string) {
		for tp.Kind() == reflect.Pointer || tp.Kind() == reflect.Slice || tp.Kind() == reflect.Array || tp.Kind() == reflect.Map {
			tp = tp.Elem()
		}
		if tp.Kind() != reflect.Struct || tp == reflect.TypeFor[time.Time]() {
			return
		}
		if _, ok := seen[tp]; ok {
			return
		}
		seen[tp] = where
		for f := range tp.Fields() {
			if f.IsExported() && f.Tag.Get("json") != "-" {
				walk(f.Type, where+"."+f.Name)
			}
		}
	}
	for _, rt := range routes() {
		if rt.out != nil {
			walk(rt.out, rt.id)
		}
	}
	if len(seen) < 20 {
		t.Fatalf("only %d struct types found in the answers", len(seen))
	}
	for tp, where := range seen {
		b, err := MarshalJSON(reflect.New(tp).Interface())
		if err != nil {
			t.Errorf("%s (%s): %v", tp, where, err)
			continue
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		for _, p := range nulls(v, "") {
			// A nil slice or map is the API's to fill; a pointer an
			// operation always sets (TestRESTAnswersAsDocumented checks
			// real answers against the document), and json.RawMessage is
			// any JSON value.
			if f := fieldAt(tp, p); f != nil && (f.Kind() == reflect.Slice || f.Kind() == reflect.Map) && f != reflect.TypeFor[json.RawMessage]() {
				t.Errorf("%s (in %s) encodes %s, a %s, as null: %s", tp, where, p, f, b)
			}
		}
	}
	// The check can fail: encoding/json writes a nil slice as null.
	b, _ := json.Marshal(RunList{})
	var v any
	json.Unmarshal(b, &v)
	if len(nulls(v, "")) == 0 {
		t.Fatalf("no null found in %s", b)
	}
}

// fieldAt returns the type of the field at JSON path p ("/a/b") of struct
// type tp, or nil.
func fieldAt(tp reflect.Type, p string) reflect.Type {
	for _, name := range strings.Split(strings.TrimPrefix(p, "/"), "/") {
		for tp.Kind() == reflect.Pointer {
			tp = tp.Elem()
		}
		if tp.Kind() != reflect.Struct {
			return nil
		}
		var next reflect.Type
		for f := range tp.Fields() {
			tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if tag == name || tag == "" && f.Name == name {
				next = f.Type
			}
		}
		if next == nil {
			return nil
		}
		tp = next
	}
	return tp
}

// nulls returns the paths of the nulls in v.
func nulls(v any, at string) []string {
	switch x := v.(type) {
	case nil:
		return []string{at}
	case map[string]any:
		var out []string
		for k, e := range x {
			out = append(out, nulls(e, at+"/"+k)...)
		}
		return out
	case []any:
		var out []string
		for _, e := range x {
			out = append(out, nulls(e, at+"/*")...)
		}
		return out
	}
	return nil
}
