package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/storerules"
)

var _ duet.SessionStore = (*DB)(nil)

// CreateSession stores a console session. Returns INVALID_ARGUMENT.
func (d *DB) CreateSession(ctx context.Context, s *duet.Session) error {
	if err := storerules.CheckSession(s, d.now()); err != nil {
		return err
	}
	_, err := d.q.ExecContext(ctx, `INSERT INTO console_sessions (hash, user_id, csrf, method, token_id, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		s.Hash, s.UserID, s.CSRF, s.Method, s.TokenID, micros(s.CreatedAt), micros(s.ExpiresAt))
	return mapErr(err)
}

// FindSession returns the unexpired session with that hash. Returns
// UNAUTHENTICATED.
func (d *DB) FindSession(ctx context.Context, hash string) (*duet.Session, error) {
	var s duet.Session
	var created, expires int64
	err := d.q.QueryRowContext(ctx, `SELECT hash, user_id, csrf, method, token_id, created_at, expires_at FROM console_sessions WHERE hash = ? AND expires_at > ?`,
		hash, micros(d.now())).Scan(&s.Hash, &s.UserID, &s.CSRF, &s.Method, &s.TokenID, &created, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, duet.Errorf(duet.CodeUnauthenticated, "the session has ended; sign in again")
	}
	if err != nil {
		return nil, mapErr(err)
	}
	s.CreatedAt, s.ExpiresAt = fromMicros(created), fromMicros(expires)
	return &s, nil
}

// DeleteSession ends a session.
func (d *DB) DeleteSession(ctx context.Context, hash string) error {
	_, err := d.q.ExecContext(ctx, `DELETE FROM console_sessions WHERE hash = ?`, hash)
	return mapErr(err)
}

// DeleteExpiredSessions removes sessions that expired before now.
func (d *DB) DeleteExpiredSessions(ctx context.Context, now time.Time) (int, error) {
	res, err := d.q.ExecContext(ctx, `DELETE FROM console_sessions WHERE expires_at <= ?`, micros(now))
	if err != nil {
		return 0, mapErr(err)
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}
