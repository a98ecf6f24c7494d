package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/duet-test/duet"
)

// ParsePrefixes parses the entries of DUET_NET_ALLOW: IP addresses
// ("10.1.2.3", "fd00::7") and CIDR prefixes ("10.1.2.0/24"). Host names are
// refused: the guard judges the addresses a connection reaches, so a name
// would be only as good as its next DNS answer. The error names the entry.
func ParsePrefixes(entries []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, e := range entries {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		if strings.Contains(e, "/") {
			p, err := netip.ParsePrefix(e)
			if err != nil {
				return nil, fmt.Errorf("%q is not a CIDR prefix such as 10.1.2.0/24", e)
			}
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(strings.Trim(e, "[]"))
		if err != nil {
			return nil, fmt.Errorf("%q is not an IP address or a CIDR prefix (host names are not accepted: list their addresses)", e)
		}
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

// Self is the set of addresses Duet itself listens on. Connections to them
// are refused by every [Policy] that points at it. It is safe for concurrent
// use; the zero value is empty.
type Self struct {
	mu    sync.RWMutex
	addrs []netip.AddrPort
	names []string // "host:port", lower case: DUET_PUBLIC_URL (AddURL)

	local     []netip.Addr // addresses of this machine's interfaces
	localRead time.Time
}

// Add records a listening address, such as "127.0.0.1:8420", "[::]:8420" or
// ":8420" (every interface). An address without a port is ignored.
func (s *Self) Add(hostport string) {
	if s == nil {
		return
	}
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return
	}
	ap, err := netip.ParseAddrPort(net.JoinHostPort(cmpOr(host, "::"), port))
	if err != nil {
		if host != "localhost" {
			return
		}
		ap, _ = netip.ParseAddrPort(net.JoinHostPort("127.0.0.1", port))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range s.addrs {
		if a == ap {
			return
		}
	}
	s.addrs = append(s.addrs, ap)
}

// AddURL records the address clients reach Duet by (DUET_PUBLIC_URL, such
// as "https://duet.example.com"): its host and port as the URL names them
// are refused by name, whatever they resolve to, and its address too when
// the host is an IP address. The name, not the addresses it resolves to,
// is what identifies Duet: a reverse proxy's address may front other
// services as well. A URL without a host is ignored.
func (s *Self) AddURL(rawURL string) {
	if s == nil {
		return
	}
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" {
		return
	}
	hp := hostPort(u)
	host, port, err := net.SplitHostPort(hp)
	if err != nil {
		return
	}
	host = strings.TrimSuffix(host, ".")
	if _, err := netip.ParseAddr(host); err == nil {
		s.Add(net.JoinHostPort(host, port))
		return
	}
	if a, ok := legacyIPv4(host); ok {
		s.Add(net.JoinHostPort(a.String(), port))
		return
	}
	if host == "localhost" {
		s.Add(net.JoinHostPort(host, port))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	hp = net.JoinHostPort(host, port)
	for _, n := range s.names {
		if n == hp {
			return
		}
	}
	s.names = append(s.names, hp)
}

// checkName refuses hostport ("host:port" as a URL or a dial names it,
// before name resolution) when it is Duet's own public address (AddURL).
func (s *Self) checkName(hostport string) error {
	if s == nil {
		return nil
	}
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return nil
	}
	hp := net.JoinHostPort(strings.ToLower(strings.TrimSuffix(host, ".")), port)
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, n := range s.names {
		if n == hp {
			return &duet.Error{
				Code:    duet.CodeURLRefused,
				Message: fmt.Sprintf("destination %s is Duet's own public address (DUET_PUBLIC_URL), which is always refused", hp),
				Op:      "netguard.Self",
			}
		}
	}
	return nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// check refuses ap when Duet listens there: the same address and port, or
// the port on a wildcard listener reached through loopback or an address of
// this machine.
func (s *Self) check(ap netip.AddrPort) error {
	if s == nil {
		return nil
	}
	ip := ap.Addr().Unmap().WithZone("")
	s.mu.RLock()
	addrs := s.addrs
	s.mu.RUnlock()
	for _, a := range addrs {
		if a.Port() != ap.Port() {
			continue
		}
		la := a.Addr().Unmap()
		hit := la == ip
		switch {
		case la.IsUnspecified():
			hit = hit || ip.IsLoopback() || ip.IsUnspecified() || s.isLocal(ip)
		case la.IsLoopback():
			// 127.0.0.1 and localhost reach a loopback listener; so does
			// ::1 on a dual-stack one.
			hit = hit || (ip.IsLoopback() && la.Is4() == ip.Is4())
		}
		if hit {
			return &duet.Error{
				Code:    duet.CodeURLRefused,
				Message: fmt.Sprintf("destination is Duet's own address (port %d), which is always refused", ap.Port()),
				Op:      "netguard.Self",
				Err:     fmt.Errorf("refused address %v", ap),
			}
		}
	}
	return nil
}

// isLocal reports whether ip belongs to an interface of this machine (read
// at most every few seconds).
func (s *Self) isLocal(ip netip.Addr) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if time.Since(s.localRead) > 5*time.Second {
		s.local = s.local[:0]
		if addrs, err := net.InterfaceAddrs(); err == nil {
			for _, a := range addrs {
				if p, err := netip.ParsePrefix(a.String()); err == nil {
					s.local = append(s.local, p.Addr().Unmap().WithZone(""))
				}
			}
		}
		s.localRead = time.Now()
	}
	for _, l := range s.local {
		if l == ip {
			return true
		}
	}
	return false
}

// Allowance is the set of destinations — host and port as a URL names
// them, before name resolution — that a [Policy] lets be loopback or
// private addresses: the base URL of the task under test. It is given to
// the guard explicitly ([Policy.Allowing]) by whoever opens the client, the
// transport or the browser session of the task; nothing reads it from a
// context. The zero value allows nothing more.
type Allowance struct {
	hosts []string // "host:port", lower case
}

// AllowURL returns the allowance of the host and port of each rawURL (the
// scheme's default port when it has none). The metadata, link-local and
// unspecified addresses and Duet's own address stay refused whatever it
// allows. Empty and malformed URLs allow nothing.
func AllowURL(rawURLs ...string) Allowance {
	var a Allowance
	for _, raw := range rawURLs {
		a = a.with(raw)
	}
	return a
}

// with returns a allowing the host and port of rawURL too.
func (a Allowance) with(rawURL string) Allowance {
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" {
		return a
	}
	hp := hostPort(u)
	if hp == "" || a.has(hp) {
		return a
	}
	return Allowance{hosts: append(a.hosts[:len(a.hosts):len(a.hosts)], hp)}
}

// Join returns the allowance of a's destinations and b's.
func (a Allowance) Join(b Allowance) Allowance {
	for _, hp := range b.hosts {
		if !a.has(hp) {
			a.hosts = append(a.hosts[:len(a.hosts):len(a.hosts)], hp)
		}
	}
	return a
}

// IsZero reports whether a allows nothing.
func (a Allowance) IsZero() bool { return len(a.hosts) == 0 }

// String lists the destinations a allows ("host:port", comma-separated),
// for logs.
func (a Allowance) String() string { return strings.Join(a.hosts, ",") }

func (a Allowance) has(hostport string) bool {
	hostport = strings.ToLower(hostport)
	for _, h := range a.hosts {
		if h == hostport {
			return true
		}
	}
	return false
}

// Allowing returns a copy of p that also lets the destinations of a (see
// [Allowance]) be loopback or private addresses: its checks, its dialers,
// transports and clients. A client, transport or dialer made from it keeps
// the allowance for every request and connection, whatever their context;
// make one for each task (case, browser session) that has one, and none
// that outlives it.
func (p Policy) Allowing(a Allowance) Policy {
	p.scope = p.scope.Join(a)
	return p
}

// hostPort returns "host:port" of u in lower case, with the scheme's default
// port, or "" when the scheme has none.
func hostPort(u *url.URL) string {
	port := u.Port()
	if port == "" {
		switch strings.ToLower(u.Scheme) {
		case "http", "ws":
			port = "80"
		case "https", "wss":
			port = "443"
		default:
			return ""
		}
	}
	return strings.ToLower(net.JoinHostPort(strings.Trim(u.Hostname(), "[]"), port))
}

// CheckURL checks the destination of rawURL before a request that the caller
// does not dial itself (a browser navigation) or before reusing a
// connection: the scheme must be http or https, and every address its host
// resolves to must be allowed (loopback and private ones too when
// p's allowance names the URL, see [Policy.Allowing]). A host name that does
// not resolve is not refused here: the request itself fails. ctx bounds the
// name resolution. Returns a CodeURLRefused *duet.Error.
func (p Policy) CheckURL(ctx context.Context, rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return &duet.Error{Code: duet.CodeURLRefused, Message: "the URL does not parse", Op: "netguard.Policy.CheckURL", Err: err}
	}
	return p.checkURL(ctx, u)
}

func (p Policy) checkURL(ctx context.Context, u *url.URL) error {
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
	default:
		return &duet.Error{Code: duet.CodeURLRefused, Message: fmt.Sprintf("URL scheme %q is not allowed (want http or https)", u.Scheme), Op: "netguard.Policy.CheckURL"}
	}
	hp := hostPort(u)
	host, port, _ := net.SplitHostPort(hp)
	host = strings.TrimSuffix(host, ".")
	if host == "" {
		return &duet.Error{Code: duet.CodeURLRefused, Message: "the URL has no host", Op: "netguard.Policy.CheckURL"}
	}
	if err := p.Self.checkName(hp); err != nil {
		return err
	}
	scoped := p.scope.has(hp)
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else if a, ok := legacyIPv4(host); ok {
		addrs = []netip.Addr{a}
	} else {
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		addrs, err = net.DefaultResolver.LookupNetIP(rctx, "ip", host)
		cancel()
		if err != nil {
			return nil
		}
	}
	for _, a := range addrs {
		if err := p.control("tcp", netip.AddrPortFrom(a, parsePort(port)).String(), scoped); err != nil {
			var de *duet.Error
			if errors.As(err, &de) {
				de.Message = u.Host + ": " + de.Message
			}
			return err
		}
	}
	return nil
}

func parsePort(s string) uint16 {
	var n uint16
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0
		}
		n = n*10 + uint16(c-'0')
	}
	return n
}

// legacyIPv4 parses the forms of an IPv4 address that browsers accept and
// netip does not: a single number ("2130706433"), hexadecimal or octal parts
// ("0x7f.1", "0177.0.0.1") and fewer than four parts ("127.1"). The WHATWG URL
// parser turns them into a dotted address; a guard that did not would wave
// them through as host names.
func legacyIPv4(host string) (netip.Addr, bool) {
	parts := strings.Split(host, ".")
	if len(parts) > 4 || host == "" {
		return netip.Addr{}, false
	}
	if parts[len(parts)-1] == "" && len(parts) > 1 {
		parts = parts[:len(parts)-1]
	}
	nums := make([]uint64, len(parts))
	for i, p := range parts {
		base := uint64(10)
		switch {
		case strings.HasPrefix(p, "0x") || strings.HasPrefix(p, "0X"):
			base, p = 16, p[2:]
		case len(p) > 1 && p[0] == '0':
			base, p = 8, p[1:]
		}
		if p == "" && base != 16 {
			return netip.Addr{}, false
		}
		var n uint64
		for _, c := range strings.ToLower(p) {
			var d uint64
			switch {
			case c >= '0' && c <= '9':
				d = uint64(c - '0')
			case c >= 'a' && c <= 'f':
				d = uint64(c-'a') + 10
			default:
				return netip.Addr{}, false
			}
			if d >= base {
				return netip.Addr{}, false
			}
			n = n*base + d
			if n > 1<<32 {
				return netip.Addr{}, false
			}
		}
		nums[i] = n
	}
	var v uint64
	for i, n := range nums[:len(nums)-1] {
		if n > 255 {
			return netip.Addr{}, false
		}
		v |= n << (8 * (3 - i))
	}
	last := nums[len(nums)-1]
	if last >= 1<<(8*(5-len(nums))) {
		return netip.Addr{}, false
	}
	v |= last
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
}

// Client returns an HTTP client for requests whose URLs come from users (the
// http steps of a test): its transport is [Policy.Transport](nil), and before
// each request — the first and every redirect hop — the URL is checked with
// [Policy.CheckURL], so that no redirect reaches a refused address. Its
// transport is its own: a client made from [Policy.Allowing] for one task
// shares no connection with another task's. It follows at most 10
// redirects, like http.DefaultClient. Refusals fail the request with an
// error that wraps a CodeURLRefused *duet.Error.
func (p Policy) Client() *http.Client {
	return &http.Client{Transport: &guarded{p: p, next: p.Transport(nil)}}
}

type guarded struct {
	p    Policy
	next http.RoundTripper
}

func (g *guarded) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := g.p.checkURL(req.Context(), req.URL); err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	return g.next.RoundTrip(req)
}

// CloseIdleConnections closes the idle connections of the transport.
func (g *guarded) CloseIdleConnections() {
	if c, ok := g.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
