//lint:file-ignore SA1019 the conformance suite exercises logging and sampling, deprecated in 2026-07-28 but still in the scenarios

package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/catalog"
	"github.com/duet-test/duet/internal/mcpserver"
)

// Tool names the conformance scenarios call.
const (
	ToolSimpleText          = "test_simple_text"
	ToolImage               = "test_image_content"
	ToolAudio               = "test_audio_content"
	ToolEmbeddedResource    = "test_embedded_resource"
	ToolMixed               = "test_multiple_content_types"
	ToolLogging             = "test_tool_with_logging"
	ToolProgress            = "test_tool_with_progress"
	ToolError               = "test_error_handling"
	ToolSampling            = "test_sampling"
	ToolElicitation         = "test_elicitation"
	ToolElicitationDefaults = "test_elicitation_sep1034_defaults"
	ToolElicitationEnums    = "test_elicitation_sep1330_enums"
)

// noArgs is the input of the tools that take none.
type noArgs struct{}

// TextOut is the output of a tool whose result is one sentence.
type TextOut struct {
	Message string `json:"message" jsonschema:"the text block of the result"`
}

// Text implements catalog.Texter.
func (o TextOut) Text() string { return o.Message }

// MediaOut describes the blocks of a tool whose result is not text.
type MediaOut struct {
	Blocks  []string `json:"blocks" jsonschema:"the content block types of the MCP result, in order"`
	Summary string   `json:"summary" jsonschema:"what the blocks hold"`
}

// Text implements catalog.Texter.
func (o MediaOut) Text() string { return o.Summary }

// AskOut is the output of the tools that ask the client.
type AskOut struct {
	Action  string         `json:"action" jsonschema:"accept, decline or cancel (sampling: the model's stop reason)"`
	Content map[string]any `json:"content,omitempty" jsonschema:"what the client answered"`
	Summary string         `json:"summary"`
}

// Text implements catalog.Texter.
func (o AskOut) Text() string { return o.Summary }

var readOnly = catalog.Annotations{ReadOnly: true, Idempotent: true}

// media returns a tool whose MCP result is blocks (and whose text block on
// other transports is summary).
func media(name, description, summary string, blocks ...mcp.Content) *catalog.Tool {
	types := make([]string, len(blocks))
	for i, b := range blocks {
		var t struct {
			Type string `json:"type"`
		}
		raw, _ := json.Marshal(b)
		json.Unmarshal(raw, &t)
		types[i] = t.Type
	}
	return catalog.Define(name, "", description, readOnly, nil,
		func(ctx context.Context, env *catalog.Env, _ noArgs) (MediaOut, error) {
			mcpserver.SetContent(ctx, blocks...)
			return MediaOut{Blocks: types, Summary: summary}, nil
		})
}

// session returns the MCP session a fixture needs to talk back to the client.
// Returns FAILED_PRECONDITION-like UNAVAILABLE outside one.
func session(ctx context.Context) (*mcp.ServerSession, error) {
	ss := mcpserver.Session(ctx)
	if ss == nil {
		return nil, duet.Errorf(duet.CodeUnavailable, "this tool talks back to the client: call it over MCP")
	}
	return ss, nil
}

// pause waits d unless ctx ends first.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func tools() []*catalog.Tool {
	return []*catalog.Tool{
		catalog.Define(ToolSimpleText, "", "Returns one text block (conformance fixture).", readOnly, nil,
			func(ctx context.Context, env *catalog.Env, _ noArgs) (TextOut, error) {
				return TextOut{Message: "This is a simple text response for testing."}, nil
			}),
		media(ToolImage, "Returns an image block: a 1x1 red PNG (conformance fixture).", "a 1x1 red PNG image",
			&mcp.ImageContent{Data: pngData, MIMEType: "image/png"}),
		media(ToolAudio, "Returns an audio block: a short WAV of silence (conformance fixture).", "a short WAV file of silence",
			&mcp.AudioContent{Data: wavData, MIMEType: "audio/wav"}),
		media(ToolEmbeddedResource, "Returns an embedded text resource (conformance fixture).", "an embedded text resource",
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "test://embedded-resource", MIMEType: "text/plain",
				Text: "This is an embedded resource content."}}),
		media(ToolMixed, "Returns a text, an image and an embedded resource block (conformance fixture).", "Multiple content types test: text, image and resource",
			&mcp.TextContent{Text: "Multiple content types test:"},
			&mcp.ImageContent{Data: pngData, MIMEType: "image/png"},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "test://mixed-content-resource", MIMEType: "application/json",
				Text: `{"test":"data","value":123}`}}),
		catalog.Define(ToolLogging, "", "Sends three info log messages to the client while it runs (conformance fixture).", readOnly, nil,
			func(ctx context.Context, env *catalog.Env, _ noArgs) (TextOut, error) {
				ss := mcpserver.Session(ctx)
				for i, msg := range []string{"Tool execution started", "Tool processing data", "Tool execution completed"} {
					if i > 0 {
						if err := pause(ctx, 50*time.Millisecond); err != nil {
							return TextOut{}, err
						}
					}
					if ss != nil {
						if err := ss.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Logger: "duet", Data: msg}); err != nil {
							return TextOut{}, duet.Errorf(duet.CodeUnavailable, "sending a log message: %v", err)
						}
					}
				}
				return TextOut{Message: "Tool with logging executed successfully"}, nil
			}),
		catalog.Define(ToolProgress, "", "Reports progress 0, 50 and 100 of 100 while it runs (conformance fixture).", readOnly, nil,
			func(ctx context.Context, env *catalog.Env, _ noArgs) (TextOut, error) {
				for i, p := range []float64{0, 50, 100} {
					if i > 0 {
						if err := pause(ctx, 50*time.Millisecond); err != nil {
							return TextOut{}, err
						}
					}
					env.Progress(p, 100, fmt.Sprintf("step %d of 3", i+1))
				}
				return TextOut{Message: "Tool with progress executed successfully"}, nil
			}),
		catalog.Define(ToolError, "", "Always fails: its result is an error (conformance fixture).", readOnly, nil,
			func(ctx context.Context, env *catalog.Env, _ noArgs) (TextOut, error) {
				return TextOut{}, duet.Errorf(duet.CodeInvalidArgument, "This tool intentionally returns an error for testing")
			}),
		catalog.Define(ToolSampling, "", "Asks the client's model to answer prompt (sampling/createMessage; needs a session: duet serve --sessions) (conformance fixture).",
			catalog.Annotations{OpenWorld: true}, nil,
			func(ctx context.Context, env *catalog.Env, in struct {
				Prompt string `json:"prompt" jsonschema:"the prompt to send to the client's model"`
			}) (AskOut, error) {
				ss, err := session(ctx)
				if err != nil {
					return AskOut{}, err
				}
				res, err := ss.CreateMessage(ctx, &mcp.CreateMessageParams{
					Messages:  []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: in.Prompt}}},
					MaxTokens: 100,
				})
				if err != nil {
					return AskOut{}, duet.Errorf(duet.CodeUnavailable, "the client did not sample: %v", err)
				}
				text := ""
				if tc, ok := res.Content.(*mcp.TextContent); ok {
					text = tc.Text
				}
				return AskOut{Action: res.StopReason, Content: map[string]any{"model": res.Model, "text": text},
					Summary: "LLM response: " + text}, nil
			}),
		elicit(ToolElicitation, "Asks the user for a username and an email (elicitation/create) (conformance fixture).",
			func(in elicitIn) *mcp.ElicitParams {
				return &mcp.ElicitParams{Message: in.Message, RequestedSchema: json.RawMessage(`{"type":"object",
					"properties":{"username":{"type":"string","description":"User's response"},
					"email":{"type":"string","description":"User's email address"}},"required":["username","email"]}`)}
			}),
		elicit(ToolElicitationDefaults, "Asks the user with a form whose fields have defaults (SEP-1034) (conformance fixture).",
			func(noArgs) *mcp.ElicitParams {
				return &mcp.ElicitParams{Message: "Test client default value handling - please accept with defaults",
					RequestedSchema: json.RawMessage(`{"type":"object","properties":{
					"name":{"type":"string","description":"User name","default":"John Doe"},
					"age":{"type":"integer","description":"User age","default":30},
					"score":{"type":"number","description":"User score","default":95.5},
					"status":{"type":"string","description":"User status","enum":["active","inactive","pending"],"default":"active"},
					"verified":{"type":"boolean","description":"Verification status","default":true}}}`)}
			}),
		elicit(ToolElicitationEnums, "Asks the user with the enum forms of SEP-1330 (conformance fixture).",
			func(noArgs) *mcp.ElicitParams {
				return &mcp.ElicitParams{Message: "Test enum schemas", RequestedSchema: json.RawMessage(`{"type":"object","properties":{
					"untitledSingle":{"type":"string","enum":["option1","option2","option3"]},
					"titledSingle":{"type":"string","oneOf":[{"const":"value1","title":"First Option"},{"const":"value2","title":"Second Option"},{"const":"value3","title":"Third Option"}]},
					"legacyEnum":{"type":"string","enum":["opt1","opt2","opt3"],"enumNames":["Option One","Option Two","Option Three"]},
					"untitledMulti":{"type":"array","minItems":1,"maxItems":3,"items":{"type":"string","enum":["option1","option2","option3"]}},
					"titledMulti":{"type":"array","minItems":1,"maxItems":3,"items":{"anyOf":[{"const":"value1","title":"First Option"},{"const":"value2","title":"Second Option"},{"const":"value3","title":"Third Option"}]}}}}`)}
			}),
	}
}

// elicitIn is the input of test_elicitation.
type elicitIn struct {
	Message string `json:"message" jsonschema:"the message to show the user"`
}

func elicit[In any](name, description string, params func(In) *mcp.ElicitParams) *catalog.Tool {
	return catalog.Define(name, "", description, catalog.Annotations{OpenWorld: true}, nil,
		func(ctx context.Context, env *catalog.Env, in In) (AskOut, error) {
			ss, err := session(ctx)
			if err != nil {
				return AskOut{}, err
			}
			res, err := ss.Elicit(ctx, params(in))
			if err != nil {
				return AskOut{}, duet.Errorf(duet.CodeUnavailable, "the client did not answer: %v", err)
			}
			b, _ := json.Marshal(res.Content)
			return AskOut{Action: res.Action, Content: res.Content,
				Summary: fmt.Sprintf("User response: action=%s, content=%s", res.Action, b)}, nil
		})
}
