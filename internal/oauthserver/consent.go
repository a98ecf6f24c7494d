package oauthserver

import (
	"encoding/json"
	"net/http"
	"net/url"
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
	tok, err := s.o.Store.UseOAuthToken(r.Context(), duet.OAuthConsent, hash(r.PostForm.Get("consent")))
	if err != nil {
		s.page(w, http.StatusBadRequest, "This sign-in has expired", "Start again from your application.")
		return
	}
	var req request
	if err := json.Unmarshal([]byte(tok.Data), &req); err != nil || !browserOwns(r, req) {
		s.page(w, http.StatusBadRequest, "This sign-in was started in another browser", "Start again from your application, in this browser.")
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
	u, _ := url.Parse(req.RedirectURI)
	v := u.Query()
	v.Set("code", code)
	if req.State != "" {
		v.Set("state", req.State)
	}
	v.Set("iss", s.o.Issuer)
	u.RawQuery = v.Encode()
	http.Redirect(w, r, u.String(), http.StatusFound)
}
