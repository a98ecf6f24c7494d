// Package conformance is the fixture catalog the official MCP conformance
// suite (@modelcontextprotocol/conformance) calls in its server scenarios:
// tools named test_*, test:// resources, test_* prompts, completion and
// resource subscriptions.
//
// None of it is in the product binary: `duet serve --conformance-fixtures`
// and `duet conformance-client` exist only in a build with the conformance
// tag (go build -tags conformance ./cmd/duet; the interop and e2e tests build
// that way). The fixtures go through the same code as the product: the tools
// are catalog tools (catalog.Define, mounted with app.Options.ExtraTools, so
// every call goes through the governance pipeline and the audit trail), the
// resources and prompts are added to the same SDK server that serves the
// catalog over the same HTTP endpoint, and the suite's credential-less
// requests are given a real personal access token (Credentials).
package conformance

import (
	"context"
	"encoding/base64"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/duet-test/duet/internal/catalog"
	"github.com/duet-test/duet/internal/mcpserver"
)

// User is the identity of the suite's requests in fixture mode: the suite
// sends no credentials, Credentials gives them a token of this user.
const User = "conformance"

// Fixtures is everything fixture mode mounts.
type Fixtures struct {
	// Tools go beside the product tools in the catalog.
	Tools []*catalog.Tool
	// MCP adds the resources, prompts, completion and subscription handlers.
	MCP *mcpserver.Options
	// Streams reports which fixture tools emit notifications while they run
	// (so that a stateless HTTP reply to them must be an event stream).
	Streams func(tool string) bool
}

// New returns the fixture set.
func New() *Fixtures {
	streaming := map[string]bool{
		ToolLogging: true, ToolProgress: true, ToolSampling: true,
		ToolElicitation: true, ToolElicitationDefaults: true, ToolElicitationEnums: true,
	}
	srv := &server{}
	return &Fixtures{
		Tools: append(append(tools(), roundTools(srv)...), taskTools()...),
		MCP: &mcpserver.Options{
			Setup: func(s *mcp.Server) {
				srv.s = s
				setup(s)
				s.AddPrompt(&mcp.Prompt{Name: PromptInputRequired, Description: "Asks for context in band, then renders it (SEP-2322)"}, inputRequiredPrompt)
			},
			ServerOptions: &mcp.ServerOptions{
				CompletionHandler:  complete,
				SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
				UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
			},
		},
		Streams: func(tool string) bool { return streaming[tool] },
	}
}

// Test media from the conformance suite's own examples: a 1x1 red PNG and a
// WAV file of silence.
const (
	pngBase64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
	wavBase64 = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="
)

func mustBase64(s string) []byte {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

var (
	pngData = mustBase64(pngBase64)
	wavData = mustBase64(wavBase64)
)
