package oauthclient

import (
	"strconv"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/duet-test/duet"
)

// Secret is the OAuth part of a sealed credential: the configuration
// given at registration, and the token obtained since.
type Secret struct {
	Grant        string   `json:"grant"`
	ClientID     string   `json:"clientId,omitempty"`
	ClientSecret string   `json:"clientSecret,omitempty"`
	PrivateKey   string   `json:"privateKey,omitempty"`
	MetadataURL  string   `json:"metadataUrl,omitempty"`
	Scopes       []string `json:"scopes,omitempty"`
	// Issuer is the authorization server the client is bound to: given at
	// registration, or pinned at the first authorization of a
	// pre-registered client. Its credentials go to no other.
	Issuer string `json:"issuer,omitempty"`
	// Enterprise-managed authorization (SEP-990).
	IdPIssuer       string `json:"idpIssuer,omitempty"`
	IdPClientID     string `json:"idpClientId,omitempty"`
	IdPClientSecret string `json:"idpClientSecret,omitempty"`
	IDToken         string `json:"idToken,omitempty"`

	Token *Token `json:"token,omitempty"`
	// DPoPKey is the key (PKCS #8, base64) the tokens of a server that
	// requires DPoP are bound to (dpop.go); made at the first such
	// authorization.
	DPoPKey string `json:"DPoPKey,omitempty"`
	// Want are scopes a server asked for since the last authorization; the
	// next Login requests them.
	Want []string `json:"want,omitempty"`
}

// holdsSecret reports whether the registration has a credential of its own
// at the server's authorization server (a client secret or a private key).
func (sec *Secret) holdsSecret() bool {
	return sec.ClientSecret != "" || sec.PrivateKey != ""
}

// checkBound refuses to use a client secret or key bound to no issuer (one
// stored before Duet required the issuer with it): it is sent nowhere.
func (sec *Secret) checkBound() error {
	if sec.holdsSecret() && sec.Issuer == "" {
		return &unboundSecret{}
	}
	return nil
}

// mayReceive refuses a token request to t's token endpoint that the
// client's binding forbids: the registration's own secret or key goes only
// to the token endpoint of its bound issuer, and no request goes to an
// issuer other than the bound one.
func (sec *Secret) mayReceive(t *Token) error {
	if sec.holdsSecret() && t.ClientID == sec.ClientID {
		if err := sec.checkBound(); err != nil {
			return err
		}
		return checkIssuer(sec.Issuer, t.Issuer)
	}
	if t.Issuer == "" {
		return nil
	}
	return checkIssuer(sec.Issuer, t.Issuer)
}

// Token is an access token with what is needed to renew it.
type Token struct {
	Access   string    `json:"access"`
	Type     string    `json:"type,omitempty"`
	Refresh  string    `json:"refresh,omitempty"`
	Expiry   time.Time `json:"expiry,omitzero"`
	Scopes   []string  `json:"scopes,omitempty"` // granted
	Obtained time.Time `json:"obtained"`

	// The client and token endpoint it came from.
	ClientID     string `json:"clientId,omitempty"`
	ClientSecret string `json:"clientSecret,omitempty"` // a dynamically registered client's
	TokenURL     string `json:"tokenUrl"`
	AuthStyle    int    `json:"authStyle,omitempty"` // oauth2.AuthStyle
	Issuer       string `json:"issuer,omitempty"`
	Resource     string `json:"resource,omitempty"` // RFC 8707
}

// renewBefore is how long before its expiry a token is renewed (a quarter
// of its lifetime when that is shorter).
const renewBefore = 30 * time.Second

func (t *Token) expiring(now time.Time) bool {
	if t.Expiry.IsZero() {
		return false
	}
	lead := min(renewBefore, t.Expiry.Sub(t.Obtained)/4)
	return now.Add(lead).After(t.Expiry)
}

func (t *Token) oauth2() *oauth2.Token {
	return &oauth2.Token{AccessToken: t.Access, TokenType: "Bearer", RefreshToken: t.Refresh, Expiry: t.Expiry}
}

// endpoint returns a copy of t without the token itself.
func (t *Token) endpoint() *Token {
	return &Token{ClientID: t.ClientID, ClientSecret: t.ClientSecret, TokenURL: t.TokenURL, AuthStyle: t.AuthStyle,
		Issuer: t.Issuer, Resource: t.Resource}
}

// fill sets the token fields of t from a token endpoint's answer, received
// at now; requested are the scopes asked for (granted when the answer names
// none).
func (t *Token) fill(tok *oauth2.Token, requested []string, now time.Time) *Token {
	t.Access, t.Type, t.Refresh = tok.AccessToken, tok.TokenType, tok.RefreshToken
	t.Obtained = now.UTC()
	t.Expiry = expiryOf(tok, t.Obtained)
	t.Scopes = requested
	if s, ok := tok.Extra("scope").(string); ok {
		t.Scopes = boundScopes(strings.Fields(s))
	}
	return t
}

// expiryOf is when tok, received at now, expires: now plus its expires_in
// (on the client's clock, not the one golang.org/x/oauth2 read), or the
// expiry oauth2 computed when the answer's expires_in cannot be read; zero
// when it names none.
func expiryOf(tok *oauth2.Token, now time.Time) time.Time {
	var secs float64
	switch v := tok.Extra("expires_in").(type) {
	case float64:
		secs = v
	case int64: // a form-encoded answer
		secs = float64(v)
	case string:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return tok.Expiry
		}
		secs = float64(n)
	default:
		return tok.Expiry
	}
	if secs <= 0 {
		return time.Time{}
	}
	return now.Add(time.Duration(secs) * time.Second)
}

// Status describes the OAuth authorization of a registration, without
// any secret.
type Status struct {
	Auth       string     `json:"auth"`
	Authorized bool       `json:"authorized"`
	Scopes     []string   `json:"scopes,omitempty"`   // granted
	Obtained   *time.Time `json:"obtained,omitempty"` // when the token was obtained
	Expires    *time.Time `json:"expires,omitempty"`
	Renewable  bool       `json:"renewable"`          // a refresh token, or the client credentials grant
	ClientID   string     `json:"clientId,omitempty"` // the OAuth client Duet is at the authorization server
	// Issuer is the authorization server the client is bound to (given at
	// registration or pinned at the first authorization); "" when unbound.
	Issuer string   `json:"issuer,omitempty"`
	Wanted []string `json:"wantedScopes,omitempty"`
}

// Status returns the status of sec.
func (sec *Secret) Status() *Status {
	s := &Status{Auth: sec.Grant, Wanted: sec.Want, ClientID: sec.ClientID, Issuer: sec.Issuer}
	if sec.MetadataURL != "" && s.ClientID == "" {
		s.ClientID = sec.MetadataURL
	}
	if t := sec.Token; t != nil {
		s.Authorized, s.Scopes, s.ClientID = true, t.Scopes, t.ClientID
		s.Renewable = t.Refresh != "" || sec.Grant == duet.AuthClientCredentials
		obtained := t.Obtained
		s.Obtained = &obtained
		if !t.Expiry.IsZero() {
			exp := t.Expiry.UTC()
			s.Expires = &exp
		}
	}
	return s
}

// Values returns every secret value sec holds — the client secret, the
// private key, the identity provider's client secret and the person's ID
// token, the DPoP key and the tokens — for scrubbing them from what is
// shown.
func (sec *Secret) Values() []string {
	out := []string{sec.ClientSecret, sec.PrivateKey, sec.IdPClientSecret, sec.IDToken, sec.DPoPKey}
	if t := sec.Token; t != nil {
		out = append(out, t.Access, t.Refresh, t.ClientSecret)
	}
	return out
}
