package oauthclient

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// discoverAuthServer finds the authorization server the MCP endpoint
// resourceURL names now: its protected resource metadata, then the
// authorization server's metadata (the fixed endpoints of 2025-03-26 when it
// has none).
func discoverAuthServer(ctx context.Context, hc *http.Client, challenges []oauthex.Challenge, resourceURL string) (*oauthex.ProtectedResourceMetadata, *oauthex.AuthServerMeta, error) {
	prm, err := discoverResource(ctx, hc, challenges, resourceURL)
	if err != nil {
		return nil, nil, err
	}
	asm, err := auth.GetAuthServerMetadata(ctx, prm.AuthorizationServers[0], hc)
	if err != nil {
		return nil, nil, fmt.Errorf("authorization server metadata: %w", err)
	}
	if asm == nil {
		// 2025-03-26: the endpoints are at fixed paths.
		as := strings.TrimSuffix(prm.AuthorizationServers[0], "/")
		asm = &oauthex.AuthServerMeta{Issuer: prm.AuthorizationServers[0], AuthorizationEndpoint: as + "/authorize",
			TokenEndpoint: as + "/token", RegistrationEndpoint: as + "/register"}
	}
	return prm, asm, nil
}

// discoverResource finds the protected resource metadata (RFC 9728) of the
// MCP endpoint resourceURL: at the URL the challenge names, then at the
// well-known path of the endpoint, then at the root. Without any, the
// server's origin is its authorization server (2025-03-26).
func discoverResource(ctx context.Context, hc *http.Client, challenges []oauthex.Challenge, resourceURL string) (*oauthex.ProtectedResourceMetadata, error) {
	type candidate struct{ url, resource string }
	var cands []candidate
	if u := challengeParam(challenges, "resource_metadata"); u != "" {
		cands = append(cands, candidate{u, resourceURL})
	}
	ru, err := url.Parse(resourceURL)
	if err != nil {
		return nil, err
	}
	mu := *ru
	mu.Path = "/.well-known/oauth-protected-resource/" + strings.TrimLeft(ru.Path, "/")
	cands = append(cands, candidate{mu.String(), resourceURL})
	mu.Path = "/.well-known/oauth-protected-resource"
	root := *ru
	root.Path, root.RawQuery = "", ""
	cands = append(cands, candidate{mu.String(), root.String()})
	for _, c := range cands {
		prm, err := oauthex.GetProtectedResourceMetadata(ctx, c.url, c.resource, hc)
		if err != nil || prm == nil {
			continue
		}
		if len(prm.AuthorizationServers) == 0 {
			return nil, errors.New("the protected resource metadata names no authorization server")
		}
		return prm, nil
	}
	return &oauthex.ProtectedResourceMetadata{AuthorizationServers: []string{root.String()}, Resource: resourceURL}, nil
}

func challengeParam(cs []oauthex.Challenge, name string) string {
	for _, c := range cs {
		if c.Scheme == "bearer" && c.Params[name] != "" {
			return c.Params[name]
		}
	}
	return ""
}

func challengeScopes(cs []oauthex.Challenge) []string {
	return strings.Fields(challengeParam(cs, "scope"))
}

func bearerOf(req *http.Request) string {
	scheme, tok, _ := strings.Cut(req.Header.Get("Authorization"), " ")
	if !strings.EqualFold(scheme, "bearer") {
		return ""
	}
	return strings.TrimSpace(tok)
}

// DiscoverIssuer returns the issuer of the authorization server the MCP
// endpoint resourceURL names now: its challenge (the WWW-Authenticate values
// of its answer without a token), its protected resource metadata, then the
// authorization server's metadata. It sends no credential. An address the
// guard refuses is a URL_REFUSED error.
func DiscoverIssuer(ctx context.Context, hc *http.Client, resourceURL string, wwwAuthenticate []string) (string, error) {
	challenges, _ := oauthex.ParseWWWAuthenticate(wwwAuthenticate)
	rctx, refused := withRefusals(ctx)
	_, asm, err := discoverAuthServer(rctx, hc, challenges, resourceURL)
	if de := refused.first(); err != nil && de != nil {
		return "", de
	}
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(asm.Issuer, "/"), nil
}
