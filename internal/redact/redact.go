// Package redact hides secrets in values Duet stores or shows: saved
// variables, step outputs, headers and log attributes.
package redact

import (
	"strings"
)

// Mask replaces a secret value.
const Mask = "[redacted]"

var sensitive = map[string]bool{
	"authorization": true, "proxyauthorization": true, "cookie": true, "setcookie": true,
	"password": true, "passwd": true, "pwd": true, "secret": true, "token": true,
	"accesstoken": true, "refreshtoken": true, "idtoken": true, "apikey": true, "xapikey": true,
	"clientsecret": true, "privatekey": true, "credential": true, "credentials": true,
	"session": true, "sessionid": true, "jwt": true, "bearer": true, "signature": true, "sig": true,
	"ssoempid": false,
}

// keyNorm drops the separators of key names (built once: a Replacer is
// costly to build and safe for concurrent use).
var keyNorm = strings.NewReplacer("-", "", "_", "", ".", "")

// IsSensitiveKey reports whether a map key or header name names a secret:
// compared case-insensitively ignoring '-' and '_', or ending in token,
// secret, password or apikey.
func IsSensitiveKey(k string) bool {
	n := strings.ToLower(keyNorm.Replace(k))
	if v, ok := sensitive[n]; ok {
		return v
	}
	for _, suf := range []string{"token", "secret", "password", "apikey"} {
		if strings.HasSuffix(n, suf) {
			return true
		}
	}
	return false
}

// Value returns a copy of v (JSON-like: maps, slices, scalars) with the values
// of sensitive keys replaced by Mask.
func Value(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if IsSensitiveKey(k) && e != nil {
				out[k] = Mask
				continue
			}
			out[k] = Value(e)
		}
		return out
	case map[string]string:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if IsSensitiveKey(k) {
				out[k] = Mask
				continue
			}
			out[k] = e
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = Value(e)
		}
		return out
	default:
		return v
	}
}

// Secrets replaces every occurrence of each non-empty secret in s by Mask.
func Secrets(s string, secrets ...string) string {
	for _, sec := range secrets {
		if len(sec) >= 4 {
			s = strings.ReplaceAll(s, sec, Mask)
		}
	}
	return s
}
