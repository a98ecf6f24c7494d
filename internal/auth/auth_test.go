package auth_test

import (
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/auth"
	"github.com/duet-test/duet/internal/sqlite"
)

func TestAuthenticate(t *testing.T) {
	t.Parallel()
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "d.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	plain, hash := auth.NewToken()
	if !strings.HasPrefix(plain, auth.TokenPrefix) || hash == plain || auth.HashToken(plain) != hash {
		t.Fatalf("token %q hash %q", plain, hash)
	}
	if err := db.CreateToken(t.Context(), &duet.Token{UserID: "carol", Hash: hash}); err != nil {
		t.Fatal(err)
	}
	a := auth.New(db, []string{"k-old", "k-new"}, "")
	fixed := auth.New(db, []string{"k-new"}, "debugger")
	none := auth.New(db, nil, "")
	tests := []struct {
		name    string
		a       *auth.Authenticator
		url     string
		headers map[string]string
		user    string
		gateway bool
		code    duet.Code
	}{
		{"gateway key and user", a, "/", map[string]string{"X-Api-Key": "k-new", "SSO-Emp-Id": "alice"}, "alice", true, ""},
		{"older key still valid", a, "/", map[string]string{"X-Api-Key": "k-old", "SSO-Emp-Id": "alice"}, "alice", true, ""},
		{"wrong key", a, "/", map[string]string{"X-Api-Key": "k-neW", "SSO-Emp-Id": "alice"}, "", false, duet.CodeUnauthenticated},
		{"key without user", a, "/", map[string]string{"X-Api-Key": "k-new"}, "", true, duet.CodeUnauthenticated},
		{"key without user, fixed identity", fixed, "/", map[string]string{"X-Api-Key": "k-new"}, "debugger", true, ""},
		{"key but no gateway configured", none, "/", map[string]string{"X-Api-Key": "k-new", "SSO-Emp-Id": "alice"}, "", false, duet.CodeUnauthenticated},
		{"user header without key is ignored", a, "/", map[string]string{"SSO-Emp-Id": "alice"}, "", false, duet.CodeUnauthenticated},
		{"personal token", a, "/", map[string]string{"Authorization": "Bearer " + plain}, "carol", false, ""},
		{"bad token", a, "/", map[string]string{"Authorization": "Bearer duet_pat_nope"}, "", false, duet.CodeUnauthenticated},
		{"basic auth", a, "/", map[string]string{"Authorization": "Basic xyz"}, "", false, duet.CodeUnauthenticated},
		{"nothing", a, "/", nil, "", false, duet.CodeUnauthenticated},
		{"key in the URL", a, "/mcp/http?api_key=k-new", map[string]string{"X-Api-Key": "k-new", "SSO-Emp-Id": "alice"}, "", false, duet.CodeInvalidArgument},
		{"token in the URL", a, "/mcp/http?Token=" + plain, nil, "", false, duet.CodeInvalidArgument},
		{"bad user header", a, "/", map[string]string{"X-Api-Key": "k-new", "SSO-Emp-Id": "a b"}, "", false, duet.CodeUnauthenticated},
		{"user header not UTF-8", a, "/", map[string]string{"X-Api-Key": "k-new", "SSO-Emp-Id": "a\xffb"}, "", false, duet.CodeUnauthenticated},
		{"user header of 10,000 characters", a, "/", map[string]string{"X-Api-Key": "k-new", "SSO-Emp-Id": strings.Repeat("a", 10000)}, "", false, duet.CodeUnauthenticated},
		{"user header with a control character", a, "/", map[string]string{"X-Api-Key": "k-new", "SSO-Emp-Id": "a\x7fb"}, "", false, duet.CodeUnauthenticated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", tt.url, nil)
			for k, v := range tt.headers {
				r.Header.Set(k, v)
			}
			id, err := tt.a.Authenticate(t.Context(), r)
			if tt.code != "" {
				if duet.ErrorCode(err) != tt.code {
					t.Fatalf("got %v, want %s", err, tt.code)
				}
				if strings.Contains(err.Error(), "k-new") || strings.Contains(err.Error(), plain) {
					t.Fatalf("the error echoes a secret: %v", err)
				}
				return
			}
			if err != nil || id.UserID != tt.user || id.ViaGateway != tt.gateway {
				t.Fatalf("got %+v %v, want user %q gateway %v", id, err, tt.user, tt.gateway)
			}
			want := map[string]auth.Method{"alice": auth.MethodGateway, "debugger": auth.MethodGatewayFixed, "carol": auth.MethodToken}[tt.user]
			if id.Method != want || id.Principal() != string(want)+":"+tt.user {
				t.Fatalf("got method %q principal %q, want %q", id.Method, id.Principal(), want)
			}
		})
	}
}

// TestOneUserHeader: a request with two SSO-Emp-Id headers (a client's and
// the gateway's, when the gateway adds instead of replacing) names two users
// and is refused.
func TestOneUserHeader(t *testing.T) {
	t.Parallel()
	a := auth.New(nil, []string{"k"}, "")
	r := httptest.NewRequest("POST", "/", nil)
	r.Header.Set("X-Api-Key", "k")
	r.Header.Add("SSO-Emp-Id", "bob")
	r.Header.Add("SSO-Emp-Id", "alice")
	if _, err := a.Authenticate(t.Context(), r); duet.ErrorCode(err) != duet.CodeIdentityMismatch {
		t.Fatalf("got %v, want IDENTITY_MISMATCH", err)
	}
}
