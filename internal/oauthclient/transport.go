package oauthclient

import (
	"errors"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/duet-test/duet"
)

// Transport returns the transport of requests to authorization servers:
// base (the guarded pool), noting the guard's refusals and proving
// possession of a DPoP key at token endpoints when asked to.
func Transport(base http.RoundTripper) http.RoundTripper { return oauthTransport{base} }

// oauthTransport is the transport of requests to authorization servers:
// the guarded pool, noting refusals.
type oauthTransport struct{ base http.RoundTripper }

func (t oauthTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, sent, err := dpopTokenRequest(t.base, req.Clone(req.Context()))
	if !sent {
		resp, err = t.base.RoundTrip(req)
	}
	var de *duet.Error
	if err != nil && errors.As(err, &de) && de.Code == duet.CodeURLRefused {
		if r, _ := req.Context().Value(refusalsKey{}).(*refusals); r != nil {
			r.mu.Lock()
			if r.err == nil {
				r.err = de
			}
			r.mu.Unlock()
		}
	}
	return resp, err
}

// requiresDPoP reports whether a server's challenges ask for DPoP-bound
// tokens (RFC 9449 section 7.1: the DPoP scheme).
func requiresDPoP(challenges []oauthex.Challenge) bool {
	for _, c := range challenges {
		if strings.EqualFold(c.Scheme, dpopScheme) {
			return true
		}
	}
	return false
}
