package httpapi

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"
)

// PathResourceMetadata is where RFC 9728 protected resource metadata is
// served (also with the resource's path, /mcp/http, appended).
const PathResourceMetadata = "/.well-known/oauth-protected-resource"

// challenge is the WWW-Authenticate value of a 401 (or, insufficient, a
// 403 for missing scope). With OAuth on it names the protected resource
// metadata and the scopes Duet knows (RFC 9728 §5.1, RFC 6750 §3); a
// request that carried a token is told it was invalid.
func challenge(o Options, hadToken, insufficient bool) string {
	if o.ResourceMetadata == nil {
		return `Bearer realm="duet"`
	}
	var b strings.Builder
	b.WriteString(`Bearer realm="duet"`)
	switch {
	case insufficient:
		b.WriteString(`, error="insufficient_scope", error_description="the access token does not allow this operation"`)
	case hadToken:
		b.WriteString(`, error="invalid_token"`)
	}
	if len(o.ResourceMetadata.ScopesSupported) > 0 {
		b.WriteString(`, scope="` + strings.Join(o.ResourceMetadata.ScopesSupported, " ") + `"`)
	}
	b.WriteString(`, resource_metadata="` + metadataURL(o.ResourceMetadata.Resource) + `"`)
	return b.String()
}

// metadataURL is the path-suffixed metadata address of a resource URL
// (RFC 9728 §3.1): https://duet.example/mcp/http →
// https://duet.example/.well-known/oauth-protected-resource/mcp/http.
func metadataURL(resource string) string {
	scheme, rest, ok := strings.Cut(resource, "://")
	if !ok {
		return resource
	}
	host, path, _ := strings.Cut(rest, "/")
	if path != "" {
		path = "/" + path
	}
	return scheme + "://" + host + PathResourceMetadata + path
}

// scopeChallenger adds the insufficient-scope challenge to a 403 answered
// to an OAuth caller (the catalog refused the operation for its scopes).
type scopeChallenger struct {
	http.ResponseWriter
	challenge string
}

func (s *scopeChallenger) WriteHeader(status int) {
	if status == http.StatusForbidden {
		s.Header().Set("WWW-Authenticate", s.challenge)
	}
	s.ResponseWriter.WriteHeader(status)
}

func (s *scopeChallenger) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *scopeChallenger) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// bearerOnly serves next only to requests with Authorization: Bearer
// token (compared in constant time); an empty token lets every request
// through.
func bearerOnly(token string, next http.Handler) http.Handler {
	if token == "" {
		return next
	}
	want := sha256.Sum256([]byte("Bearer " + token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := sha256.Sum256([]byte(r.Header.Get("Authorization")))
		if subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="duet-metrics"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}
