package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/storerules"
)

// CreateOAuthClient stores a registered client. Returns INVALID_ARGUMENT.
func (d *DB) CreateOAuthClient(ctx context.Context, c *duet.OAuthClient) error {
	uris, err := storerules.CheckOAuthClient(c, d.now())
	if err != nil {
		return err
	}
	_, err = d.q.ExecContext(ctx, `INSERT INTO oauth_clients (id, name, redirect_uris, secret_hash, created_at) VALUES (?, ?, ?, ?, ?)`,
		c.ID, c.Name, uris, c.SecretHash, micros(c.CreatedAt))
	return mapErr(err)
}

// FindOAuthClient returns a registered client. Returns NOT_FOUND.
func (d *DB) FindOAuthClient(ctx context.Context, id string) (*duet.OAuthClient, error) {
	var c duet.OAuthClient
	var uris string
	var created int64
	err := d.q.QueryRowContext(ctx, `SELECT id, name, redirect_uris, secret_hash, created_at FROM oauth_clients WHERE id = ?`, id).
		Scan(&c.ID, &c.Name, &uris, &c.SecretHash, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, storerules.NotFound("OAuth client", id)
	}
	if err != nil {
		return nil, mapErr(err)
	}
	if err := json.Unmarshal([]byte(uris), &c.RedirectURIs); err != nil {
		return nil, err
	}
	c.CreatedAt = fromMicros(created)
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
	_, err := d.q.ExecContext(ctx, `INSERT INTO oauth_tokens (hash, kind, grant_id, client_id, user_id, scope, data, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		t.Hash, string(t.Kind), t.GrantID, t.ClientID, t.UserID, t.Scope, t.Data, micros(t.CreatedAt), micros(t.ExpiresAt))
	if err == nil && t.Kind == duet.OAuthAccess && t.ClientID != "" {
		_, err = d.q.ExecContext(ctx, `UPDATE oauth_clients SET last_used_at = ? WHERE id = ?`, micros(t.CreatedAt), t.ClientID)
	}
	return mapErr(err)
}

// FindOAuthToken returns the unexpired, unused token of that kind and hash.
// Returns UNAUTHENTICATED.
func (d *DB) FindOAuthToken(ctx context.Context, kind duet.OAuthTokenKind, hash string) (*duet.OAuthToken, error) {
	t, err := storerules.ScanOAuthToken(d.q.QueryRowContext(ctx, `SELECT `+storerules.OAuthTokenColumns+` FROM oauth_tokens WHERE hash = ? AND kind = ? AND expires_at > ? AND used_at IS NULL`,
		hash, string(kind), micros(d.now())))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, storerules.InvalidOAuthToken()
	}
	return t, mapErr(err)
}

// UseOAuthToken marks a single-use token used and returns it. Returns
// CONFLICT (with the token) when it was used before, UNAUTHENTICATED when
// there is none.
func (d *DB) UseOAuthToken(ctx context.Context, kind duet.OAuthTokenKind, hash string) (*duet.OAuthToken, error) {
	var out *duet.OAuthToken
	var reused bool
	now := d.now()
	err := d.tx(ctx, func(tx *sql.Tx) error {
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
