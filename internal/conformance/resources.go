package conformance

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/yosida95/uritemplate/v3"
)

// Resource URIs and prompt names the conformance scenarios use.
const (
	ResourceStaticText   = "test://static-text"
	ResourceStaticBinary = "test://static-binary"
	ResourceTemplate     = "test://template/{id}/data"
	ResourceWatched      = "test://watched-resource"

	PromptSimple           = "test_simple_prompt"
	PromptWithArguments    = "test_prompt_with_arguments"
	PromptEmbeddedResource = "test_prompt_with_embedded_resource"
	PromptWithImage        = "test_prompt_with_image"
)

var templateRe = uritemplate.MustNew(ResourceTemplate).Regexp()

// setup adds the fixture resources and prompts to the SDK server.
func setup(s *mcp.Server) {
	text := func(uri, mime, body string) mcp.ResourceHandler {
		return func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, MIMEType: mime, Text: body}}}, nil
		}
	}
	s.AddResource(&mcp.Resource{URI: ResourceStaticText, Name: "static-text", Description: "A static text resource", MIMEType: "text/plain"},
		text(ResourceStaticText, "text/plain", "This is the content of the static text resource."))
	s.AddResource(&mcp.Resource{URI: ResourceStaticBinary, Name: "static-binary", Description: "A static binary resource (a PNG image)", MIMEType: "image/png"},
		func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, MIMEType: "image/png", Blob: pngData}}}, nil
		})
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: ResourceTemplate, Name: "template", Description: "Data for an id", MIMEType: "application/json"},
		func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			m := templateRe.FindStringSubmatch(r.Params.URI)
			if m == nil {
				return nil, mcp.ResourceNotFoundError(r.Params.URI)
			}
			id := m[1]
			body := fmt.Sprintf(`{"id":%q,"templateTest":true,"data":"Data for ID: %s"}`, id, id)
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, MIMEType: "application/json", Text: body}}}, nil
		})
	s.AddResource(&mcp.Resource{URI: ResourceWatched, Name: "watched-resource", Description: "A resource clients may subscribe to", MIMEType: "text/plain"},
		text(ResourceWatched, "text/plain", "Watched resource content"))

	user := func(c mcp.Content) *mcp.PromptMessage { return &mcp.PromptMessage{Role: "user", Content: c} }
	s.AddPrompt(&mcp.Prompt{Name: PromptSimple, Title: "Simple prompt", Description: "A prompt without arguments"},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Description: "A simple prompt",
				Messages: []*mcp.PromptMessage{user(&mcp.TextContent{Text: "This is a simple prompt for testing."})}}, nil
		})
	s.AddPrompt(&mcp.Prompt{Name: PromptWithArguments, Title: "Prompt with arguments", Description: "A prompt with two required arguments",
		Arguments: []*mcp.PromptArgument{{Name: "arg1", Description: "First argument", Required: true}, {Name: "arg2", Description: "Second argument", Required: true}}},
		func(_ context.Context, r *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			a := r.Params.Arguments
			return &mcp.GetPromptResult{Description: "A prompt with arguments",
				Messages: []*mcp.PromptMessage{user(&mcp.TextContent{Text: fmt.Sprintf("Prompt with arguments: arg1='%s', arg2='%s'", a["arg1"], a["arg2"])})}}, nil
		})
	s.AddPrompt(&mcp.Prompt{Name: PromptEmbeddedResource, Title: "Prompt with an embedded resource", Description: "A prompt that embeds the resource at resourceUri",
		Arguments: []*mcp.PromptArgument{{Name: "resourceUri", Description: "URI of the resource to embed", Required: true}}},
		func(_ context.Context, r *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Description: "A prompt with an embedded resource", Messages: []*mcp.PromptMessage{
				user(&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: r.Params.Arguments["resourceUri"], MIMEType: "text/plain",
					Text: "Embedded resource content for testing."}}),
				user(&mcp.TextContent{Text: "Please process the embedded resource above."}),
			}}, nil
		})
	s.AddPrompt(&mcp.Prompt{Name: PromptWithImage, Title: "Prompt with an image", Description: "A prompt that holds an image"},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Description: "A prompt with an image", Messages: []*mcp.PromptMessage{
				user(&mcp.ImageContent{Data: pngData, MIMEType: "image/png"}),
				user(&mcp.TextContent{Text: "Please analyze the image above."}),
			}}, nil
		})
}

// completions are the values completion/complete offers per argument.
var completions = map[string][]string{
	"arg1":        {"paris", "park", "party", "test", "testing"},
	"arg2":        {"alpha", "beta", "gamma"},
	"resourceUri": {ResourceStaticText, ResourceStaticBinary, ResourceWatched},
}

// complete answers completion/complete: the known values of the argument
// that start with what the user typed.
func complete(_ context.Context, r *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	values := []string{}
	if r.Params != nil {
		for _, v := range completions[r.Params.Argument.Name] {
			if strings.HasPrefix(v, r.Params.Argument.Value) {
				values = append(values, v)
			}
		}
	}
	slices.Sort(values)
	return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: values, Total: len(values)}}, nil
}
