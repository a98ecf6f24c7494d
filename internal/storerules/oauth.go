package storerules

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"

	"github.com/duet-test/duet"
)

// OAuth is the part of duet.OAuthStore that is the same on every engine:
// clients and the tokens stored and read (the drivers use and delete them).
// Times are kept as the store keeps them (Stored), on both engines.
type OAuth struct{ E Engine }

// CreateOAuthClient stores a registered client. Returns INVALID_ARGUMENT.
func (s OAuth) CreateOAuthClient(ctx context.Context, c *duet.OAuthClient) error {
	uris, err := CheckOAuthClient(c, s.E.Now())
	if err != nil {
		return err
	}
	c.CreatedAt = Stored(c.CreatedAt)
	_, err = s.E.Exec(ctx, `INSERT INTO oauth_clients (id, name, redirect_uris, secret_hash, created_at) VALUES ($1, $2, $3, $4, $5)`,
		c.ID, c.Name, uris, c.SecretHash, s.E.Stored(c.CreatedAt))
	return err
}

// FindOAuthClient returns a registered client. Returns NOT_FOUND.
func (s OAuth) FindOAuthClient(ctx context.Context, id string) (*duet.OAuthClient, error) {
	var c duet.OAuthClient
	var uris []byte
	err := s.E.Read(ctx, []any{&c.ID, &c.Name, &uris, &c.SecretHash, TimeOf(&c.CreatedAt)},
		`SELECT id, name, redirect_uris, secret_hash, created_at FROM oauth_clients WHERE id = $1`, id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, NotFound("OAuth client", id)
	} else if err != nil {
		return nil, err
	}
	return scanned(&c, json.Unmarshal(uris, &c.RedirectURIs))
}

// PutOAuthToken stores a token. Returns INVALID_ARGUMENT.
func (s OAuth) PutOAuthToken(ctx context.Context, t *duet.OAuthToken) error {
	if t.Hash == "" || t.Kind == "" || t.ExpiresAt.IsZero() {
		return duet.Errorf(duet.CodeInvalidArgument, "a token needs a hash, a kind and an expiry")
	}
	if t.CreatedAt.IsZero() {
		t.CreatedAt = s.E.Now()
	}
	if t.Data == "" {
		t.Data = "{}"
	}
	t.CreatedAt, t.ExpiresAt = Stored(t.CreatedAt), Stored(t.ExpiresAt)
	_, err := s.E.Exec(ctx, `INSERT INTO oauth_tokens (hash, kind, grant_id, client_id, user_id, scope, data, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
		t.Hash, string(t.Kind), t.GrantID, t.ClientID, t.UserID, t.Scope, t.Data, s.E.Stored(t.CreatedAt), s.E.Stored(t.ExpiresAt))
	if err == nil && t.Kind == duet.OAuthAccess && t.ClientID != "" {
		_, err = s.E.Exec(ctx, `UPDATE oauth_clients SET last_used_at = $1 WHERE id = $2`, s.E.Stored(t.CreatedAt), t.ClientID)
	}
	return err
}

// FindOAuthToken returns the unexpired, unused token of that kind and hash.
// Returns UNAUTHENTICATED.
func (s OAuth) FindOAuthToken(ctx context.Context, kind duet.OAuthTokenKind, hash string) (*duet.OAuthToken, error) {
	t, err := One(ctx, s.E, ScanOAuthToken, `SELECT `+OAuthTokenColumns+` FROM oauth_tokens WHERE hash = $1 AND kind = $2 AND expires_at > $3 AND used_at IS NULL`,
		hash, string(kind), s.E.Stored(s.E.Now()))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, InvalidOAuthToken()
	}
	return t, err
}
