package mcpclient_test

import (
	"fmt"
	"html"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/mcpclient"
	"github.com/duet-test/duet/internal/mcpclient/mcptest"
)

// TestDiagnosisScrubsEchoedCredentials: endpoints that are not MCP servers
// and echo the static header they were sent — in a page title, in a
// redirect path, in a plain-text error — are diagnosed as before, but the
// credential appears neither in the message nor in the error's text.
func TestDiagnosisScrubsEchoedCredentials(t *testing.T) {
	t.Parallel()
	const canary = "hdr-CANARY-6d2a91f0e4"
	echo := func(r *http.Request) string {
		return r.Header.Get("Authorization") + " " + r.Header.Get("X-Api-Key")
	}
	tests := []struct {
		name    string
		handler http.HandlerFunc
		want    string
	}{
		{"HTML title", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprintf(w, "<!doctype html><html><head><title>Hello %s</title></head><body>login</body></html>", html.EscapeString(echo(r)))
		}, "HTML page titled"},
		{"redirect path", func(w http.ResponseWriter, r *http.Request) {
			if strings.HasPrefix(r.URL.Path, "/welcome/") {
				http.NotFound(w, r)
				return
			}
			http.Redirect(w, r, "/welcome/"+url.PathEscape(echo(r))+"/home", http.StatusFound)
		}, "redirect (302)"},
		{"text error", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, "unknown client %s", echo(r))
		}, "HTTP 400"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			u := mcptest.Start(t, tt.handler) + "/mcp"
			for _, headers := range []map[string]string{
				{"Authorization": "Bearer " + canary},
				{"X-Api-Key": canary},
			} {
				const name = "x"
				if _, err := e.c.Register(t.Context(), mcpclient.Registration{Owner: "alice", Name: name, URL: u, Headers: headers, Replace: true}); err != nil {
					t.Fatal(err)
				}
				_, err := e.c.Sync(t.Context(), "alice", name)
				if duet.ErrorCode(err) != duet.CodeMCPProtocolMismatch {
					t.Fatalf("%v: got %v, want MCP_PROTOCOL_MISMATCH", headers, err)
				}
				msg := duet.ErrorMessage(err)
				if !strings.Contains(msg, tt.want) {
					t.Errorf("message %q does not say %q", msg, tt.want)
				}
				if strings.Contains(msg, canary) || strings.Contains(err.Error(), canary) {
					t.Errorf("%v: the credential is quoted: %q", headers, err.Error())
				}
				if !strings.Contains(msg, "[redacted]") && tt.name != "redirect path" {
					t.Errorf("message %q shows no mask where the echo was", msg)
				}
			}
		})
	}
}

// TestSecrets: the client names the credential values of a registration
// (duet.SecretSource), for the engine to scrub; none for a server the user
// has not registered.
func TestSecrets(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	u := mcptest.Start(t, mcptest.RequireBearer("tok-123456", mcptest.Streamable(mcptest.NewServer("s", nil), false, false)))
	s := e.register(t, "alice", "orders", u, map[string]string{"Authorization": "Bearer tok-123456"})
	got, err := e.c.Secrets(t.Context(), "alice", s.ServerKey)
	if err != nil || !slices.Equal(got, []string{"Bearer tok-123456"}) {
		t.Fatalf("alice's secrets: got %q %v", got, err)
	}
	if got, err := e.c.Secrets(t.Context(), "bob", s.ServerKey); err != nil || len(got) != 0 {
		t.Fatalf("bob's secrets: got %q %v, want none", got, err)
	}
}
