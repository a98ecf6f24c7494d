package oauthserver

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/auth"
)

type tokenResponse struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int64  `json:"expires_in"`
	RefreshToken string `json:"refresh_token,omitempty"`
	Scope        string `json:"scope"`
}

// clientRequest reads a client's form request to the token or revocation
// endpoint — at most limit bytes, every parameter once — and authenticates
// the client. On failure it has answered and returns false.
func (s *Server) clientRequest(w http.ResponseWriter, r *http.Request, limit int64) (*client, bool) {
	r.Body = http.MaxBytesReader(w, r.Body, limit)
	if err := r.ParseForm(); err != nil {
		s.fail(w, r, errf(http.StatusBadRequest, "invalid_request", "the body must be a form"))
		return nil, false
	}
	if err := once(r.PostForm); err != nil {
		s.fail(w, r, err)
		return nil, false
	}
	c, err := s.authenticateClient(r.Context(), r)
	if err != nil {
		s.fail(w, r, err)
		return nil, false
	}
	eventOf(r.Context()).client = c.ID
	return c, true
}

func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	c, ok := s.clientRequest(w, r, 64<<10)
	if !ok {
		return
	}
	var resp *tokenResponse
	var err error
	g := r.PostForm.Get("grant_type")
	switch g {
	case "authorization_code", "refresh_token", GrantJWTBearer:
		eventOf(r.Context()).grant = g
	}
	switch g {
	case "authorization_code":
		resp, err = s.codeGrant(r, c)
	case "refresh_token":
		resp, err = s.refreshGrant(r, c)
	case GrantJWTBearer:
		resp, err = s.assertionGrant(r, c)
	default:
		err = errf(http.StatusBadRequest, "unsupported_grant_type", "grant_type %.60q is not supported", g)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

func (s *Server) codeGrant(r *http.Request, c *client) (*tokenResponse, error) {
	ctx := r.Context()
	tok, err := s.o.Store.UseOAuthToken(ctx, duet.OAuthCode, hash(r.PostForm.Get("code")))
	if duet.ErrorCode(err) == duet.CodeConflict && tok != nil {
		// A code used twice leaked: whatever it bought is revoked.
		s.o.Store.RevokeOAuthGrant(ctx, tok.GrantID)
		s.o.Logger.WarnContext(ctx, "oauth: an authorization code was used twice; its grant is revoked", "client", tok.ClientID, "user", tok.UserID)
		return nil, errf(http.StatusBadRequest, "invalid_grant", "the code was already used")
	}
	if err != nil {
		return nil, errf(http.StatusBadRequest, "invalid_grant", "invalid or expired code")
	}
	var req request
	if err := json.Unmarshal([]byte(tok.Data), &req); err != nil {
		return nil, err
	}
	if tok.ClientID != c.ID {
		return nil, errf(http.StatusBadRequest, "invalid_grant", "the code was issued to another client")
	}
	if r.PostForm.Get("redirect_uri") != "" && r.PostForm.Get("redirect_uri") != req.RedirectURI {
		return nil, errf(http.StatusBadRequest, "invalid_grant", "redirect_uri does not match the authorization request")
	}
	verifier := r.PostForm.Get("code_verifier")
	sum := sha256.Sum256([]byte(verifier))
	if verifier == "" || subtle.ConstantTimeCompare([]byte(base64.RawURLEncoding.EncodeToString(sum[:])), []byte(req.CodeChallenge)) != 1 {
		return nil, errf(http.StatusBadRequest, "invalid_grant", "code_verifier does not match the code_challenge")
	}
	if !s.resourcesOK(r.PostForm["resource"]) {
		return nil, errf(http.StatusBadRequest, "invalid_target", "the resource is not Duet's MCP endpoint")
	}
	return s.issue(ctx, tok.GrantID, c.ID, tok.UserID, tok.Scope, true)
}

// issue stores and returns a new access token (and refresh token) of a
// grant.
func (s *Server) issue(ctx context.Context, grant, clientID, user, scope string, refresh bool) (*tokenResponse, error) {
	eventOf(ctx).user = user
	now := s.o.Now()
	at := newSecret(auth.AccessTokenPrefix)
	if err := s.o.Store.PutOAuthToken(ctx, &duet.OAuthToken{Hash: hash(at), Kind: duet.OAuthAccess, GrantID: grant, ClientID: clientID,
		UserID: user, Scope: scope, CreatedAt: now, ExpiresAt: now.Add(s.o.AccessTTL)}); err != nil {
		return nil, err
	}
	resp := &tokenResponse{AccessToken: at, TokenType: "Bearer", ExpiresIn: int64(s.o.AccessTTL / time.Second), Scope: scope}
	if refresh {
		rt := newSecret(auth.RefreshTokenPrefix)
		if err := s.o.Store.PutOAuthToken(ctx, &duet.OAuthToken{Hash: hash(rt), Kind: duet.OAuthRefresh, GrantID: grant, ClientID: clientID,
			UserID: user, Scope: scope, CreatedAt: now, ExpiresAt: now.Add(s.o.RefreshTTL)}); err != nil {
			return nil, err
		}
		resp.RefreshToken = rt
	}
	return resp, nil
}
