package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/storerules"
)

// SaveSecret creates or replaces a user's secret. Returns INVALID_ARGUMENT.
func (d *DB) SaveSecret(ctx context.Context, s *duet.Secret) (duet.ApplyAction, error) {
	if err := storerules.CheckSecret(s); err != nil {
		return "", err
	}
	action := duet.ApplyCreated
	err := d.tx(ctx, func(tx *cachedTx) error {
		now := d.now()
		var created int64
		err := tx.QueryRowContext(ctx, `SELECT created_at FROM user_secrets WHERE user_id = ? AND name = ?`, s.User, s.Name).Scan(&created)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			s.CreatedAt = now
			_, err = tx.ExecContext(ctx, `INSERT INTO user_secrets (user_id, name, ciphertext, created_at, updated_at) VALUES (?, ?, ?, ?, ?)`,
				s.User, s.Name, s.Ciphertext, micros(now), micros(now))
		case err != nil:
		default:
			action, s.CreatedAt = duet.ApplyUpdated, fromMicros(created)
			_, err = tx.ExecContext(ctx, `UPDATE user_secrets SET ciphertext = ?, updated_at = ? WHERE user_id = ? AND name = ?`, s.Ciphertext, micros(now), s.User, s.Name)
		}
		s.UpdatedAt = now
		return mapErr(err)
	})
	if err != nil {
		return "", err
	}
	return action, nil
}

// FindSecrets returns user's secrets of the names given, with their
// ciphertext, in name order.
func (d *DB) FindSecrets(ctx context.Context, user string, names []string) ([]*duet.Secret, error) {
	if len(names) == 0 {
		return []*duet.Secret{}, nil
	}
	return d.querySecrets(ctx, `SELECT user_id, name, ciphertext, created_at, updated_at FROM user_secrets WHERE user_id = ? AND name IN (`+placeholders(len(names))+`) ORDER BY name`, append([]any{user}, anys(names)...)...)
}

// ListSecrets returns user's secrets without their ciphertext.
func (d *DB) ListSecrets(ctx context.Context, user string) ([]*duet.Secret, error) {
	return d.querySecrets(ctx, `SELECT user_id, name, x'', created_at, updated_at FROM user_secrets WHERE user_id = ? ORDER BY name`, user)
}

func (d *DB) querySecrets(ctx context.Context, q string, args ...any) ([]*duet.Secret, error) {
	return all(ctx, d.q, storerules.ScanSecret, q, args...)
}

// DeleteSecret removes a user's secret. Returns NOT_FOUND.
func (d *DB) DeleteSecret(ctx context.Context, user, name string) error {
	res, err := d.q.ExecContext(ctx, `DELETE FROM user_secrets WHERE user_id = ? AND name = ?`, user, name)
	return changed(res, err, duet.Errorf(duet.CodeNotFound, "you have no secret named %s", name))
}

// RewrapSecrets replaces, in one transaction, the ciphertexts rewrap
// returns anew.
func (d *DB) RewrapSecrets(ctx context.Context, rewrap func(s *duet.Secret) ([]byte, error)) (replaced, total int, err error) {
	err = d.tx(ctx, func(tx *cachedTx) error {
		var err error
		replaced, total, err = storerules.RewrapSecrets(rewrap, func() ([]*duet.Secret, error) {
			return all(ctx, tx, storerules.ScanSealedSecret, `SELECT user_id, name, ciphertext FROM user_secrets ORDER BY user_id, name`)
		}, func(s *duet.Secret, ct []byte) error {
			_, err := tx.ExecContext(ctx, `UPDATE user_secrets SET ciphertext = ? WHERE user_id = ? AND name = ?`, ct, s.User, s.Name)
			return mapErr(err)
		})
		return err
	})
	return replaced, total, err
}
