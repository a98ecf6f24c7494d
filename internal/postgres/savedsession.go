package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/duet-test/duet"
)

// SaveSavedSession creates or replaces a run's saved session, and deletes
// the expired ones. Returns INVALID_ARGUMENT.
func (d *DB) SaveSavedSession(ctx context.Context, s *duet.SavedSession) error {
	if err := s.Valid(); err != nil {
		return err
	}
	now := ts(d.now())
	s.CreatedAt = now
	b := &pgx.Batch{}
	b.Queue(`DELETE FROM saved_sessions WHERE expires_at <= $1`, now)
	b.Queue(`INSERT INTO saved_sessions (run_id, name, owner, ciphertext, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (run_id, name) DO UPDATE SET owner = excluded.owner, ciphertext = excluded.ciphertext, created_at = excluded.created_at, expires_at = excluded.expires_at`,
		s.RunID, s.Name, s.Owner, s.Ciphertext, now, ts(s.ExpiresAt))
	return mapErr(d.pool.SendBatch(ctx, b).Close())
}

// FindSavedSession returns a run's saved session. Returns NOT_FOUND when
// there is none or it has expired.
func (d *DB) FindSavedSession(ctx context.Context, runID, name string) (*duet.SavedSession, error) {
	s := &duet.SavedSession{RunID: runID, Name: name}
	err := d.pool.QueryRow(ctx, `SELECT owner, ciphertext, created_at, expires_at FROM saved_sessions WHERE run_id = $1 AND name = $2 AND expires_at > $3`,
		runID, name, ts(d.now())).Scan(&s.Owner, &s.Ciphertext, &s.CreatedAt, &s.ExpiresAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, duet.Errorf(duet.CodeNotFound, "the run has no session named %s", name)
	}
	if err != nil {
		return nil, mapErr(err)
	}
	s.CreatedAt, s.ExpiresAt = utc(s.CreatedAt), utc(s.ExpiresAt)
	return s, nil
}
