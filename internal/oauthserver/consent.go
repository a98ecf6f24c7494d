package oauthserver

import (
	"net/http"
	"time"

	"github.com/duet-test/duet"
)

// consent records the person's answer and, if they allowed it, sends the
// client its code.
func (s *Server) consent(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := r.ParseForm(); err != nil {
		s.page(w, http.StatusBadRequest, "Bad request", "")
		return
	}
	tok, req, ok := s.useSignIn(w, r, duet.OAuthConsent, r.PostForm.Get("consent"))
	if !ok {
		return
	}
	ev := eventOf(r.Context())
	ev.user, ev.client = tok.UserID, req.ClientID
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: "/oauth/", MaxAge: -1})
	if r.PostForm.Get("action") != "allow" {
		s.back(w, r, req, "access_denied", "the person did not allow access")
		return
	}
	code := newSecret("")
	if err := s.put(r.Context(), duet.OAuthCode, code, req, duet.NewID("grant"), tok.UserID, time.Minute); err != nil {
		s.page(w, http.StatusServiceUnavailable, "Duet cannot finish the sign-in", duet.ErrorMessage(err))
		return
	}
	s.redirect(w, r, req, "code", code)
}
