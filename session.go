package duet

import (
	"context"
	"time"
)

// Session is a signed-in browser of the web console: the cookie holds a
// random secret, the store only its hash. CSRF is the token every
// state-changing request of that browser must send back; it is not a
// credential by itself (it authenticates nothing without the cookie).
type Session struct {
	Hash   string `json:"-"`
	UserID string `json:"userId"`
	CSRF   string `json:"-"`
	Method string `json:"method"` // how the person signed in: "token" or "sso"
	// TokenID is the personal access token the person signed in with
	// ("" for an SSO proxy's user): revoking the token ends the session.
	TokenID   string    `json:"-"`
	CreatedAt time.Time `json:"createdAt"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// SessionStore keeps console sessions in the database, so that any
// instance serves any browser (no sticky sessions).
type SessionStore interface {
	// CreateSession stores s. Returns INVALID_ARGUMENT.
	CreateSession(ctx context.Context, s *Session) error
	// FindSession returns the unexpired session with that hash. Returns
	// UNAUTHENTICATED when there is none.
	FindSession(ctx context.Context, hash string) (*Session, error)
	// DeleteSession ends a session (signing out). Deleting one that does
	// not exist is not an error.
	DeleteSession(ctx context.Context, hash string) error
	// DeleteExpiredSessions removes sessions that expired before now and
	// returns how many.
	DeleteExpiredSessions(ctx context.Context, now time.Time) (int, error)
}
