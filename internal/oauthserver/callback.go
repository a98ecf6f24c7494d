package oauthserver

import (
	"context"
	"errors"
	"net/http"
	"time"

	"golang.org/x/oauth2"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/auth"
)

// callback is where the identity provider sends the person back: Duet
// redeems the code, verifies the ID token, and shows the consent screen.
func (s *Server) callback(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	_, req, ok := s.useSignIn(w, r, duet.OAuthLogin, q.Get("state"))
	if !ok {
		return
	}
	if e := q.Get("error"); e != "" {
		s.back(w, r, req, "access_denied", "the sign-in at the identity provider did not complete")
		return
	}
	meta, err := s.o.Provider.Metadata(r.Context())
	if err != nil {
		s.page(w, http.StatusServiceUnavailable, "The sign-in service cannot be reached", duet.ErrorMessage(err))
		return
	}
	ctx := context.WithValue(r.Context(), oauth2.HTTPClient, s.o.ProviderClient)
	t, err := s.loginConfig(meta).Exchange(ctx, q.Get("code"), oauth2.VerifierOption(req.Verifier))
	if err != nil {
		s.o.Logger.WarnContext(r.Context(), "oauth login: code exchange at the identity provider failed", "err", err)
		s.page(w, http.StatusBadGateway, "The identity provider refused the sign-in", "Start again from your application.")
		return
	}
	idt, _ := t.Extra("id_token").(string)
	claims, err := s.o.Provider.Verify(r.Context(), idt, auth.Expect{Audience: s.o.ClientID})
	if err == nil && claims.String("nonce") != req.Nonce {
		err = errors.New("the ID token's nonce does not match")
	}
	if err != nil {
		s.o.Logger.WarnContext(r.Context(), "oauth login: ID token refused", "err", err)
		s.page(w, http.StatusBadGateway, "The identity provider's answer could not be verified", "Start again from your application.")
		return
	}
	eventOf(r.Context()).client = req.ClientID
	user, err := auth.UserFromClaims(claims, s.o.UserClaim)
	eventOf(r.Context()).user = user
	if err != nil {
		s.page(w, http.StatusForbidden, "Your account cannot use Duet", duet.ErrorMessage(err))
		return
	}
	consent := newSecret("")
	req.Nonce, req.Verifier = "", ""
	if err := s.put(r.Context(), duet.OAuthConsent, consent, req, "", user, 10*time.Minute); err != nil {
		s.page(w, http.StatusServiceUnavailable, "Duet cannot continue the sign-in", duet.ErrorMessage(err))
		return
	}
	s.consentPage(w, req, user, consent)
}
