package oauthserver

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/duet-test/duet"
)

// truncateName bounds a client's display name to 200 bytes (at a rune
// boundary).
func truncateName(s string) string {
	if len(s) <= 200 {
		return s
	}
	s = s[:200]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

// client is a client as the server sees it: registered (dynamic
// registration) or described by its client ID metadata document.
type client struct {
	ID           string
	Name         string
	RedirectURIs []string
	SecretHash   string
}

// findClient returns the client named id: a registered one, or, for an
// https URL, the client its metadata document describes.
func (s *Server) findClient(ctx context.Context, id string) (*client, error) {
	if id == "" {
		return nil, errf(http.StatusUnauthorized, "invalid_client", "client_id is required")
	}
	if strings.HasPrefix(id, "https://") {
		return s.metadataClient(ctx, id)
	}
	c, err := s.o.Store.FindOAuthClient(ctx, id)
	if duet.ErrorCode(err) == duet.CodeNotFound {
		return nil, errf(http.StatusUnauthorized, "invalid_client", "unknown client")
	}
	if err != nil {
		return nil, err
	}
	return &client{ID: c.ID, Name: c.Name, RedirectURIs: c.RedirectURIs, SecretHash: c.SecretHash}, nil
}

// metadataClient fetches a client ID metadata document (the MCP
// authorization spec's client_id as an https URL).
func (s *Server) metadataClient(ctx context.Context, id string) (*client, error) {
	if s.o.MetadataClient == nil {
		return nil, errf(http.StatusUnauthorized, "invalid_client", "client ID metadata documents are not accepted here; register the client")
	}
	u, err := url.Parse(id)
	if err != nil || u.Host == "" || u.Fragment != "" || u.User != nil || u.Path == "" || u.Path == "/" {
		return nil, errf(http.StatusUnauthorized, "invalid_client", "a client ID metadata document URL is https with a path")
	}
	body, err := s.fetchClientDocument(ctx, id)
	if err != nil {
		return nil, err
	}
	return clientFromDocument(id, body)
}

// fetchClientDocument fetches the client ID metadata document at id: at
// most 64 KiB, within MetadataTimeout.
func (s *Server) fetchClientDocument(ctx context.Context, id string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, s.o.MetadataTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, id, nil)
	if err != nil {
		return nil, errf(http.StatusUnauthorized, "invalid_client", "bad client id URL")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := s.o.MetadataClient.Do(req)
	if err != nil {
		return nil, errf(http.StatusUnauthorized, "invalid_client", "the client's metadata document cannot be fetched")
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, errf(http.StatusUnauthorized, "invalid_client", "the client's metadata document: HTTP %d", resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return nil, errf(http.StatusUnauthorized, "invalid_client", "the client's metadata document cannot be read")
	}
	return body, nil
}

// clientFromDocument is the client the metadata document body of id
// describes: a public client naming this id and its redirect URIs.
func clientFromDocument(id string, body []byte) (*client, error) {
	var doc struct {
		ClientID string `json:"client_id"`
		oauthex.ClientRegistrationMetadata
	}
	if err := json.Unmarshal(body, &doc); err != nil || doc.ClientID != id || len(doc.RedirectURIs) == 0 {
		return nil, errf(http.StatusUnauthorized, "invalid_client", "the client's metadata document must be JSON naming this client_id and its redirect_uris")
	}
	if m := doc.TokenEndpointAuthMethod; m != "" && m != "none" {
		return nil, errf(http.StatusUnauthorized, "invalid_client", "a client identified by a metadata document authenticates with none")
	}
	if oe := checkRedirects(doc.RedirectURIs); oe != nil {
		return nil, errf(http.StatusUnauthorized, "invalid_client", "the client's metadata document: %s", oe.Desc)
	}
	return &client{ID: id, Name: truncateName(doc.ClientName), RedirectURIs: doc.RedirectURIs}, nil
}

// authenticateClient identifies the client of a token or revocation
// request: client_secret_basic, client_secret_post, or a public client's
// client_id.
func (s *Server) authenticateClient(ctx context.Context, r *http.Request) (*client, error) {
	id, secret, basic := r.BasicAuth()
	if basic {
		var err1, err2 error
		id, err1 = url.QueryUnescape(id)
		secret, err2 = url.QueryUnescape(secret)
		if err1 != nil || err2 != nil {
			return nil, errf(http.StatusUnauthorized, "invalid_client", "malformed Basic credentials")
		}
		if f := r.PostForm.Get("client_id"); f != "" && f != id {
			return nil, errf(http.StatusBadRequest, "invalid_request", "two different client ids")
		}
	} else {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	eventOf(ctx).client = clip(id) // the client claimed, kept when it fails to authenticate
	c, err := s.findClient(ctx, id)
	if err != nil {
		return nil, err
	}
	if c.SecretHash == "" {
		if secret != "" {
			return nil, errf(http.StatusUnauthorized, "invalid_client", "this client has no secret")
		}
		return c, nil
	}
	got := sha256.Sum256([]byte(hash(secret)))
	want := sha256.Sum256([]byte(c.SecretHash))
	if secret == "" || subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
		return nil, errf(http.StatusUnauthorized, "invalid_client", "client authentication failed")
	}
	return c, nil
}

// validRedirect checks a redirect URI a client registers: https, a
// loopback http address (a native app, RFC 8252), or a private-use scheme;
// no fragment.
func validRedirect(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Fragment != "" || u.User != nil {
		return false
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
		return u.Host != ""
	case "http":
		return isLoopback(u.Hostname())
	case "javascript", "data", "file", "vbscript":
		return false
	}
	return strings.Contains(u.Scheme, ".") || u.Host == "" // private-use scheme (com.example.app:/cb)
}

func isLoopback(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// checkRedirects checks the redirect URIs a client declares, registered
// or in its client ID metadata document: 1 to 20, each valid
// (validRedirect) and at most 2000 bytes. Returns invalid_redirect_uri.
func checkRedirects(uris []string) *oauthError {
	if len(uris) == 0 || len(uris) > 20 {
		return errf(http.StatusBadRequest, "invalid_redirect_uri", "give 1 to 20 redirect_uris")
	}
	for _, u := range uris {
		if !validRedirect(u) || len(u) > 2000 {
			return errf(http.StatusBadRequest, "invalid_redirect_uri", "redirect URIs must be https, loopback http, or a private-use scheme, without a fragment")
		}
	}
	return nil
}

// redirectAllowed reports whether uri is one of c's redirect URIs; for a
// loopback http URI any port matches (RFC 8252 §7.3: the port is chosen at
// run time).
func (c *client) redirectAllowed(uri string) bool {
	if slices.Contains(c.RedirectURIs, uri) {
		return true
	}
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "http" || !isLoopback(u.Hostname()) {
		return false
	}
	for _, r := range c.RedirectURIs {
		ru, err := url.Parse(r)
		if err == nil && ru.Scheme == "http" && ru.Hostname() == u.Hostname() && ru.Path == u.Path && ru.RawQuery == u.RawQuery {
			return true
		}
	}
	return false
}
