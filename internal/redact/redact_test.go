package redact

import (
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

func TestSecrets(t *testing.T) {
	t.Parallel()
	if got := Secrets("token=s3cret-value here", "s3cret-value", ""); got != "token="+Mask+" here" {
		t.Fatalf("got %q", got)
	}
}
