package oauthserver

import (
	"net/http"

	"github.com/duet-test/duet"
)

// revoke is token revocation (RFC 7009): revoking an access or refresh
// token revokes the whole sign-in (grant) it belongs to. An unknown token
// is not an error.
func (s *Server) revoke(w http.ResponseWriter, r *http.Request) {
	c, ok := s.clientRequest(w, r, 16<<10)
	if !ok {
		return
	}
	h := hash(r.PostForm.Get("token"))
	for _, kind := range []duet.OAuthTokenKind{duet.OAuthAccess, duet.OAuthRefresh} {
		tok, err := s.o.Store.FindOAuthToken(r.Context(), kind, h)
		if err != nil {
			continue
		}
		if tok.ClientID == c.ID {
			eventOf(r.Context()).user = tok.UserID
			if err := s.o.Store.RevokeOAuthGrant(r.Context(), tok.GrantID); err != nil {
				s.fail(w, r, err)
				return
			}
		}
		break
	}
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
}
