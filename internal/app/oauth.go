package app

import (
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/duet-test/duet/internal/auth"
	"github.com/duet-test/duet/internal/netguard"
	"github.com/duet-test/duet/internal/oauthserver"
)

// initOAuth turns on OAuth access tokens for /mcp/http when the
// configuration names an identity provider, and Duet's own authorization
// server when DUET_OAUTH_SERVER is set (docs/governance.md).
func (a *App) initOAuth(guard *netguard.Policy) {
	cfg := a.Config
	if cfg.OAuthIssuer == "" {
		return
	}
	scopes := auth.Scopes{Read: cfg.OAuthScopeRead, Run: cfg.OAuthScopeRun}
	a.OAuthIssuer = auth.NewVerifier(auth.IssuerOptions{Issuer: cfg.OAuthIssuer})
	audience := cfg.OAuthAudience
	if audience == "" {
		audience = cfg.ResourceURL()
	}
	o := auth.OAuthOptions{Issuer: a.OAuthIssuer, Audience: audience, UserClaim: cfg.OAuthUserClaim, Scopes: scopes}
	authServer := cfg.OAuthIssuer
	if cfg.OAuthServer {
		o.Issued = a.Store
		a.OAuthServer = oauthserver.New(oauthserver.Options{
			Issuer: cfg.PublicURL, Resource: cfg.ResourceURL(), Store: a.Store, Provider: a.OAuthIssuer,
			ClientID: cfg.OAuthClientID, ClientSecret: cfg.OAuthClientSecret, LoginScopes: cfg.OAuthLoginScopes,
			UserClaim: cfg.OAuthUserClaim, Scopes: scopes, AccessTTL: cfg.OAuthTokenTTL, RefreshTTL: cfg.OAuthRefreshTTL,
			MetadataClient: guard.Client(), Logger: a.Logger, Audit: a.Catalog.Audit, MaxRegistrations: cfg.OAuthMaxRegistrations,
		})
		authServer = cfg.PublicURL
	}
	a.Auth.EnableOAuth(o)
	a.resourceMetadata = &oauthex.ProtectedResourceMetadata{
		Resource:               cfg.ResourceURL(),
		AuthorizationServers:   []string{authServer},
		ScopesSupported:        scopes.All(),
		BearerMethodsSupported: []string{"header"},
		ResourceName:           "Duet",
	}
}

// authServerHandler is Duet's authorization server as a handler (nil when
// it is off).
func (a *App) authServerHandler() http.Handler {
	if a.OAuthServer == nil {
		return nil
	}
	return a.OAuthServer
}

// AccessExpect is what an access token for this app must say (tests).
func AccessExpect(a *App) auth.Expect {
	return auth.Expect{Audience: a.Auth.OAuth().Audience, Types: []string{"", "jwt", "at+jwt"}}
}
