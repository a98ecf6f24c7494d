package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/app"
	"github.com/duet-test/duet/internal/config"
	"github.com/duet-test/duet/internal/mcpclient"
)

// RunClient is the driver the official conformance suite runs in client
// mode (`--command`): it registers the scenario's server at url for a
// throw-away user in a temporary DUET_HOME, syncs its catalog and calls
// every tool through Invoke, exactly as a running case would. The scenario
// comes from MCP_CONFORMANCE_SCENARIO and MCP_CONFORMANCE_CONTEXT in
// getenv. It is test-only: the product binary does not contain it (the
// conformance build tag adds `duet conformance-client`; internal/cli's
// tests run it from the test binary).
func RunClient(ctx context.Context, getenv func(string) string, stdout, stderr io.Writer, url string) error {
	home, err := os.MkdirTemp("", "duet-conformance-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(home)
	cfg, err := config.Load(func(k string) string {
		switch k {
		case "DUET_HOME":
			return home
		case "DUET_MCP_ALLOW_LOOPBACK":
			return "true"
		case "DUET_DATABASE_URL":
			return ""
		}
		return getenv(k)
	})
	if err != nil {
		return err
	}
	if getenv("DUET_LOG_LEVEL") == "" {
		cfg.LogLevel = "warn"
	}
	a, err := app.Open(ctx, cfg, app.Options{Stderr: stderr, Getenv: func(string) string { return "" }})
	if err != nil {
		return err
	}
	defer a.Close()
	scenario := getenv("MCP_CONFORMANCE_SCENARIO")
	const user = "conformance"
	// Every scenario server is registered with OAuth, configured as a user
	// would from what the scenario hands out: a scenario server that wants
	// no authorization never asks for it. Its authorization server approves
	// without a person, so the authorization step follows its redirect.
	var sc struct {
		ClientID      string `json:"client_id"`
		ClientSecret  string `json:"client_secret"`
		PrivateKeyPEM string `json:"private_key_pem"`
		// ToolCalls are the calls a scenario asks for (http-custom-headers).
		ToolCalls []struct {
			Name      string         `json:"name"`
			Arguments map[string]any `json:"arguments"`
		} `json:"toolCalls"`
		// Enterprise-managed authorization (SEP-990).
		IdPClientID string `json:"idp_client_id"`
		IdPIDToken  string `json:"idp_id_token"`
		IdPIssuer   string `json:"idp_issuer"`
	}
	if c := getenv("MCP_CONFORMANCE_CONTEXT"); c != "" {
		if err := json.Unmarshal([]byte(c), &sc); err != nil {
			return errors.New("MCP_CONFORMANCE_CONTEXT is not a JSON object")
		}
	}
	oauth := &mcpclient.OAuth{Grant: duet.AuthOAuth, ClientMetadataURL: clientMetadataURL,
		ClientID: sc.ClientID, ClientSecret: sc.ClientSecret}
	if strings.HasPrefix(scenario, "auth/client-credentials") {
		oauth = &mcpclient.OAuth{Grant: duet.AuthClientCredentials, ClientID: sc.ClientID, ClientSecret: sc.ClientSecret, PrivateKey: sc.PrivateKeyPEM}
	}
	if sc.IdPIssuer != "" {
		// The scenario hands out the person's ID token from its identity
		// provider, as an OIDC login there would have.
		oauth = &mcpclient.OAuth{Grant: duet.AuthEnterprise, ClientID: sc.ClientID, ClientSecret: sc.ClientSecret,
			IdPIssuer: sc.IdPIssuer, IdPClientID: sc.IdPClientID, IDToken: sc.IdPIDToken}
	}
	if oauth.HoldsSecret() {
		// A secret is bound to its issuer when it is entered. The scenario
		// hands out a secret of the authorization server its MCP server
		// names: the driver, standing in for the person who holds the
		// secret, confirms that issuer.
		issuer, err := a.MCPClient.DiscoverIssuer(ctx, url)
		if err != nil {
			return err
		}
		oauth.Issuer = issuer
	}
	if _, err := a.MCPClient.Register(ctx, mcpclient.Registration{Owner: user, Name: "scenario", URL: url, OAuth: oauth}); err != nil {
		return err
	}
	// The driver authorizes as the scenario's person would, without one.
	auto := a.MCPClient.Authorizing(a.MCPClient.AutoApprover())
	s, err := auto.Sync(ctx, user, "scenario")
	if err != nil {
		return err
	}
	_, tools, err := a.MCPClient.Server(ctx, user, "scenario")
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "scenario %q: %d tools (%s, protocol %s)\n", scenario, len(tools), s.Transport, s.ProtocolVersion)
	type callSpec struct {
		name string
		args map[string]any
	}
	var calls []callSpec
	for _, tc := range sc.ToolCalls {
		calls = append(calls, callSpec{tc.Name, tc.Arguments})
	}
	if len(calls) == 0 {
		byName := map[string]*duet.MCPTool{}
		for _, t := range tools {
			byName[t.Name] = t
		}
		for _, t := range tools {
			args := sampleArguments(t.InputSchema)
			// json-schema-2020-12-preservation: hand the archived schema of
			// the focal tool back to the echo tool, as the archive keeps it.
			if focal := byName["json_schema_2020_12_tool"]; t.Name == "json_schema_echo" && focal != nil {
				var schema map[string]any
				if err := json.Unmarshal(focal.InputSchema, &schema); err == nil {
					args = map[string]any{"schema": schema}
				}
			}
			calls = append(calls, callSpec{t.Name, args})
		}
	}
	var failed []string
	for _, cl := range calls {
		res, err := auto.Invoke(ctx, duet.InvokeRequest{Executor: user, ServerKey: s.ServerKey, Tool: cl.name,
			Arguments: cl.args, Source: duet.SourceCLI})
		if err != nil {
			failed = append(failed, fmt.Sprintf("%s: %s: %s", cl.name, duet.ErrorCode(err), duet.ErrorMessage(err)))
			continue
		}
		fmt.Fprintf(stdout, "%s: %s\n", cl.name, res.Text())
	}
	if len(failed) > 0 {
		return errors.New(strings.Join(failed, "\n"))
	}
	return nil
}

// clientMetadataURL is the client ID metadata document the driver names
// (the suite's authorization servers do not fetch it).
const clientMetadataURL = "https://conformance-test.local/client-metadata.json"

// sampleArguments builds arguments for a tool from its input schema: every
// required property gets its default, or a small value of its type.
func sampleArguments(schema json.RawMessage) map[string]any {
	var s struct {
		Properties map[string]struct {
			Type    any   `json:"type"`
			Default any   `json:"default"`
			Enum    []any `json:"enum"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	args := map[string]any{}
	if json.Unmarshal(schema, &s) != nil {
		return args
	}
	req := append([]string{}, s.Required...)
	sort.Strings(req)
	for i, name := range req {
		p := s.Properties[name]
		switch {
		case p.Default != nil:
			args[name] = p.Default
		case len(p.Enum) > 0:
			args[name] = p.Enum[0]
		default:
			t, _ := p.Type.(string)
			switch t {
			case "number", "integer":
				args[name] = i + 2
			case "boolean":
				args[name] = true
			case "array":
				args[name] = []any{}
			case "object":
				args[name] = map[string]any{}
			default:
				args[name] = "test"
			}
		}
	}
	return args
}
