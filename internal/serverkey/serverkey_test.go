package serverkey_test

import (
	"fmt"
	"math/rand/v2"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/serverkey"
)

func TestNormalize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, want string
	}{
		{"http://example.com", "http://example.com/"},
		{"  https://example.com/mcp \n", "https://example.com/mcp"},
		{"HTTPS://MCP.Example.COM/MCP", "https://mcp.example.com/MCP"},
		{"http://example.com:80/", "http://example.com/"},
		{"https://example.com:443/", "https://example.com/"},
		{"http://example.com:443/", "http://example.com:443/"},
		{"https://example.com:80/", "https://example.com:80/"},
		{"http://example.com:08080/", "http://example.com:8080/"},
		{"http://example.com:/", "http://example.com/"},
		{"http://example.com./mcp", "http://example.com/mcp"},
		{"http://127.0.0.1:3000/mcp", "http://127.0.0.1:3000/mcp"},
		{"http://[::1]:3000/mcp", "http://[::1]:3000/mcp"},
		{"http://[0:0:0:0:0:0:0:1]/", "http://[::1]/"},
		{"http://[2001:DB8::A]:80/", "http://[2001:db8::a]/"},
		{"http://[::ffff:10.0.0.1]/", "http://[::ffff:10.0.0.1]/"},
		{"http://h_1.internal/", "http://h_1.internal/"},
		{"http://x/a/./b/../c", "http://x/a/c"},
		{"http://x/a/b/", "http://x/a/b"},
		{"http://x//a///b//", "http://x/a/b"},
		{"http://x/../../a", "http://x/a"},
		{"http://x/a/..", "http://x/"},
		{"http://x/%2E%2E/a/%2e/b", "http://x/a/b"},
		{"http://x/%7Euser/%6d%63%70", "http://x/~user/mcp"},
		{"http://x/a%2Fb/c", "http://x/a%2Fb/c"},
		{"http://x/a%2fb", "http://x/a%2Fb"},
		{"http://x/a b/%c3%a9", "http://x/a%20b/%C3%A9"},
		{"http://x/a%3Bb;c", "http://x/a;b;c"},
		{"http://x/a{b}", "http://x/a%7Bb%7D"},
		{"http://x/?b=2&a=1&b=1", "http://x/?a=1&b=1&b=2"},
		{"http://x/?a=%41&a=+x&a=%20y", "http://x/?a=+x&a=+y&a=A"},
		{"http://x/?flag", "http://x/?flag="},
		{"http://x/?", "http://x/"},
		{"http://x/?&&", "http://x/"},
		{"http://x/?q=a%2Fb%26c", "http://x/?q=a%2Fb%26c"},
		{"http://x/mcp#frag", "http://x/mcp"},
		{"http://x/mcp?#", "http://x/mcp"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got, err := serverkey.Normalize(tt.in)
			if err != nil {
				t.Fatalf("Normalize(%q): %v", tt.in, err)
			}
			if got != tt.want {
				t.Errorf("Normalize(%q) = %q, want %q", tt.in, got, tt.want)
			}
			again, err := serverkey.Normalize(got)
			if err != nil || again != got {
				t.Errorf("Normalize(%q) = %q, %v; want %q, nil (idempotent)", got, again, err, got)
			}
		})
	}
}

func TestNormalizeErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in       string
		wantCode duet.Code
		wantMsg  string
	}{
		{"", duet.CodeInvalidArgument, "URL is empty"},
		{"example.com/mcp", duet.CodeInvalidArgument, "no scheme"},
		{"localhost:8080/mcp", duet.CodeInvalidArgument, `unsupported scheme "localhost"`},
		{"ftp://example.com/", duet.CodeInvalidArgument, `unsupported scheme "ftp"`},
		{"ws://example.com/", duet.CodeInvalidArgument, `unsupported scheme "ws"`},
		{"http:example.com", duet.CodeInvalidArgument, "must look like http://host/path"},
		{"http:///mcp", duet.CodeInvalidArgument, "no host"},
		{"http://x/%zz", duet.CodeInvalidArgument, "invalid URL"},
		{"http://x:0/", duet.CodeInvalidArgument, "out of range"},
		{"http://x:65536/", duet.CodeInvalidArgument, "out of range"},
		{"http://x:99999999999999999999/", duet.CodeInvalidArgument, "out of range"},
		{"http://x:abc/", duet.CodeInvalidArgument, "invalid URL"},
		{"http://[::1/", duet.CodeInvalidArgument, "invalid URL"},
		{"http://[1.2.3.4]/", duet.CodeInvalidArgument, "invalid URL"},
		{"http://[1.2.3.4%25x]/", duet.CodeInvalidArgument, "invalid"},
		{"http://[fe80::1%25eth0]/", duet.CodeInvalidArgument, "zone"},
		{"http://a..b/", duet.CodeInvalidArgument, "label"},
		{"http://" + strings.Repeat("a", 64) + ".com/", duet.CodeInvalidArgument, "label"},
		{"http://bücher.de/", duet.CodeInvalidArgument, "punycode"},
		{"http://a!b/", duet.CodeInvalidArgument, `invalid character '!'`},
		{"http://x/?a=1;b=2", duet.CodeInvalidArgument, "invalid query"},
		{"http://x/?a=%zz", duet.CodeInvalidArgument, "invalid query"},
		{"http://user:hunter2@x/", duet.CodeURLRefused, "user information"},
		{"http://user@x/", duet.CodeURLRefused, "user information"},
		{"http://x/?token=hunter2", duet.CodeURLRefused, `"token"`},
		{"http://x/?token=hunter2;a=1", duet.CodeURLRefused, `"token"`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got, err := serverkey.Normalize(tt.in)
			if err == nil {
				t.Fatalf("Normalize(%q) = %q, nil; want error", tt.in, got)
			}
			if code := duet.ErrorCode(err); code != tt.wantCode {
				t.Errorf("got code %s, want %s (error %v)", code, tt.wantCode, err)
			}
			if msg := duet.ErrorMessage(err); !strings.Contains(msg, tt.wantMsg) {
				t.Errorf("got message %q, want it to contain %q", msg, tt.wantMsg)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error %q contains the credential", err)
			}
			if _, kerr := serverkey.Key(tt.in); duet.ErrorCode(kerr) != tt.wantCode {
				t.Errorf("Key(%q): got %v, want code %s", tt.in, kerr, tt.wantCode)
			}
		})
	}
}

// sensitive is every parameter name the product refuses by name.
var sensitive = []string{
	"token", "access_token", "accesstoken", "refresh_token", "id_token", "api_key", "apikey", "key",
	"secret", "client_secret", "password", "passwd", "pwd", "sig", "signature", "auth",
	"authorization", "credential", "credentials", "session", "sessionid", "session_id", "jwt",
	"bearer", "x-api-key",
}

func TestRefusedParams(t *testing.T) {
	t.Parallel()
	var names []string
	for _, n := range sensitive {
		names = append(names,
			n,
			strings.ToUpper(n),
			strings.ToUpper(n[:1])+n[1:],
			strings.ReplaceAll(n, "_", "-"),
			strings.ReplaceAll(n, "-", "_"),
			"_"+n+"-",
		)
	}
	// Suffix rules and spellings seen in the wild.
	names = append(names,
		"github_token", "GITHUB-TOKEN", "authToken", "csrf_token", "client-secret", "app_secret",
		"db_password", "adminPassword", "x-goog-api-key", "subscription-key", "Ocp-Apim-Subscription-Key",
		"X-Amz-Signature", "X-Amz-Credential", "aws_credentials", "X_API_KEY", "a-p-i-k-e-y",
	)
	for _, name := range names {
		for _, form := range []string{
			"https://mcp.example.com/mcp?%s=s3cr3t-value",
			"https://mcp.example.com/mcp?a=1&%s=s3cr3t-value&z=2",
			"https://mcp.example.com/mcp?%s",
			"https://mcp.example.com/mcp?%s=",
			"https://mcp.example.com/mcp?%s=a&%[1]s=b",
		} {
			raw := fmt.Sprintf(form, url.QueryEscape(name))
			t.Run(raw, func(t *testing.T) {
				t.Parallel()
				if !serverkey.SensitiveParam(name) {
					t.Errorf("SensitiveParam(%q) = false, want true", name)
				}
				got, err := serverkey.Normalize(raw)
				if err == nil {
					t.Fatalf("Normalize(%q) = %q, nil; want error", raw, got)
				}
				if code := duet.ErrorCode(err); code != duet.CodeURLRefused {
					t.Errorf("got code %s, want %s", code, duet.CodeURLRefused)
				}
				msg := duet.ErrorMessage(err)
				for _, want := range []string{fmt.Sprintf("%q", name), "header", "--header-env", "--bearer-token-env"} {
					if !strings.Contains(msg, want) {
						t.Errorf("got message %q, want it to contain %s", msg, want)
					}
				}
				if strings.Contains(err.Error(), "s3cr3t") {
					t.Errorf("error %q contains the parameter value", err)
				}
			})
		}
	}
	// The name is compared after decoding.
	for _, raw := range []string{"http://x/?api%5Fkey=v", "http://x/?%74oken=v", "http://x/?x+token=v"} {
		if _, err := serverkey.Normalize(raw); duet.ErrorCode(err) != duet.CodeURLRefused {
			t.Errorf("Normalize(%q): got %v, want code %s", raw, err, duet.CodeURLRefused)
		}
	}
}

func TestAllowedParams(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"q", "version", "tenant", "tokens", "keys", "keyword", "signed", "authority", "sessions", "region", "debug"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if serverkey.SensitiveParam(name) {
				t.Errorf("SensitiveParam(%q) = true, want false", name)
			}
			raw := "https://example.com/mcp?" + name + "=v"
			if _, err := serverkey.Normalize(raw); err != nil {
				t.Errorf("Normalize(%q): %v", raw, err)
			}
		})
	}
}

var keyPattern = regexp.MustCompile(`^mcp_[a-z0-9]+(-[a-z0-9]+)*_[0-9a-f]{8}$`)

func mustKey(t *testing.T, raw string) string {
	t.Helper()
	k, err := serverkey.Key(raw)
	if err != nil {
		t.Fatalf("Key(%q): %v", raw, err)
	}
	if !keyPattern.MatchString(k) || len(k) > len("mcp_")+serverkey.MaxSlugLen+len("_")+8 {
		t.Errorf("Key(%q) = %q, want it to match %s with a slug of at most %d characters",
			raw, k, keyPattern, serverkey.MaxSlugLen)
	}
	return k
}

func TestKeySlug(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, wantPrefix string
	}{
		{"https://mcp.example.com/mcp", "mcp_mcp-example-com_"},
		{"https://www.example.com/", "mcp_example-com_"},
		{"http://localhost:8080/mcp", "mcp_localhost_"},
		{"http://127.0.0.1:8080/mcp", "mcp_127-0-0-1_"},
		{"http://[2001:db8::1]/", "mcp_2001-db8-1_"},
		{"http://[::1]/", "mcp_1_"},
		{"http://[::]/", "mcp_server_"},
		{"http://orders_svc.internal/", "mcp_orders-svc-internal_"},
		{"https://api.githubcopilot.com/mcp/", "mcp_api-githubcopilot-com_"},
		{"https://mcp-server.internal.corp.example.com/", "mcp_mcp-server-internal-corp_"},
		{"https://mcp-server.internal.corporation.example.com/", "mcp_mcp-server-internal_"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			if got := mustKey(t, tt.in); !strings.HasPrefix(got, tt.wantPrefix) {
				t.Errorf("Key(%q) = %q, want prefix %q", tt.in, got, tt.wantPrefix)
			}
		})
	}
}

func TestKeyEquivalentSpellings(t *testing.T) {
	t.Parallel()
	groups := [][]string{
		{
			"https://mcp.example.com/a/c?x=1&y=2",
			"HTTPS://MCP.EXAMPLE.COM:443/a/c?y=2&x=1",
			"https://mcp.example.com/a/./b/../c/?x=1&y=2#section",
			"https://mcp.example.com.//a//c?x=%31&y=2",
			"https://mcp.example.com/%61/c?x=1&y=2&",
		},
		{"http://localhost/", "http://LOCALHOST:80", "http://localhost/.", "http://localhost/#"},
		{"http://[::1]:8080/mcp", "http://[0::1]:8080/mcp/", "http://[0:0:0:0:0:0:0:1]:08080/mcp"},
	}
	for _, g := range groups {
		t.Run(g[0], func(t *testing.T) {
			t.Parallel()
			want := mustKey(t, g[0])
			for _, raw := range g[1:] {
				if got := mustKey(t, raw); got != want {
					t.Errorf("Key(%q) = %q, want %q (same as %q)", raw, got, want, g[0])
				}
			}
		})
	}
}

func TestKeyDistinguishes(t *testing.T) {
	t.Parallel()
	urls := []string{
		"https://mcp.example.com/mcp",
		"http://mcp.example.com/mcp",
		"https://mcp.example.org/mcp",
		"https://mcp2.example.com/mcp",
		"https://mcp.example.com:8443/mcp",
		"https://mcp.example.com/",
		"https://mcp.example.com/mcp/v2",
		"https://mcp.example.com/MCP",
		"https://mcp.example.com/a%2Fb",
		"https://mcp.example.com/a/b",
		"https://mcp.example.com/mcp?tenant=a",
		"https://mcp.example.com/mcp?tenant=b",
		"http://127.0.0.1/",
		"http://127.0.0.2/",
		"http://[::1]/",
	}
	seen := map[string]string{}
	for _, raw := range urls {
		k := mustKey(t, raw)
		if prev, ok := seen[k]; ok {
			t.Errorf("Key(%q) = Key(%q) = %q, want distinct keys", raw, prev, k)
		}
		seen[k] = raw
	}
}

// respell returns a random spelling of the normalized URL n that must
// normalize back to n.
func respell(r *rand.Rand, n string) string {
	u, err := url.Parse(n)
	if err != nil {
		panic(err)
	}
	flipCase := func(s string) string {
		b := []byte(s)
		for i, c := range b {
			if r.IntN(2) == 0 && 'a' <= c && c <= 'z' {
				b[i] = c - 'a' + 'A'
			}
		}
		return string(b)
	}
	scheme := flipCase(u.Scheme)
	host := flipCase(u.Host)
	if u.Port() == "" && r.IntN(2) == 0 {
		if u.Scheme == "http" {
			host += ":80"
		} else {
			host += ":443"
		}
	}
	// Path: percent-encode some unreserved letters, insert "." and "x/.."
	// segments, double slashes and a trailing slash.
	var path strings.Builder
	for seg := range strings.SplitSeq(strings.TrimPrefix(u.EscapedPath(), "/"), "/") {
		switch r.IntN(4) {
		case 0:
			path.WriteString("/.")
		case 1:
			path.WriteString("/zz/..")
		case 2:
			path.WriteString("/")
		}
		path.WriteByte('/')
		for i := 0; i < len(seg); i++ {
			if c := seg[i]; ('a' <= c && c <= 'z') && r.IntN(3) == 0 {
				fmt.Fprintf(&path, "%%%02x", c)
			} else {
				path.WriteByte(c)
			}
		}
	}
	if r.IntN(2) == 0 {
		path.WriteByte('/')
	}
	// Query: shuffle the pairs, sometimes add an empty pair.
	var query string
	if u.RawQuery != "" {
		pairs := strings.Split(u.RawQuery, "&")
		r.Shuffle(len(pairs), func(i, j int) { pairs[i], pairs[j] = pairs[j], pairs[i] })
		if r.IntN(2) == 0 {
			pairs = append(pairs, "")
		}
		query = "?" + strings.Join(pairs, "&")
	}
	var frag string
	if r.IntN(2) == 0 {
		frag = "#frag" + fmt.Sprint(r.IntN(100))
	}
	return scheme + "://" + host + path.String() + query + frag
}

var propertyURLs = []string{
	"https://mcp.example.com/mcp",
	"http://localhost:8080/mcp/v1/stream",
	"http://127.0.0.1:3000/",
	"https://[2001:db8::1]/api/mcp?tenant=acme&region=eu&region=us",
	"https://orders.internal/a%2Fb/c%20d?q=x+y&page=2",
	"http://example.com:8443/tools/~user/list?b=2&a=1",
}

func TestPropertyIdempotent(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	for _, base := range propertyURLs {
		for range 200 {
			raw := respell(r, base)
			n1, err := serverkey.Normalize(raw)
			if err != nil {
				t.Fatalf("Normalize(%q): %v", raw, err)
			}
			n2, err := serverkey.Normalize(n1)
			if err != nil || n2 != n1 {
				t.Fatalf("Normalize(Normalize(%q)) = %q, %v; want %q, nil", raw, n2, err, n1)
			}
		}
	}
}

func TestPropertyEquivalentSpellingsSameKey(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	for _, base := range propertyURLs {
		n, err := serverkey.Normalize(base)
		if err != nil {
			t.Fatal(err)
		}
		want := mustKey(t, base)
		for range 200 {
			raw := respell(r, n)
			if got, err := serverkey.Normalize(raw); err != nil || got != n {
				t.Fatalf("Normalize(%q) = %q, %v; want %q, nil", raw, got, err, n)
			}
			if got := mustKey(t, raw); got != want {
				t.Fatalf("Key(%q) = %q, want %q", raw, got, want)
			}
		}
	}
}

func TestPropertyDifferentURLsDifferentKeys(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(5, 6))
	seen := map[string]string{} // key -> normalized URL
	for range 2000 {
		raw := fmt.Sprintf("%s://h%d.example.com:%d/p%d?v=%d",
			[]string{"http", "https"}[r.IntN(2)], r.IntN(50), 1+r.IntN(65535), r.IntN(50), r.IntN(3))
		n, err := serverkey.Normalize(raw)
		if err != nil {
			t.Fatal(err)
		}
		k := mustKey(t, raw)
		if prev, ok := seen[k]; ok && prev != n {
			t.Fatalf("Key(%q) = Key(%q) = %q, want distinct", n, prev, k)
		}
		seen[k] = n
	}
}

func TestSlug(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, want string
	}{
		{"Orders", "orders"},
		{"Order Service (staging)", "order-service-staging"},
		{"  --GitHub   MCP--  ", "github-mcp"},
		{"a_b.c/d", "a-b-c-d"},
		{"Café Crème", "caf-cr-me"},
		{"日本語", ""},
		{"", ""},
		{"abcdefghijklmnopqrstuvwxyz0123", "abcdefghijklmnopqrstuvwx"},
		{"customer support tools for staging", "customer-support-tools"},
		{"abcdefghijklmnopqrstuvwx yz", "abcdefghijklmnopqrstuvwx"},
		{"abcdefghijklmnopqrstuvw yz", "abcdefghijklmnopqrstuvw"},
		{"a bcdefghijklmnopqrstuvwxyz", "a-bcdefghijklmnopqrstuvw"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got := serverkey.Slug(tt.in)
			if got != tt.want {
				t.Errorf("Slug(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if len(got) > serverkey.MaxSlugLen {
				t.Errorf("len(Slug(%q)) = %d, want at most %d", tt.in, len(got), serverkey.MaxSlugLen)
			}
		})
	}
}

func FuzzNormalize(f *testing.F) {
	for _, s := range []string{
		"http://example.com", "HTTPS://MCP.Example.COM:443/a/./b/../c/?b=2&a=1#f",
		"http://[::1]:8080/mcp", "http://[::ffff:127.0.0.1]/", "http://[fe80::1%25eth0]/",
		"http://127.0.0.1:0080/", "http://x/a%2Fb/%2e%2e/c", "http://x/?token=secret",
		"http://user:pw@x/", "http://x/?a=1;b=2", "http://x/%zz", "localhost:8080",
		"http://x/a b?q=a b", "http://x/?=&=&a", "http://x./", "http://x:/", "http:x",
		"http://bücher.de/", "http://x/%00", "http://x/?%00=%ff", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		n, err := serverkey.Normalize(raw)
		if err != nil {
			switch code := duet.ErrorCode(err); code {
			case duet.CodeInvalidArgument, duet.CodeURLRefused:
			default:
				t.Fatalf("Normalize(%q): got code %s, want %s or %s", raw, code, duet.CodeInvalidArgument, duet.CodeURLRefused)
			}
			return
		}
		again, err := serverkey.Normalize(n)
		if err != nil || again != n {
			t.Fatalf("Normalize(%q) = %q; Normalize of that = %q, %v; want idempotent", raw, n, again, err)
		}
		k, err := serverkey.Key(raw)
		if err != nil {
			t.Fatalf("Key(%q): %v after Normalize succeeded", raw, err)
		}
		if k2, _ := serverkey.Key(n); k2 != k {
			t.Fatalf("Key(%q) = %q, Key(%q) = %q; want equal", raw, k, n, k2)
		}
		if !keyPattern.MatchString(k) {
			t.Fatalf("Key(%q) = %q, want it to match %s", raw, k, keyPattern)
		}
	})
}
