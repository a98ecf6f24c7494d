package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/storerules"
)

// UseOAuthToken marks a single-use token used and returns it, in one
// statement (so concurrent uses on any number of instances see one
// winner). Returns CONFLICT (with the token) when it was used before,
// UNAUTHENTICATED when there is none.
func (d *DB) UseOAuthToken(ctx context.Context, kind duet.OAuthTokenKind, hash string) (*duet.OAuthToken, error) {
	now := ts(d.now())
	t, err := storerules.ScanOAuthToken(d.pool.QueryRow(ctx, `UPDATE oauth_tokens SET used_at = $4 WHERE hash = $1 AND kind = $2 AND expires_at > $3 AND used_at IS NULL RETURNING `+storerules.OAuthTokenColumns,
		hash, string(kind), now, now))
	if err == nil {
		return t, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return nil, mapErr(err)
	}
	t, err = storerules.ScanOAuthToken(d.pool.QueryRow(ctx, `SELECT `+storerules.OAuthTokenColumns+` FROM oauth_tokens WHERE hash = $1 AND kind = $2 AND expires_at > $3 AND used_at IS NOT NULL`,
		hash, string(kind), now))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, storerules.InvalidOAuthToken()
	}
	if err != nil {
		return nil, mapErr(err)
	}
	return t, duet.Errorf(duet.CodeConflict, "the token was used before")
}

// RevokeOAuthGrant deletes every token of a grant.
func (d *DB) RevokeOAuthGrant(ctx context.Context, grantID string) error {
	if grantID == "" {
		return nil
	}
	_, err := d.pool.Exec(ctx, `DELETE FROM oauth_tokens WHERE grant_id = $1`, grantID)
	return mapErr(err)
}

// DeleteExpiredOAuth deletes tokens that expired before now, then the
// clients registered before now − duet.UnusedOAuthClientTTL that never
// obtained an access token and have no sign-in under way.
func (d *DB) DeleteExpiredOAuth(ctx context.Context, now time.Time) (int64, error) {
	tag, err := d.pool.Exec(ctx, `DELETE FROM oauth_tokens WHERE expires_at <= $1`, ts(now))
	if err != nil {
		return 0, mapErr(err)
	}
	n := tag.RowsAffected()
	tag, err = d.pool.Exec(ctx, `DELETE FROM oauth_clients WHERE created_at <= $1 AND last_used_at IS NULL
		AND NOT EXISTS (SELECT 1 FROM oauth_tokens t WHERE t.client_id = oauth_clients.id)`, ts(now.Add(-duet.UnusedOAuthClientTTL)))
	if err != nil {
		return n, mapErr(err)
	}
	return n + tag.RowsAffected(), nil
}
