package oauthclient

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strings"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/escape"
)

// OAuth configures a registration that authenticates with OAuth 2.1: Duet
// discovers the server's authorization server (protected resource metadata,
// RFC 9728; authorization server metadata, RFC 8414), obtains access tokens
// there and renews them. See docs/mcp-client.md.
type Config struct {
	// Grant is duet.AuthOAuth (authorization code with PKCE: the owner
	// authorizes Duet once (mcpclient.Client.Login), and calls then run as them)
	// or duet.AuthClientCredentials (a machine identity, no person).
	Grant string
	// ClientID and ClientSecret name a client registered with the
	// authorization server beforehand. For duet.AuthOAuth they are optional
	// (without them Duet uses ClientMetadataURL or registers itself
	// dynamically, RFC 7591; ClientSecret is optional for a public client).
	// duet.AuthClientCredentials needs ClientID and either ClientSecret or
	// PrivateKey.
	ClientID     string
	ClientSecret string
	// PrivateKey is a PEM private key (EC P-256 or P-384, RSA, Ed25519) with
	// which a client-credentials client authenticates by a signed JWT
	// (private_key_jwt, RFC 7523) instead of a secret.
	PrivateKey string
	// ClientMetadataURL is the HTTPS URL of a client ID metadata document
	// describing Duet; it is the client id at authorization servers that
	// accept such documents (duet.AuthOAuth only).
	ClientMetadataURL string
	// Scopes are requested in addition to the ones the server asks for.
	Scopes []string
	// Issuer is the authorization server (its issuer identifier, RFC 8414)
	// the pre-registered client ClientID is registered with: Duet sends the
	// client's credentials to no other. It is required with a ClientSecret
	// or a PrivateKey (a secret is bound to its issuer when it is entered,
	// never to whichever authorization server the MCP server names first);
	// for a public client "" means the issuer Duet finds the first time it
	// authorizes is pinned then. With a dynamically registered client it
	// binds the registration to that authorization server too. An https URL
	// (http only for loopback addresses).
	Issuer string

	// Enterprise-managed authorization (duet.AuthEnterprise, SEP-990):
	// IdPIssuer is the company identity provider, where IDToken — the
	// person's OpenID Connect ID token — is exchanged for an identity
	// assertion with the client IdPClientID (and IdPClientSecret, if the
	// provider authenticates its clients). ClientID and ClientSecret are
	// the client at the server's authorization server.
	IdPIssuer       string
	IdPClientID     string
	IdPClientSecret string
	IDToken         string
}

// Check validates o and returns the secret it seals (nil for a nil o).
// Returns INVALID_ARGUMENT.
func (o *Config) Check() (*Secret, error) {
	if o == nil {
		return nil, nil
	}
	for _, check := range []func() string{o.checkFields, o.checkScopes, o.checkIssuer, o.checkGrant} {
		if msg := check(); msg != "" {
			return nil, duet.Errorf(duet.CodeInvalidArgument, "%s", msg)
		}
	}
	return &Secret{Grant: o.Grant, ClientID: o.ClientID, ClientSecret: o.ClientSecret, PrivateKey: o.PrivateKey,
		MetadataURL: o.ClientMetadataURL, Scopes: slices.Clone(o.Scopes), Issuer: strings.TrimSuffix(o.Issuer, "/"),
		IdPIssuer: o.IdPIssuer, IdPClientID: o.IdPClientID, IdPClientSecret: o.IdPClientSecret, IDToken: o.IDToken}, nil
}

// checkFields refuses values of several lines and identity provider
// fields outside enterprise-managed authorization. Each check returns
// what is wrong, or "".
func (o *Config) checkFields() string {
	for _, s := range []string{o.ClientID, o.ClientSecret, o.IdPClientID, o.IdPClientSecret, o.IDToken} {
		if strings.ContainsAny(s, "\r\n\x00") {
			return "the OAuth client id and secret must be one line"
		}
	}
	if o.Grant != duet.AuthEnterprise && (o.IdPIssuer != "" || o.IdPClientID != "" || o.IdPClientSecret != "" || o.IDToken != "") {
		return "an identity provider and an ID token are for enterprise-managed authorization (--auth enterprise)"
	}
	return ""
}

// checkScopes refuses malformed scopes and too many of them.
func (o *Config) checkScopes() string {
	for _, s := range o.Scopes {
		if !validScope(s) {
			return fmt.Sprintf("an OAuth scope is one word of at most %d printable characters without quotes; got %q", maxScopeLen, escape.Line(s, 60))
		}
	}
	if err := checkScopeSet(o.Scopes); err != nil {
		return "too many OAuth scopes: " + err.Error()
	}
	return ""
}

// checkIssuer refuses an issuer that is not an https URL without query or
// fragment, and a secret or key without its issuer.
func (o *Config) checkIssuer() string {
	if o.Issuer != "" {
		if err := CheckURL(o.Issuer); err != nil {
			return "the issuer: " + err.Error()
		}
		u, _ := url.Parse(o.Issuer)
		if u.RawQuery != "" || u.Fragment != "" {
			return "the issuer is an https URL without query or fragment, like https://auth.example.com"
		}
	}
	if o.HoldsSecret() && o.Issuer == "" {
		return errSecretNeedsIssuer
	}
	return ""
}

// grantChecks check what each grant needs.
var grantChecks = map[string]func(*Config) string{
	duet.AuthOAuth:             (*Config).checkCodeGrant,
	duet.AuthClientCredentials: (*Config).checkClientCredentials,
	duet.AuthEnterprise:        (*Config).checkEnterprise,
}

// checkGrant refuses an unknown grant and what its grant does not take.
func (o *Config) checkGrant() string {
	check, ok := grantChecks[o.Grant]
	if !ok {
		return fmt.Sprintf("OAuth grant %q: want %s, %s or %s", o.Grant, duet.AuthOAuth, duet.AuthClientCredentials, duet.AuthEnterprise)
	}
	return check(o)
}

func (o *Config) checkCodeGrant() string {
	switch {
	case o.PrivateKey != "":
		return "a private key authenticates a client-credentials client; an oauth registration takes a client secret"
	case o.ClientSecret != "" && o.ClientID == "":
		return "a client secret needs its client id"
	case o.ClientMetadataURL != "" && !metadataDocumentURL(o.ClientMetadataURL):
		return "the client metadata document URL must be an https URL with a path, like https://duet.example.com/oauth/client.json"
	}
	return ""
}

// metadataDocumentURL reports whether raw can be a client ID metadata
// document's URL: https, with a host and a path, without user information
// or fragment.
func metadataDocumentURL(raw string) bool {
	u, err := url.Parse(raw)
	return err == nil && u.Scheme == "https" && u.Host != "" && strings.Trim(u.Path, "/") != "" && u.User == nil && u.Fragment == ""
}

func (o *Config) checkClientCredentials() string {
	switch {
	case o.ClientID == "":
		return "the client credentials grant needs a client id"
	case (o.ClientSecret == "") == (o.PrivateKey == ""):
		return "the client credentials grant needs either a client secret or a private key (not both)"
	case o.ClientMetadataURL != "":
		return "a client metadata document is for the authorization code flow (--auth oauth)"
	case o.PrivateKey == "":
		return ""
	}
	if _, err := parseClientKey(o.PrivateKey); err != nil {
		return "the private key: " + err.Error()
	}
	return ""
}

func (o *Config) checkEnterprise() string {
	switch {
	case o.ClientID == "":
		return "enterprise-managed authorization needs the client id at the server's authorization server"
	case o.IdPIssuer == "" || o.IdPClientID == "" || o.IDToken == "":
		return "enterprise-managed authorization needs the identity provider's issuer, Duet's client id there and the person's ID token"
	case o.PrivateKey != "" || o.ClientMetadataURL != "":
		return "enterprise-managed authorization takes a client secret, not a private key or a metadata document"
	}
	if err := CheckURL(o.IdPIssuer); err != nil {
		return "the identity provider: " + err.Error()
	}
	return ""
}

// HoldsSecret reports whether o carries a credential of its own at the
// server's authorization server — a client secret or a private key — which
// must therefore be bound to an issuer (Issuer) when it is entered.
func (o *Config) HoldsSecret() bool {
	return o != nil && (o.ClientSecret != "" || o.PrivateKey != "")
}

// errSecretNeedsIssuer is why a secret without an issuer is refused, and
// how to find the issuer.
const errSecretNeedsIssuer = "a client secret or private key belongs to the authorization server that issued it: " +
	"name that server with its issuer URL (--issuer URL), the \"issuer\" of its metadata " +
	"(https://AUTH-SERVER/.well-known/oauth-authorization-server), as the console or administrator of that server shows it. " +
	"The MCP server names its authorization server in its protected resource metadata " +
	"(https://HOST/.well-known/oauth-protected-resource/PATH, \"authorization_servers\"): " +
	"give that issuer only if it is the server your client was registered with. Duet sends the secret to no other"

// CheckURL refuses an OAuth URL that would carry tokens or client
// credentials in cleartext: it must be https, or http to a loopback address
// (development and tests).
func CheckURL(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil || u.Host == "" || u.User != nil:
		return errors.New("not an absolute URL without user information")
	case u.Scheme == "https":
		return nil
	case u.Scheme == "http" && isLoopback(u.Hostname()):
		return nil
	case u.Scheme == "http":
		return errors.New("plain http:// would carry OAuth tokens and client credentials in cleartext; use https:// (http is accepted only for loopback addresses, for development)")
	}
	return fmt.Errorf("scheme %q: want https", escape.Line(u.Scheme, 20))
}

// isLoopback reports whether host names the loopback interface.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.IsLoopback()
}

// Limits of scope lists: what a server may ask for, and what Duet requests
// and keeps. A server that asks for more is refused rather than followed:
// every unattended 401 or 403 would otherwise grow the sealed credential.
const (
	maxScopes     = 50   // scopes in one list (a challenge, the wanted set, a grant)
	maxScopeLen   = 200  // bytes of one scope
	maxScopeBytes = 4096 // bytes of one list, spaces included
)

// validScope reports whether s is a scope-token (RFC 6749 section 3.3:
// printable ASCII without space, '"' and '\') of at most maxScopeLen bytes.
func validScope(s string) bool {
	if s == "" || len(s) > maxScopeLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x21 || c == '"' || c == '\\' || c > 0x7e {
			return false
		}
	}
	return true
}

// checkScopeSet refuses a scope list longer than the limits.
func checkScopeSet(scopes []string) error {
	n := len(scopes) - 1
	for _, s := range scopes {
		n += len(s)
	}
	switch {
	case len(scopes) > maxScopes:
		return fmt.Errorf("%d scopes; Duet requests and keeps at most %d", len(scopes), maxScopes)
	case n > maxScopeBytes:
		return fmt.Errorf("%d bytes of scopes; Duet requests and keeps at most %d", n, maxScopeBytes)
	}
	return nil
}

// checkChallenge refuses a server's challenge naming absurd scopes: more
// than Duet requests, or malformed ones.
func checkChallenge(scopes []string) error {
	for _, s := range scopes {
		if !validScope(s) {
			return &flowError{msg: "the server's challenge names a malformed scope " + strconvQuote(s) + "; Duet does not request it"}
		}
	}
	if err := checkScopeSet(scopes); err != nil {
		return &flowError{msg: "the server's challenge names " + err.Error() + "; it is not followed"}
	}
	return nil
}

// boundScopes returns the well-formed scopes of s, at most maxScopes of
// them within maxScopeBytes: what Duet keeps of a list it did not choose
// (a grant, the scopes a resource supports).
func boundScopes(s []string) []string {
	var out []string
	n := -1
	for _, sc := range s {
		if len(out) == maxScopes || n+1+len(sc) > maxScopeBytes {
			break
		}
		if sc != "" && len(sc) <= maxScopeLen && !slices.Contains(out, sc) {
			out = append(out, sc)
			n += 1 + len(sc)
		}
	}
	return out
}

// covers reports whether granted includes every scope of want.
func covers(granted, want []string) bool {
	for _, s := range want {
		if !slices.Contains(granted, s) {
			return false
		}
	}
	return true
}

// union returns a followed by the scopes of b it lacks.
func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

func scopeList(s []string) string {
	if len(s) == 0 {
		return "no particular scope"
	}
	return "scope " + strconvQuote(strings.Join(s, " "))
}

func strconvQuote(s string) string { return fmt.Sprintf("%q", escape.Line(s, 200)) }
