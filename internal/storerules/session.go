package storerules

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/duet-test/duet"
)

// Sessions is duet.SessionStore on an engine.
type Sessions struct{ E Engine }

// CreateSession stores a console session, its times as the store keeps
// them. Returns INVALID_ARGUMENT.
func (s Sessions) CreateSession(ctx context.Context, c *duet.Session) error {
	if err := CheckSession(c, s.E.Now()); err != nil {
		return err
	}
	c.CreatedAt, c.ExpiresAt = Stored(c.CreatedAt), Stored(c.ExpiresAt)
	_, err := s.E.Exec(ctx, `INSERT INTO console_sessions (hash, user_id, csrf, method, token_id, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		c.Hash, c.UserID, c.CSRF, c.Method, c.TokenID, s.E.Stored(c.CreatedAt), s.E.Stored(c.ExpiresAt))
	return err
}

// FindSession returns the unexpired session with that hash. Returns
// UNAUTHENTICATED.
func (s Sessions) FindSession(ctx context.Context, hash string) (*duet.Session, error) {
	var c duet.Session
	err := s.E.Read(ctx, []any{&c.Hash, &c.UserID, &c.CSRF, &c.Method, &c.TokenID, TimeOf(&c.CreatedAt), TimeOf(&c.ExpiresAt)},
		`SELECT hash, user_id, csrf, method, token_id, created_at, expires_at FROM console_sessions WHERE hash = $1 AND expires_at > $2`, hash, s.E.Stored(s.E.Now()))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, duet.Errorf(duet.CodeUnauthenticated, "the session has ended; sign in again")
	} else if err != nil {
		return nil, err
	}
	return &c, nil
}

// DeleteSession ends a session.
func (s Sessions) DeleteSession(ctx context.Context, hash string) error {
	_, err := s.E.Exec(ctx, `DELETE FROM console_sessions WHERE hash = $1`, hash)
	return err
}

// DeleteExpiredSessions removes sessions that expired before now.
func (s Sessions) DeleteExpiredSessions(ctx context.Context, now time.Time) (int, error) {
	n, err := s.E.Exec(ctx, `DELETE FROM console_sessions WHERE expires_at <= $1`, s.E.Stored(now))
	if err != nil {
		return 0, err
	}
	return int(n), nil
}
