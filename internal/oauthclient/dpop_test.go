package oauthclient

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// verifyDPoP checks a proof as a resource server does (RFC 9449 section
// 4.3) and returns its claims, or why it is not valid.
func verifyDPoP(proof, method, uri, token string) (map[string]any, string) {
	parts := strings.Split(proof, ".")
	if len(parts) != 3 {
		return nil, "not a JWT"
	}
	enc := base64.RawURLEncoding
	var header struct {
		Typ, Alg string
		JWK      map[string]string `json:"jwk"`
	}
	hb, _ := enc.DecodeString(parts[0])
	if json.Unmarshal(hb, &header) != nil || header.Typ != "dpop+jwt" || header.Alg != "ES256" || header.JWK["d"] != "" {
		return nil, "bad header " + string(hb)
	}
	x, _ := enc.DecodeString(header.JWK["x"])
	y, _ := enc.DecodeString(header.JWK["y"])
	pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), append(append([]byte{4}, x...), y...))
	if err != nil {
		return nil, "bad jwk: " + err.Error()
	}
	sig, _ := enc.DecodeString(parts[2])
	d := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if len(sig) != 64 || !ecdsa.Verify(pub, d[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
		return nil, "the signature does not verify"
	}
	var claims map[string]any
	cb, _ := enc.DecodeString(parts[1])
	json.Unmarshal(cb, &claims)
	ath := sha256.Sum256([]byte(token))
	switch {
	case claims["htm"] != method || claims["htu"] != uri:
		return nil, "htm/htu"
	case claims["ath"] != enc.EncodeToString(ath[:]):
		return nil, "ath"
	case claims["jti"] == nil || claims["iat"] == nil || time.Since(time.Unix(int64(claims["iat"].(float64)), 0)) > time.Minute:
		return nil, "jti/iat"
	}
	return claims, ""
}

// TestDPoPResourceRequests: an MCP request with a DPoP-bound token carries
// the DPoP scheme and a fresh proof bound to the method, the URI (without
// its query), the token and the key; a server nonce is taken and the
// request, body included, sent once more with it; proofs are never reused.
func TestDPoPResourceRequests(t *testing.T) {
	t.Parallel()
	k, stored, err := newDPoPKey(time.Now)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := parseDPoPKey(stored, time.Now); err != nil || !again.priv.Equal(k.priv) {
		t.Fatalf("stored key: %v", err)
	}
	var mu sync.Mutex
	var jtis []string
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b := make([]byte, 100)
		n, _ := r.Body.Read(b)
		scheme, tok, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		claims, why := verifyDPoP(r.Header.Get("DPoP"), r.Method, "http://"+r.Host+r.URL.Path, tok)
		mu.Lock()
		defer mu.Unlock()
		bodies = append(bodies, string(b[:n]))
		if scheme != "DPoP" || why != "" {
			http.Error(w, "scheme "+scheme+": "+why, http.StatusBadRequest)
			return
		}
		jtis = append(jtis, claims["jti"].(string))
		if claims["nonce"] != "n-1" {
			w.Header().Set("DPoP-Nonce", "n-1")
			w.Header().Set("WWW-Authenticate", `DPoP error="use_dpop_nonce"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	for range 2 {
		req, _ := http.NewRequest("POST", srv.URL+"/mcp?x=1", strings.NewReader(`{"jsonrpc":"2.0"}`))
		req.Header.Set("Authorization", "Bearer tok-123")
		resp, err := DPoPRequest(http.DefaultTransport, k, req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d", resp.StatusCode)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(jtis) != 3 || jtis[0] == jtis[1] || jtis[1] == jtis[2] {
		t.Errorf("proofs: %v; want three, each fresh (one refused for its nonce, then one per request)", jtis)
	}
	for _, b := range bodies {
		if b != `{"jsonrpc":"2.0"}` {
			t.Errorf("a request arrived with body %q", b)
		}
	}
}
