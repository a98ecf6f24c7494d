package duet

import (
	"context"
	"time"
)

// Access is what a caller's credentials allow. The zero value is a caller
// whose credentials carry no scopes — the gateway key, a personal access
// token, stdio, the CLI — and may do whatever the user may do. An OAuth
// access token is Scoped: it allows reading (Read) and starting or
// cancelling runs (Run) only when its scopes grant them.
type Access struct {
	Scoped bool
	Read   bool
	Run    bool
}

// Allows reports whether a caller with access a may read (run false) or
// start and cancel runs (run true).
func (a Access) Allows(run bool) bool {
	if !a.Scoped {
		return true
	}
	if run {
		return a.Run
	}
	return a.Read
}

// OAuthClient is a client registered with Duet's own authorization server
// (OAuth 2.0 dynamic client registration, RFC 7591).
type OAuthClient struct {
	ID           string    `json:"client_id"`
	Name         string    `json:"client_name,omitempty"`
	RedirectURIs []string  `json:"redirect_uris"`
	SecretHash   string    `json:"-"` // "" for a public client (token_endpoint_auth_method none)
	CreatedAt    time.Time `json:"-"`
}

// OAuthTokenKind says what an OAuthToken is.
type OAuthTokenKind string

// Kinds of secrets Duet's authorization server hands out.
const (
	OAuthLogin   OAuthTokenKind = "login"   // an authorization request waiting for the person's login at the identity provider
	OAuthConsent OAuthTokenKind = "consent" // a signed-in person's authorization request waiting for consent
	OAuthCode    OAuthTokenKind = "code"    // an authorization code
	OAuthAccess  OAuthTokenKind = "access"  // an access token
	OAuthRefresh OAuthTokenKind = "refresh" // a refresh token
)

// OAuthToken is one secret Duet's authorization server handed out, kept by
// its hash: never the secret itself.
type OAuthToken struct {
	Hash     string
	Kind     OAuthTokenKind
	GrantID  string // the authorization it belongs to; revoking it revokes every token of the grant
	ClientID string
	UserID   string
	Scope    string // space-separated scopes granted
	// Data is kind-specific JSON (the redirect URI and PKCE challenge of a
	// code, the client's request of a login); never a secret in clear.
	Data      string
	CreatedAt time.Time
	ExpiresAt time.Time
	UsedAt    *time.Time
}

// UnusedOAuthClientTTL is how long a registered client that never obtained
// an access token is kept: registration needs no credentials, so clients
// that register and never sign anyone in must not accumulate.
const UnusedOAuthClientTTL = 24 * time.Hour

// OAuthStore keeps the clients and tokens of Duet's own authorization
// server.
type OAuthStore interface {
	// CreateOAuthClient stores a registered client. Returns
	// INVALID_ARGUMENT.
	CreateOAuthClient(ctx context.Context, c *OAuthClient) error
	// FindOAuthClient returns a registered client. Returns NOT_FOUND.
	FindOAuthClient(ctx context.Context, id string) (*OAuthClient, error)
	// PutOAuthToken stores a token. Returns INVALID_ARGUMENT.
	PutOAuthToken(ctx context.Context, t *OAuthToken) error
	// FindOAuthToken returns the unexpired, unused token of that kind and
	// hash. Returns UNAUTHENTICATED when there is none.
	FindOAuthToken(ctx context.Context, kind OAuthTokenKind, hash string) (*OAuthToken, error)
	// UseOAuthToken marks a single-use token (a login, a code, a refresh
	// token) used and returns it, exactly once however many callers race.
	// A token already used returns CONFLICT together with the token (so
	// that its grant can be revoked: a replayed code or refresh token
	// means it leaked); none, or an expired one, returns UNAUTHENTICATED.
	UseOAuthToken(ctx context.Context, kind OAuthTokenKind, hash string) (*OAuthToken, error)
	// RevokeOAuthGrant deletes every token of a grant.
	RevokeOAuthGrant(ctx context.Context, grantID string) error
	// DeleteExpiredOAuth deletes tokens that expired before now, and
	// registered clients older than UnusedOAuthClientTTL that never
	// obtained an access token and have no sign-in under way; it returns
	// how many rows it deleted.
	DeleteExpiredOAuth(ctx context.Context, now time.Time) (int64, error)
}
