package mcpclient

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/oauthclient"
	"github.com/duet-test/duet/internal/serverkey"
)

// AuthStatus returns the OAuth status of the owner's registration ref (name
// or serverKey); nil when it does not use OAuth. Returns NOT_FOUND,
// UNAVAILABLE, INTERNAL.
func (c *Client) AuthStatus(ctx context.Context, owner, ref string) (*AuthStatus, error) {
	reg, err := c.store.FindMCPServer(ctx, owner, ref)
	if err != nil {
		return nil, err
	}
	if reg.Auth == "" {
		return nil, nil
	}
	sec, err := c.secret(ctx, reg)
	if err != nil {
		return nil, err
	}
	if sec.OAuth == nil {
		return nil, duet.Errorf(duet.CodeInternal, "the OAuth configuration of MCP server %s is missing from its credential", reg.Name)
	}
	return sec.OAuth.Status(), nil
}

// Login authorizes Duet to call the owner's OAuth registration ref (name or
// serverKey) and stores the tokens, sealed, in its credential; calls then use
// and renew them. For duet.AuthClientCredentials it runs the client
// credentials grant. It asks nobody: a registration that needs a person
// (duet.AuthOAuth) is logged in through [Client.Authorizing]. It always
// authorizes anew, whatever is stored.
// Returns NOT_FOUND, INVALID_ARGUMENT (not an OAuth registration, or no
// Authorizer for the authorization code flow), MCP_AUTH_FAILED, URL_REFUSED,
// MCP_UNREACHABLE, MCP_CALL_TIMEOUT, CANCELLED, UNAVAILABLE, INTERNAL.
func (c *Client) Login(ctx context.Context, owner, ref string) (*AuthStatus, error) {
	return c.login(ctx, nil, owner, ref)
}

// login is Login; for duet.AuthOAuth it runs the authorization code flow
// with PKCE, asking the person through a and requesting the scopes the
// server asks for, any it asked for since, and the registered ones.
func (c *Client) login(ctx context.Context, a *Authorizer, owner, ref string) (*AuthStatus, error) {
	reg, err := c.store.FindMCPServer(ctx, owner, ref)
	if err != nil {
		return nil, err
	}
	if reg.Auth == "" {
		return nil, duet.Errorf(duet.CodeInvalidArgument,
			"MCP server %s is registered without OAuth; to use OAuth, register it again: `duet server add --as %s --name %s --url %s --auth oauth --replace`",
			reg.Name, owner, reg.Name, reg.URL)
	}
	if reg.Auth == duet.AuthOAuth && a == nil {
		return nil, duet.Errorf(duet.CodeInvalidArgument, "authorizing as a person needs someone at a browser: run `duet server login --as %s %s`", owner, reg.Name)
	}
	sec, ver, err := c.loadSecret(ctx, reg)
	if err != nil {
		return nil, err
	}
	if sec.OAuth == nil {
		return nil, duet.Errorf(duet.CodeInternal, "the OAuth configuration of MCP server %s is missing from its credential", reg.Name)
	}
	st := c.oauthFor(reg, sec, ver)
	req, resp, err := c.challenge(ctx, reg, sec.Headers)
	if err != nil {
		if e := c.classify(ctx, reg, err, nil); e != nil {
			return nil, e
		}
		var de *duet.Error
		if errors.As(err, &de) && de.Code == duet.CodeURLRefused {
			return nil, duet.WrapError(duet.CodeURLRefused, err, "MCP server %s: %s", reg.Name, de.Message)
		}
		return nil, duet.WrapError(duet.CodeMCPUnreachable, err, "cannot reach MCP server %s at %s: %s", reg.Name, reg.URL, netReason(err))
	}
	status, err := st.Login(ctx, a, req, resp)
	if err != nil {
		if e := c.oauthFailure(ctx, reg, err); e != nil {
			return nil, e
		}
		return nil, err
	}
	return status, nil
}

// DiscoverIssuer returns the issuer of the authorization server the MCP
// server at rawURL names now (its challenge and protected resource
// metadata, then the authorization server's metadata), sending it no
// credential. What a server names is its claim, not proof: a client secret
// is bound to the issuer of the authorization server that issued it, so
// show the result to the person who holds the secret before binding it
// (see [OAuth.Issuer]). Returns INVALID_ARGUMENT, URL_REFUSED,
// MCP_UNREACHABLE, MCP_AUTH_FAILED (no usable metadata).
func (c *Client) DiscoverIssuer(ctx context.Context, rawURL string) (string, error) {
	normalized, err := serverkey.Normalize(rawURL)
	if err != nil {
		return "", err
	}
	if err := checkDestination(ctx, c.opts.Policy, normalized); err != nil {
		return "", err
	}
	reg := &duet.MCPServer{Name: normalized, URL: normalized}
	req, resp, err := c.challenge(ctx, reg, nil)
	if err != nil {
		var de *duet.Error
		if errors.As(err, &de) && de.Code == duet.CodeURLRefused {
			return "", err
		}
		return "", duet.WrapError(duet.CodeMCPUnreachable, err, "cannot reach MCP server %s: %s", normalized, netReason(err))
	}
	issuer, err := oauthclient.DiscoverIssuer(ctx, c.oauthHTTP, req.URL.String(), resp.Header.Values("Www-Authenticate"))
	var de *duet.Error
	if errors.As(err, &de) && de.Code == duet.CodeURLRefused {
		return "", duet.WrapError(duet.CodeURLRefused, err, "MCP server %s: its authorization server: %s", normalized, de.Message)
	}
	if err != nil {
		return "", duet.WrapError(duet.CodeMCPAuthFailed, err, "MCP server %s names no usable authorization server: %s", normalized, sanitize(err.Error(), 300))
	}
	return issuer, nil
}

// challenge asks the server, without a token, what it wants: its 401 or 403
// answer to an initialize request (with the WWW-Authenticate challenge that
// points to its metadata and names scopes). A server that lets the request
// through gets a bare 401 in its place: discovery then uses the well-known
// metadata locations.
func (c *Client) challenge(ctx context.Context, reg *duet.MCPServer, headers map[string]string) (*http.Request, *http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, reg.URL, strings.NewReader(probeBody))
	if err != nil {
		return nil, nil, duet.Errorf(duet.CodeInvalidArgument, "invalid URL")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	resp, err := c.httpClient(reg, headers).Do(req)
	if err != nil {
		return nil, nil, err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden {
		resp = &http.Response{StatusCode: http.StatusUnauthorized, Header: http.Header{}}
	}
	resp.Body = http.NoBody
	return req, resp, nil
}

// oauthFailure maps a failed OAuth step (in err's chain) to a code, or
// returns nil when err holds none (oauthclient.Failure).
func (c *Client) oauthFailure(ctx context.Context, reg *duet.MCPServer, err error) error {
	return oauthclient.Failure(ctx, reg, err)
}
