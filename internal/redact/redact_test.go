package redact

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestValue(t *testing.T) {
	t.Parallel()
	in := map[string]any{
		"status":  200.0,
		"headers": map[string]any{"Set-Cookie": "sid=1", "content-type": "json", "X-Api-Key": "k"},
		"body":    map[string]any{"access_token": "abc", "items": []any{map[string]any{"refreshToken": "r", "id": 1.0}}, "Password": nil},
	}
	want := map[string]any{
		"status":  200.0,
		"headers": map[string]any{"Set-Cookie": Mask, "content-type": "json", "X-Api-Key": Mask},
		"body":    map[string]any{"access_token": Mask, "items": []any{map[string]any{"refreshToken": Mask, "id": 1.0}}, "Password": nil},
	}
	if diff := cmp.Diff(want, Value(in)); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	if in["body"].(map[string]any)["access_token"] != "abc" {
		t.Fatal("Value modified its input")
	}
}

func TestIsSensitiveKey(t *testing.T) {
	t.Parallel()
	for k, want := range map[string]bool{"Authorization": true, "api_key": true, "githubToken": true, "SSO-Emp-Id": false, "orderId": false, "status": false, "client-secret": true} {
		if got := IsSensitiveKey(k); got != want {
			t.Errorf("IsSensitiveKey(%q): got %v, want %v", k, got, want)
		}
	}
}

// isSensitiveKeyByDefinition is IsSensitiveKey as first written: the
// separators dropped and the key lowered as strings, then looked up.
func isSensitiveKeyByDefinition(k string) bool {
	n := strings.ToLower(strings.NewReplacer("-", "", "_", "", ".", "").Replace(k))
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

// FuzzIsSensitiveKey: the allocation-free IsSensitiveKey answers as its
// definition does, for any key (long ones, non-ASCII ones whose lower case
// is ASCII, separators anywhere).
//
//	go test ./internal/redact -run '^$' -fuzz FuzzIsSensitiveKey -fuzztime 30s
func FuzzIsSensitiveKey(f *testing.F) {
	for _, k := range []string{"Authorization", "Proxy-Authorization", "X-Api-Key", "SSO-Emp-Id", "sso_emp.id", "Content-Type",
		"githubToken", "TOKEN", "\u212aey", "TO\u212aEN", "Passwor\u0301d", "x-" + strings.Repeat("a", 70) + "-token",
		strings.Repeat("-", 80) + "secret", strings.Repeat("a", 64) + "Token", "", "-", "api.key", "set-cookie", "sig"} {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, k string) {
		if got, want := IsSensitiveKey(k), isSensitiveKeyByDefinition(k); got != want {
			t.Fatalf("IsSensitiveKey(%q) = %v, by its definition %v", k, got, want)
		}
	})
}

// TestIsSensitiveKeyAllocatesNothing: a request's headers are checked
// without an allocation.
func TestIsSensitiveKeyAllocatesNothing(t *testing.T) {
	keys := []string{"Authorization", "Content-Type", "Mcp-Session-Id", "Mcp-Protocol-Version", "X-Api-Key", "SSO-Emp-Id", "Traceparent", "Duet-Call-Depth"}
	if n := testing.AllocsPerRun(100, func() {
		for _, k := range keys {
			IsSensitiveKey(k)
		}
	}); n != 0 {
		t.Fatalf("%v allocations to check %d header names", n, len(keys))
	}
}

func TestSecrets(t *testing.T) {
	t.Parallel()
	if got := Secrets("token=s3cret-value here", "s3cret-value", ""); got != "token="+Mask+" here" {
		t.Fatalf("got %q", got)
	}
}
