package api_test

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/duet-test/duet/internal/app/apptest"
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
	e := apptest.New(t, nil)
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

// TestOpenAPIForTypedClients: what a client generator reads is one shape
// per answer. No schema of the document admits null beside another type
// (the API sends [] and {}, never null: TestAnswersHoldNoNull); no 2xx
// answer is an anyOf of a success and an error (an error is a 4XX or 5XX
// answer, the Error); every integer parameter has its minimum and every
// limit its maximum.
func TestOpenAPIForTypedClients(t *testing.T) {
	t.Parallel()
	e := apptest.New(t, nil)
	_, body, _ := e.Call("", "GET", "/api/v1/openapi.json", nil)
	var d map[string]any
	if err := json.Unmarshal(body, &d); err != nil {
		t.Fatal(err)
	}
	var walk func(v any, at string)
	walk = func(v any, at string) {
		switch x := v.(type) {
		case map[string]any:
			if ts, ok := x["type"].([]any); ok && len(ts) > 1 && slices.Contains(ts, any("null")) {
				t.Errorf("%s: type %v", at, ts)
			}
			for k, e := range x {
				walk(e, at+"/"+k)
			}
		case []any:
			for i, e := range x {
				walk(e, fmt.Sprintf("%s/%d", at, i))
			}
		}
	}
	walk(d, "")
	for path, methods := range d["paths"].(map[string]any) {
		for method, o := range methods.(map[string]any) {
			op := o.(map[string]any)
			where := strings.ToUpper(method) + " " + path
			for code, r := range op["responses"].(map[string]any) {
				if code[0] != '2' {
					continue
				}
				content, _ := r.(map[string]any)["content"].(map[string]any)
				media, _ := content["application/json"].(map[string]any)
				s, _ := media["schema"].(map[string]any)
				if s == nil {
					continue
				}
				if s["anyOf"] != nil || s["oneOf"] != nil || s["type"] != "object" && s["type"] != "string" {
					t.Errorf("%s: the %s answer is not one shape: %v", where, code, s)
				}
			}
			params, _ := op["parameters"].([]any)
			for _, p := range params {
				p := p.(map[string]any)
				s := p["schema"].(map[string]any)
				if s["type"] == "integer" && (s["minimum"] == nil || p["name"] == "limit" && s["maximum"] == nil) {
					t.Errorf("%s: parameter %s without its bounds: %v", where, p["name"], s)
				}
			}
		}
	}
}
