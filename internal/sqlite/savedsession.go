package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"github.com/duet-test/duet"
)

// SaveSavedSession creates or replaces a run's saved session, and deletes
// the expired ones. Returns INVALID_ARGUMENT.
func (d *DB) SaveSavedSession(ctx context.Context, s *duet.SavedSession) error {
	if err := s.Valid(); err != nil {
		return err
	}
	return d.tx(ctx, func(tx *cachedTx) error {
		now := d.now()
		s.CreatedAt = now
		if _, err := tx.ExecContext(ctx, `DELETE FROM saved_sessions WHERE expires_at <= ?`, micros(now)); err != nil {
			return mapErr(err)
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO saved_sessions (run_id, name, owner, ciphertext, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (run_id, name) DO UPDATE SET owner = excluded.owner, ciphertext = excluded.ciphertext, created_at = excluded.created_at, expires_at = excluded.expires_at`,
			s.RunID, s.Name, s.Owner, s.Ciphertext, micros(now), micros(s.ExpiresAt))
		return mapErr(err)
	})
}

// FindSavedSession returns a run's saved session. Returns NOT_FOUND when
// there is none or it has expired.
func (d *DB) FindSavedSession(ctx context.Context, runID, name string) (*duet.SavedSession, error) {
	s := &duet.SavedSession{RunID: runID, Name: name}
	var created, expires int64
	err := d.q.QueryRowContext(ctx, `SELECT owner, ciphertext, created_at, expires_at FROM saved_sessions WHERE run_id = ? AND name = ? AND expires_at > ?`,
		runID, name, micros(d.now())).Scan(&s.Owner, &s.Ciphertext, &created, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, duet.Errorf(duet.CodeNotFound, "the run has no session named %s", name)
	}
	if err != nil {
		return nil, mapErr(err)
	}
	s.CreatedAt, s.ExpiresAt = fromMicros(created), fromMicros(expires)
	return s, nil
}
