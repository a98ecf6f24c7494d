// Package auth decides who an HTTP request comes from: a company MCP gateway
// (a shared X-Api-Key proving origin, plus the user it injects as
// SSO-Emp-Id) or a person with a personal access token (Authorization:
// Bearer). Secrets are compared in constant time and never logged.
package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base32"
	"encoding/hex"
	"net/http"
	"strings"

	"github.com/duet-test/duet"
)

// TokenPrefix starts every personal access token, so leaked tokens are easy
// to recognise (and to scan for).
const TokenPrefix = "duet_pat_"

// NewToken returns a new personal access token and the hash to store.
func NewToken() (plaintext, hash string) {
	b := make([]byte, 20)
	if _, err := rand.Read(b); err != nil {
		panic("auth: crypto/rand failed: " + err.Error())
	}
	plaintext = TokenPrefix + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b))
	return plaintext, HashToken(plaintext)
}

// HashToken returns the stored form of a token: hex SHA-256. Tokens have
// 160 random bits, so a fast hash is enough.
func HashToken(plaintext string) string {
	h := sha256.Sum256([]byte(plaintext))
	return hex.EncodeToString(h[:])
}

// Headers a gateway sends.
const (
	HeaderAPIKey = "X-Api-Key"
	HeaderUser   = "SSO-Emp-Id"
)

// Method is how a request proved who it comes from.
type Method string

// Authentication methods.
const (
	MethodGateway      Method = "gateway"       // a valid X-Api-Key and the SSO-Emp-Id header
	MethodGatewayFixed Method = "gateway-fixed" // a valid X-Api-Key and DUET_GATEWAY_FIXED_USER
	MethodToken        Method = "token"         // a personal access token
)

// Identity is the outcome of authenticating a request.
type Identity struct {
	UserID string
	// Method is how the request authenticated ("" when it did not).
	Method Method
	// ViaGateway is true when the request carried a valid gateway key: only
	// then may MCP-Lite's body field user.empId name the user.
	ViaGateway bool
	// Ambient is true for credentials a browser sends by itself (the
	// console's session cookie, an SSO proxy's headers): state-changing
	// requests must then carry the session's CSRF token (CheckCSRF).
	Ambient bool
	// Session is the console session of an ambient identity.
	Session *duet.Session
	// NewCookie, when set, is a session cookie to set on the response (an
	// SSO proxy's user seen without a session of theirs).
	NewCookie string
	// Access is what the credentials allow (an OAuth token's scopes); the
	// zero value allows whatever the user may do.
	Access duet.Access
	// TokenID is the personal access token the request authenticated
	// with, directly or through the console session started with it (""
	// otherwise): tokens the request creates are its children.
	TokenID string
}

// Principal is the identity as one comparable string: the user id and how
// it was authenticated. An MCP session is bound to the principal that
// created it.
func (id Identity) Principal() string {
	if id.UserID == "" {
		return ""
	}
	return string(id.Method) + ":" + id.UserID
}

// Authenticator checks requests.
type Authenticator struct {
	tokens    duet.TokenStore
	keys      [][32]byte // SHA-256 of the gateway keys
	fixedUser string
	console   ConsoleOptions
	ssoKey    [32]byte      // SHA-256 of console.SSOSecret
	oauth     *OAuthOptions // nil: OAuth access tokens are not accepted
}

// New returns an Authenticator. gatewayKeys may be empty (no gateway);
// fixedUser is the identity for gateway requests without a user header (""
// means such requests are refused).
func New(tokens duet.TokenStore, gatewayKeys []string, fixedUser string) *Authenticator {
	a := &Authenticator{tokens: tokens, fixedUser: fixedUser}
	for _, k := range gatewayKeys {
		a.keys = append(a.keys, sha256.Sum256([]byte(k)))
	}
	return a
}

// GatewayConfigured reports whether any gateway key is configured.
func (a *Authenticator) GatewayConfigured() bool { return len(a.keys) > 0 }

// validKey compares the presented key with every configured key in constant
// time (no early exit, fixed-length digests).
func (a *Authenticator) validKey(presented string) bool {
	p := sha256.Sum256([]byte(presented))
	ok := 0
	for i := range a.keys {
		ok |= subtle.ConstantTimeCompare(p[:], a.keys[i][:])
	}
	return ok == 1
}

// credentialParams are query parameters that must never carry credentials.
var credentialParams = []string{"api_key", "apikey", "x-api-key", "token", "access_token", "key", "secret", "password", "auth", "authorization", "sso-emp-id", "bearer"}

// ValidUserID reports whether s can be a user id (duet.ValidUserID, the
// one rule).
func ValidUserID(s string) bool { return duet.ValidUserID(s) == nil }

// Authenticate identifies the caller of r. Returns UNAUTHENTICATED (with a
// message safe to show) when the request has no valid credentials, and
// INVALID_ARGUMENT when credentials were put in the URL. Valid credentials
// — a valid gateway key too, whatever its user header — set the request's
// mark (WithRequestMark).
func (a *Authenticator) Authenticate(ctx context.Context, r *http.Request) (Identity, error) {
	id, err := a.authenticate(ctx, r)
	if err == nil || id.ViaGateway {
		markAuthenticated(r.Context())
	}
	return id, err
}

func (a *Authenticator) authenticate(ctx context.Context, r *http.Request) (Identity, error) {
	q := r.URL.Query()
	for _, p := range credentialParams {
		for k := range q {
			if strings.EqualFold(k, p) {
				return Identity{}, duet.Errorf(duet.CodeInvalidArgument, "credentials in the URL are refused (URLs end up in logs); send them as headers")
			}
		}
	}
	if key := r.Header.Get(HeaderAPIKey); key != "" {
		if !a.GatewayConfigured() || !a.validKey(key) {
			return Identity{}, duet.Errorf(duet.CodeUnauthenticated, "invalid API key")
		}
		if n := len(r.Header.Values(HeaderUser)); n > 1 {
			return Identity{}, duet.Errorf(duet.CodeIdentityMismatch, "the request carries %d %s headers; send one", n, HeaderUser)
		}
		user := strings.TrimSpace(r.Header.Get(HeaderUser))
		switch {
		case user != "":
			if err := duet.ValidUserID(user); err != nil {
				return Identity{}, duet.Errorf(duet.CodeUnauthenticated, "invalid %s header: %s", HeaderUser, duet.ErrorMessage(err))
			}
			return Identity{UserID: user, Method: MethodGateway, ViaGateway: true}, nil
		case a.fixedUser != "":
			return Identity{UserID: a.fixedUser, Method: MethodGatewayFixed, ViaGateway: true}, nil
		default:
			return Identity{ViaGateway: true}, duet.Errorf(duet.CodeUnauthenticated, "the gateway sent no %s header", HeaderUser)
		}
	}
	if authz := r.Header.Get("Authorization"); authz != "" {
		scheme, tok, ok := strings.Cut(authz, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(tok) == "" {
			return Identity{}, duet.Errorf(duet.CodeUnauthenticated, "use Authorization: Bearer <token>")
		}
		tok = strings.TrimSpace(tok)
		if a.oauth != nil && !strings.HasPrefix(tok, TokenPrefix) {
			return a.authenticateOAuth(ctx, tok)
		}
		t, err := a.tokens.FindTokenByHash(ctx, HashToken(tok))
		if err != nil {
			if duet.ErrorCode(err) == duet.CodeUnauthenticated {
				return Identity{}, duet.Errorf(duet.CodeUnauthenticated, "invalid or expired token")
			}
			return Identity{}, err
		}
		if err := duet.ValidUserID(t.UserID); err != nil {
			// A token minted for an invalid user (before the rule existed).
			return Identity{}, duet.Errorf(duet.CodeUnauthenticated, "the token's user id is invalid: %s", duet.ErrorMessage(err))
		}
		return Identity{UserID: t.UserID, Method: MethodToken, TokenID: t.ID}, nil
	}
	return Identity{}, duet.Errorf(duet.CodeUnauthenticated, "authentication required: send Authorization: Bearer <personal access token>, or come through the gateway (X-Api-Key)")
}
