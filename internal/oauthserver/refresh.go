package oauthserver

import (
	"context"
	"net/http"
	"slices"
	"strings"

	"github.com/duet-test/duet"
)

// refreshGrant rotates a refresh token (OAuth 2.1 §4.3.1). A refused
// request — another client's token, a scope or a resource the grant does
// not have — leaves the refresh token as it was, so the client's next
// ordinary refresh works. The rotation happens only on success: the new
// tokens are stored first, then the old refresh token is spent, once
// however many requests race; a token spent already is a replay, which
// revokes the whole sign-in (with anything just issued for it).
func (s *Server) refreshGrant(r *http.Request, c *client) (*tokenResponse, error) {
	ctx := r.Context()
	h := hash(r.PostForm.Get("refresh_token"))
	tok, err := s.o.Store.FindOAuthToken(ctx, duet.OAuthRefresh, h)
	if duet.ErrorCode(err) == duet.CodeUnauthenticated {
		// Unknown, expired, or spent already: spending it tells which.
		return nil, s.spendRefresh(ctx, h)
	}
	if err != nil {
		return nil, err
	}
	if tok.ClientID != c.ID {
		return nil, errf(http.StatusBadRequest, "invalid_grant", "the refresh token was issued to another client")
	}
	if !s.resourcesOK(r.PostForm["resource"]) {
		return nil, errf(http.StatusBadRequest, "invalid_target", "the resource is not Duet's MCP endpoint")
	}
	scope := tok.Scope
	if want := r.PostForm.Get("scope"); want != "" {
		var narrowed []string
		for _, sc := range strings.Fields(want) {
			if !slices.Contains(strings.Fields(tok.Scope), sc) {
				return nil, errf(http.StatusBadRequest, "invalid_scope", "a refresh cannot add scope %.60q", sc)
			}
			narrowed = append(narrowed, sc)
		}
		scope = strings.Join(narrowed, " ")
	}
	resp, err := s.issue(ctx, tok.GrantID, c.ID, tok.UserID, scope, true)
	if err != nil {
		return nil, err // the refresh token is not spent: the client may try again
	}
	if err := s.spendRefresh(ctx, h); err != nil {
		return nil, err // what was just issued is revoked with the grant, or never handed out
	}
	return resp, nil
}

// spendRefresh marks the refresh token of hash h used. One used before is a
// replay after rotation: it leaked, and the sign-in it belongs to is
// revoked. Returns invalid_grant when the token cannot be spent.
func (s *Server) spendRefresh(ctx context.Context, h string) error {
	tok, err := s.o.Store.UseOAuthToken(ctx, duet.OAuthRefresh, h)
	switch {
	case err == nil:
		return nil
	case duet.ErrorCode(err) == duet.CodeConflict && tok != nil:
		s.o.Store.RevokeOAuthGrant(ctx, tok.GrantID)
		s.o.Logger.WarnContext(ctx, "oauth: a refresh token was used twice; its grant is revoked", "client", tok.ClientID, "user", tok.UserID)
		return errf(http.StatusBadRequest, "invalid_grant", "the refresh token was already used")
	case duet.ErrorCode(err) == duet.CodeUnauthenticated:
		return errf(http.StatusBadRequest, "invalid_grant", "invalid or expired refresh token")
	}
	return err
}
