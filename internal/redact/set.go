package redact

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// Minimum lengths of secret values. Shorter values are not scrubbed by value
// (they would mask ordinary words and numbers); their keys still mask them.
const (
	// MinSecret is the shortest value Add takes: a credential Duet knows
	// is one.
	MinSecret = 4
	// MinLearned is the shortest value Learn takes from what a run saw.
	MinLearned = 6
)

// Set is the secret values known to one run: the executor's credentials,
// and every value first seen under a sensitive key (access_token, password,
// …), in a sensitive header (Authorization, Cookie, Set-Cookie, X-Api-Key,
// …) or after an authentication scheme ("Bearer …"). Scrub and Value replace
// each of them wherever it appears later — a copy under an innocent name, a
// text body, an error message. A Set is safe for concurrent use; the zero
// value is empty and ready.
type Set struct {
	mu     sync.RWMutex
	vals   map[string]struct{}
	rep    *strings.Replacer // nil when stale
	minLen int               // of the values in rep
}

// NewSet returns an empty set.
func NewSet() *Set { return &Set{} }

// Len returns how many values the set scrubs.
func (s *Set) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.vals)
}

// Add adds secret values (at least MinSecret bytes), with the forms they
// take elsewhere: the token of an "Authorization: Bearer …" value, the
// values of a cookie header, URL-encoded.
func (s *Set) Add(values ...string) {
	for _, v := range values {
		s.add(v, MinSecret)
	}
}

// AddHeader adds the value of a header whose name says it holds a secret
// (IsSensitiveKey); other headers are left alone.
func (s *Set) AddHeader(name, value string) {
	if IsSensitiveKey(name) {
		s.add(value, MinLearned)
	}
}

func (s *Set) add(v string, min int) {
	v = strings.TrimSpace(v)
	forms := []string{v}
	// "Bearer X", "Basic X": the credential alone too.
	if scheme, rest, ok := strings.Cut(v, " "); ok && isScheme(scheme) {
		rest = strings.TrimSpace(rest)
		forms = append(forms, rest)
		if strings.EqualFold(scheme, "basic") {
			if dec, err := base64.StdEncoding.DecodeString(rest); err == nil {
				forms = append(forms, string(dec))
				if _, pw, ok := strings.Cut(string(dec), ":"); ok {
					forms = append(forms, pw)
				}
			}
		}
	}
	// "sid=abc; Path=/", "a=1; b=2": each cookie value.
	if strings.Contains(v, "=") {
		for part := range strings.SplitSeq(v, ";") {
			if _, val, ok := strings.Cut(strings.TrimSpace(part), "="); ok {
				forms = append(forms, strings.Trim(val, `"`))
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range forms {
		if len(f) < min || f == Mask || !plausible(f) {
			continue
		}
		for _, g := range []string{f, url.QueryEscape(f), url.PathEscape(f)} {
			if _, ok := s.vals[g]; ok {
				continue
			}
			if s.vals == nil {
				s.vals = map[string]struct{}{}
			}
			s.vals[g] = struct{}{}
			s.rep = nil
		}
	}
}

// plausible rejects values that are words any text holds: authentication
// scheme names, cookie attributes and JSON literals.
func plausible(v string) bool {
	switch strings.ToLower(v) {
	case "bearer", "basic", "digest", "negotiate", "token", "null", "true", "false", "undefined", "none",
		"httponly", "secure", "strict", "lax", "redacted":
		return false
	}
	return true
}

func isScheme(s string) bool {
	switch strings.ToLower(s) {
	case "bearer", "basic", "token", "digest", "apikey", "api-key", "dpop":
		return true
	}
	return false
}

// Learn adds the secrets a JSON-like value (maps, slices, strings) reveals:
// the values of sensitive keys, whatever their depth, and in strings the
// values after an authentication scheme ("Bearer …") or a sensitive key
// ("token=…", "password: …", `"api_key":"…"`).
func (s *Set) Learn(v any) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if IsSensitiveKey(k) {
				s.learnSecretValue(e)
				continue
			}
			s.Learn(e)
		}
	case map[string]string:
		for k, e := range x {
			if IsSensitiveKey(k) {
				s.add(e, MinLearned)
				continue
			}
			s.LearnText(e)
		}
	case []any:
		for _, e := range x {
			s.Learn(e)
		}
	case string:
		s.LearnText(x)
	}
}

// learnSecretValue adds every string under a sensitive key.
func (s *Set) learnSecretValue(v any) {
	switch x := v.(type) {
	case string:
		s.add(x, MinLearned)
	case map[string]any:
		for _, e := range x {
			s.learnSecretValue(e)
		}
	case []any:
		for _, e := range x {
			s.learnSecretValue(e)
		}
	}
}

// Compiled at the first use, not when the program starts.
var (
	// schemeRe finds "Bearer X" / "Basic X" in text.
	schemeRe = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)\b(?:bearer|basic)\s+([A-Za-z0-9\-._~+/]+=*)`)
	})
	// pairRe finds key=value, key: value and "key":"value" in text.
	pairRe = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`"?([A-Za-z][A-Za-z0-9_.\-]{0,63})"?\s*[=:]\s*"?([^\s"'&;,<>(){}\[\]]+)`)
	})
)

// LearnText adds the secrets a text reveals: values after an authentication
// scheme and values of sensitive keys in key=value, key: value or JSON form
// (in free text, only values that look like credentials: with a digit or
// token punctuation, or long).
func (s *Set) LearnText(t string) {
	if len(t) < MinLearned {
		return
	}
	for _, m := range schemeRe().FindAllStringSubmatch(t, -1) {
		if looksLikeToken(m[1]) {
			s.add(m[1], MinLearned)
		}
	}
	if !strings.ContainsAny(t, "=:") {
		return
	}
	for _, m := range pairRe().FindAllStringSubmatch(t, -1) {
		if IsSensitiveKey(m[1]) && !isScheme(m[2]) && (looksLikeToken(m[2]) || len(m[2]) >= 12) {
			s.add(m[2], MinLearned)
		}
	}
}

// looksLikeToken tells a credential after "Bearer" from a word ("Bearer
// authentication"): it has a digit or a token punctuation mark, or is long.
func looksLikeToken(v string) bool {
	return len(v) >= 24 || strings.ContainsAny(v, "0123456789-._~+/=")
}

func (s *Set) replacer() (*strings.Replacer, int) {
	s.mu.RLock()
	rep, minLen := s.rep, s.minLen
	n := len(s.vals)
	s.mu.RUnlock()
	if rep != nil || n == 0 {
		return rep, minLen
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rep == nil {
		vals := make([]string, 0, len(s.vals))
		for v := range s.vals {
			vals = append(vals, v)
		}
		// Longest first: a secret that contains another is masked whole.
		slices.SortFunc(vals, func(a, b string) int {
			if len(a) != len(b) {
				return len(b) - len(a)
			}
			return strings.Compare(a, b)
		})
		pairs := make([]string, 0, 2*len(vals))
		for _, v := range vals {
			pairs = append(pairs, v, Mask)
		}
		s.rep, s.minLen = strings.NewReplacer(pairs...), len(vals[len(vals)-1])
	}
	return s.rep, s.minLen
}

// Scrub replaces every secret of the set in t by Mask.
func (s *Set) Scrub(t string) string {
	if s == nil || t == "" {
		return t
	}
	rep, minLen := s.replacer()
	if rep == nil || len(t) < minLen {
		return t
	}
	return rep.Replace(t)
}

// Value returns a copy of v (JSON-like) as it may be kept or shown: values of
// sensitive keys masked (as Value does) and every secret of the set scrubbed
// from strings and map keys.
func (s *Set) Value(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if IsSensitiveKey(k) && e != nil {
				out[s.Scrub(k)] = Mask
				continue
			}
			out[s.Scrub(k)] = s.Value(e)
		}
		return out
	case map[string]string:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if IsSensitiveKey(k) {
				out[s.Scrub(k)] = Mask
				continue
			}
			out[s.Scrub(k)] = s.Scrub(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = s.Value(e)
		}
		return out
	case string:
		return s.Scrub(x)
	default:
		return v
	}
}

// ScrubJSON returns raw (a JSON document) with every secret of the set
// replaced by Mask in its strings and object keys, whatever escapes the
// document wrote them with. Only values are scrubbed (ScrubJSON does not
// mask sensitive keys, as Value does); a document that holds none of the
// secrets comes back as it is, byte for byte.
func (s *Set) ScrubJSON(raw json.RawMessage) json.RawMessage {
	if s == nil || len(raw) == 0 || s.Len() == 0 {
		return raw
	}
	// Without an escape a secret appears in the document as it is: a
	// document where Scrub changes nothing holds none.
	if !bytes.ContainsRune(raw, '\\') && s.Scrub(string(raw)) == string(raw) {
		return raw
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		// Not JSON: scrubbed as text.
		return json.RawMessage(s.Scrub(string(raw)))
	}
	out, changed := s.scrubStrings(v)
	if !changed {
		return raw
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(out) != nil {
		return json.RawMessage(s.Scrub(string(raw)))
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// scrubStrings scrubs the strings and keys of a decoded JSON value and
// reports whether anything changed.
func (s *Set) scrubStrings(v any) (any, bool) {
	switch x := v.(type) {
	case map[string]any:
		changed := false
		out := make(map[string]any, len(x))
		for k, e := range x {
			sk := s.Scrub(k)
			se, c := s.scrubStrings(e)
			out[sk] = se
			changed = changed || c || sk != k
		}
		return out, changed
	case []any:
		changed := false
		out := make([]any, len(x))
		for i, e := range x {
			var c bool
			out[i], c = s.scrubStrings(e)
			changed = changed || c
		}
		return out, changed
	case string:
		t := s.Scrub(x)
		return t, t != x
	}
	return v, false
}
