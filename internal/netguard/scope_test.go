package netguard_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/netguard"
)

func TestParsePrefixes(t *testing.T) {
	t.Parallel()
	got, err := netguard.ParsePrefixes([]string{"10.1.2.3", " 10.9.0.0/16 ", "fd00::7", "[fe80::1]", "192.168.1.77/24", ""})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"10.1.2.3/32", "10.9.0.0/16", "fd00::7/128", "fe80::1/128", "192.168.1.0/24"}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i].String() != want[i] {
			t.Errorf("entry %d: got %s, want %s", i, got[i], want[i])
		}
	}
	for _, bad := range []string{"staging.internal", "10.0.0.0/33", "10.0.0"} {
		if _, err := netguard.ParsePrefixes([]string{bad}); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("ParsePrefixes(%q): got %v, want an error naming it", bad, err)
		}
	}
}

func TestAllowList(t *testing.T) {
	t.Parallel()
	allow, err := netguard.ParsePrefixes([]string{"10.1.2.0/24", "169.254.7.7", "169.254.169.254", "0.0.0.0/8", "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	p := netguard.Policy{Allow: allow}
	for addr, ok := range map[string]bool{
		"10.1.2.9":         true,
		"10.1.3.9":         false, // outside the listed prefix
		"169.254.7.7":      true,  // a listed link-local device
		"169.254.7.8":      false,
		"169.254.169.254":  false, // metadata: never, even when listed
		"0.0.0.0":          false, // unspecified: never, even when listed
		"127.0.0.1":        true,
		"::ffff:127.0.0.1": true, // the listed address in IPv4-mapped form
		"127.0.0.2":        false,
		"::ffff:10.1.2.9":  true,
	} {
		err := p.CheckIP(netip.MustParseAddr(addr))
		if (err == nil) != ok {
			t.Errorf("CheckIP(%s) with DUET_NET_ALLOW: got %v, want allowed=%v", addr, err, ok)
		}
	}
	err = netguard.Policy{}.CheckIP(netip.MustParseAddr("127.0.0.1"))
	if !strings.Contains(duet.ErrorMessage(err), netguard.EnvAllow) {
		t.Errorf("a loopback refusal: got %q, want it to name %s", duet.ErrorMessage(err), netguard.EnvAllow)
	}
}

// site is a loopback test server that counts its requests.
type site struct {
	*httptest.Server
	hits atomic.Int32
}

func newSite(t *testing.T, h http.HandlerFunc) *site {
	t.Helper()
	s := &site{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		if h != nil {
			h(w, r)
			return
		}
		io.WriteString(w, "ok")
	}))
	t.Cleanup(s.Close)
	return s
}

func get(ctx context.Context, c *http.Client, u string) error {
	req, err := http.NewRequestWithContext(ctx, "GET", u, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	return resp.Body.Close()
}

func portOf(t *testing.T, s *site) string {
	_, port, err := net.SplitHostPort(s.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// TestClient is issue 10 point 5 for http steps: a test's requests reach
// only what the guard allows, the task's base URL host included, and every
// redirect hop is checked.
func TestClient(t *testing.T) {
	t.Parallel()
	base := newSite(t, nil)
	other := newSite(t, nil)
	// The allowance is the client's, made for the task: the requests'
	// contexts carry nothing.
	c := netguard.Policy{}.Allowing(netguard.AllowURL(base.URL)).Client()
	ctx := t.Context()
	port := portOf(t, base)

	if err := get(ctx, c, base.URL+"/api"); err != nil {
		t.Fatalf("the task's base URL host: %v", err)
	}
	refused := []struct{ name, url string }{
		{"another loopback port", other.URL},
		{"0.0.0.0 (reaches loopback on Linux)", "http://0.0.0.0:" + port + "/"},
		{"IPv4-mapped loopback", "http://[::ffff:127.0.0.1]:" + port + "/"},
		{"IPv6 loopback", "http://[::1]:" + port + "/"},
		{"a decimal IPv4 host", "http://2130706433:" + port + "/"},
		{"a short IPv4 host", "http://127.1:" + port + "/"},
		{"the metadata address", "http://169.254.169.254/latest/meta-data/"},
		{"a link-local address", "http://169.254.10.10:" + port + "/"},
		{"localhost by name", "http://localhost:" + portOf(t, other) + "/"},
	}
	for _, tt := range refused {
		err := get(ctx, c, tt.url)
		if duet.ErrorCode(err) != duet.CodeURLRefused {
			t.Errorf("%s (%s): got %v, want URL_REFUSED", tt.name, tt.url, err)
		}
	}
	if n := other.hits.Load(); n != 0 {
		t.Errorf("the other loopback site got %d requests, want none", n)
	}
	// Without the allowance, the base URL host is loopback like any other.
	if err := get(t.Context(), netguard.Policy{}.Client(), base.URL+"/again"); duet.ErrorCode(err) != duet.CodeURLRefused {
		t.Errorf("the base URL host without the task's allowance: got %v, want URL_REFUSED", err)
	}
	if n := base.hits.Load(); n != 1 {
		t.Errorf("the base site got %d requests, want 1", n)
	}
}

func TestClientRedirects(t *testing.T) {
	t.Parallel()
	target := newSite(t, nil)
	hops := map[string]string{
		"/to-metadata":   "http://169.254.169.254/latest/meta-data/iam/",
		"/to-other-port": target.URL + "/secret",
		"/to-zero":       "http://0.0.0.0:" + portOf(t, target) + "/",
		"/to-file":       "file:///etc/passwd",
		"/to-self":       "/landed",
	}
	base := newSite(t, func(w http.ResponseWriter, r *http.Request) {
		if to, ok := hops[r.URL.Path]; ok {
			http.Redirect(w, r, to, http.StatusFound)
			return
		}
		io.WriteString(w, "landed")
	})
	c := netguard.Policy{}.Allowing(netguard.AllowURL(base.URL)).Client()
	ctx := t.Context()
	for path := range hops {
		err := get(ctx, c, base.URL+path)
		if path == "/to-self" {
			if err != nil {
				t.Errorf("a redirect within the base URL host: %v", err)
			}
			continue
		}
		if code := duet.ErrorCode(err); code != duet.CodeURLRefused && !(path == "/to-file" && err != nil) {
			t.Errorf("redirect %s: got %v, want URL_REFUSED", path, err)
		}
	}
	if n := target.hits.Load(); n != 0 {
		t.Errorf("redirects reached the other site %d times, want none", n)
	}
}

// TestSelf: Duet's own address is refused even where loopback is allowed
// and even when a task names it as its base URL.
func TestSelf(t *testing.T) {
	t.Parallel()
	duetSite := newSite(t, nil)
	port := portOf(t, duetSite)
	tests := []struct {
		listen string
		urls   []string
	}{
		{"127.0.0.1:" + port, []string{duetSite.URL, "http://localhost:" + port, "http://[::ffff:127.0.0.1]:" + port}},
		{":" + port, []string{duetSite.URL, "http://localhost:" + port}},
		{"0.0.0.0:" + port, []string{duetSite.URL}},
	}
	for _, tt := range tests {
		self := &netguard.Self{}
		self.Add(tt.listen)
		p := netguard.Policy{AllowLoopback: true, AllowPrivate: true, Self: self}
		for _, u := range tt.urls {
			err := get(t.Context(), p.Allowing(netguard.AllowURL(u)).Client(), u+"/mcp/http")
			if duet.ErrorCode(err) != duet.CodeURLRefused || !strings.Contains(duet.ErrorMessage(err), "Duet's own address") {
				t.Errorf("listening on %s, GET %s: got %v, want URL_REFUSED naming Duet's own address", tt.listen, u, err)
			}
		}
	}
	if n := duetSite.hits.Load(); n != 0 {
		t.Errorf("Duet's own port got %d requests, want none", n)
	}
	// Another port on loopback is fine when loopback is allowed.
	other := newSite(t, nil)
	self := &netguard.Self{}
	self.Add("127.0.0.1:" + port)
	if err := get(t.Context(), netguard.Policy{AllowLoopback: true, Self: self}.Client(), other.URL); err != nil {
		t.Errorf("another loopback port: %v", err)
	}
}

// TestSelfPublicURL: Duet's public address (DUET_PUBLIC_URL) is refused by
// name — in any case, with a trailing dot, with its default port written
// out — when a URL is checked and again when a connection is dialled,
// before any name resolution; the same host on another port is not Duet.
func TestSelfPublicURL(t *testing.T) {
	t.Parallel()
	self := &netguard.Self{}
	self.AddURL("https://duet.example.invalid")
	p := netguard.Policy{Self: self}
	for _, u := range []string{"https://duet.example.invalid/mcp/http", "https://DUET.Example.invalid./mcp/http", "https://duet.example.invalid:443/"} {
		err := p.CheckURL(t.Context(), u)
		if duet.ErrorCode(err) != duet.CodeURLRefused || !strings.Contains(duet.ErrorMessage(err), "Duet's own public address") {
			t.Errorf("CheckURL(%s): got %v, want URL_REFUSED naming Duet's public address", u, err)
		}
	}
	// At dial time, as a connection names it (what an MCP client's
	// transport does on every new connection).
	c := &http.Client{Transport: p.Transport(nil)}
	err := get(t.Context(), c, "https://Duet.example.invalid/mcp/http")
	if duet.ErrorCode(err) != duet.CodeURLRefused {
		t.Errorf("dialling Duet's public name: got %v, want URL_REFUSED", err)
	}
	if err := p.CheckURL(t.Context(), "https://duet.example.invalid:8443/"); err != nil {
		t.Errorf("the same host on another port: %v", err)
	}

	// A public URL on loopback is refused by name and by address.
	duetSite := newSite(t, nil)
	port := portOf(t, duetSite)
	self = &netguard.Self{}
	self.AddURL("http://localhost:" + port)
	lc := netguard.Policy{AllowLoopback: true, Self: self}.Client()
	for _, u := range []string{"http://localhost:" + port, "http://127.0.0.1:" + port} {
		if err := get(t.Context(), lc, u); duet.ErrorCode(err) != duet.CodeURLRefused {
			t.Errorf("GET %s with that public URL: got %v, want URL_REFUSED", u, err)
		}
	}
	if n := duetSite.hits.Load(); n != 0 {
		t.Errorf("Duet got %d requests, want none", n)
	}
}

func TestCheckURL(t *testing.T) {
	t.Parallel()
	strict := netguard.Policy{}
	p := strict.Allowing(netguard.AllowURL("http://127.0.0.1:8431/shop"))
	for u, ok := range map[string]bool{
		"http://127.0.0.1:8431/order?x=1": true,
		"http://127.0.0.1:8432/":          false,
		"https://127.0.0.1/":              false, // another port (443)
		"http://0x7f.0.0.1:8431/":         false, // not the allowed name
		"http://[::ffff:7f00:1]:8431/":    false,
		"http://8.8.8.8/":                 true,
		"ftp://8.8.8.8/":                  false,
		"file:///etc/passwd":              false,
		"http://169.254.169.254./":        false,
	} {
		err := p.CheckURL(t.Context(), u)
		if (err == nil) != ok || (err != nil && duet.ErrorCode(err) != duet.CodeURLRefused) {
			t.Errorf("CheckURL(%s): got %v, want allowed=%v", u, err, ok)
		}
	}
	// The allowance is p's: the policy it was made from allows nothing
	// more, and allowances join.
	if err := strict.CheckURL(t.Context(), "http://127.0.0.1:8431/"); duet.ErrorCode(err) != duet.CodeURLRefused {
		t.Errorf("the policy without the allowance: got %v, want URL_REFUSED", err)
	}
	both := strict.Allowing(netguard.AllowURL("http://127.0.0.1:8431/")).Allowing(netguard.AllowURL("http://localhost:8432/"))
	if got := netguard.AllowURL("http://127.0.0.1:8431/", "http://LOCALHOST:8432/x", "not a url", "").String(); got != "127.0.0.1:8431,localhost:8432" {
		t.Errorf("AllowURL: got %q", got)
	}
	if err := both.CheckURL(t.Context(), "http://127.0.0.1:8431/"); err != nil {
		t.Errorf("the first of two allowances: %v", err)
	}
}
