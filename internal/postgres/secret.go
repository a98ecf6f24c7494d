package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/storerules"
)

// SaveSecret creates or replaces a user's secret. Returns INVALID_ARGUMENT.
func (d *DB) SaveSecret(ctx context.Context, s *duet.Secret) (duet.ApplyAction, error) {
	if err := storerules.CheckSecret(s); err != nil {
		return "", err
	}
	now := ts(d.now())
	var inserted bool
	err := d.pool.QueryRow(ctx, `INSERT INTO user_secrets AS s (user_id, name, ciphertext, created_at, updated_at) VALUES ($1, $2, $3, $4, $4)
		ON CONFLICT (user_id, name) DO UPDATE SET ciphertext = excluded.ciphertext, updated_at = excluded.updated_at
		RETURNING s.created_at, (xmax = 0)`, s.User, s.Name, s.Ciphertext, now).Scan(&s.CreatedAt, &inserted)
	if err != nil {
		return "", mapErr(err)
	}
	s.CreatedAt, s.UpdatedAt = utc(s.CreatedAt), now
	if inserted {
		return duet.ApplyCreated, nil
	}
	return duet.ApplyUpdated, nil
}

// FindSecrets returns user's secrets of the names given, with their
// ciphertext, in name order.
func (d *DB) FindSecrets(ctx context.Context, user string, names []string) ([]*duet.Secret, error) {
	if len(names) == 0 {
		return []*duet.Secret{}, nil
	}
	return d.querySecrets(ctx, `SELECT user_id, name, ciphertext, created_at, updated_at FROM user_secrets WHERE user_id = $1 AND name = ANY($2) ORDER BY name`, user, names)
}

// ListSecrets returns user's secrets without their ciphertext.
func (d *DB) ListSecrets(ctx context.Context, user string) ([]*duet.Secret, error) {
	return d.querySecrets(ctx, `SELECT user_id, name, ''::bytea, created_at, updated_at FROM user_secrets WHERE user_id = $1 ORDER BY name`, user)
}

func (d *DB) querySecrets(ctx context.Context, q string, args ...any) ([]*duet.Secret, error) {
	return all(ctx, d.pool, storerules.ScanSecret, q, args...)
}

// DeleteSecret removes a user's secret. Returns NOT_FOUND.
func (d *DB) DeleteSecret(ctx context.Context, user, name string) error {
	tag, err := d.pool.Exec(ctx, `DELETE FROM user_secrets WHERE user_id = $1 AND name = $2`, user, name)
	return changed(tag, err, duet.Errorf(duet.CodeNotFound, "you have no secret named %s", name))
}

// RewrapSecrets replaces, in one transaction, the ciphertexts rewrap
// returns anew.
func (d *DB) RewrapSecrets(ctx context.Context, rewrap func(s *duet.Secret) ([]byte, error)) (replaced, total int, err error) {
	err = d.tx(ctx, func(tx pgx.Tx) error {
		var err error
		replaced, total, err = storerules.RewrapSecrets(rewrap, func() ([]*duet.Secret, error) {
			return all(ctx, tx, storerules.ScanSealedSecret, `SELECT user_id, name, ciphertext FROM user_secrets ORDER BY user_id, name FOR UPDATE`)
		}, func(s *duet.Secret, ct []byte) error {
			_, err := tx.Exec(ctx, `UPDATE user_secrets SET ciphertext = $1 WHERE user_id = $2 AND name = $3`, ct, s.User, s.Name)
			return mapErr(err)
		})
		return err
	})
	return replaced, total, err
}
