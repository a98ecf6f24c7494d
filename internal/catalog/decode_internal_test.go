package catalog

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// TestQuickCheckCoversEveryTool: every tool of the catalog has an input
// schema the quick check understands (or a call would pay the full
// validator), and a valid call of each passes it.
func TestQuickCheckCoversEveryTool(t *testing.T) {
	t.Parallel()
	for _, tool := range New(nil, Options{}).Tools() {
		if tool.quick() == nil {
			b, _ := json.Marshal(tool.InputSchema)
			t.Errorf("%s: no quick check for its input schema %s", tool.Name, b)
		}
	}
}

// argumentValues are values of every kind at the edges of the bounds the
// tools use.
func argumentValues() []any {
	vals := []any{nil, true, false, 0.0, 1.0, -1.0, 1.5, 20.0, 50.0, 100.0, 101.0, 200.0, 201.0, 1000.0, 1001.0, 1e300, -1e300,
		"", "x", "ü", "用户", "\u0000", []any{}, []any{"a"}, []any{1.0}, []any{nil}, map[string]any{}, map[string]any{"a": "b"}}
	for _, n := range []int{63, 64, 65, 99, 100, 101, 127, 128, 129, 199, 200, 201, 255, 256, 257, 1023, 1024, 1025} {
		vals = append(vals, strings.Repeat("a", n), strings.Repeat("é", n), strings.Repeat("\U0001F600", n))
	}
	many := make([]any, 1001)
	for i := range many {
		many[i] = fmt.Sprint(i)
	}
	vals = append(vals, many, many[:1000], []any{strings.Repeat("a", 101)}, []any{strings.Repeat("a", 100)})
	return vals
}

// TestQuickCheckAgreesWithTheValidator: for every tool and arguments made
// of each property's edge values, alone, with the required ones, and
// without them, the quick check says valid exactly when the validator
// does — never for arguments the validator refuses.
func TestQuickCheckAgreesWithTheValidator(t *testing.T) {
	t.Parallel()
	vals := argumentValues()
	for _, tool := range New(nil, Options{}).Tools() {
		q := tool.quick()
		if q == nil {
			continue // TestQuickCheckCoversEveryTool says so
		}
		// A valid value of each required property to go with the rest.
		base := map[string]any{}
		for _, name := range tool.InputSchema.Required {
			base[name] = "id_1"
		}
		check := func(obj map[string]any) {
			b, _ := json.Marshal(obj)
			var generic any
			if err := json.Unmarshal(b, &generic); err != nil {
				t.Fatal(err)
			}
			obj = generic.(map[string]any)
			err := mustResolve(t, tool).Validate(generic)
			if got := q.valid(obj); got != (err == nil) {
				t.Errorf("%s %s: quick check %v, validator %v", tool.Name, b, got, err)
			}
		}
		check(base)
		check(map[string]any{})
		for name := range tool.InputSchema.Properties {
			for _, v := range vals {
				check(map[string]any{name: v})
				obj := map[string]any{name: v}
				for k, bv := range base {
					if k != name {
						obj[k] = bv
					}
				}
				check(obj)
			}
		}
	}
}

// FuzzQuickCheck: for arguments of any shape, the quick check never passes
// what the validator refuses.
func FuzzQuickCheck(f *testing.F) {
	tools := New(nil, Options{}).Tools()
	for i := range tools {
		for _, s := range []string{`{}`, `{"taskId":"x"}`, `{"taskId":"x","limit":1}`, `{"runId":"r","limit":1000.0}`, `{"taskId":"t","idempotencyKey":"k","caseIds":["a","b"]}`,
			`{"query":"é","limit":100}`, `{"taskId":"","includeDrafts":true}`, `{"limit":1e2}`, `{"limit":-0}`} {
			f.Add(uint8(i), s)
		}
	}
	f.Fuzz(func(t *testing.T, i uint8, raw string) {
		tool := tools[int(i)%len(tools)]
		q := compileQuick(tool.InputSchema)
		var generic any
		if q == nil || json.Unmarshal([]byte(raw), &generic) != nil {
			return
		}
		obj, ok := generic.(map[string]any)
		if !ok {
			return
		}
		if q.valid(obj) {
			if err := mustResolve(t, tool).Validate(generic); err != nil {
				t.Errorf("%s %s: the quick check passed what the validator refuses: %v", tool.Name, raw, err)
			}
		}
	})
}

// BenchmarkDecodeArgs: get_test_task's arguments, decoded and checked.
func BenchmarkDecodeArgs(b *testing.B) {
	var tool *Tool
	for _, t := range New(nil, Options{}).Tools() {
		if t.Name == "get_test_task" {
			tool = t
		}
	}
	raw := json.RawMessage(`{"taskId":"task_01h8x2k3m4n5p6q7r8s9t0v1w2"}`)
	resolved := mustResolve(b, tool)
	for _, c := range []struct {
		name  string
		quick *quickSchema
	}{{"quick", compileQuick(tool.InputSchema)}, {"validator", nil}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var v struct {
					TaskID string `json:"taskId"`
				}
				if err := decodeArgs(tool.InputSchema, resolved, c.quick, raw, &v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func mustResolve(tb testing.TB, tool *Tool) *jsonschema.Resolved {
	tb.Helper()
	r, err := tool.resolve()
	if err != nil {
		tb.Fatal(err)
	}
	return r
}
