package oauthserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/duet-test/duet"
)

// oauthError is an RFC 6749 error response.
type oauthError struct {
	status int
	Code   string `json:"error"`
	Desc   string `json:"error_description,omitempty"`
}

func (e *oauthError) Error() string { return e.Code + ": " + e.Desc }

func errf(status int, code, format string, args ...any) *oauthError {
	return &oauthError{status: status, Code: code, Desc: fmt.Sprintf(format, args...)}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	if oe, ok := v.(*oauthError); ok {
		noteError(w, oe.Code)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// fail answers an endpoint called by a client (token, register, revoke).
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	var oe *oauthError
	if !errors.As(err, &oe) {
		s.o.Logger.ErrorContext(r.Context(), "oauth server", "path", r.URL.Path, "err", err)
		oe = errf(http.StatusInternalServerError, "server_error", "internal error")
		if duet.ErrorCode(err) == duet.CodeUnavailable {
			oe = errf(http.StatusServiceUnavailable, "temporarily_unavailable", "%s", duet.ErrorMessage(err))
		}
	}
	if oe.Code == "invalid_client" && r.Header.Get("Authorization") != "" {
		w.Header().Set("WWW-Authenticate", `Basic realm="duet"`)
	}
	writeJSON(w, oe.status, oe)
}

// once refuses a request with a parameter given more than once (RFC 6749
// §3.1, §3.2: parameters MUST NOT be repeated), but resource (RFC 8707
// allows several; each is checked): read one way here and another way by
// a proxy or a client library, a repeated one is ambiguous.
func once(v url.Values) error {
	for k, vs := range v {
		if len(vs) > 1 && k != "resource" {
			return errf(http.StatusBadRequest, "invalid_request", "parameter %.40q is repeated", k)
		}
	}
	return nil
}

func errText(err error) string {
	var oe *oauthError
	if errors.As(err, &oe) {
		return oe.Desc
	}
	return duet.ErrorMessage(err)
}
