package oauthserver_test

import (
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"testing"

	"golang.org/x/oauth2"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/auth"
	"github.com/duet-test/duet/internal/oauthserver"
	"github.com/duet-test/duet/internal/oidctest"
)

// signedIn is a person signed in through Duet's authorization server on
// db: a public client registered, the person signed in at a real OpenID
// provider (oidctest) and consented, and the code was exchanged. It returns
// the server, the client id and the token response.
func signedIn(t *testing.T, db duet.OAuthStore) (*env, string, *oauth2.Token) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	p := oidctest.Start(t, oidctest.Client{ID: "duet", Secret: "duet-secret", RedirectURIs: []string{base + oauthserver.PathCallback}})
	e := newEnvAt(t, ln, db, p.URL, nil)
	id, _ := e.register("none")
	redirect := "http://127.0.0.1:9/cb"
	cfg := &oauth2.Config{ClientID: id, RedirectURL: redirect, Scopes: []string{"duet:read", "duet:run"},
		Endpoint: oauth2.Endpoint{AuthURL: e.URL + oauthserver.PathAuthorize, TokenURL: e.URL + oauthserver.PathToken, AuthStyle: oauth2.AuthStyleInParams}}
	verifier := oauth2.GenerateVerifier()
	back, err := oidctest.NewBrowser(p.Username()).Visit(t.Context(),
		cfg.AuthCodeURL("s1", oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("resource", e.URL+"/mcp/http")), redirect)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := cfg.Exchange(t.Context(), back.Query().Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatal(err)
	}
	return e, id, tok
}

// TestRefusedRefreshKeepsTheToken: a refresh the server refuses — a scope
// the grant lacks (invalid_scope), a resource other than Duet's
// (invalid_target, as authorization and the code exchange answer), another
// client's token (invalid_grant) — leaves the refresh token unspent: the
// client's next ordinary refresh rotates it, and is not taken for a replay
// that revokes the sign-in. A replay after that rotation still revokes it.
func TestRefusedRefreshKeepsTheToken(t *testing.T) {
	t.Parallel()
	for name, open := range engines {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			db := open(t)
			e, id, tok := signedIn(t, db)
			other, _ := e.register("none")
			refresh := func(client string, extra url.Values) (int, map[string]any) {
				v := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok.RefreshToken}, "client_id": {client}}
				for k, vs := range extra {
					v[k] = vs
				}
				return e.post(e.URL+oauthserver.PathToken, v)
			}
			for _, c := range []struct {
				client string
				extra  url.Values
				want   string
			}{
				{id, url.Values{"resource": {"https://elsewhere.example/mcp"}}, "invalid_target"},
				{id, url.Values{"resource": {e.URL + "/mcp/http", e.URL + "/mcp/http"}}, "invalid_target"},
				{id, url.Values{"scope": {"duet:admin"}}, "invalid_scope"},
				{id, url.Values{"scope": {"duet:read duet:admin"}}, "invalid_scope"},
				{other, nil, "invalid_grant"},
			} {
				if status, out := refresh(c.client, c.extra); status != http.StatusBadRequest || out["error"] != c.want {
					t.Errorf("refresh %v by %s: %d %v, want 400 %s", c.extra, c.client, status, out, c.want)
				}
			}
			if _, err := db.FindOAuthToken(t.Context(), duet.OAuthAccess, hashOf(tok.AccessToken)); err != nil {
				t.Fatalf("after refused refreshes the sign-in's access token: %v; want it valid", err)
			}
			// The ordinary refresh rotates the token (narrowed, with Duet's
			// own resource: both allowed).
			status, out := refresh(id, url.Values{"scope": {"duet:read"}, "resource": {e.URL + "/mcp/http"}})
			if status != http.StatusOK || out["scope"] != "duet:read" || out["refresh_token"] == tok.RefreshToken {
				t.Fatalf("the refresh after the refused ones: %d %v, want 200 with a new refresh token", status, out)
			}
			at, _ := out["access_token"].(string)
			if _, err := db.FindOAuthToken(t.Context(), duet.OAuthAccess, hashOf(at)); err != nil {
				t.Fatalf("the refreshed access token: %v", err)
			}
			// The rotated token replayed revokes the sign-in.
			if status, out := refresh(id, nil); status != http.StatusBadRequest || out["error"] != "invalid_grant" {
				t.Fatalf("the rotated refresh token again: %d %v, want invalid_grant", status, out)
			}
			if _, err := db.FindOAuthToken(t.Context(), duet.OAuthAccess, hashOf(at)); duet.ErrorCode(err) != duet.CodeUnauthenticated {
				t.Errorf("after a replay, the sign-in's access token: %v, want it revoked", err)
			}
		})
	}
}

// TestMetadataServesNoEmptyField: the authorization server's metadata
// (RFC 8414) leaves out what it does not serve — no "jwks_uri": "", no
// empty list, no false flag, no null — and still names what it does.
func TestMetadataServesNoEmptyField(t *testing.T) {
	t.Parallel()
	for _, mdc := range []bool{false, true} {
		e := newEnv(t, "", func(o *oauthserver.Options) {
			if mdc {
				o.MetadataClient = http.DefaultClient
			}
		})
		resp, err := http.Get(e.URL + oauthserver.PathMetadata)
		if err != nil {
			t.Fatal(err)
		}
		var fields map[string]json.RawMessage
		err = json.NewDecoder(resp.Body).Decode(&fields)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range fields {
			switch string(v) {
			case `""`, `[]`, `null`, `false`, `{}`, `0`:
				t.Errorf("metadata field %s is %s: a field that is not served must be left out", k, v)
			}
		}
		for _, k := range []string{"issuer", "authorization_endpoint", "token_endpoint", "registration_endpoint", "revocation_endpoint",
			"response_types_supported", "code_challenge_methods_supported", "authorization_response_iss_parameter_supported"} {
			if _, ok := fields[k]; !ok {
				t.Errorf("metadata lacks %s", k)
			}
		}
		if _, ok := fields["client_id_metadata_document_supported"]; ok != mdc {
			t.Errorf("client_id_metadata_document_supported present = %v, want %v", ok, mdc)
		}
	}
}

// hashOf is how the store keys a token (auth.HashToken).
func hashOf(token string) string { return auth.HashToken(token) }
