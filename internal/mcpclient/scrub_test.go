package mcpclient_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/mcpclient"
	"github.com/duet-test/duet/internal/mcpclient/mcptest"
	"github.com/duet-test/duet/internal/redact"
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

// TestInvokeScrubsEchoedCredentials: a real go-sdk server echoes the
// credentials each request carried (static headers; an OAuth access token
// obtained by login, then one obtained by a renewal) in text content, in
// text with JSON escapes, nested in structuredContent (values, arrays, a
// key), in an isError result and in a JSON-RPC error. What Invoke returns
// holds none of them, nor any other value of the credential (the refresh
// token, the client secret), while the rest of the answer is kept.
func TestInvokeScrubsEchoedCredentials(t *testing.T) {
	t.Parallel()
	check := func(t *testing.T, e *env, key string, secrets func() []string) {
		t.Helper()
		for _, tool := range []string{"echo", "fails", "rejects"} {
			res, err := e.invoke(t, "alice", key, tool, nil)
			if tool == "echo" && err != nil {
				t.Fatalf("echo: %v", err)
			}
			if tool != "echo" && duet.ErrorCode(err) != duet.CodeMCPToolError {
				t.Fatalf("%s: got %v, want MCP_TOOL_ERROR", tool, err)
			}
			got, _ := json.Marshal(res)
			all := string(got)
			if err != nil {
				all += "\n" + err.Error() + "\n" + duet.ErrorMessage(err)
				var de *duet.Error
				if errors.As(err, &de) && de.Err != nil {
					all += "\n" + de.Err.Error()
				}
			}
			for _, s := range secrets() {
				if strings.Contains(all, s) {
					t.Errorf("%s returns the credential %s:\n%s", tool, s, all)
				}
			}
			if !strings.Contains(all, redact.Mask) {
				t.Errorf("%s: no mask where the echo was, the test proves little:\n%s", tool, all)
			}
			if tool == "echo" && (!strings.Contains(all, "nothing secret here") || !strings.Contains(all, `\"quoted\" \u0026 kept`)) {
				t.Errorf("echo lost what was not secret:\n%s", all)
			}
		}
	}

	t.Run("headers", func(t *testing.T) {
		t.Parallel()
		const bearer, apiKey = "hb-CANARY-3e8a0c51d7", "hk-CANARY-9b47f2e610"
		e := newEnv(t)
		u := mcptest.Start(t, mcptest.Streamable(mcptest.EchoServer(), false, false))
		s := e.register(t, "alice", "echo", u, map[string]string{"Authorization": "Bearer " + bearer, "X-Api-Key": apiKey})
		check(t, e, s.ServerKey, func() []string { return []string{bearer, apiKey} })
	})

	t.Run("OAuth", func(t *testing.T) {
		t.Parallel()
		as := mcptest.NewAuthServer(t, mcptest.AuthOptions{Prefix: "oa-CANARY", TokenTTL: time.Hour})
		u := mcptest.Protected(t, mcptest.EchoServer(), as, mcptest.Protection{})
		e := newEnv(t)
		reg := e.registerOAuth(t, "alice", "s", u, &mcpclient.OAuth{Grant: duet.AuthOAuth})
		if _, err := e.c.Authorizing(e.c.AutoApprover()).Login(t.Context(), "alice", "s"); err != nil {
			t.Fatal(err)
		}
		if _, err := e.c.Sync(t.Context(), "alice", "s"); err != nil {
			t.Fatal(err)
		}
		check(t, e, reg.ServerKey, as.Issued)
		// A renewal during the session: the new access token is sent,
		// and a new refresh token obtained.
		e.clock.Advance(time.Hour - 20*time.Second)
		before := len(as.Issued())
		check(t, e, reg.ServerKey, as.Issued)
		if as.Refreshes.Load() == 0 || len(as.Issued()) == before {
			t.Fatal("no token was renewed: the test proves nothing about renewed tokens")
		}
	})
}
