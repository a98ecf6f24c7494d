package oauthserver

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/auth"
)

// assertionGrant is SEP-990's JWT bearer grant: the identity provider
// issued an ID-JAG for Duet naming the user and the client; Duet checks
// it and issues an access token.
func (s *Server) assertionGrant(r *http.Request, c *client) (*tokenResponse, error) {
	ctx := r.Context()
	claims, user, err := s.verifyAssertion(r, c)
	if err != nil {
		return nil, err
	}
	scope, err := s.assertionScope(claims, r.PostForm.Get("scope"))
	if err != nil {
		return nil, err
	}
	if err := s.spendAssertion(ctx, claims, c.ID, user); err != nil {
		return nil, err
	}
	return s.issue(ctx, duet.NewID("grant"), c.ID, user, scope, false)
}

// verifyAssertion checks the identity assertion of a JWT bearer grant
// request by the confidential client c: issued by the identity provider
// for Duet, to c, for Duet's resource. It returns its claims and user.
func (s *Server) verifyAssertion(r *http.Request, c *client) (*auth.Claims, string, error) {
	ctx := r.Context()
	if c.SecretHash == "" {
		return nil, "", errf(http.StatusUnauthorized, "invalid_client", "the JWT bearer grant needs an authenticated (confidential) client")
	}
	claims, err := s.o.Provider.Verify(ctx, r.PostForm.Get("assertion"), auth.Expect{Audience: s.o.Issuer, Types: []string{"oauth-id-jag+jwt"}})
	if duet.ErrorCode(err) == duet.CodeUnavailable {
		return nil, "", err
	}
	if err != nil {
		s.o.Logger.InfoContext(ctx, "oauth: identity assertion refused", "err", err)
		return nil, "", errf(http.StatusBadRequest, "invalid_grant", "the assertion is not an identity assertion for Duet from the identity provider")
	}
	if claims.String("client_id") != c.ID {
		return nil, "", errf(http.StatusBadRequest, "invalid_grant", "the assertion was issued to another client")
	}
	if res := claims.String("resource"); res != "" && !s.resourceOK(res) {
		return nil, "", errf(http.StatusBadRequest, "invalid_target", "the assertion is for another resource")
	}
	user, err := auth.UserFromClaims(claims, s.o.UserClaim)
	if err != nil {
		return nil, "", errf(http.StatusBadRequest, "invalid_grant", "%s", duet.ErrorMessage(err))
	}
	return claims, user, nil
}

// assertionScope is the scope an assertion with claims buys when the
// client asks for want: the provider's scope claim bounds it (none: any of
// Duet's scopes); the client may ask for less, never more.
func (s *Server) assertionScope(claims *auth.Claims, want string) (string, error) {
	scope, ok := s.scopeFor(strings.Join(claims.Scopes(), " ")) // scope, or scp as some providers write it
	if !ok {
		return "", errf(http.StatusBadRequest, "invalid_scope", "the assertion allows none of Duet's scopes (%s)", strings.Join(s.o.Scopes.All(), " "))
	}
	if want == "" {
		return scope, nil
	}
	allowed := strings.Fields(scope)
	for _, sc := range strings.Fields(want) {
		if slices.Contains(s.o.Scopes.All(), sc) && !slices.Contains(allowed, sc) {
			return "", errf(http.StatusBadRequest, "invalid_scope", "the assertion does not allow scope %.60q", sc)
		}
	}
	asked, ok := s.scopeFor(want)
	if !ok {
		return "", errf(http.StatusBadRequest, "invalid_scope", "Duet's scopes are %s", strings.Join(s.o.Scopes.All(), " "))
	}
	// What was asked, within what the assertion allows (asking for none of
	// Duet's scopes means all of them: all it allows).
	return strings.Join(slices.DeleteFunc(strings.Fields(asked), func(sc string) bool { return !slices.Contains(allowed, sc) }), " "), nil
}

// kindAssertion marks the record of an identity assertion already
// exchanged (its issuer and jti), kept until the assertion expires.
const kindAssertion duet.OAuthTokenKind = "assertion"

// spendAssertion records an identity assertion as used, once: an ID-JAG
// carries a jti (its unique id), and the same one presented again before
// it expires is refused (a leaked assertion is not a second sign-in).
func (s *Server) spendAssertion(ctx context.Context, claims *auth.Claims, clientID, user string) error {
	if claims.ID == "" || claims.Expiry == nil {
		return errf(http.StatusBadRequest, "invalid_grant", "the assertion has no jti")
	}
	now := s.o.Now()
	expires := claims.Expiry.Time().Add(time.Minute) // past the verifier's leeway
	if expires.Before(now.Add(time.Minute)) {
		expires = now.Add(time.Minute)
	}
	err := s.o.Store.PutOAuthToken(ctx, &duet.OAuthToken{Hash: hash("assertion:" + claims.Issuer + "\x00" + claims.ID), Kind: kindAssertion,
		ClientID: clientID, UserID: user, CreatedAt: now, ExpiresAt: expires})
	if duet.ErrorCode(err) == duet.CodeConflict {
		s.o.Logger.WarnContext(ctx, "oauth: an identity assertion was presented twice", "client", clientID, "user", user)
		return errf(http.StatusBadRequest, "invalid_grant", "the assertion was already used")
	}
	return err
}
