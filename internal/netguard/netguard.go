// Package netguard keeps Duet's outbound connections — to registered MCP
// servers, from http steps, and browser navigations — away from addresses
// they must not reach (server-side request forgery).
//
// A [Policy] checks the IP address that is actually dialled, after DNS
// resolution, from inside net.Dialer's Control hook, so a host name that
// resolves to a public address at registration and to a private one later
// (DNS rebinding) is still refused. Use [Policy.Transport] for HTTP clients,
// [Policy.Dialer] or [Policy.DialContext] for other connections, and
// [Policy.CheckIP] to check an address directly.
//
// Some addresses are always refused: unspecified and "this network"
// (0.0.0.0/8, ::) and cloud metadata services (169.254.169.254,
// fd00:ec2::254, 100.100.100.200). Link-local (169.254.0.0/16, fe80::/10),
// multicast, broadcast and reserved 240.0.0.0/4 are refused unless listed in
// Policy.Allow. Private ranges (10.0.0.0/8,
// 172.16.0.0/12, 192.168.0.0/16, 100.64.0.0/10, fc00::/7) are refused unless
// AllowPrivate, loopback (127.0.0.0/8, ::1) unless AllowLoopback. IPv6 forms
// that embed an IPv4 address (IPv4-mapped ::ffff:0:0/96, IPv4-compatible
// ::/96 and NAT64 64:ff9b::/96) are judged by the embedded address too.
//
// Beyond those ranges: [Policy.Allow] lists addresses and prefixes that are
// allowed anyway (setting DUET_NET_ALLOW; never the metadata or unspecified
// addresses); [Policy.Self] names the addresses Duet itself listens on, which
// are always refused, as is the public address clients reach it by
// ([Self.AddURL], refused by name); and [Policy.Allowing] makes a policy for
// one task under which the host and port of its base URL ([AllowURL]) may be
// loopback or private. [Policy.Client] is the HTTP client of http steps: every request and
// every redirect hop is checked before it is sent, and every connection when
// it is dialled. [Policy.CheckURL] checks a URL the same way for callers that
// do not dial themselves, such as a browser.
package netguard

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"

	"github.com/duet-test/duet"
)

// Names of the settings that relax a [Policy], used in error messages.
const (
	EnvAllowPrivate  = "DUET_MCP_ALLOW_PRIVATE"
	EnvAllowLoopback = "DUET_MCP_ALLOW_LOOPBACK"
	EnvAllow         = "DUET_NET_ALLOW"
)

// Policy says which non-public destinations outbound connections may reach.
// The zero value is the strictest: only public addresses.
type Policy struct {
	// AllowLoopback permits 127.0.0.0/8 and ::1 (setting
	// DUET_MCP_ALLOW_LOOPBACK). False refuses them.
	AllowLoopback bool
	// AllowPrivate permits 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16,
	// 100.64.0.0/10 and fc00::/7 (setting DUET_MCP_ALLOW_PRIVATE). False
	// refuses them. Cloud metadata addresses inside these ranges stay
	// refused.
	AllowPrivate bool
	// Allow lists addresses and prefixes that are allowed although a range
	// above refuses them (setting DUET_NET_ALLOW, parsed by [ParsePrefixes]):
	// a private subnet of a staging network, a link-local device. The cloud
	// metadata addresses and the unspecified ("this network") addresses stay
	// refused whatever it says. Nil allows nothing more.
	Allow []netip.Prefix
	// Self holds the addresses Duet itself listens on and its public name:
	// connections to them are refused whatever else allows them, so that a
	// test cannot call Duet's own API with the privileges of the machine,
	// nor Duet be an MCP server of itself. Nil means none.
	Self *Self

	// scope lets its destinations be loopback or private (Allowing).
	scope Allowance
}

// class is a kind of refused destination.
type class int

const (
	never  class = iota // not even Policy.Allow lets it through
	always              // only Policy.Allow lets it through
	loopback
	private
)

type rule struct {
	prefix netip.Prefix
	what   string // e.g. "the link-local range"
	class  class
}

// rules is checked in order; the first match decides, so single addresses
// come before the ranges that contain them.
var rules = []rule{
	{netip.MustParsePrefix("169.254.169.254/32"), "the cloud metadata address", never},
	{netip.MustParsePrefix("100.100.100.200/32"), "the cloud metadata address", never},
	{netip.MustParsePrefix("fd00:ec2::254/128"), "the cloud metadata address", never},
	{netip.MustParsePrefix("0.0.0.0/32"), "the unspecified address", never},
	{netip.MustParsePrefix("::/128"), "the unspecified address", never},
	{netip.MustParsePrefix("0.0.0.0/8"), `the "this network" range`, never},
	{netip.MustParsePrefix("169.254.0.0/16"), "the link-local range", always},
	{netip.MustParsePrefix("fe80::/10"), "the link-local range", always},
	{netip.MustParsePrefix("224.0.0.0/4"), "the multicast range", always},
	{netip.MustParsePrefix("ff00::/8"), "the multicast range", always},
	{netip.MustParsePrefix("255.255.255.255/32"), "the broadcast address", always},
	{netip.MustParsePrefix("240.0.0.0/4"), "the reserved range", always},
	{netip.MustParsePrefix("127.0.0.0/8"), "the loopback range", loopback},
	{netip.MustParsePrefix("::1/128"), "the loopback address", loopback},
	{netip.MustParsePrefix("10.0.0.0/8"), "the private range", private},
	{netip.MustParsePrefix("172.16.0.0/12"), "the private range", private},
	{netip.MustParsePrefix("192.168.0.0/16"), "the private range", private},
	{netip.MustParsePrefix("100.64.0.0/10"), "the shared address (CGNAT) range", private},
	{netip.MustParsePrefix("fc00::/7"), "the unique local (private) range", private},
}

var (
	ipv4Compatible = netip.MustParsePrefix("::/96")
	nat64          = netip.MustParsePrefix("64:ff9b::/96")
)

// CheckIP returns nil if p allows connections to ip, and otherwise a
// CodeURLRefused error whose message names the range that was hit and the
// setting that allows it, if any. The address itself is only in the wrapped
// error, for logs. An invalid ip is refused.
func (p Policy) CheckIP(ip netip.Addr) error {
	return p.check(ip, false)
}

// check is CheckIP; scoped says that the destination was named by a URL that
// the policy's allowance names (Allowing), which lets loopback and private
// addresses through.
func (p Policy) check(ip netip.Addr, scoped bool) error {
	if !ip.IsValid() {
		return refusal("destination is not a valid IP address", ip)
	}
	addr := ip.WithZone("")
	if r, ok := match(addr); ok {
		// The first matching rule decides, so that ::1 is judged as
		// loopback and not as the IPv4-compatible form of 0.0.0.1.
		if p.allows(r, addr, scoped) {
			return nil
		}
		return r.err("", ip)
	}
	if v4, form, ok := embeddedIPv4(addr); ok {
		if r, ok := match(v4); ok && !p.allows(r, v4, scoped) && !p.listed(addr) {
			return r.err(form, ip)
		}
	}
	return nil
}

// match returns the first rule whose prefix contains ip.
func match(ip netip.Addr) (rule, bool) {
	for _, r := range rules {
		if r.prefix.Contains(ip) {
			return r, true
		}
	}
	return rule{}, false
}

func (p Policy) allows(r rule, ip netip.Addr, scoped bool) bool {
	switch r.class {
	case never:
		return false
	case loopback:
		if p.AllowLoopback || scoped {
			return true
		}
	case private:
		if p.AllowPrivate || scoped {
			return true
		}
	}
	return p.listed(ip)
}

// listed reports whether Policy.Allow contains ip.
func (p Policy) listed(ip netip.Addr) bool {
	for _, pr := range p.Allow {
		if pr.Contains(ip) || (ip.Is4In6() && pr.Contains(ip.Unmap())) {
			return true
		}
	}
	return false
}

func (r rule) err(form string, ip netip.Addr) error {
	msg := "destination address is in " + r.what + " " + r.prefix.String()
	if r.prefix.IsSingleIP() {
		msg = "destination address is " + r.what + " " + r.prefix.Addr().String()
	}
	if form != "" {
		msg += " (as " + form + ")"
	}
	switch r.class {
	case loopback:
		msg += "; set " + EnvAllowLoopback + "=true to allow loopback addresses, or list the address in " + EnvAllow
	case private:
		msg += "; set " + EnvAllowPrivate + "=true to allow private addresses, or list the address in " + EnvAllow
	case always:
		msg += ", which is refused unless listed in " + EnvAllow
	default:
		msg += ", which is always refused"
	}
	return refusal(msg, ip)
}

func refusal(msg string, ip netip.Addr) error {
	return &duet.Error{
		Code:    duet.CodeURLRefused,
		Message: msg,
		Op:      "netguard.Policy.CheckIP",
		Err:     fmt.Errorf("refused address %v", ip),
	}
}

// embeddedIPv4 returns the IPv4 address inside an IPv4-mapped,
// IPv4-compatible or NAT64 IPv6 address, and the name of the form.
func embeddedIPv4(ip netip.Addr) (netip.Addr, string, bool) {
	if !ip.Is6() {
		return netip.Addr{}, "", false
	}
	if ip.Is4In6() {
		return ip.Unmap(), "an IPv4-mapped IPv6 address", true
	}
	b := ip.As16()
	v4 := netip.AddrFrom4([4]byte(b[12:]))
	switch {
	case nat64.Contains(ip):
		return v4, "a NAT64 IPv6 address", true
	case ipv4Compatible.Contains(ip):
		return v4, "an IPv4-compatible IPv6 address", true
	}
	return netip.Addr{}, "", false
}

// Control checks the address a net.Dialer is about to connect to; it has the
// signature of net.Dialer.Control. It refuses networks other than TCP and
// addresses [Policy.CheckIP] refuses, with a CodeURLRefused error. Because it
// runs after name resolution, for every address tried, DNS answers cannot
// bypass it.
func (p Policy) Control(network, address string, _ syscall.RawConn) error {
	return p.control(network, address, false)
}

func (p Policy) control(network, address string, scoped bool) error {
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		return &duet.Error{
			Code:    duet.CodeURLRefused,
			Message: fmt.Sprintf("network %q is not allowed for outbound connections", network),
			Op:      "netguard.Policy.Control",
		}
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return &duet.Error{
			Code:    duet.CodeURLRefused,
			Message: "cannot check the destination address",
			Op:      "netguard.Policy.Control",
			Err:     err,
		}
	}
	if err := p.Self.check(ap); err != nil {
		return err
	}
	return p.check(ap.Addr(), scoped)
}

// Dialer returns a copy of base whose connections are checked by
// [Policy.Control]; a Control or ControlContext hook already in base runs
// after the check. A nil base means a dialer with a 30-second timeout and
// 30-second keep-alive, like http.DefaultTransport's. The dialer judges the
// address it reaches only: p's allowance, which names destinations as URLs
// do, applies to [Policy.DialContext] and [Policy.Transport].
func (p Policy) Dialer(base *net.Dialer) *net.Dialer {
	return p.dialer(base, false)
}

// dialer is Dialer; scoped lets loopback and private addresses through for
// a destination p's allowance names.
func (p Policy) dialer(base *net.Dialer, scoped bool) *net.Dialer {
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	if base != nil {
		c := *base
		d = &c
	}
	next, nextCtx := d.Control, d.ControlContext
	d.Control = nil
	d.ControlContext = func(ctx context.Context, network, address string, c syscall.RawConn) error {
		if err := p.control(network, address, scoped); err != nil {
			return err
		}
		switch {
		case nextCtx != nil:
			return nextCtx(ctx, network, address, c)
		case next != nil:
			return next(network, address, c)
		}
		return nil
	}
	return d
}

// DialContext connects like net.Dialer.DialContext with [Policy.Dialer](nil).
// When p's allowance names address (its host:port, as named, see
// [Policy.Allowing]), loopback and private addresses are allowed for this
// connection. A refused destination fails with an error that wraps a
// CodeURLRefused *duet.Error (use duet.ErrorCode or errors.As).
func (p Policy) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	return p.dial(nil)(ctx, network, address)
}

// dial returns a DialContext over copies of base that lets loopback and
// private addresses through when p's allowance names the address as it is
// named (before name resolution).
func (p Policy) dial(base *net.Dialer) func(ctx context.Context, network, address string) (net.Conn, error) {
	plain, scoped := p.dialer(base, false), p.dialer(base, true)
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		// Duet's own public name is refused as named, at every connection:
		// the addresses it resolves to may front other services too.
		if err := p.Self.checkName(address); err != nil {
			return nil, err
		}
		if p.scope.has(address) {
			return scoped.DialContext(ctx, network, address)
		}
		return plain.DialContext(ctx, network, address)
	}
}

// Transport returns a copy of base (http.DefaultTransport if nil) that dials
// through [Policy.Dialer]. Because the policy can only check the address it
// dials, the copy uses no proxy, and base's Dial, DialContext, DialTLS and
// DialTLSContext hooks are replaced; TLS settings, timeouts and connection
// limits are kept. Refused destinations fail requests with an error that
// wraps a CodeURLRefused *duet.Error. Redirects are checked too, since every
// new connection goes through the dialer.
func (p Policy) Transport(base *http.Transport) *http.Transport {
	if base == nil {
		if dt, ok := http.DefaultTransport.(*http.Transport); ok {
			base = dt
		} else { // replaced by a program or test; use its documented defaults
			base = &http.Transport{
				ForceAttemptHTTP2:     true,
				MaxIdleConns:          100,
				IdleConnTimeout:       90 * time.Second,
				TLSHandshakeTimeout:   10 * time.Second,
				ExpectContinueTimeout: time.Second,
			}
		}
	}
	t := base.Clone()
	t.Proxy = nil
	// The deprecated dial hooks are cleared so that they cannot bypass the check.
	t.Dial = nil    //lint:ignore SA1019 cleared on purpose, see above
	t.DialTLS = nil //lint:ignore SA1019 cleared on purpose, see above
	t.DialTLSContext = nil
	t.DialContext = p.dial(nil)
	return t
}
