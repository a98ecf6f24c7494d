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
// compared case-insensitively ignoring '-', '_' and '.', or ending in
// token, secret, password or apikey. It runs on every header of every MCP
// request and on every key of every value redacted, so a short ASCII key
// (nearly all of them) is normalised in a buffer on the stack, with no
// allocation; any other goes through isSensitiveKeySlow, the definition
// (FuzzIsSensitiveKey holds the two to the same answers).
func IsSensitiveKey(k string) bool {
	var buf [64]byte
	n := 0
	for i := 0; i < len(k); i++ {
		c := k[i]
		switch {
		case c == '-' || c == '_' || c == '.':
			continue
		case c >= 0x80 || n == len(buf):
			return isSensitiveKeySlow(k)
		case 'A' <= c && c <= 'Z':
			c += 'a' - 'A'
		}
		buf[n] = c
		n++
	}
	return sensitiveNormalized(buf[:n])
}

// sensitiveNormalized is IsSensitiveKey of a key already normalised.
func sensitiveNormalized(n []byte) bool {
	if v, ok := sensitive[string(n)]; ok { // no allocation: a lookup by bytes
		return v
	}
	for _, suf := range sensitiveSuffixes {
		if len(n) >= len(suf) && string(n[len(n)-len(suf):]) == suf {
			return true
		}
	}
	return false
}

var sensitiveSuffixes = [...]string{"token", "secret", "password", "apikey"}

// isSensitiveKeySlow is IsSensitiveKey by its definition, for any string.
func isSensitiveKeySlow(k string) bool {
	return sensitiveNormalized([]byte(strings.ToLower(keyNorm.Replace(k))))
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
