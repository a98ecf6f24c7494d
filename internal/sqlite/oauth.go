package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/storerules"
)

// UseOAuthToken marks a single-use token used and returns it. Returns
// CONFLICT (with the token) when it was used before, UNAUTHENTICATED when
// there is none.
func (d *DB) UseOAuthToken(ctx context.Context, kind duet.OAuthTokenKind, hash string) (*duet.OAuthToken, error) {
	var out *duet.OAuthToken
	var reused bool
	now := d.now()
	err := d.tx(ctx, func(tx *cachedTx) error {
		t, err := storerules.ScanOAuthToken(tx.QueryRowContext(ctx, `SELECT `+storerules.OAuthTokenColumns+` FROM oauth_tokens WHERE hash = ? AND kind = ? AND expires_at > ?`,
			hash, string(kind), micros(now)))
		if errors.Is(err, sql.ErrNoRows) {
			return storerules.InvalidOAuthToken()
		}
		if err != nil {
			return mapErr(err)
		}
		out = t
		if t.UsedAt != nil {
			reused = true
			return nil
		}
		if _, err := tx.ExecContext(ctx, `UPDATE oauth_tokens SET used_at = ? WHERE hash = ?`, micros(now), hash); err != nil {
			return mapErr(err)
		}
		t.UsedAt = &now
		return nil
	})
	if err != nil {
		return nil, err
	}
	if reused {
		return out, duet.Errorf(duet.CodeConflict, "the token was used before")
	}
	return out, nil
}

// RevokeOAuthGrant deletes every token of a grant.
func (d *DB) RevokeOAuthGrant(ctx context.Context, grantID string) error {
	if grantID == "" {
		return nil
	}
	_, err := d.q.ExecContext(ctx, `DELETE FROM oauth_tokens WHERE grant_id = ?`, grantID)
	return mapErr(err)
}

// DeleteExpiredOAuth deletes tokens that expired before now, then the
// clients registered before now − duet.UnusedOAuthClientTTL that never
// obtained an access token and have no sign-in under way.
func (d *DB) DeleteExpiredOAuth(ctx context.Context, now time.Time) (int64, error) {
	res, err := d.q.ExecContext(ctx, `DELETE FROM oauth_tokens WHERE expires_at <= ?`, micros(now))
	if err != nil {
		return 0, mapErr(err)
	}
	n, _ := res.RowsAffected()
	res, err = d.q.ExecContext(ctx, `DELETE FROM oauth_clients WHERE created_at <= ? AND last_used_at IS NULL
		AND NOT EXISTS (SELECT 1 FROM oauth_tokens t WHERE t.client_id = oauth_clients.id)`, micros(now.Add(-duet.UnusedOAuthClientTTL)))
	if err != nil {
		return n, mapErr(err)
	}
	m, _ := res.RowsAffected()
	return n + m, nil
}
