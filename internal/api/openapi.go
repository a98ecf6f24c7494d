package api

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
)

// schemaOptions map the Go types whose JSON shape reflection cannot see.
func schemaOptions() *jsonschema.ForOptions {
	return &jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[json.RawMessage](): {Description: "any JSON value"},
		reflect.TypeFor[time.Time]():       {Type: "string", Format: "date-time"},
	}}
}

// Schema returns the JSON Schema (2020-12) of a route's response, as the
// OpenAPI document states it; nil when the response is not JSON.
func (h *Handler) schema(rt *route) *jsonschema.Schema {
	if name, ok := rt.outSchema.(string); ok {
		if t, ok := h.svc.d.Catalog.Tool(name); ok {
			return t.OutputSchema
		}
	}
	if rt.out == nil {
		return nil
	}
	s, err := jsonschema.ForType(rt.out, schemaOptions())
	if err != nil {
		panic("api: schema of " + rt.id + ": " + err.Error())
	}
	return s
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

// openAPI builds the OpenAPI 3.1 document from the route list: what it
// says is what the routes serve (a test calls every operation and checks
// its answer against it).
func (h *Handler) openAPI() map[string]any {
	paths := map[string]map[string]any{}
	for _, rt := range h.routes {
		op := map[string]any{"operationId": rt.id, "summary": rt.summary, "tags": []string{rt.tag}}
		var params []map[string]any
		for _, p := range rt.params {
			params = append(params, map[string]any{"name": p.name, "in": p.in, "required": p.required, "description": p.desc, "schema": map[string]string{"type": p.typ}})
		}
		if p := rt.header; p != nil {
			params = append(params, map[string]any{"name": p.name, "in": p.in, "required": p.required, "description": p.desc, "schema": map[string]string{"type": p.typ}})
		}
		if params != nil {
			op["parameters"] = params
		}
		if rt.body != nil {
			s, err := jsonschema.ForType(rt.body, schemaOptions())
			if err != nil {
				panic("api: body schema of " + rt.id + ": " + err.Error())
			}
			op["requestBody"] = map[string]any{"required": true, "content": map[string]any{"application/json": map[string]any{"schema": s}}}
		}
		ok := map[string]any{"description": http.StatusText(rt.status)}
		switch rt.ctype {
		case "":
			ok["content"] = map[string]any{"application/json": map[string]any{"schema": h.schema(rt)}}
		case "text/event-stream":
			ok["description"] = "server-sent events: `progress` events whose data is a JSON Progress (components/schemas/Progress), then `end`"
			ok["content"] = map[string]any{"text/event-stream": map[string]any{"schema": map[string]string{"type": "string"}}}
		case "application/zip": // a trace (trace.go); ?format=summary: JSON
			ok["content"] = map[string]any{
				"application/zip":  map[string]any{"schema": map[string]string{"type": "string", "format": "binary"}},
				"application/json": map[string]any{"schema": map[string]string{"type": "object"}},
			}
		case "image/png": // a baseline's image (baseline.go)
			ok["content"] = map[string]any{"image/png": map[string]any{"schema": map[string]string{"type": "string", "format": "binary"}}}
		default:
			ok["content"] = map[string]any{
				"text/html":        map[string]any{"schema": map[string]string{"type": "string"}},
				"application/json": map[string]any{"schema": map[string]string{"type": "object"}},
				"application/xml":  map[string]any{"schema": map[string]string{"type": "string"}},
			}
		}
		op["responses"] = map[string]any{
			strconv.Itoa(rt.status): ok,
			"default": map[string]any{"description": "an error: the status follows from its code (docs/console.md)",
				"content": map[string]any{"application/json": map[string]any{"schema": map[string]string{"$ref": "#/components/schemas/Error"}}}},
		}
		if paths[rt.path] == nil {
			paths[rt.path] = map[string]any{}
		}
		paths[rt.path][strings.ToLower(rt.method)] = op
	}
	progress, _ := jsonschema.For[Progress](schemaOptions())
	return map[string]any{
		"openapi":           "3.1.0",
		"jsonSchemaDialect": "https://json-schema.org/draft/2020-12/schema",
		"info": map[string]any{"title": "Duet REST API", "version": h.opts.Version,
			"description": "Tasks, cases, runs, reports, MCP servers, AI assets, teams, tokens and audit — the operations of the web console. " +
				"Every call goes through the same governance as MCP calls (identity, limits, audit with callSource api). " +
				"Authenticate with Authorization: Bearer <personal access token>, a gateway's X-Api-Key + SSO-Emp-Id, or the console's session cookie " +
				"(then state-changing requests need the X-Csrf-Token header)."},
		"servers": []map[string]string{{"url": "/"}},
		"paths":   paths,
		"components": map[string]any{
			"schemas": map[string]any{"Error": errorSchema(), "Progress": progress},
			"securitySchemes": map[string]any{
				"bearer":  map[string]string{"type": "http", "scheme": "bearer", "description": "a personal access token (duet token create, or the console's Tokens page)"},
				"gateway": map[string]string{"type": "apiKey", "in": "header", "name": "X-Api-Key", "description": "a company gateway's key, with the user in SSO-Emp-Id"},
				"session": map[string]string{"type": "apiKey", "in": "cookie", "name": "duet_session", "description": "the web console's session (with X-Csrf-Token on state changes)"},
			},
		},
		"security": []map[string][]string{{"bearer": {}}, {"gateway": {}}, {"session": {}}},
	}
}
