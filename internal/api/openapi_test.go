package api_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/app/apptest"
)

// doc is the parts of the OpenAPI document the tests read.
type doc struct {
	OpenAPI    string                                `json:"openapi"`
	Info       map[string]any                        `json:"info"`
	Paths      map[string]map[string]json.RawMessage `json:"paths"`
	Components struct {
		Schemas         map[string]*jsonschema.Schema `json:"schemas"`
		Responses       map[string]response           `json:"responses"`
		SecuritySchemes map[string]map[string]any     `json:"securitySchemes"`
	} `json:"components"`
	Security []map[string][]string `json:"security"`
}

type operation struct {
	OperationID string `json:"operationId"`
	Summary     string `json:"summary"`
	Parameters  []struct {
		Name     string         `json:"name"`
		In       string         `json:"in"`
		Required bool           `json:"required"`
		Schema   map[string]any `json:"schema"`
	} `json:"parameters"`
	RequestBody *struct {
		Required bool `json:"required"`
		Content  map[string]struct {
			Schema *jsonschema.Schema `json:"schema"`
		} `json:"content"`
	} `json:"requestBody"`
	Responses map[string]response `json:"responses"`
}

type response struct {
	Ref         string `json:"$ref"`
	Description string `json:"description"`
	Headers     map[string]struct {
		Schema map[string]any `json:"schema"`
	} `json:"headers"`
	Content map[string]struct {
		Schema *jsonschema.Schema `json:"schema"`
	} `json:"content"`
}

type documented struct {
	method, path string
	op           operation
	status       int
	ctype        string
	ctypes       []string
	schema       *jsonschema.Resolved
	location     bool // a 201 names what it created in Location
}

var templateParam = regexp.MustCompile(`\{([^}]+)\}`)

// loadDoc fetches /api/v1/openapi.json without credentials and checks it
// is a valid OpenAPI 3.1 document: the fields the specification requires,
// unique operation ids, path templates whose parameters are all declared
// (and no others), parameters with bounds (every integer its minimum,
// every limit its maximum), one success response and the Error response
// for every 4xx and 5xx per operation, security schemes that exist, and
// every schema a valid JSON Schema 2020-12 (the document's dialect) that
// resolves.
func loadDoc(t *testing.T, e *apptest.Env) (doc, map[string]*documented) {
	t.Helper()
	status, body, resp := e.Call("", "GET", "/api/v1/openapi.json", nil)
	if status != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("openapi.json: %d %s", status, body)
	}
	var d doc
	if err := json.Unmarshal(body, &d); err != nil {
		t.Fatalf("openapi.json is not JSON: %v", err)
	}
	if d.OpenAPI != "3.1.0" || d.Info["title"] == nil || d.Info["version"] == nil || len(d.Paths) == 0 {
		t.Fatalf("openapi.json: openapi %q, info %v, %d paths", d.OpenAPI, d.Info, len(d.Paths))
	}
	for _, req := range d.Security {
		for name := range req {
			if d.Components.SecuritySchemes[name] == nil {
				t.Errorf("security names scheme %q, which components.securitySchemes lacks", name)
			}
		}
	}
	errSchema := d.Components.Schemas["Error"]
	if errSchema == nil {
		t.Fatal("components.schemas.Error is missing")
	}
	if er := d.Components.Responses["Error"]; er.Description == "" || er.Content["application/json"].Schema == nil ||
		er.Content["application/json"].Schema.Ref != "#/components/schemas/Error" {
		t.Fatalf("components.responses.Error is not the Error schema: %+v", er)
	}
	for name, s := range d.Components.Schemas {
		if _, err := s.Resolve(nil); err != nil {
			t.Errorf("components.schemas.%s: %v", name, err)
		}
	}
	ids := map[string]bool{}
	ops := map[string]*documented{}
	for path, methods := range d.Paths {
		if !strings.HasPrefix(path, "/api/v1/") {
			t.Errorf("path %s is outside /api/v1", path)
		}
		want := templateParam.FindAllStringSubmatch(path, -1)
		for method, raw := range methods {
			if !slices.Contains([]string{"get", "put", "post", "delete", "patch"}, method) {
				t.Errorf("%s: unknown method %q", path, method)
				continue
			}
			var op operation
			if err := json.Unmarshal(raw, &op); err != nil {
				t.Fatalf("%s %s: %v", method, path, err)
			}
			where := strings.ToUpper(method) + " " + path
			if op.OperationID == "" || ids[op.OperationID] {
				t.Errorf("%s: operationId %q missing or not unique", where, op.OperationID)
			}
			ids[op.OperationID] = true
			var declared []string
			for _, p := range op.Parameters {
				if !slices.Contains([]string{"path", "query", "header", "cookie"}, p.In) || p.Name == "" || p.Schema["type"] == nil {
					t.Errorf("%s: bad parameter %+v", where, p)
				}
				if p.Schema["type"] == "integer" && (p.Schema["minimum"] == nil || p.Name == "limit" && p.Schema["maximum"] == nil) {
					t.Errorf("%s: integer parameter %s without its bounds: %v", where, p.Name, p.Schema)
				}
				if p.In == "path" {
					if !p.Required {
						t.Errorf("%s: path parameter %s must be required", where, p.Name)
					}
					declared = append(declared, p.Name)
				}
			}
			var inPath []string
			for _, m := range want {
				inPath = append(inPath, m[1])
			}
			slices.Sort(inPath)
			slices.Sort(declared)
			if !slices.Equal(inPath, declared) {
				t.Errorf("%s: path parameters %v, declared %v", where, inPath, declared)
			}
			if op.RequestBody != nil {
				s := op.RequestBody.Content["application/json"].Schema
				if s == nil {
					t.Errorf("%s: request body without an application/json schema", where)
				} else if _, err := s.Resolve(nil); err != nil {
					t.Errorf("%s: request body schema: %v", where, err)
				}
			}
			dd := &documented{method: strings.ToUpper(method), path: path, op: op}
			for code, r := range op.Responses {
				if code == "4XX" || code == "5XX" {
					if r.Ref != "#/components/responses/Error" {
						t.Errorf("%s: the %s response is not the Error response", where, code)
					}
					continue
				}
				if r.Description == "" {
					t.Errorf("%s: response %s has no description (required)", where, code)
				}
				n, err := strconv.Atoi(code)
				if err != nil || n < 200 || n > 299 || dd.status != 0 {
					t.Errorf("%s: response %q is not the one success status", where, code)
					continue
				}
				dd.status = n
				_, dd.location = r.Headers["Location"]
				if n == http.StatusNoContent && len(r.Content) > 0 {
					t.Errorf("%s: a 204 response with content", where)
				}
				for ct, c := range r.Content {
					dd.ctypes = append(dd.ctypes, ct)
					if dd.ctype == "" || ct == "application/json" {
						dd.ctype = ct
					}
					if ct == "application/json" && c.Schema != nil {
						res, err := c.Schema.Resolve(nil)
						if err != nil {
							t.Errorf("%s: response schema: %v", where, err)
						}
						dd.schema = res
					}
				}
			}
			if dd.status == 0 || op.Responses["4XX"].Ref == "" || op.Responses["5XX"].Ref == "" {
				t.Errorf("%s: needs one success response and the 4XX and 5XX error responses", where)
			}
			ops[op.OperationID] = dd
		}
	}
	return d, ops
}

// check calls the documented operation id as user and checks that it
// answers as documented: the success status, the content type and a body
// the response schema accepts; or, when wantErr is set, that error with
// the Error schema.
func check(t *testing.T, e *apptest.Env, ops map[string]*documented, seen map[string]bool, user, id string, params map[string]string, body any, wantErr duet.Code, hdr ...string) []byte {
	t.Helper()
	d := ops[id]
	if d == nil {
		t.Fatalf("operation %s is not documented", id)
	}
	seen[id] = true
	path := templateParam.ReplaceAllStringFunc(d.path, func(m string) string {
		v, ok := params[m[1:len(m)-1]]
		if !ok {
			t.Fatalf("%s: no value for %s", id, m)
		}
		return v
	})
	if q := params["?"]; q != "" {
		path += "?" + q
	}
	status, b, resp := e.Call(user, d.method, path, body, hdr...)
	where := fmt.Sprintf("%s (%s %s) as %s", id, d.method, path, user)
	if wantErr != "" {
		if got := apptest.ErrCode(b); got != wantErr {
			t.Fatalf("%s: got %d %s, want the error %s", where, status, b, wantErr)
		}
		return b
	}
	if status != d.status {
		t.Fatalf("%s: status %d, documented %d: %s", where, status, d.status, b)
	}
	if status == http.StatusNoContent {
		if len(b) != 0 || resp.Header.Get("Content-Type") != "" {
			t.Fatalf("%s: 204 with a body: %q (%s)", where, b, resp.Header.Get("Content-Type"))
		}
		return b
	}
	if d.location {
		// What was created is where Location says.
		loc := resp.Header.Get("Location")
		if !strings.HasPrefix(loc, "/api/v1/") {
			t.Fatalf("%s: Location %q", where, loc)
		}
		if st, got, _ := e.Call(user, "GET", loc, nil); st != http.StatusOK {
			t.Fatalf("%s: GET %s (its Location): %d %s", where, loc, st, got)
		}
	}
	ct := resp.Header.Get("Content-Type")
	if !slices.ContainsFunc(d.ctypes, func(c string) bool { return strings.HasPrefix(ct, c) }) {
		t.Fatalf("%s: Content-Type %q, documented %v", where, ct, d.ctypes)
	}
	switch {
	case len(d.ctypes) == 1 && d.ctype == "application/json" && d.schema != nil:
		if !strings.HasPrefix(ct, "application/json") {
			t.Fatalf("%s: Content-Type %q", where, ct)
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("%s: not JSON: %v", where, err)
		}
		if err := d.schema.Validate(v); err != nil {
			t.Fatalf("%s: the body does not match the documented schema: %v\n%s", where, err, b)
		}
	case d.ctype == "text/event-stream":
		if !strings.HasPrefix(ct, "text/event-stream") {
			t.Fatalf("%s: Content-Type %q", where, ct)
		}
	}
	return b
}

func decode[T any](t *testing.T, b []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("decoding %s: %v", b, err)
	}
	return v
}

// sse reads the events of an event stream body.
func sse(b []byte) (events []string, data []string) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "event: "); ok {
			events = append(events, v)
		}
		if v, ok := strings.CutPrefix(line, "data: "); ok {
			data = append(data, v)
		}
	}
	return events, data
}
