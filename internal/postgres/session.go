package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/storerules"
)

var _ duet.SessionStore = (*DB)(nil)

// CreateSession stores a console session. Returns INVALID_ARGUMENT.
func (d *DB) CreateSession(ctx context.Context, s *duet.Session) error {
	if err := storerules.CheckSession(s, d.now()); err != nil {
		return err
	}
	s.CreatedAt, s.ExpiresAt = ts(s.CreatedAt), ts(s.ExpiresAt)
	_, err := d.pool.Exec(ctx, `INSERT INTO console_sessions (hash, user_id, csrf, method, token_id, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		s.Hash, s.UserID, s.CSRF, s.Method, s.TokenID, s.CreatedAt, s.ExpiresAt)
	return mapErr(err)
}

// FindSession returns the unexpired session with that hash. Returns
// UNAUTHENTICATED.
func (d *DB) FindSession(ctx context.Context, hash string) (*duet.Session, error) {
	var s duet.Session
	err := d.pool.QueryRow(ctx, `SELECT hash, user_id, csrf, method, token_id, created_at, expires_at FROM console_sessions WHERE hash = $1 AND expires_at > $2`,
		hash, ts(d.now())).Scan(&s.Hash, &s.UserID, &s.CSRF, &s.Method, &s.TokenID, &s.CreatedAt, &s.ExpiresAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, duet.Errorf(duet.CodeUnauthenticated, "the session has ended; sign in again")
	}
	if err != nil {
		return nil, mapErr(err)
	}
	s.CreatedAt, s.ExpiresAt = utc(s.CreatedAt), utc(s.ExpiresAt)
	return &s, nil
}

// DeleteSession ends a session.
func (d *DB) DeleteSession(ctx context.Context, hash string) error {
	_, err := d.pool.Exec(ctx, `DELETE FROM console_sessions WHERE hash = $1`, hash)
	return mapErr(err)
}

// DeleteExpiredSessions removes sessions that expired before now.
func (d *DB) DeleteExpiredSessions(ctx context.Context, now time.Time) (int, error) {
	tag, err := d.pool.Exec(ctx, `DELETE FROM console_sessions WHERE expires_at <= $1`, ts(now))
	if err != nil {
		return 0, mapErr(err)
	}
	return int(tag.RowsAffected()), nil
}
