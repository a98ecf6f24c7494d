package oauthclient

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/duet-test/duet/internal/serverkey"
)

// DPoP (RFC 9449): sender-constrained access tokens. A server that requires
// them says so in its challenge (WWW-Authenticate: DPoP ...). Duet then
// keeps a P-256 key per registration (sealed with the credential, like the
// token it binds), proves possession of it at the token endpoint — the
// authorization server binds the token to the key — and on every MCP
// request: Authorization: DPoP <token> with a DPoP header, a fresh ES256
// proof (jti, htm, htu, iat, ath = the token's hash). A server nonce
// (use_dpop_nonce, DPoP-Nonce) is taken and the request sent once more.
// A token stolen from a log or a proxy is useless without the key.

const dpopScheme = "dpop"

// DPoPKey is the key a registration's tokens are bound to.
type DPoPKey struct {
	priv   *ecdsa.PrivateKey
	signer jose.Signer // ES256, typ dpop+jwt, the public key in the header (jwk)
	stored string      // the stored form it was read from
	now    func() time.Time

	mu     sync.Mutex
	nonces map[string]string // by origin: the last DPoP-Nonce each server gave
}

// newDPoPKey generates a key and returns it with its stored form; its
// proofs are dated by now.
func newDPoPKey(now func() time.Time) (*DPoPKey, string, error) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, "", err
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, "", err
	}
	stored := base64.StdEncoding.EncodeToString(der)
	k, err := parseDPoPKey(stored, now)
	return k, stored, err
}

// parseDPoPKey reads a stored key; its proofs are dated by now.
func parseDPoPKey(stored string, now func() time.Time) (*DPoPKey, error) {
	der, err := base64.StdEncoding.DecodeString(stored)
	if err != nil {
		return nil, err
	}
	key, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, err
	}
	priv, ok := key.(*ecdsa.PrivateKey)
	if !ok || priv.Curve != elliptic.P256() {
		return nil, errors.New("the DPoP key is not a P-256 key")
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: priv}, (&jose.SignerOptions{EmbedJWK: true}).WithType("dpop+jwt"))
	if err != nil {
		return nil, err
	}
	return &DPoPKey{priv: priv, signer: signer, now: now, nonces: map[string]string{}}, nil
}

// htu is the request URI a proof names: without query and fragment.
func htu(u *url.URL) string {
	c := *u
	c.RawQuery, c.Fragment, c.RawFragment = "", "", ""
	return c.String()
}

// dpopClaims are the claims of a proof (RFC 9449 section 4.2).
type dpopClaims struct {
	ID       string `json:"jti"`
	Method   string `json:"htm"`
	URI      string `json:"htu"`
	IssuedAt int64  `json:"iat"`
	// TokenHash is the access token's SHA-256 (base64url) on requests that
	// carry one.
	TokenHash string `json:"ath,omitempty"`
	Nonce     string `json:"nonce,omitempty"`
}

// proof returns a DPoP proof for a request of method to u; accessToken ""
// for a token request.
func (k *DPoPKey) proof(method string, u *url.URL, accessToken string) (string, error) {
	claims := dpopClaims{ID: newJTI(), Method: method, URI: htu(u), IssuedAt: k.now().Unix()}
	if accessToken != "" {
		h := sha256.Sum256([]byte(accessToken))
		claims.TokenHash = base64.RawURLEncoding.EncodeToString(h[:])
	}
	k.mu.Lock()
	claims.Nonce = k.nonces[serverkey.Origin(u)]
	k.mu.Unlock()
	return jwt.Signed(k.signer).Claims(claims).Serialize()
}

// tookNonce keeps the DPoP-Nonce of resp, and reports whether resp asks
// for the request again with it (use_dpop_nonce).
func (k *DPoPKey) tookNonce(u *url.URL, resp *http.Response) bool {
	n := resp.Header.Get("DPoP-Nonce")
	if n == "" {
		return false
	}
	k.mu.Lock()
	changed := k.nonces[serverkey.Origin(u)] != n
	k.nonces[serverkey.Origin(u)] = n
	k.mu.Unlock()
	if !changed {
		return false
	}
	if resp.StatusCode == http.StatusUnauthorized {
		return strings.Contains(strings.Join(resp.Header.Values("Www-Authenticate"), " "), "use_dpop_nonce")
	}
	if resp.StatusCode == http.StatusBadRequest {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		resp.Body = io.NopCloser(bytes.NewReader(b))
		var e struct {
			Error string `json:"error"`
		}
		return json.Unmarshal(b, &e) == nil && e.Error == "use_dpop_nonce"
	}
	return false
}

// send sends req with a fresh proof (made by prove), and once more with a
// new one when the server asks for its nonce.
func (k *DPoPKey) send(base http.RoundTripper, req *http.Request, prove func(*http.Request) error) (*http.Response, error) {
	if err := prove(req); err != nil {
		return nil, err
	}
	resp, err := base.RoundTrip(req)
	if err != nil || !k.tookNonce(req.URL, resp) || req.GetBody == nil && req.Body != nil && req.Body != http.NoBody {
		return resp, err
	}
	again := req.Clone(req.Context())
	if req.GetBody != nil {
		body, err := req.GetBody()
		if err != nil {
			return resp, nil
		}
		again.Body = body
	}
	if err := prove(again); err != nil {
		return resp, nil
	}
	resp.Body.Close()
	return base.RoundTrip(again)
}

type dpopCtxKey struct{}

// withDPoP makes the token requests of ctx carry proofs of k.
func withDPoP(ctx context.Context, k *DPoPKey) context.Context {
	if k == nil {
		return ctx
	}
	return context.WithValue(ctx, dpopCtxKey{}, k)
}

// dpopTokenRequest sends a request to an authorization server with a proof
// when its context carries a key and it is a token request (a POST with a
// grant_type); it reports false, having sent nothing, otherwise.
func dpopTokenRequest(base http.RoundTripper, req *http.Request) (*http.Response, bool, error) {
	k, _ := req.Context().Value(dpopCtxKey{}).(*DPoPKey)
	if k == nil || req.Method != http.MethodPost || req.GetBody == nil {
		return nil, false, nil
	}
	body, err := req.GetBody()
	if err != nil {
		return nil, false, nil
	}
	b, _ := io.ReadAll(io.LimitReader(body, 1<<20))
	body.Close()
	if form, err := url.ParseQuery(string(b)); err != nil || form.Get("grant_type") == "" {
		return nil, false, nil
	}
	resp, err := k.send(base, req, func(r *http.Request) error {
		p, err := k.proof(r.Method, r.URL, "")
		if err == nil {
			r.Header.Set("DPoP", p)
		}
		return err
	})
	return resp, true, err
}

// DPoPRequest sends an MCP request whose Authorization carries a
// DPoP-bound token: the DPoP scheme and a proof bound to the token.
func DPoPRequest(base http.RoundTripper, k *DPoPKey, req *http.Request) (*http.Response, error) {
	return k.send(base, req, func(r *http.Request) error {
		scheme, tok, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		if tok == "" || !strings.EqualFold(scheme, "bearer") && !strings.EqualFold(scheme, dpopScheme) {
			return nil
		}
		p, err := k.proof(r.Method, r.URL, tok)
		if err != nil {
			return err
		}
		r.Header.Set("Authorization", "DPoP "+tok)
		r.Header.Set("DPoP", p)
		return nil
	})
}
