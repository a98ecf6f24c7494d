package netguard_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/netguard"
)

var (
	strict   = netguard.Policy{}
	loopback = netguard.Policy{AllowLoopback: true}
	private  = netguard.Policy{AllowPrivate: true}
	lenient  = netguard.Policy{AllowLoopback: true, AllowPrivate: true}
)

// wantAllowed is the expected outcome of CheckIP for each policy.
type wantAllowed struct{ strict, loopback, private, lenient bool }

var (
	public       = wantAllowed{true, true, true, true}
	never        = wantAllowed{}
	loopbackOnly = wantAllowed{false, true, false, true}
	privateOnly  = wantAllowed{false, false, true, true}
)

func TestCheckIP(t *testing.T) {
	t.Parallel()
	tests := []struct {
		addr    string
		want    wantAllowed
		wantMsg string // substring of the message when refused by strict
	}{
		// Public.
		{"8.8.8.8", public, ""},
		{"1.1.1.1", public, ""},
		{"172.32.0.1", public, ""},
		{"100.128.0.1", public, ""},
		{"169.255.0.1", public, ""},
		{"2606:4700:4700::1111", public, ""},
		{"::ffff:8.8.8.8", public, ""},
		{"64:ff9b::808:808", public, ""},

		// Always refused.
		{"0.0.0.0", never, "the unspecified address 0.0.0.0, which is always refused"},
		{"0.1.2.3", never, `"this network" range 0.0.0.0/8`},
		{"::", never, "unspecified address ::"},
		{"169.254.0.1", never, "link-local range 169.254.0.0/16"},
		{"169.254.169.254", never, "cloud metadata address 169.254.169.254, which is always refused"},
		{"169.254.170.2", never, "link-local range"},
		{"fe80::1", never, "link-local range fe80::/10"},
		{"fe80::1%eth0", never, "link-local range fe80::/10"},
		{"febf::1", never, "link-local range"},
		{"fd00:ec2::254", never, "cloud metadata address fd00:ec2::254"},
		{"100.100.100.200", never, "cloud metadata address 100.100.100.200"},
		{"224.0.0.1", never, "multicast range 224.0.0.0/4"},
		{"239.255.255.250", never, "multicast range"},
		{"ff02::1", never, "multicast range ff00::/8"},
		{"255.255.255.255", never, "broadcast address 255.255.255.255"},
		{"240.0.0.1", never, "reserved range 240.0.0.0/4"},

		// Loopback.
		{"127.0.0.1", loopbackOnly, "loopback range 127.0.0.0/8; set DUET_MCP_ALLOW_LOOPBACK=true"},
		{"127.255.255.254", loopbackOnly, "loopback range"},
		{"::1", loopbackOnly, "loopback address ::1; set DUET_MCP_ALLOW_LOOPBACK=true"},

		// Private.
		{"10.0.0.1", privateOnly, "private range 10.0.0.0/8; set DUET_MCP_ALLOW_PRIVATE=true"},
		{"10.255.255.255", privateOnly, "private range 10.0.0.0/8"},
		{"172.16.0.1", privateOnly, "private range 172.16.0.0/12"},
		{"172.31.255.255", privateOnly, "private range 172.16.0.0/12"},
		{"192.168.1.1", privateOnly, "private range 192.168.0.0/16"},
		{"100.64.0.1", privateOnly, "(CGNAT) range 100.64.0.0/10"},
		{"100.127.255.255", privateOnly, "100.64.0.0/10"},
		{"fc00::1", privateOnly, "unique local (private) range fc00::/7"},
		{"fd12:3456::1", privateOnly, "fc00::/7; set DUET_MCP_ALLOW_PRIVATE=true"},

		// IPv4-mapped IPv6 forms are judged like the IPv4 address.
		{"::ffff:0.0.0.0", never, "unspecified address 0.0.0.0 (as an IPv4-mapped IPv6 address)"},
		{"::ffff:169.254.169.254", never, "cloud metadata address 169.254.169.254 (as an IPv4-mapped IPv6 address)"},
		{"::ffff:a9fe:a9fe", never, "cloud metadata address 169.254.169.254"},
		{"::ffff:100.100.100.200", never, "cloud metadata address 100.100.100.200"},
		{"::ffff:169.254.1.1", never, "link-local range"},
		{"::ffff:224.0.0.1", never, "multicast range"},
		{"::ffff:255.255.255.255", never, "broadcast address"},
		{"::ffff:127.0.0.1", loopbackOnly, "loopback range 127.0.0.0/8 (as an IPv4-mapped IPv6 address); set DUET_MCP_ALLOW_LOOPBACK=true"},
		{"::ffff:7f00:1", loopbackOnly, "loopback range"},
		{"::ffff:10.1.2.3", privateOnly, "private range 10.0.0.0/8 (as an IPv4-mapped IPv6 address)"},
		{"::ffff:172.16.0.1", privateOnly, "172.16.0.0/12"},
		{"::ffff:192.168.0.1", privateOnly, "192.168.0.0/16"},
		{"::ffff:100.64.0.1", privateOnly, "100.64.0.0/10"},

		// Other IPv6 forms that embed an IPv4 address.
		{"64:ff9b::a9fe:a9fe", never, "cloud metadata address 169.254.169.254 (as a NAT64 IPv6 address)"},
		{"64:ff9b::127.0.0.1", loopbackOnly, "(as a NAT64 IPv6 address)"},
		{"64:ff9b::10.0.0.1", privateOnly, "private range"},
		{"::127.0.0.1", loopbackOnly, "(as an IPv4-compatible IPv6 address)"},
		{"::169.254.169.254", never, "cloud metadata address"},
		{"::10.0.0.1", privateOnly, "private range"},
	}
	policies := []struct {
		name   string
		policy netguard.Policy
		want   func(wantAllowed) bool
	}{
		{"strict", strict, func(w wantAllowed) bool { return w.strict }},
		{"loopback", loopback, func(w wantAllowed) bool { return w.loopback }},
		{"private", private, func(w wantAllowed) bool { return w.private }},
		{"lenient", lenient, func(w wantAllowed) bool { return w.lenient }},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			t.Parallel()
			ip := netip.MustParseAddr(tt.addr)
			for _, p := range policies {
				err := p.policy.CheckIP(ip)
				if got, want := err == nil, p.want(tt.want); got != want {
					t.Errorf("%s.CheckIP(%s) = %v; got allowed %t, want %t", p.name, tt.addr, err, got, want)
				}
				if err != nil {
					if code := duet.ErrorCode(err); code != duet.CodeURLRefused {
						t.Errorf("%s.CheckIP(%s): got code %s, want %s", p.name, tt.addr, code, duet.CodeURLRefused)
					}
					// The address is for logs, in the wrapped error.
					if de := (*duet.Error)(nil); !errors.As(err, &de) || de.Err == nil ||
						!strings.Contains(de.Err.Error(), ip.String()) {
						t.Errorf("%s.CheckIP(%s) = %v, want a wrapped error naming the address", p.name, tt.addr, err)
					}
				}
			}
			if tt.wantMsg != "" {
				err := strict.CheckIP(ip)
				if msg := duet.ErrorMessage(err); !strings.Contains(msg, tt.wantMsg) {
					t.Errorf("strict.CheckIP(%s): got message %q, want it to contain %q", tt.addr, msg, tt.wantMsg)
				}
			}
		})
	}
}

func TestCheckIPInvalid(t *testing.T) {
	t.Parallel()
	if err := lenient.CheckIP(netip.Addr{}); duet.ErrorCode(err) != duet.CodeURLRefused {
		t.Errorf("CheckIP(zero Addr): got %v, want code %s", err, duet.CodeURLRefused)
	}
}

func TestControl(t *testing.T) {
	t.Parallel()
	tests := []struct {
		network, address string
		policy           netguard.Policy
		wantErr          bool
	}{
		{"tcp4", "8.8.8.8:443", strict, false},
		{"tcp6", "[2606:4700:4700::1111]:443", strict, false},
		{"tcp4", "127.0.0.1:80", strict, true},
		{"tcp4", "127.0.0.1:80", loopback, false},
		{"tcp6", "[::ffff:127.0.0.1]:80", strict, true},
		{"tcp6", "[fe80::1%eth0]:80", lenient, true},
		{"tcp4", "169.254.169.254:80", lenient, true},
		{"udp4", "8.8.8.8:53", lenient, true},
		{"unix", "duet.sock", lenient, true},
		{"tcp", "example.com:80", lenient, true},
		{"tcp", "", lenient, true},
	}
	for _, tt := range tests {
		t.Run(tt.network+" "+tt.address, func(t *testing.T) {
			t.Parallel()
			err := tt.policy.Control(tt.network, tt.address, nil)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Control(%q, %q) = %v, want error %t", tt.network, tt.address, err, tt.wantErr)
			}
			if err != nil && duet.ErrorCode(err) != duet.CodeURLRefused {
				t.Errorf("got code %s, want %s", duet.ErrorCode(err), duet.CodeURLRefused)
			}
		})
	}
}

func newServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestTransport(t *testing.T) {
	t.Parallel()
	srv := newServer(t) // listens on 127.0.0.1
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	tests := []struct {
		name    string
		policy  netguard.Policy
		host    string // "" means the server's own address
		wantErr string // substring; "" means success
	}{
		{"strict refuses loopback", strict, "", "DUET_MCP_ALLOW_LOOPBACK"},
		{"private does not allow loopback", private, "", "DUET_MCP_ALLOW_LOOPBACK"},
		{"loopback allowed", loopback, "", ""},
		{"strict refuses a name that resolves to loopback", strict, "localhost", "loopback"},
		{"loopback allows a name that resolves to loopback", loopback, "localhost", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			target := srv.URL
			if tt.host != "" {
				if _, err := net.DefaultResolver.LookupNetIP(context.Background(), "ip", tt.host); err != nil {
					t.Skipf("cannot resolve %s here: %v", tt.host, err)
				}
				target = (&url.URL{Scheme: "http", Host: net.JoinHostPort(tt.host, strconv.Itoa(port))}).String()
			}
			client := &http.Client{Transport: tt.policy.Transport(nil), Timeout: 10 * time.Second}
			resp, err := client.Get(target)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("GET %s: %v", target, err)
				}
				defer resp.Body.Close()
				body, _ := io.ReadAll(resp.Body)
				if resp.StatusCode != http.StatusOK || string(body) != "ok" {
					t.Errorf("GET %s = %d %q, want 200 %q", target, resp.StatusCode, body, "ok")
				}
				return
			}
			if err == nil {
				resp.Body.Close()
				t.Fatalf("GET %s succeeded, want a refusal", target)
			}
			var de *duet.Error
			if !errors.As(err, &de) || de.Code != duet.CodeURLRefused {
				t.Fatalf("GET %s: got error %v, want one wrapping a %s *duet.Error", target, err, duet.CodeURLRefused)
			}
			if !strings.Contains(de.Message, tt.wantErr) {
				t.Errorf("got message %q, want it to contain %q", de.Message, tt.wantErr)
			}
		})
	}
}

func TestTransportRefusesRedirectToLoopback(t *testing.T) {
	t.Parallel()
	// The first hop is allowed (loopback); the redirect's target is a new
	// connection, so the dialer must refuse it.
	redirect := httptest.NewServer(http.RedirectHandler("http://169.254.169.254/latest/meta-data/", http.StatusFound))
	t.Cleanup(redirect.Close)
	client := &http.Client{Transport: loopback.Transport(nil), Timeout: 10 * time.Second}
	resp, err := client.Get(redirect.URL)
	if err == nil {
		resp.Body.Close()
		t.Fatalf("GET with redirect to the metadata address succeeded, want a refusal")
	}
	if code := duet.ErrorCode(err); code != duet.CodeURLRefused {
		t.Errorf("got %v, want code %s", err, duet.CodeURLRefused)
	}
}

func TestTransportKeepsBaseSettingsAndDropsProxy(t *testing.T) {
	t.Parallel()
	proxyURL, _ := url.Parse("http://proxy.invalid:3128")
	base := &http.Transport{
		Proxy:               http.ProxyURL(proxyURL),
		MaxIdleConnsPerHost: 7,
		DialTLSContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return nil, errors.New("must not be used")
		},
	}
	tr := strict.Transport(base)
	if tr == base {
		t.Fatal("Transport returned base, want a copy")
	}
	if tr.Proxy != nil {
		t.Errorf("Transport kept the proxy, want none")
	}
	if tr.DialTLSContext != nil {
		t.Errorf("Transport kept DialTLSContext, want it cleared")
	}
	if tr.MaxIdleConnsPerHost != 7 {
		t.Errorf("MaxIdleConnsPerHost = %d, want 7", tr.MaxIdleConnsPerHost)
	}
	if base.Proxy == nil || base.DialContext != nil {
		t.Errorf("Transport modified base")
	}
}

func TestDialerChainsControl(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	called := 0
	base := &net.Dialer{Timeout: 5 * time.Second, Control: func(network, address string, c syscall.RawConn) error {
		called++
		return nil
	}}
	ctx := context.Background()

	conn, err := loopback.Dialer(base).DialContext(ctx, "tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatalf("DialContext with AllowLoopback: %v", err)
	}
	conn.Close()
	if called != 1 {
		t.Errorf("base Control called %d times, want 1", called)
	}

	if _, err := strict.Dialer(base).DialContext(ctx, "tcp", srv.Listener.Addr().String()); duet.ErrorCode(err) != duet.CodeURLRefused {
		t.Errorf("strict DialContext: got %v, want code %s", err, duet.CodeURLRefused)
	}
	if called != 1 {
		t.Errorf("base Control called %d times after a refusal, want still 1", called)
	}
	if base.ControlContext != nil || base.Control == nil {
		t.Errorf("Dialer modified base")
	}
}

func TestDialContext(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	addr := srv.Listener.Addr().String()
	if _, err := strict.DialContext(context.Background(), "tcp", addr); duet.ErrorCode(err) != duet.CodeURLRefused {
		t.Errorf("strict DialContext(%s): got %v, want code %s", addr, err, duet.CodeURLRefused)
	}
	conn, err := loopback.DialContext(context.Background(), "tcp", addr)
	if err != nil {
		t.Fatalf("DialContext(%s) with AllowLoopback: %v", addr, err)
	}
	conn.Close()
}

func FuzzCheckIP(f *testing.F) {
	for _, s := range []string{"8.8.8.8", "127.0.0.1", "::1", "::ffff:10.0.0.1", "64:ff9b::a9fe:a9fe", "fe80::1", "fd00:ec2::254"} {
		b := netip.MustParseAddr(s).As16()
		f.Add(b[:])
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var ip netip.Addr
		switch len(b) {
		case 4:
			ip = netip.AddrFrom4([4]byte(b))
		case 16:
			ip = netip.AddrFrom16([16]byte(b))
		default:
			return
		}
		for _, p := range []netguard.Policy{strict, loopback, private, lenient} {
			err := p.CheckIP(ip)
			if err != nil && duet.ErrorCode(err) != duet.CodeURLRefused {
				t.Fatalf("%+v.CheckIP(%s): got %v, want nil or code %s", p, ip, err, duet.CodeURLRefused)
			}
			// An IPv4-mapped address is judged exactly like the IPv4 one.
			if got, want := err == nil, p.CheckIP(ip.Unmap()) == nil; got != want {
				t.Fatalf("%+v.CheckIP(%s) allowed %t, CheckIP(%s) allowed %t; want equal", p, ip, got, ip.Unmap(), want)
			}
		}
		// Relaxing the policy never refuses more.
		if strict.CheckIP(ip) == nil {
			for _, p := range []netguard.Policy{loopback, private, lenient} {
				if err := p.CheckIP(ip); err != nil {
					t.Fatalf("strict allows %s but %+v refuses it: %v", ip, p, err)
				}
			}
		}
		// Nothing outside the public unicast space gets through the strict
		// policy.
		if u := ip.Unmap(); strict.CheckIP(ip) == nil && (!u.IsGlobalUnicast() || u.IsPrivate()) {
			t.Fatalf("strict allows %s, which is not public", ip)
		}
	})
}
