// Package serverkey computes the stable key of an MCP server from its URL.
//
// A serverKey is "mcp_<slug>_<hash>": hash is 8 hex digits, the first 4 bytes
// of the SHA-256 of the normalized URL (see [Normalize]), and slug is a
// readable hint derived from the normalized host (see [Key]). Both parts come
// from the URL alone, so two users who register the same address under
// different display names get the same key.
//
// URLs that carry credentials (user:password@ or a query parameter such as
// token or api_key, see [SensitiveParam]) are refused: credentials belong in
// headers, which the vault encrypts, never in a URL, which ends up in logs,
// step JSON and reports.
package serverkey

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/duet-test/duet"
)

// MaxSlugLen is the maximum length of a slug from [Slug] or in a [Key].
const MaxSlugLen = 24

// credentialHint tells the user where a credential belongs instead of the URL.
const credentialHint = "pass the credential as a header instead (--header-env or --bearer-token-env)"

// Normalize returns the canonical form of an http or https URL, so that
// equivalent spellings compare equal:
//
//   - scheme and host are lower-cased; a trailing dot on the host is dropped;
//     IP literals are written canonically, IPv6 in brackets;
//   - the default port (80 for http, 443 for https) is dropped and other
//     ports lose leading zeros;
//   - the path is cleaned like path.Clean ("." and ".." segments resolved,
//     repeated and trailing slashes removed, "/" if empty), segment by segment
//     so that an encoded slash (%2F) stays distinct from "/"; percent-encoding
//     is normalized (unreserved characters decoded, others encoded with
//     upper-case hex);
//   - query parameters are sorted by name, then value, and re-encoded;
//   - the fragment is dropped.
//
// Normalize is idempotent. It returns a CodeURLRefused error for a URL with
// user information or a query parameter for which [SensitiveParam] reports
// true (the message names the parameter, never its value), and a
// CodeInvalidArgument error for a URL that cannot be parsed, is not http or
// https, or has no valid host or port.
func Normalize(raw string) (string, error) {
	u, err := normalize(raw)
	if err != nil {
		return "", err
	}
	return u.String(), nil
}

// Key returns the serverKey of the URL raw: "mcp_<slug>_<hash>", where hash
// is the first 4 bytes, in hex, of the SHA-256 of [Normalize](raw), and slug
// is [Slug] of the normalized host without a leading "www." (for an IP
// literal, the address with dots and colons turned into dashes), or "server"
// if that is empty. Key returns the errors of [Normalize].
func Key(raw string) (string, error) {
	u, err := normalize(raw)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(u.String()))
	slug := Slug(strings.TrimPrefix(u.host, "www."))
	if slug == "" {
		slug = "server"
	}
	return "mcp_" + slug + "_" + hex.EncodeToString(sum[:4]), nil
}

// Slug turns a display name into a short identifier of lower-case ASCII
// letters, digits and single dashes, without leading or trailing dashes, at
// most [MaxSlugLen] characters: "Order Service (staging)" becomes
// "order-service-staging". Any other character, including a non-ASCII
// letter, separates words. A long slug is cut at a dash when one is near the
// limit. Slug returns "" if name has no ASCII letter or digit.
func Slug(name string) string {
	b := make([]byte, 0, min(len(name), 2*MaxSlugLen))
	dash := false
	for i := 0; i < len(name) && len(b) <= MaxSlugLen; i++ {
		c := name[i]
		switch {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
		case 'A' <= c && c <= 'Z':
			c += 'a' - 'A'
		default:
			dash = len(b) > 0
			continue
		}
		if dash {
			b = append(b, '-')
			dash = false
		}
		b = append(b, c)
	}
	if len(b) <= MaxSlugLen {
		return string(b)
	}
	// b holds MaxSlugLen+1 or +2 bytes; cut at a word boundary if that
	// keeps at least half of the slug.
	if i := strings.LastIndexByte(string(b[:MaxSlugLen+1]), '-'); i >= MaxSlugLen/2 {
		return string(b[:i])
	}
	return strings.TrimRight(string(b[:MaxSlugLen]), "-")
}

// sensitiveNames are query parameter names, lower-cased with '-' and '_'
// removed, that carry credentials.
var sensitiveNames = map[string]bool{
	"token": true, "accesstoken": true, "refreshtoken": true, "idtoken": true,
	"apikey": true, "key": true, "xapikey": true,
	"secret": true, "clientsecret": true,
	"password": true, "passwd": true, "pwd": true,
	"sig": true, "signature": true,
	"auth": true, "authorization": true,
	"credential": true, "credentials": true,
	"session": true, "sessionid": true,
	"jwt": true, "bearer": true,
}

// sensitiveSuffixes catch names such as "x-goog-api-key", "github_token" or
// "X-Amz-Signature" and "X-Amz-Credential" (pre-signed URLs).
var sensitiveSuffixes = []string{"token", "secret", "password", "key", "signature", "credential", "credentials"}

// SensitiveParam reports whether a query parameter named name is likely to
// carry a credential. Names are compared case-insensitively with '-' and '_'
// ignored: "token", "api_key", "X-API-Key", "sig", "session_id" and others,
// and any name ending in "token", "secret", "password", "key", "signature" or
// "credential(s)".
func SensitiveParam(name string) bool {
	n := strings.Map(func(r rune) rune {
		if r == '-' || r == '_' {
			return -1
		}
		return unicode.ToLower(r)
	}, name)
	if sensitiveNames[n] {
		return true
	}
	for _, s := range sensitiveSuffixes {
		if strings.HasSuffix(n, s) {
			return true
		}
	}
	return false
}

// normalized is a URL in canonical form.
type normalized struct {
	scheme string
	host   string // lower-case name or canonical IP, without brackets
	ipv6   bool
	port   string // "" for the default port
	path   string // escaped, starts with "/"
	query  string // escaped, without "?"
}

func (u normalized) String() string {
	var b strings.Builder
	b.WriteString(u.scheme)
	b.WriteString("://")
	if u.ipv6 {
		b.WriteString("[" + u.host + "]")
	} else {
		b.WriteString(u.host)
	}
	if u.port != "" {
		b.WriteString(":" + u.port)
	}
	b.WriteString(u.path)
	if u.query != "" {
		b.WriteString("?" + u.query)
	}
	return b.String()
}

func normalize(raw string) (normalized, error) {
	s := strings.TrimSpace(raw)
	if s == "" {
		return normalized{}, invalid("URL is empty")
	}
	u, err := url.Parse(s)
	if err != nil {
		// The *url.Error quotes the whole URL, which may hold a credential;
		// its inner error quotes at most a host, port or escape.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return normalized{}, invalid("invalid URL: %v", err)
	}
	var n normalized
	n.scheme = strings.ToLower(u.Scheme)
	switch {
	case n.scheme == "":
		return normalized{}, invalid("URL has no scheme: want http:// or https://")
	case n.scheme != "http" && n.scheme != "https":
		return normalized{}, invalid("unsupported scheme %q: want a URL starting with http:// or https://", n.scheme)
	case u.Opaque != "":
		return normalized{}, invalid("URL must look like %s://host/path", n.scheme)
	case u.User != nil:
		return normalized{}, refused("URL carries user information (user:password@); remove it and %s", credentialHint)
	}
	if n.query, err = normalizeQuery(u.RawQuery); err != nil {
		return normalized{}, err
	}
	if n.host, n.ipv6, err = normalizeHost(u); err != nil {
		return normalized{}, err
	}
	if n.port, err = normalizePort(n.scheme, u.Port()); err != nil {
		return normalized{}, err
	}
	if n.path, err = normalizePath(u.EscapedPath()); err != nil {
		return normalized{}, err
	}
	return n, nil
}

func normalizeHost(u *url.URL) (host string, ipv6 bool, err error) {
	h := u.Hostname()
	if h == "" {
		return "", false, invalid("URL has no host")
	}
	if strings.HasPrefix(u.Host, "[") {
		addr, err := netip.ParseAddr(h)
		switch {
		case err != nil || !addr.Is6():
			return "", false, invalid("invalid IPv6 literal in host")
		case addr.Zone() != "":
			return "", false, invalid("IPv6 zone identifiers are not supported in server URLs")
		}
		return addr.String(), true, nil
	}
	h = strings.TrimSuffix(strings.ToLower(h), ".")
	if addr, err := netip.ParseAddr(h); err == nil {
		if addr.Is6() {
			return "", false, invalid("an IPv6 literal host must be in brackets, like http://[::1]:8080/")
		}
		return addr.String(), false, nil
	}
	if h == "" || len(h) > 253 {
		return "", false, invalid("invalid host name length")
	}
	for label := range strings.SplitSeq(h, ".") {
		if label == "" || len(label) > 63 {
			return "", false, invalid("invalid host name: empty or over-long label")
		}
	}
	for _, r := range h {
		switch {
		case 'a' <= r && r <= 'z', '0' <= r && r <= '9', r == '-', r == '.', r == '_':
		case r >= utf8.RuneSelf:
			return "", false, invalid("non-ASCII host names must be written in their punycode (xn--) form")
		default:
			return "", false, invalid("invalid character %q in host", r)
		}
	}
	return h, false, nil
}

func normalizePort(scheme, port string) (string, error) {
	if port == "" {
		return "", nil
	}
	// url.Parse has checked that port is all digits.
	p, err := strconv.Atoi(port)
	if err != nil || p < 1 || p > 65535 {
		return "", invalid("port %s is out of range 1-65535", port)
	}
	if scheme == "http" && p == 80 || scheme == "https" && p == 443 {
		return "", nil
	}
	return strconv.Itoa(p), nil
}

// normalizePath cleans an escaped path segment by segment: it decodes each
// segment, resolves "." and "..", drops empty segments and re-encodes the
// rest canonically. Decoding per segment keeps "%2F" inside a segment.
func normalizePath(escaped string) (string, error) {
	var segs []string
	for s := range strings.SplitSeq(escaped, "/") {
		dec, err := url.PathUnescape(s)
		if err != nil {
			return "", invalid("invalid path: %v", err)
		}
		switch dec {
		case "", ".":
		case "..":
			if len(segs) > 0 {
				segs = segs[:len(segs)-1]
			}
		default:
			segs = append(segs, escapeSegment(dec))
		}
	}
	return "/" + strings.Join(segs, "/"), nil
}

// escapeSegment percent-encodes a decoded path segment: unreserved
// characters, sub-delimiters, ':' and '@' (RFC 3986 pchar) stay literal,
// everything else becomes %XX with upper-case hex.
func escapeSegment(s string) string {
	const hexDigits = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if isPchar(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&15])
	}
	return b.String()
}

func isPchar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("-._~!$&'()*+,;=:@", c) >= 0
}

// normalizeQuery refuses sensitive parameters and returns the query with
// parameters sorted by name, then value, in canonical encoding.
func normalizeQuery(raw string) (string, error) {
	if raw == "" {
		return "", nil
	}
	// Look for credentials before anything can fail, so that a credential
	// is reported as such even in an otherwise malformed query (ParseQuery
	// drops a pair that holds a ';').
	for pair := range strings.FieldsFuncSeq(raw, func(r rune) bool { return r == '&' || r == ';' }) {
		name, _, _ := strings.Cut(pair, "=")
		if dec, err := url.QueryUnescape(name); err == nil {
			name = dec
		}
		if SensitiveParam(name) {
			return "", refused("URL query parameter %q looks like a credential; remove it from the URL and %s",
				name, credentialHint)
		}
	}
	vals, err := url.ParseQuery(raw)
	if err != nil {
		return "", invalid("invalid query: %v", err)
	}
	names := make([]string, 0, len(vals))
	for name := range vals {
		names = append(names, name)
	}
	slices.Sort(names)
	var b strings.Builder
	for _, name := range names {
		vs := vals[name]
		slices.Sort(vs)
		for _, v := range vs {
			if b.Len() > 0 {
				b.WriteByte('&')
			}
			b.WriteString(url.QueryEscape(name))
			b.WriteByte('=')
			b.WriteString(url.QueryEscape(v))
		}
	}
	return b.String(), nil
}

func invalid(format string, args ...any) *duet.Error {
	return &duet.Error{Code: duet.CodeInvalidArgument, Message: fmt.Sprintf(format, args...), Op: "serverkey.Normalize"}
}

func refused(format string, args ...any) *duet.Error {
	return &duet.Error{Code: duet.CodeURLRefused, Message: fmt.Sprintf(format, args...), Op: "serverkey.Normalize"}
}
