package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/storerules"
)

// CreateOAuthClient stores a registered client. Returns INVALID_ARGUMENT.
func (d *DB) CreateOAuthClient(ctx context.Context, c *duet.OAuthClient) error {
	uris, err := storerules.CheckOAuthClient(c, d.now())
	if err != nil {
		return err
	}
	c.CreatedAt = ts(c.CreatedAt)
	_, err = d.pool.Exec(ctx, `INSERT INTO oauth_clients (id, name, redirect_uris, secret_hash, created_at) VALUES ($1, $2, $3, $4, $5)`,
		c.ID, c.Name, uris, c.SecretHash, c.CreatedAt)
	return mapErr(err)
}

// FindOAuthClient returns a registered client. Returns NOT_FOUND.
func (d *DB) FindOAuthClient(ctx context.Context, id string) (*duet.OAuthClient, error) {
	var c duet.OAuthClient
	var uris []byte
	err := d.pool.QueryRow(ctx, `SELECT id, name, redirect_uris, secret_hash, created_at FROM oauth_clients WHERE id = $1`, id).
		Scan(&c.ID, &c.Name, &uris, &c.SecretHash, &c.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, storerules.NotFound("OAuth client", id)
	}
	if err != nil {
		return nil, mapErr(err)
	}
	if err := json.Unmarshal(uris, &c.RedirectURIs); err != nil {
		return nil, err
	}
	c.CreatedAt = utc(c.CreatedAt)
	return &c, nil
}

// PutOAuthToken stores a token. Returns INVALID_ARGUMENT.
func (d *DB) PutOAuthToken(ctx context.Context, t *duet.OAuthToken) error {
	if t.Hash == "" || t.Kind == "" || t.ExpiresAt.IsZero() {
		return duet.Errorf(duet.CodeInvalidArgument, "a token needs a hash, a kind and an expiry")
	}
	if t.CreatedAt.IsZero() {
		t.CreatedAt = d.now()
	}
	if t.Data == "" {
		t.Data = "{}"
	}
	t.CreatedAt, t.ExpiresAt = ts(t.CreatedAt), ts(t.ExpiresAt)
	_, err := d.pool.Exec(ctx, `INSERT INTO oauth_tokens (hash, kind, grant_id, client_id, user_id, scope, data, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
		t.Hash, string(t.Kind), t.GrantID, t.ClientID, t.UserID, t.Scope, t.Data, t.CreatedAt, t.ExpiresAt)
	if err == nil && t.Kind == duet.OAuthAccess && t.ClientID != "" {
		_, err = d.pool.Exec(ctx, `UPDATE oauth_clients SET last_used_at = $1 WHERE id = $2`, t.CreatedAt, t.ClientID)
	}
	return mapErr(err)
}

// FindOAuthToken returns the unexpired, unused token of that kind and hash.
// Returns UNAUTHENTICATED.
func (d *DB) FindOAuthToken(ctx context.Context, kind duet.OAuthTokenKind, hash string) (*duet.OAuthToken, error) {
	t, err := storerules.ScanOAuthToken(d.pool.QueryRow(ctx, `SELECT `+storerules.OAuthTokenColumns+` FROM oauth_tokens WHERE hash = $1 AND kind = $2 AND expires_at > $3 AND used_at IS NULL`,
		hash, string(kind), ts(d.now())))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, storerules.InvalidOAuthToken()
	}
	return t, mapErr(err)
}

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
