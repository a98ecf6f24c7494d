package api

import (
	"encoding/json"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/duet-test/duet/internal/catalog"
)

// schemaOptions map the Go types whose JSON shape reflection cannot see.
func schemaOptions() *jsonschema.ForOptions {
	ts := map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[json.RawMessage](): {Description: "any JSON value"},
		reflect.TypeFor[time.Time]():       {Type: "string", Format: "date-time"},
	}
	maps.Copy(ts, catalog.FlowTypeSchemas())
	return &jsonschema.ForOptions{TypeSchemas: ts}
}

// schema returns the JSON Schema (2020-12) of a route's success response,
// as the OpenAPI document states it; nil when the response is not JSON.
// A catalog tool's answer is its output schema without the error branch
// (REST answers an error with an error status, never 200); any other is
// reflected from the route's Go type. Both are portable: a slice or map
// the API always fills ([] and {}, never null) is an array or object, not
// ["null", ...].
func (h *Handler) schema(rt *route) *jsonschema.Schema {
	if name, ok := rt.outSchema.(string); ok {
		if t, ok := h.svc.d.Catalog.Tool(name); ok {
			return successSchema(t.OutputSchema)
		}
	}
	if rt.out == nil {
		return nil
	}
	return reflected(rt.out, rt.id)
}

// reflected is the portable schema of Go type t.
func reflected(t reflect.Type, what string) *jsonschema.Schema {
	s, err := jsonschema.ForType(t, schemaOptions())
	if err != nil {
		panic("api: schema of " + what + ": " + err.Error())
	}
	catalog.Portable(s)
	return s
}

// successSchema returns a copy of a catalog tool's output schema without
// the branch of a failed call (catalog.Define adds "error" to its
// properties and moves its required members into anyOf).
func successSchema(out *jsonschema.Schema) *jsonschema.Schema {
	b, err := json.Marshal(out)
	if err != nil {
		panic("api: encoding an output schema: " + err.Error())
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		panic("api: decoding an output schema: " + err.Error())
	}
	delete(s.Properties, "error")
	for _, branch := range s.AnyOf {
		if !slices.Contains(branch.Required, "error") {
			s.Required = branch.Required
		}
	}
	s.AnyOf = nil
	return &s
}

func errorSchema() *jsonschema.Schema {
	return &jsonschema.Schema{
		Type:     "object",
		Required: []string{"error"},
		Properties: map[string]*jsonschema.Schema{
			"error": {Type: "object", Required: []string{"code", "message"}, Properties: map[string]*jsonschema.Schema{
				"code":    {Type: "string", Description: "a stable error code (NOT_FOUND, PERMISSION_DENIED, ...): the HTTP status follows from it"},
				"message": {Type: "string"},
			}},
		},
	}
}

// paramSchema is the schema of a parameter: its type and bounds.
func paramSchema(p param) map[string]any {
	s := map[string]any{"type": p.typ}
	if p.typ == "integer" {
		s["minimum"] = p.min
		if p.max > 0 {
			s["maximum"] = p.max
		}
	}
	if p.maxLen > 0 {
		s["maxLength"] = p.maxLen
	}
	return s
}

// license is the document's license object. The repository grants no
// license yet: in npm's words, UNLICENSED (an SPDX LicenseRef, as the
// identifier must be SPDX). Change it here when Duet gets one.
var license = map[string]string{"name": "UNLICENSED", "identifier": "LicenseRef-UNLICENSED"}

// errorRef is an operation's error responses: every 4xx and 5xx answer is
// an Error.
var errorRef = map[string]string{"$ref": "#/components/responses/Error"}

// openAPI builds the OpenAPI 3.1 document from the route list: what it
// says is what the routes serve (a test calls every operation and checks
// its answer against it).
func (h *Handler) openAPI() map[string]any {
	paths := map[string]map[string]any{}
	for _, rt := range h.routes {
		op := map[string]any{"operationId": rt.id, "summary": rt.summary, "tags": []string{rt.tag}}
		var params []map[string]any
		for _, p := range rt.params {
			params = append(params, map[string]any{"name": p.name, "in": p.in, "required": p.required, "description": p.desc, "schema": paramSchema(p)})
		}
		if p := rt.header; p != nil {
			params = append(params, map[string]any{"name": p.name, "in": p.in, "required": p.required, "description": p.desc, "schema": paramSchema(*p)})
		}
		if params != nil {
			op["parameters"] = params
		}
		if rt.body != nil {
			op["requestBody"] = map[string]any{"required": true, "content": map[string]any{"application/json": map[string]any{"schema": reflected(rt.body, rt.id+" body")}}}
		}
		ok := map[string]any{"description": http.StatusText(rt.status)}
		switch {
		case rt.status == http.StatusNoContent:
			// No body.
		case rt.ctype == "":
			ok["content"] = map[string]any{"application/json": map[string]any{"schema": h.schema(rt)}}
		case rt.ctype == "text/event-stream":
			ok["description"] = "server-sent events: `progress` events whose data is a JSON Progress (components/schemas/Progress), then `end`"
			ok["content"] = map[string]any{"text/event-stream": map[string]any{"schema": map[string]any{"type": "string",
				"contentMediaType": "text/event-stream", "contentSchema": map[string]string{"$ref": "#/components/schemas/Progress"},
				"description": "each event's data is a Progress"}}}
		case rt.ctype == "application/zip": // a trace (trace.go); ?format=summary: JSON
			ok["content"] = map[string]any{
				"application/zip":  map[string]any{"schema": map[string]string{"type": "string", "format": "binary"}},
				"application/json": map[string]any{"schema": map[string]string{"type": "object"}},
			}
		case rt.ctype == "image/png": // a baseline's image (baseline.go)
			ok["content"] = map[string]any{"image/png": map[string]any{"schema": map[string]string{"type": "string", "format": "binary"}}}
		case rt.ctype == "video/webm": // a trace's replay as a video (trace.go); ?format=mp4
			ok["content"] = map[string]any{
				"video/webm": map[string]any{"schema": map[string]string{"type": "string", "format": "binary"}},
				"video/mp4":  map[string]any{"schema": map[string]string{"type": "string", "format": "binary"}},
			}
		case rt.ctype == "text/html": // a run's report (runs.go): html, json, junit, or junit with its attachments as a zip
			ok["content"] = map[string]any{
				"text/html": map[string]any{"schema": map[string]string{"type": "string"}},
				"application/json": map[string]any{"schema": map[string]any{"type": "object", "additionalProperties": true,
					"description": "the JSON report, as `duet report --format json` writes it"}},
				"application/xml": map[string]any{"schema": map[string]string{"type": "string"}},
				"application/zip": map[string]any{"schema": map[string]string{"type": "string", "format": "binary",
					"description": "format=junit&attachments=zip: junit.xml and junit-attachments/"}},
			}
		default:
			panic("openapi: no content for the route's type " + rt.ctype + " (" + rt.id + ")")
		}
		if rt.location != nil {
			ok["headers"] = map[string]any{"Location": map[string]any{"description": "the address of what was created", "schema": map[string]string{"type": "string"}}}
		}
		op["responses"] = map[string]any{strconv.Itoa(rt.status): ok, "4XX": errorRef, "5XX": errorRef}
		if paths[rt.path] == nil {
			paths[rt.path] = map[string]any{}
		}
		paths[rt.path][strings.ToLower(rt.method)] = op
	}
	return map[string]any{
		"openapi":           "3.1.0",
		"jsonSchemaDialect": "https://json-schema.org/draft/2020-12/schema",
		"info": map[string]any{"title": "Duet REST API", "version": h.opts.Version,
			"description": "Tasks, cases, runs, reports, MCP servers, AI assets, teams, tokens and audit — the operations of the web console. " +
				"Every call goes through the same governance as MCP calls (identity, limits, audit with callSource api). " +
				"Authenticate with Authorization: Bearer <personal access token>, a gateway's X-Api-Key + SSO-Emp-Id, or the console's session cookie " +
				"(then state-changing requests need the X-Csrf-Token header).",
			"license": license},
		"servers": []map[string]string{{"url": "/"}},
		"paths":   paths,
		"components": map[string]any{
			"schemas": map[string]any{"Error": errorSchema(), "Progress": reflected(typeOf[Progress](), "Progress")},
			"responses": map[string]any{"Error": map[string]any{
				"description": "an error: {\"error\": {code, message}}; the status follows from the code (docs/console.md: INVALID_ARGUMENT 400, " +
					"UNAUTHENTICATED 401, PERMISSION_DENIED 403, NOT_FOUND 404, METHOD_NOT_ALLOWED 405, CONFLICT 409, TOO_LARGE 413, RATE_LIMITED 429, INTERNAL 500, ...)",
				"content": map[string]any{"application/json": map[string]any{"schema": map[string]string{"$ref": "#/components/schemas/Error"}}}}},
			"securitySchemes": map[string]any{
				"bearer":  map[string]string{"type": "http", "scheme": "bearer", "description": "a personal access token (duet token create, or the console's Tokens page)"},
				"gateway": map[string]string{"type": "apiKey", "in": "header", "name": "X-Api-Key", "description": "a company gateway's key, with the user in SSO-Emp-Id"},
				"session": map[string]string{"type": "apiKey", "in": "cookie", "name": "duet_session", "description": "the web console's session (with X-Csrf-Token on state changes)"},
			},
		},
		"security": []map[string][]string{{"bearer": {}}, {"gateway": {}}, {"session": {}}},
	}
}
