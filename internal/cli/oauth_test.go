package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/app"
	"github.com/duet-test/duet/internal/catalog"
	"github.com/duet-test/duet/internal/cli"
	"github.com/duet-test/duet/internal/config"
	"github.com/duet-test/duet/internal/mcpclient/mcptest"
)

// canaryOAuth starts every token, refresh token and authorization code the
// test's authorization server issues; canaryClientSecret is the secret of
// the client registered there for Duet.
const (
	canaryOAuth        = "canary-oauth-5d1e7a"
	canaryClientSecret = "canary-9c04f1-CLIENT-secret-x3"
)

const oauthSuiteYAML = `task:
  name: secure-sums
  description: Sums through an MCP server protected by OAuth.
cases:
  - key: sum
    title: add answers with alice's OAuth token
    steps:
      - mcpCall:
          server: secure
          tool: add
          input: {a: 2, b: 3}
          saveAs: total
      - assert: total.structuredContent.sum == 5
`

// fakeBrowser is the stdout of `duet server login`: when the authorization URL
// appears it opens it the way a person's browser would, following the
// authorization server's redirect back to the loopback listener.
type fakeBrowser struct {
	mu     sync.Mutex
	out    bytes.Buffer
	opened bool
	done   chan error
}

func (b *fakeBrowser) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.out.Write(p)
	if b.opened {
		return len(p), nil
	}
	for _, line := range strings.Split(b.out.String(), "\n") {
		if u := strings.TrimSpace(line); strings.HasPrefix(u, "http") && strings.Contains(u, "/authorize?") {
			b.opened = true
			go func() {
				resp, err := http.Get(u)
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						err = fmt.Errorf("the redirect ended with %s", resp.Status)
					}
				}
				b.done <- err
			}()
			break
		}
	}
	return len(p), nil
}

// TestMCPClientOAuth is the story of a server protected by OAuth, and the
// canary test of its tokens: alice registers it with a client registered
// at its authorization server (the secret from the environment), calls fail
// asking her to log in, `duet server login` prints the authorization URL and
// receives the browser's redirect, a case runs with her token (then again
// after the token was refreshed). Afterwards no token, refresh token,
// authorization code or the client secret appears in the database files,
// logs, audit or invocation records, command output, step JSON, reports,
// tool responses or error messages.
func TestMCPClientOAuth(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	e := &duetEnv{tr: &transcript{}, vars: map[string]string{
		"DUET_HOME": home, "DUET_MCP_ALLOW_LOOPBACK": "true", "DUET_LOG_LEVEL": "debug", "HOME": home,
		"SECURE_CLIENT_ID": "duet-app", "SECURE_CLIENT_SECRET": canaryClientSecret,
	}}
	as := mcptest.NewAuthServer(t, mcptest.AuthOptions{Prefix: canaryOAuth, Scopes: []string{"sums"},
		Clients: map[string]string{"duet-app": canaryClientSecret}, NoRegistration: true})
	url := mcptest.Protected(t, mcptest.NewServer("secure", nil), as, mcptest.Protection{Scopes: []string{"sums"}})

	for _, args := range [][]string{
		{"--client-id-env", "SECURE_CLIENT_ID"},                           // without --auth
		{"--auth", "password"},                                            // no such mode
		{"--auth", "oauth", "--client-secret-env", "NOT_SET"},             // an empty variable
		{"--auth", "oauth", "--bearer-token-env", "SECURE_CLIENT_SECRET"}, // OAuth brings its own bearer token
		{"--issuer", as.URL},                                              // without --auth
		// A secret without the issuer it belongs to (bound when entered).
		{"--auth", "oauth", "--client-id-env", "SECURE_CLIENT_ID", "--client-secret-env", "SECURE_CLIENT_SECRET"},
		{"--auth", "client-credentials", "--client-id-env", "SECURE_CLIENT_ID", "--client-secret-env", "SECURE_CLIENT_SECRET"},
	} {
		if _, errs, code := e.run(t, append([]string{"server", "add", "--as", "alice", "--name", "x", "--url", url}, args...)...); code != 2 {
			t.Errorf("server add %v: exit %d, want 2 (usage): %s", args, code, errs)
		}
	}
	if _, errs, _ := e.run(t, "server", "add", "--as", "alice", "--name", "x", "--url", url, "--auth", "oauth",
		"--client-id-env", "SECURE_CLIENT_ID", "--client-secret-env", "SECURE_CLIENT_SECRET"); !strings.Contains(errs, "need --issuer URL") ||
		!strings.Contains(errs, "/.well-known/oauth-protected-resource/mcp") {
		t.Errorf("a secret without --issuer: the usage error does not say where to find the issuer: %s", errs)
	}
	out, errs, code := e.run(t, "server", "add", "--as", "alice", "--name", "secure", "--url", url, "--auth", "oauth",
		"--client-id-env", "SECURE_CLIENT_ID", "--client-secret-env", "SECURE_CLIENT_SECRET", "--issuer", as.URL)
	if code != 0 || !strings.Contains(out, "auth       oauth") || !strings.Contains(errs, "duet server login --as alice secure") {
		t.Fatalf("server add: exit %d\n%s%s", code, out, errs)
	}
	if _, errs, code := e.run(t, "server", "sync", "secure", "--as", "alice"); code != 1 || !strings.Contains(errs, "MCP_AUTH_FAILED") ||
		!strings.Contains(errs, "duet server login --as alice secure") {
		t.Fatalf("sync before login: exit %d: %s", code, errs)
	}

	// The grant may include offline_access (the server advertises it)
	// beside the scope the server requires.
	if out := e.login(t, "alice", "secure"); !regexp.MustCompile(`authorized: oauth; scopes (offline_access )?sums;`).MatchString(out) ||
		!strings.Contains(out, "synced secure: 4 tools") || !strings.Contains(out, "bound to issuer "+as.URL) {
		t.Fatalf("server login printed:\n%s", out)
	}
	if out := e.must(t, "server", "show", "secure", "--as", "alice"); !strings.Contains(out, "renewed automatically") {
		t.Errorf("server show: %s", out)
	}
	e.must(t, "server", "show", "secure", "--as", "alice", "--json")
	if out := e.must(t, "server", "list", "--as", "alice"); !strings.Contains(out, "oauth") {
		t.Errorf("server list: %s", out)
	}
	if out := e.must(t, "server", "call", "--as", "alice", "secure", "add", "--args", `{"a":1,"b":2}`); !strings.Contains(out, "1+2=3") {
		t.Fatalf("server call: %s", out)
	}

	suite := filepath.Join(home, "secure.yaml")
	if err := os.WriteFile(suite, []byte(oauthSuiteYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	e.must(t, "apply", "-f", suite, "--as", "alice")
	var runs []string
	for i := range 2 {
		if i == 1 {
			// The access token ends early: the run's call refreshes it on
			// its 401. (Renewal before expiry is TestOAuthRenewal's, on the
			// OAuth client's clock.)
			as.RevokeAccess()
		}
		out := e.must(t, "run", "secure-sums", "--as", "alice", "--json")
		var r duet.Run
		if err := json.Unmarshal([]byte(out), &r); err != nil || r.Status != duet.StatusPassed {
			t.Fatalf("run %d: %v %s", i, err, out)
		}
		runs = append(runs, r.ID)
		e.must(t, "run", "show", r.ID, "--as", "alice", "--json")
		e.must(t, "run", "show", r.ID, "--as", "alice")
	}
	if as.Refreshes.Load() == 0 {
		t.Errorf("no token was refreshed")
	}
	// bob has no authorization of his own.
	e.must(t, "server", "add", "--as", "bob", "--name", "secure", "--url", url, "--auth", "oauth",
		"--client-id-env", "SECURE_CLIENT_ID", "--client-secret-env", "SECURE_CLIENT_SECRET", "--issuer", as.URL)
	if _, errs, code := e.run(t, "server", "call", "--as", "bob", "secure", "add", "--args", `{"a":1,"b":2}`); code != 1 ||
		!strings.Contains(errs, "duet server login --as bob secure") {
		t.Fatalf("bob's call: exit %d: %s", code, errs)
	}
	e.must(t, "server", "invocations", "--json")
	e.must(t, "audit")

	cfg, err := config.Load(func(k string) string { return e.vars[k] })
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	a, err := app.Open(context.Background(), cfg, app.Options{Stderr: &logs, Getenv: func(k string) string { return e.vars[k] }})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range runs {
		args, _ := json.Marshal(catalog.GetRunIn{RunID: id})
		res, err := a.Catalog.Call(t.Context(), catalog.Request{Caller: duet.Caller{UserID: "alice", Source: duet.SourceMCP}, Tool: catalog.ToolGetRun, Args: args})
		if err != nil {
			t.Fatal(err)
		}
		e.tr.add(res.Text + string(res.Structured))
	}
	a.Close()
	e.tr.add(logs.String())

	issued := as.Issued()
	if len(issued) < 5 {
		t.Fatalf("the authorization server issued %d secrets; want a code, tokens and refreshed tokens", len(issued))
	}
	checkCanaries(t, e, home, append(issued, canaryClientSecret, canaryOAuth)...)
}

// login runs `duet server login` with a browser that approves at once and
// returns what it printed.
func (e *duetEnv) login(t *testing.T, user, name string) string {
	t.Helper()
	b := &fakeBrowser{done: make(chan error, 1)}
	var stderr bytes.Buffer
	code := cli.Main(t.Context(), []string{"server", "login", "--as", user, name, "--timeout", "30s"}, cli.Env{
		Getenv: func(k string) string { return e.vars[k] }, Stdin: io.NopCloser(strings.NewReader("")), Stdout: b, Stderr: &stderr,
	})
	e.tr.add(b.out.String() + stderr.String())
	if code != 0 {
		t.Fatalf("server login: exit %d\n%s%s", code, b.out.String(), stderr.String())
	}
	if err := <-b.done; err != nil {
		t.Fatalf("the browser: %v", err)
	}
	return b.out.String()
}

// TestServerPrintsOutsideTextEscaped: what an authorization server or an
// MCP server chose — a granted scope, a registered client id, a server
// name, a tool description, a tool's text — reaches the terminal escaped,
// never as control sequences (clear the screen, set the title, reorder
// the line).
func TestServerPrintsOutsideTextEscaped(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	e := &duetEnv{tr: &transcript{}, vars: map[string]string{"DUET_HOME": home, "DUET_MCP_ALLOW_LOOPBACK": "true", "HOME": home}}
	as := mcptest.NewAuthServer(t, mcptest.AuthOptions{GrantExtra: " x\x1b[2J\x1b]0;pwned\x07", ClientIDPrefix: "\x1b[31m"})
	srv := mcp.NewServer(&mcp.Implementation{Name: "evil\x1b[2J", Version: "1\u202e0"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "shout", Description: "says\x1b[Hhi\u202e", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "line one\x1b[1A\nline\u202etwo"}}}, nil, nil
		})
	url := mcptest.Protected(t, srv, as, mcptest.Protection{})
	e.must(t, "server", "add", "--as", "alice", "--name", "evil", "--url", url, "--auth", "oauth")
	outputs := map[string]string{
		"server login": e.login(t, "alice", "evil"),
		"server show":  e.must(t, "server", "show", "evil", "--as", "alice"),
		"server call":  e.must(t, "server", "call", "--as", "alice", "evil", "shout"),
		"server sync":  e.must(t, "server", "sync", "evil", "--as", "alice"),
	}
	for cmd, out := range outputs {
		if i := strings.IndexFunc(out, func(r rune) bool { return r < 0x20 && r != '\n' || r == 0x7f || r == '\u202e' }); i >= 0 {
			t.Errorf("%s printed a control character %q:\n%q", cmd, out[i], out)
		}
	}
	for cmd, want := range map[string][]string{
		"server login": {`x\x1b[2J\x1b]0;pwned\a`, `client \x1b[31mdcr-`},
		"server show":  {`\x1b[31mdcr-`, ` 1\u202e0 over`, `says\x1b[Hhi\u202e`},
		"server call":  {"line one\\x1b[1A\nline\\u202etwo"},
	} {
		for _, w := range want {
			if !strings.Contains(outputs[cmd], w) {
				t.Errorf("%s printed:\n%s\nwant %q in it", cmd, outputs[cmd], w)
			}
		}
	}
}
