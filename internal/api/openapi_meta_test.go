package api_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/duet-test/duet/internal/api/apitest"
)

// metaSchema is the official OpenAPI 3.1 schema (testdata/README.md).
func metaSchema(t *testing.T) *jsonschema.Resolved {
	t.Helper()
	b, err := os.ReadFile("testdata/oas-3.1-schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	r, err := s.Resolve(nil)
	if err != nil {
		t.Fatalf("the OpenAPI 3.1 schema does not resolve: %v", err)
	}
	return r
}

// TestOpenAPIDocumentIsValid: /api/v1/openapi.json validates against the
// OpenAPI Initiative's own schema for 3.1 documents — and that schema
// refuses a document with the mistakes a hand-written one makes, so the
// check can fail.
func TestOpenAPIDocumentIsValid(t *testing.T) {
	t.Parallel()
	meta := metaSchema(t)
	e := apitest.New(t, nil)
	status, body, _ := e.Call("", "GET", "/api/v1/openapi.json", nil)
	if status != 200 {
		t.Fatalf("openapi.json: %d %s", status, body)
	}
	var doc map[string]any
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	if err := meta.Validate(doc); err != nil {
		t.Fatalf("openapi.json is not a valid OpenAPI 3.1 document: %v", err)
	}

	// The same document broken as hand-written ones are: each is refused.
	broken := map[string]func(d map[string]any){
		"no info":     func(d map[string]any) { delete(d, "info") },
		"openapi 3.0": func(d map[string]any) { d["openapi"] = "3.0.3" },
		"a response without description": func(d map[string]any) {
			op := firstOperation(d)
			for _, r := range op["responses"].(map[string]any) {
				delete(r.(map[string]any), "description")
			}
		},
		"a parameter without in": func(d map[string]any) {
			for _, p := range d["paths"].(map[string]any) {
				for _, o := range p.(map[string]any) {
					if op, ok := o.(map[string]any); ok {
						if ps, ok := op["parameters"].([]any); ok && len(ps) > 0 {
							delete(ps[0].(map[string]any), "in")
							return
						}
					}
				}
			}
		},
		"an unknown member": func(d map[string]any) { firstOperation(d)["summry"] = "typo" },
	}
	for name, breakIt := range broken {
		var d map[string]any
		json.Unmarshal(body, &d)
		breakIt(d)
		if err := meta.Validate(d); err == nil {
			t.Errorf("%s: the OpenAPI schema accepted it", name)
		}
	}
}

// firstOperation returns some operation object of d.
func firstOperation(d map[string]any) map[string]any {
	for _, p := range d["paths"].(map[string]any) {
		for m, o := range p.(map[string]any) {
			if op, ok := o.(map[string]any); ok && strings.ToLower(m) == m && m != "parameters" {
				return op
			}
		}
	}
	return nil
}
