package oauthclient

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	duetauth "github.com/duet-test/duet/internal/auth"
	"github.com/duet-test/duet/internal/escape"
)

// tokenRequest asks t's token endpoint for a token: the client credentials
// grant unless params name another grant_type. The resource (RFC 8707) is
// always sent; a private key signs a client assertion. A client bound to an
// issuer sends nothing to a token endpoint of another.
func (st *Handler) tokenRequest(ctx context.Context, sec *Secret, t *Token, scopes []string, params url.Values) (*oauth2.Token, error) {
	if err := sec.mayReceive(t); err != nil {
		return nil, err
	}
	if params == nil {
		params = url.Values{}
	}
	if t.Resource != "" {
		params.Set("resource", t.Resource)
	}
	cfg := clientcredentials.Config{ClientID: t.ClientID, ClientSecret: t.ClientSecret, TokenURL: t.TokenURL,
		Scopes: scopes, AuthStyle: oauth2.AuthStyle(t.AuthStyle), EndpointParams: params}
	if sec.PrivateKey != "" && t.ClientID == sec.ClientID {
		key, err := parseClientKey(sec.PrivateKey)
		if err != nil {
			return nil, err
		}
		aud := t.Issuer
		if aud == "" {
			aud = t.TokenURL
		}
		a, err := key.assertion(t.ClientID, aud, st.o.Now())
		if err != nil {
			return nil, err
		}
		params.Set("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
		params.Set("client_assertion", a)
		cfg.ClientSecret, cfg.AuthStyle = "", oauth2.AuthStyleInParams
	}
	return cfg.Token(context.WithValue(ctx, oauth2.HTTPClient, st.o.HTTP))
}

// sdkIssuerMismatch is how the go-sdk says a pre-registered client's issuer
// differs from the authorization server it discovered.
const sdkIssuerMismatch = "does not match pre-registered credentials issuer"

// authorizationCode runs the authorization code flow with PKCE through the
// go-sdk's handler: discovery, client registration (a client ID metadata
// document, the pre-registered client, or dynamic registration, in that
// order), the person's consent through a, and the code exchange. extra are
// scopes requested besides the ones the server asks for. A pre-registered
// client (or a registration bound to an issuer) first finds the
// authorization server the server names and refuses one other than the
// client's issuer before anything is sent to it.
func (st *Handler) authorizationCode(ctx context.Context, a *Authorizer, req *http.Request, resp *http.Response, challenges []oauthex.Challenge, extra []string) (*Token, error) {
	sec := st.secret()
	var issuer string
	if sec.ClientID != "" || sec.Issuer != "" {
		_, asm, err := st.boundServer(ctx, &sec, challenges, req.URL.String())
		if err != nil {
			return nil, err
		}
		issuer = asm.Issuer
	}
	flow := &codeFlow{st: st, a: a, sec: &sec, issuer: issuer, extra: extra}
	h, err := auth.NewAuthorizationCodeHandler(flow.config())
	if err != nil {
		return nil, err
	}
	if err := h.Authorize(ctx, req, resp); err != nil {
		if strings.Contains(err.Error(), sdkIssuerMismatch) {
			return nil, &issuerMismatch{bound: issuer}
		}
		return nil, err
	}
	if flow.got == nil {
		return nil, errors.New("the authorization ended without a token")
	}
	return flow.got, nil
}

// codeFlow is one authorization code flow of the go-sdk's handler: what it
// is configured with, and what it brings back.
type codeFlow struct {
	st     *Handler
	a      *Authorizer
	sec    *Secret
	issuer string   // the bound issuer checked, or ""
	extra  []string // scopes requested besides the server's

	resource string // the resource the authorization named
	got      *Token
}

// config is the go-sdk handler's configuration for f.
func (f *codeFlow) config() *auth.AuthorizationCodeHandlerConfig {
	cfg := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL: f.a.RedirectURL,
		AuthorizationCodeFetcher: func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			if u, err := url.Parse(args.URL); err == nil {
				f.resource = u.Query().Get("resource")
			}
			return f.a.Fetch(ctx, args)
		},
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{Metadata: registrationMetadata(f.a.RedirectURL)},
		ScopeFilter: func(discovered []string) []string {
			// What a resource's metadata lists is bounded; a challenge's
			// scopes were checked.
			return union(union(boundScopes(discovered), f.sec.Scopes), f.extra)
		},
		RequestRefreshToken: true,
		// A matching iss (RFC 9207) is accepted even when the metadata
		// does not advertise it; a different one is always refused.
		AcceptUnadvertisedIss: true,
		Client:                f.st.o.HTTP,
		NewTokenSource: func(_ context.Context, cfg *oauth2.Config, tok *oauth2.Token) (oauth2.TokenSource, error) {
			f.got = (&Token{ClientID: cfg.ClientID, ClientSecret: cfg.ClientSecret, TokenURL: cfg.Endpoint.TokenURL,
				AuthStyle: int(cfg.Endpoint.AuthStyle), Resource: f.resource, Issuer: f.issuer}).fill(tok, cfg.Scopes, f.st.o.Now())
			return oauth2.StaticTokenSource(tok), nil
		},
	}
	if f.sec.MetadataURL != "" {
		cfg.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: f.sec.MetadataURL}
	}
	if f.sec.ClientID != "" {
		// Bound to the issuer checked before: the go-sdk refuses another
		// one it might discover in the meantime.
		cfg.PreregisteredClient = &oauthex.ClientCredentials{ClientID: f.sec.ClientID, Issuer: f.issuer}
		if f.sec.ClientSecret != "" {
			cfg.PreregisteredClient.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: f.sec.ClientSecret}
		}
	}
	return cfg
}

// secret returns a copy of the state.
func (st *Handler) secret() Secret {
	st.mu.Lock()
	defer st.mu.Unlock()
	return *st.sec
}

// boundServer finds the authorization server the MCP endpoint resourceURL
// names now (its protected resource metadata, and the authorization
// server's) and refuses it when it is not the issuer sec is bound to.
func (st *Handler) boundServer(ctx context.Context, sec *Secret, challenges []oauthex.Challenge, resourceURL string) (*oauthex.ProtectedResourceMetadata, *oauthex.AuthServerMeta, error) {
	prm, asm, err := discoverAuthServer(ctx, st.o.HTTP, challenges, resourceURL)
	if err != nil {
		return nil, nil, err
	}
	if err := checkIssuer(sec.Issuer, asm.Issuer); err != nil {
		return nil, nil, err
	}
	return prm, asm, nil
}

// grantScopes are the scopes a grant asks for: scopes (the resource's
// scopes_supported when none) and the registered ones.
func grantScopes(sec *Secret, prm *oauthex.ProtectedResourceMetadata, scopes []string) []string {
	if len(scopes) == 0 {
		scopes = boundScopes(prm.ScopesSupported)
	}
	return union(scopes, sec.Scopes)
}

// clientCredentials runs the client credentials grant (SEP-1046): discovery,
// then the token request with the client's secret or a signed assertion,
// asking for scopes (or the resource's scopes_supported when none). The
// client is bound to its issuer: another authorization server gets nothing.
func (st *Handler) clientCredentials(ctx context.Context, resourceURL string, challenges []oauthex.Challenge, scopes []string) (*Token, error) {
	sec := st.secret()
	prm, asm, err := st.boundServer(ctx, &sec, challenges, resourceURL)
	if err != nil {
		return nil, err
	}
	scopes = grantScopes(&sec, prm, scopes)
	t := &Token{ClientID: sec.ClientID, ClientSecret: sec.ClientSecret, TokenURL: asm.TokenEndpoint, Issuer: asm.Issuer, Resource: prm.Resource}
	if sec.PrivateKey != "" {
		if err := keyAccepted(asm, sec.PrivateKey); err != nil {
			return nil, err
		}
	} else {
		t.AuthStyle = int(secretAuthStyle(asm.TokenEndpointAuthMethodsSupported))
	}
	tok, err := st.tokenRequest(ctx, &sec, t, scopes, nil)
	if err != nil {
		return nil, err
	}
	return t.fill(tok, scopes, st.o.Now()), nil
}

// keyAccepted refuses a client assertion signed with the private key
// keyPEM that the authorization server asm says it does not accept.
func keyAccepted(asm *oauthex.AuthServerMeta, keyPEM string) error {
	if methods := asm.TokenEndpointAuthMethodsSupported; len(methods) > 0 && !slices.Contains(methods, "private_key_jwt") {
		return fmt.Errorf("the authorization server does not accept private_key_jwt client authentication (it accepts %s)", escape.Line(strings.Join(methods, ", "), 200))
	}
	key, err := parseClientKey(keyPEM)
	if err != nil {
		return err
	}
	if algs := asm.TokenEndpointAuthSigningAlgValuesSupported; len(algs) > 0 && !slices.Contains(algs, key.alg) {
		return fmt.Errorf("the authorization server does not accept %s client assertions (it accepts %s)", key.alg, escape.Line(strings.Join(algs, ", "), 200))
	}
	return nil
}

// enterprise runs enterprise-managed authorization (SEP-990): discovery of
// the server's authorization server, the exchange of the person's ID token
// at the identity provider for an identity assertion (ID-JAG) for that
// authorization server and resource (RFC 8693), then the JWT bearer grant
// (RFC 7523) there with the client's own credentials, sent the way the
// server accepts them. The client is bound to its issuer like any
// pre-registered client.
func (st *Handler) enterprise(ctx context.Context, resourceURL string, challenges []oauthex.Challenge, scopes []string) (*Token, error) {
	sec := st.secret()
	prm, asm, err := st.boundServer(ctx, &sec, challenges, resourceURL)
	if err != nil {
		return nil, err
	}
	scopes = grantScopes(&sec, prm, scopes)
	jag, err := st.identityAssertion(ctx, &sec, asm.Issuer, prm.Resource, scopes)
	if err != nil {
		return nil, err
	}
	t := &Token{ClientID: sec.ClientID, ClientSecret: sec.ClientSecret, TokenURL: asm.TokenEndpoint, Issuer: asm.Issuer, Resource: prm.Resource,
		AuthStyle: int(secretAuthStyle(asm.TokenEndpointAuthMethodsSupported))}
	params := url.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:jwt-bearer"}, "assertion": {jag}}
	tok, err := st.tokenRequest(ctx, &sec, t, scopes, params)
	if err != nil {
		return nil, err
	}
	return t.fill(tok, scopes, st.o.Now()), nil
}

// identityAssertion exchanges the person's ID token at the identity
// provider for an identity assertion (ID-JAG) for the authorization server
// audience and resource (RFC 8693).
func (st *Handler) identityAssertion(ctx context.Context, sec *Secret, audience, resource string, scopes []string) (string, error) {
	// The identity provider's token endpoint (it need not do PKCE: only the
	// token exchange is asked of it).
	idp, err := duetauth.DiscoverMetadata(ctx, sec.IdPIssuer, st.o.HTTP)
	if err != nil || idp == nil || idp.TokenEndpoint == "" {
		return "", fmt.Errorf("the identity provider %s publishes no usable metadata", escape.Line(sec.IdPIssuer, 200))
	}
	creds := &oauthex.ClientCredentials{ClientID: sec.IdPClientID}
	if sec.IdPClientSecret != "" {
		creds.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: sec.IdPClientSecret}
	}
	jag, err := oauthex.ExchangeToken(ctx, idp.TokenEndpoint, &oauthex.TokenExchangeRequest{
		RequestedTokenType: oauthex.TokenTypeIDJAG, Audience: audience, Resource: resource, Scope: scopes,
		SubjectToken: sec.IDToken, SubjectTokenType: oauthex.TokenTypeIDToken,
	}, creds, st.o.HTTP)
	if err != nil {
		return "", fmt.Errorf("the identity provider refused to exchange the ID token for an identity assertion: %w", err)
	}
	return jag.AccessToken, nil
}

// secretAuthStyle picks how a client secret is sent to the token endpoint:
// in the body when the server prefers it, with HTTP Basic when that is all
// it accepts, and by trying both when it does not say.
func secretAuthStyle(methods []string) oauth2.AuthStyle {
	switch {
	case slices.Contains(methods, "client_secret_post"):
		return oauth2.AuthStyleInParams
	case slices.Contains(methods, "client_secret_basic"):
		return oauth2.AuthStyleInHeader
	}
	return oauth2.AuthStyleAutoDetect
}
