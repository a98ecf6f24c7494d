//lint:file-ignore SA1019 the 2026-07-28 scenarios still exercise logging, sampling and roots, deprecated in that revision

package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/duet-test/duet/internal/catalog"
	"github.com/duet-test/duet/internal/mcpserver"
)

// Fixtures of the 2026-07-28 scenarios (suite 0.2.0-alpha.12): the
// diagnostic tools of server-stateless (SEP-2575), the multi-round tools
// and prompt of input-required-result-* (SEP-2322), the JSON Schema 2020-12
// tool and a tool with an x-mcp-header parameter (SEP-2243). The multi-round
// tools ask through the catalog (catalog.Env.Ask), so their request state is
// the catalog's sealed one, as the product's.

// Tool and prompt names of the 2026-07-28 scenarios.
const (
	ToolMissingCapability   = "test_missing_capability"
	ToolStreamingElicit     = "test_streaming_elicitation"
	ToolLoggingTool         = "test_logging_tool"
	ToolTriggerToolChange   = "test_trigger_tool_change"
	ToolTriggerPromptChange = "test_trigger_prompt_change"
	ToolIRElicitation       = "test_input_required_result_elicitation"
	ToolIRSampling          = "test_input_required_result_sampling"
	ToolIRListRoots         = "test_input_required_result_list_roots"
	ToolIRRequestState      = "test_input_required_result_request_state"
	ToolIRMultipleInputs    = "test_input_required_result_multiple_inputs"
	ToolIRMultiRound        = "test_input_required_result_multi_round"
	ToolIRTamperedState     = "test_input_required_result_tampered_state"
	ToolIRCapabilities      = "test_input_required_result_capabilities"
	ToolJSONSchema202012    = "json_schema_2020_12_tool"
	ToolXMcpHeader          = "test_x_mcp_header"
	PromptInputRequired     = "test_input_required_result_prompt"
)

// server is the SDK server the fixtures are mounted on (set by setup): the
// list-change triggers add to it.
type server struct{ s *mcp.Server }

func text(msg string) (TextOut, error) { return TextOut{Message: msg}, nil }

func elicitName(message string) catalog.InputRequest {
	return catalog.InputRequest{Method: catalog.AskElicit, Params: map[string]any{
		"message": message,
		"requestedSchema": map[string]any{"type": "object",
			"properties": map[string]any{"name": map[string]any{"type": "string"}}, "required": []string{"name"}},
	}}
}

func elicitField(message, field, typ string) catalog.InputRequest {
	return catalog.InputRequest{Method: catalog.AskElicit, Params: map[string]any{
		"message": message,
		"requestedSchema": map[string]any{"type": "object",
			"properties": map[string]any{field: map[string]any{"type": typ}}, "required": []string{field}},
	}}
}

func sample(prompt string, maxTokens int) catalog.InputRequest {
	return catalog.InputRequest{Method: catalog.AskSample, Params: map[string]any{
		"messages":  []any{map[string]any{"role": "user", "content": map[string]any{"type": "text", "text": prompt}}},
		"maxTokens": maxTokens,
	}}
}

var listRoots = catalog.InputRequest{Method: catalog.AskListRts, Params: map[string]any{}}

// accepted returns the content of an accepted elicitation answered under key.
func accepted(env *catalog.Env, key string) map[string]any {
	var e catalog.Elicitation
	if !env.Answer(key, &e) || e.Action != "accept" {
		return nil
	}
	if e.Content == nil {
		return map[string]any{}
	}
	return e.Content
}

// sampled returns the first text of a sampling answer under key.
func sampled(env *catalog.Env, key string) (string, bool) {
	var r struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if !env.Answer(key, &r) || r.Role == "" {
		return "", false
	}
	var one struct{ Type, Text string }
	if json.Unmarshal(r.Content, &one) == nil && one.Type == "text" {
		return one.Text, true
	}
	var many []struct{ Type, Text string }
	if json.Unmarshal(r.Content, &many) == nil {
		for _, c := range many {
			if c.Type == "text" {
				return c.Text, true
			}
		}
	}
	return "(non-text response)", true
}

// roots returns the URIs of a roots/list answer under key.
func roots(env *catalog.Env, key string) ([]string, bool) {
	var r struct {
		Roots []struct{ URI string } `json:"roots"`
	}
	if !env.Answer(key, &r) || r.Roots == nil {
		return nil, false
	}
	var uris []string
	for _, x := range r.Roots {
		uris = append(uris, x.URI)
	}
	return uris, true
}

func fixture(name, description string, fn func(ctx context.Context, env *catalog.Env) (TextOut, error)) *catalog.Tool {
	return catalog.Define(name, "", description+" (conformance fixture)", readOnly, nil,
		func(ctx context.Context, env *catalog.Env, _ noArgs) (TextOut, error) { return fn(ctx, env) })
}

// asking is a fixture whose answer depends on what the client can be asked
// (catalog.Tool.WithInput).
func asking(name, description string, fn func(ctx context.Context, env *catalog.Env) (TextOut, error)) *catalog.Tool {
	return fixture(name, description, fn).WithInput()
}

// roundTools are the fixtures of the 2026-07-28 scenarios.
func roundTools(srv *server) []*catalog.Tool {
	return []*catalog.Tool{
		asking(ToolMissingCapability, "Needs the client's sampling capability: without it, a -32021 error (SEP-2575)",
			func(ctx context.Context, env *catalog.Env) (TextOut, error) {
				if env.CanAsk(catalog.AskSample) {
					return text("Client declared the sampling capability; tool executed.")
				}
				return TextOut{}, &catalog.CapabilityError{Message: "this tool needs the sampling capability, which the client did not declare",
					Required: map[string]any{"sampling": map[string]any{}}}
			}),
		fixture(ToolStreamingElicit, "Answers on a response stream that carries no request of the server's own (SEP-2575)",
			func(ctx context.Context, env *catalog.Env) (TextOut, error) {
				return text("stream observed: result frames only, no top-level requests")
			}),
		fixture(ToolLoggingTool, "Tries to log: the message goes out only when the client asked for a log level (SEP-2575)",
			func(ctx context.Context, env *catalog.Env) (TextOut, error) {
				if ss := mcpserver.Session(ctx); ss != nil {
					_ = ss.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Logger: "duet", Data: "test_logging_tool executed"})
				}
				return text("Log attempted; a message goes out only at the log level the client asked for.")
			}),
		fixture(ToolTriggerToolChange, "Changes the tool list: subscribers get notifications/tools/list_changed",
			func(ctx context.Context, env *catalog.Env) (TextOut, error) {
				if srv.s != nil {
					srv.s.AddTool(&mcp.Tool{Name: "__transient_tool_for_list_changed", Description: "Added to change the tool list",
						InputSchema: &jsonschema.Schema{Type: "object"}},
						func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
							return &mcp.CallToolResult{}, nil
						})
				}
				return text("tools_list_changed published")
			}),
		fixture(ToolTriggerPromptChange, "Changes the prompt list: subscribers get notifications/prompts/list_changed",
			func(ctx context.Context, env *catalog.Env) (TextOut, error) {
				if srv.s != nil {
					srv.s.AddPrompt(&mcp.Prompt{Name: "__transient_prompt_for_list_changed", Description: "Added to change the prompt list"},
						func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
							return &mcp.GetPromptResult{}, nil
						})
				}
				return text("prompts_list_changed published")
			}),
		asking(ToolIRElicitation, "Asks the caller's name with an in-band elicitation (SEP-2322)",
			func(ctx context.Context, env *catalog.Env) (TextOut, error) {
				if c := accepted(env, "user_name"); c != nil {
					if name, _ := c["name"].(string); name != "" {
						return text("Hello, " + name + "!")
					}
				}
				return TextOut{}, env.Ask(map[string]catalog.InputRequest{"user_name": elicitName("What is your name?")}, nil)
			}),
		asking(ToolIRSampling, "Asks the client's model a question in band (SEP-2322)",
			func(ctx context.Context, env *catalog.Env) (TextOut, error) {
				if t, ok := sampled(env, "capital_question"); ok {
					return text("Sampling response: " + t)
				}
				return TextOut{}, env.Ask(map[string]catalog.InputRequest{"capital_question": sample("What is the capital of France?", 100)}, nil)
			}),
		asking(ToolIRListRoots, "Asks the client's roots in band (SEP-2322)",
			func(ctx context.Context, env *catalog.Env) (TextOut, error) {
				if uris, ok := roots(env, "client_roots"); ok {
					return text(fmt.Sprintf("Client exposed %d root(s): %s", len(uris), strings.Join(uris, ", ")))
				}
				return TextOut{}, env.Ask(map[string]catalog.InputRequest{"client_roots": listRoots}, nil)
			}),
		asking(ToolIRRequestState, "Round-trips a sealed request state beside an elicitation (SEP-2322)",
			func(ctx context.Context, env *catalog.Env) (TextOut, error) {
				if accepted(env, "confirm") != nil && string(env.State()) == "request_state" {
					return text("state-ok: requestState received and confirmation accepted")
				}
				return TextOut{}, env.Ask(map[string]catalog.InputRequest{"confirm": elicitField("Please confirm", "ok", "boolean")}, []byte("request_state"))
			}),
		asking(ToolIRMultipleInputs, "Asks an elicitation, a sampling and the roots in one round (SEP-2322)",
			func(ctx context.Context, env *catalog.Env) (TextOut, error) {
				name, _ := accepted(env, "user_name")["name"].(string)
				greeting, okG := sampled(env, "greeting")
				uris, okR := roots(env, "client_roots")
				if name != "" && okG && okR {
					return text(fmt.Sprintf("%s %s — %d root(s) visible", greeting, name, len(uris)))
				}
				return TextOut{}, env.Ask(map[string]catalog.InputRequest{
					"user_name":    elicitName("What is your name?"),
					"greeting":     sample("Generate a greeting", 50),
					"client_roots": listRoots,
				}, []byte("multiple_inputs"))
			}),
		asking(ToolIRMultiRound, "Two elicitation rounds, the state growing between them (SEP-2322)",
			func(ctx context.Context, env *catalog.Env) (TextOut, error) {
				var st struct {
					Round int    `json:"round"`
					Name  string `json:"name,omitempty"`
				}
				if s := env.State(); s != nil {
					json.Unmarshal(s, &st)
				}
				switch st.Round {
				case 0:
					b, _ := json.Marshal(map[string]any{"round": 1})
					return TextOut{}, env.Ask(map[string]catalog.InputRequest{"step1": elicitName("Step 1: What is your name?")}, b)
				case 1:
					name, _ := accepted(env, "step1")["name"].(string)
					if name == "" {
						name = "unknown"
					}
					b, _ := json.Marshal(map[string]any{"round": 2, "name": name})
					return TextOut{}, env.Ask(map[string]catalog.InputRequest{"step2": elicitField("Step 2: What is your favorite color?", "color", "string")}, b)
				}
				color, _ := accepted(env, "step2")["color"].(string)
				if color == "" {
					color = "unknown"
				}
				return text(fmt.Sprintf("Multi-round complete: %s likes %s", st.Name, color))
			}),
		asking(ToolIRTamperedState, "Refuses an answer whose request state was altered (SEP-2322; the catalog's seal)",
			func(ctx context.Context, env *catalog.Env) (TextOut, error) {
				if env.State() != nil && accepted(env, "confirm") != nil {
					return text("state-ok: requestState received and confirmation accepted")
				}
				return TextOut{}, env.Ask(map[string]catalog.InputRequest{"confirm": elicitField("Please confirm", "ok", "boolean")}, []byte("tampered_state"))
			}),
		asking(ToolIRCapabilities, "Asks only what the client declared it can answer (SEP-2322)",
			func(ctx context.Context, env *catalog.Env) (TextOut, error) {
				if env.Answered() {
					return text("Capability-aware input requests fulfilled")
				}
				reqs := map[string]catalog.InputRequest{}
				if env.CanAsk(catalog.AskElicit) {
					reqs["user_name"] = elicitName("What is your name?")
				}
				if env.CanAsk(catalog.AskSample) {
					reqs["greeting"] = sample("Generate a short greeting", 50)
				}
				if env.CanAsk(catalog.AskListRts) {
					reqs["client_roots"] = listRoots
				}
				if len(reqs) == 0 {
					return text("No declared client capability supports an in-band input request")
				}
				return TextOut{}, env.Ask(reqs, nil)
			}),
		catalog.Define(ToolJSONSchema202012, "", "Takes arguments described with JSON Schema 2020-12 keywords: $schema, $defs, $anchor, $ref, allOf/anyOf, if/then/else (SEP-1613, SEP-2106) (conformance fixture)",
			readOnly, func(in, out *jsonschema.Schema) {
				*in = jsonschema.Schema{}
				if err := json.Unmarshal([]byte(schema202012), in); err != nil {
					panic(err)
				}
			},
			func(ctx context.Context, env *catalog.Env, in map[string]any) (TextOut, error) {
				b, _ := json.Marshal(in)
				return text("JSON Schema 2020-12 tool called with: " + string(b))
			}),
		catalog.Define(ToolXMcpHeader, "", "Takes a region that the client mirrors into the Mcp-Param-Region header (SEP-2243) (conformance fixture)",
			readOnly, func(in, out *jsonschema.Schema) {
				in.Properties["region"].Extra = map[string]any{"x-mcp-header": "Region"}
			},
			func(ctx context.Context, env *catalog.Env, in struct {
				Region string `json:"region,omitempty" jsonschema:"mirrored into the Mcp-Param-Region header"`
				Level  int    `json:"level,omitempty" jsonschema:"not mirrored"`
			}) (TextOut, error) {
				return text("region=" + in.Region)
			}),
	}
}

const schema202012 = `{
	"$schema": "https://json-schema.org/draft/2020-12/schema",
	"type": "object",
	"$defs": {
		"address": {
			"$anchor": "addressDef",
			"type": "object",
			"properties": {"street": {"type": "string"}, "city": {"type": "string"}}
		}
	},
	"properties": {
		"name": {"type": "string"},
		"address": {"$ref": "#/$defs/address"},
		"contactMethod": {"type": "string", "enum": ["phone", "email"]},
		"phone": {"type": "string"},
		"email": {"type": "string"}
	},
	"allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
	"if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
	"then": {"required": ["phone"]},
	"else": {"required": ["email"]},
	"additionalProperties": false
}`

// inputRequiredPrompt is the prompts/get of input-required-result-non-tool-request:
// it asks for context in band, then renders it.
func inputRequiredPrompt(_ context.Context, r *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	if resp, ok := r.Params.InputResponses["user_context"].(*mcp.ElicitResult); ok && resp != nil && resp.Action == "accept" {
		c, _ := resp.Content["context"].(string)
		return &mcp.GetPromptResult{Description: "A prompt with elicited context",
			Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "Context: " + c}}}}, nil
	}
	return &mcp.GetPromptResult{InputRequests: mcp.InputRequestMap{
		"user_context": &mcp.ElicitParams{Message: "Please provide context for the prompt",
			RequestedSchema: &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{"context": {Type: "string"}}, Required: []string{"context"}}},
	}}, nil
}
