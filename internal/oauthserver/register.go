package oauthserver

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/duet-test/duet"
)

// register is dynamic client registration (RFC 7591).
func (s *Server) register(w http.ResponseWriter, r *http.Request) {
	if s.overRegistrationBudget(w, r) {
		return
	}
	m, oe := readClientMetadata(w, r)
	var method string
	if oe == nil {
		method, oe = checkClientMetadata(m)
	}
	if oe != nil {
		writeJSON(w, oe.status, oe)
		return
	}
	// client_name is shown on the consent page, never branched on (no
	// client-specific behaviour: test/interop's TestNoClientSpecificBranches).
	c := &duet.OAuthClient{ID: duet.NewID("dcr"), RedirectURIs: m.RedirectURIs}
	c.Name = truncateName(m.ClientName)
	var secret string
	if method != "none" {
		secret = newSecret("duet_cs_")
		c.SecretHash = hash(secret)
	}
	if err := s.o.Store.CreateOAuthClient(r.Context(), c); err != nil {
		s.fail(w, r, err)
		return
	}
	eventOf(r.Context()).client = c.ID
	writeJSON(w, http.StatusCreated, registered(c, m.GrantTypes, method, secret))
}

// overRegistrationBudget takes a registration from the budget of the
// request's address and of the server; when either is spent it answers
// 429 with Retry-After and returns true.
func (s *Server) overRegistrationBudget(w http.ResponseWriter, r *http.Request) bool {
	addr, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		addr = r.RemoteAddr
	}
	wait := s.registrations.take([]string{"", addr}, []int{10 * s.o.MaxRegistrations, s.o.MaxRegistrations})
	if wait <= 0 {
		return false
	}
	w.Header().Set("Retry-After", strconv.Itoa(int(wait.Seconds())+1))
	writeJSON(w, http.StatusTooManyRequests, errf(0, "temporarily_unavailable", "too many client registrations; retry later"))
	return true
}

// readClientMetadata reads a registration's client metadata: JSON of at
// most 64 KiB.
func readClientMetadata(w http.ResponseWriter, r *http.Request) (*oauthex.ClientRegistrationMetadata, *oauthError) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 64<<10))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, errf(http.StatusRequestEntityTooLarge, "invalid_client_metadata", "the client metadata is over %d bytes", mbe.Limit)
		}
		if duet.ErrorCode(err) == duet.CodeRateLimited { // the address's budget (internal/httpapi)
			return nil, errf(http.StatusTooManyRequests, "temporarily_unavailable", "%s", duet.ErrorMessage(err))
		}
		return nil, errf(http.StatusBadRequest, "invalid_client_metadata", "cannot read the request")
	}
	var m oauthex.ClientRegistrationMetadata
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, errf(http.StatusBadRequest, "invalid_client_metadata", "the body is not client metadata JSON")
	}
	return &m, nil
}

// checkClientMetadata checks what a client registers — its redirect URIs,
// its token endpoint authentication method (returned, with RFC 7591's
// default), its grant types.
func checkClientMetadata(m *oauthex.ClientRegistrationMetadata) (string, *oauthError) {
	if oe := checkRedirects(m.RedirectURIs); oe != nil {
		return "", oe
	}
	method := m.TokenEndpointAuthMethod
	if method == "" {
		method = "client_secret_basic" // RFC 7591 §2 default
	}
	if method != "none" && method != "client_secret_basic" && method != "client_secret_post" {
		return "", errf(http.StatusBadRequest, "invalid_client_metadata", "token_endpoint_auth_method must be none, client_secret_basic or client_secret_post")
	}
	for _, g := range m.GrantTypes {
		if g != "authorization_code" && g != "refresh_token" && g != GrantJWTBearer {
			return "", errf(http.StatusBadRequest, "invalid_client_metadata", "unsupported grant type %q", g)
		}
	}
	return method, nil
}

// registered is the registration response for client c (RFC 7591 §3.2.1):
// its grant types (the default ones when it named none), its token
// endpoint authentication method and its secret, if it has one.
func registered(c *duet.OAuthClient, grants []string, method, secret string) map[string]any {
	if len(grants) == 0 {
		grants = []string{"authorization_code", "refresh_token"}
	}
	resp := map[string]any{
		"client_id": c.ID, "client_id_issued_at": c.CreatedAt.Unix(), "redirect_uris": c.RedirectURIs,
		"token_endpoint_auth_method": method, "grant_types": grants, "response_types": []string{"code"},
	}
	if c.Name != "" {
		resp["client_name"] = c.Name
	}
	if secret != "" {
		resp["client_secret"] = secret
		resp["client_secret_expires_at"] = 0
	}
	return resp
}

// buckets are token buckets by key: each holds up to its capacity and
// refills that many per period.
type buckets struct {
	mu  sync.Mutex
	now func() time.Time
	per time.Duration
	n   map[string]*bucket
}

type bucket struct {
	tokens float64
	at     time.Time
}

// take takes a token from the bucket of each key (capacity caps[i])
// when every one has one, and returns 0; else it takes none and returns
// how long until they would.
func (b *buckets) take(keys []string, caps []int) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	if len(b.n) > 10000 { // forget the addresses whose bucket is full again
		last := float64(caps[len(caps)-1])
		for k, bk := range b.n {
			if k != "" && b.refill(bk, last, now) >= last {
				delete(b.n, k)
			}
		}
	}
	var wait time.Duration
	for i, k := range keys {
		bk := b.n[k]
		c := float64(caps[i])
		if bk == nil {
			bk = &bucket{tokens: c, at: now}
			b.n[k] = bk
		}
		bk.tokens, bk.at = b.refill(bk, c, now), now
		if bk.tokens < 1 {
			wait = max(wait, time.Duration((1-bk.tokens)/c*float64(b.per)))
		}
	}
	if wait > 0 {
		return wait
	}
	for _, k := range keys {
		b.n[k].tokens--
	}
	return 0
}

// refill is what bk, of capacity c, holds at now.
func (b *buckets) refill(bk *bucket, c float64, now time.Time) float64 {
	return min(c, bk.tokens+float64(now.Sub(bk.at))/float64(b.per)*c)
}
