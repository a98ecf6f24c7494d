package auth_test

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/auth"
	"github.com/duet-test/duet/internal/sqlite"
)

// TestConsoleSignIn: a personal token is exchanged for a session cookie
// (HttpOnly, SameSite, Secure over TLS); the cookie identifies the browser
// until it signs out; state changes need the session's CSRF token.
func TestConsoleSignIn(t *testing.T) {
	t.Parallel()
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "d.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	plain, hash := auth.NewToken()
	if err := db.CreateToken(t.Context(), &duet.Token{UserID: "alice", Hash: hash}); err != nil {
		t.Fatal(err)
	}
	a := auth.New(db, nil, "")
	if _, _, err := a.SignIn(t.Context(), plain); duet.ErrorCode(err) != duet.CodeUnauthenticated {
		t.Fatalf("sign-in with the console disabled: got %v, want UNAUTHENTICATED", err)
	}
	a.EnableConsole(auth.ConsoleOptions{Sessions: db, SessionTTL: time.Hour})
	if _, _, err := a.SignIn(t.Context(), "duet_pat_wrong"); duet.ErrorCode(err) != duet.CodeUnauthenticated {
		t.Fatalf("wrong token: got %v", err)
	}
	cookie, sess, err := a.SignIn(t.Context(), plain)
	if err != nil || sess.UserID != "alice" || cookie == "" || strings.Contains(sess.Hash, cookie) {
		t.Fatalf("sign-in: %q %+v %v", cookie, sess, err)
	}

	for _, tc := range []struct {
		tls, forwarded, secure bool
	}{{false, false, false}, {true, false, true}, {false, true, true}} {
		r := httptest.NewRequest("POST", "/signin", nil)
		if tc.tls {
			r = httptest.NewRequest("POST", "https://duet.example/signin", nil)
		}
		if tc.forwarded {
			r.Header.Set("X-Forwarded-Proto", "https")
		}
		w := httptest.NewRecorder()
		auth.SetSessionCookie(w, r, cookie, sess.ExpiresAt)
		set := w.Result().Cookies()[0]
		if !set.HttpOnly || set.SameSite != http.SameSiteLaxMode || set.Secure != tc.secure {
			t.Errorf("tls=%v forwarded=%v: cookie %+v, want HttpOnly, SameSite=Lax, Secure=%v", tc.tls, tc.forwarded, set, tc.secure)
		}
	}

	r := httptest.NewRequest("GET", "/", nil)
	r.AddCookie(&http.Cookie{Name: auth.SessionCookie, Value: cookie})
	id, err := a.AuthenticateConsole(t.Context(), r, true)
	if err != nil || id.UserID != "alice" || !id.Ambient || id.Method != auth.MethodSession {
		t.Fatalf("cookie: %+v %v", id, err)
	}
	if err := auth.CheckCSRF(id, "GET", ""); err != nil {
		t.Errorf("GET needs no CSRF token: %v", err)
	}
	for _, bad := range []string{"", "x", sess.CSRF + "x"} {
		if err := auth.CheckCSRF(id, "POST", bad); duet.ErrorCode(err) != duet.CodePermissionDenied {
			t.Errorf("POST with CSRF %q: got %v, want PERMISSION_DENIED", bad, err)
		}
	}
	if err := auth.CheckCSRF(id, "POST", sess.CSRF); err != nil {
		t.Errorf("POST with the session's token: %v", err)
	}
	if err := auth.CheckCSRF(auth.Identity{UserID: "alice", Method: auth.MethodToken}, "POST", ""); err != nil {
		t.Errorf("a bearer token needs no CSRF token: %v", err)
	}

	if err := a.SignOut(t.Context(), r); err != nil {
		t.Fatal(err)
	}
	if _, err := a.AuthenticateConsole(t.Context(), r, true); duet.ErrorCode(err) != duet.CodeUnauthenticated {
		t.Fatalf("after sign-out: got %v, want UNAUTHENTICATED", err)
	}
}

// TestConsoleSSOProxy: the SSO proxy's user header counts only with the
// shared secret; a session (for its CSRF token) is started once per user.
func TestConsoleSSOProxy(t *testing.T) {
	t.Parallel()
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "d.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	a := auth.New(db, nil, "")
	a.EnableConsole(auth.ConsoleOptions{Sessions: db, SSOUserHeader: "X-Forwarded-User", SSOSecret: "proxy-secret-0123456789"})
	req := func(secret string, users ...string) *http.Request {
		r := httptest.NewRequest("GET", "/", nil)
		if secret != "" {
			r.Header.Set(auth.HeaderProxySecret, secret)
		}
		for _, u := range users {
			r.Header.Add("X-Forwarded-User", u)
		}
		return r
	}
	if _, err := a.AuthenticateConsole(t.Context(), req("", "alice"), true); duet.ErrorCode(err) != duet.CodeUnauthenticated {
		t.Errorf("user header without the secret: got %v, want UNAUTHENTICATED", err)
	}
	if _, err := a.AuthenticateConsole(t.Context(), req("wrong-secret-0123456789", "alice"), true); duet.ErrorCode(err) != duet.CodeUnauthenticated {
		t.Errorf("wrong secret: got %v", err)
	}
	if _, err := a.AuthenticateConsole(t.Context(), req("proxy-secret-0123456789", "alice", "bob"), true); duet.ErrorCode(err) != duet.CodeUnauthenticated {
		t.Errorf("two user headers: got %v", err)
	}
	if _, err := a.AuthenticateConsole(t.Context(), req("proxy-secret-0123456789", "a\x01b"), true); duet.ErrorCode(err) != duet.CodeUnauthenticated {
		t.Errorf("invalid user id: got %v", err)
	}
	id, err := a.AuthenticateConsole(t.Context(), req("proxy-secret-0123456789", "alice"), true)
	if err != nil || id.UserID != "alice" || id.Method != auth.MethodSSO || !id.Ambient || id.NewCookie == "" || id.Session == nil {
		t.Fatalf("SSO: %+v %v", id, err)
	}
	again := req("proxy-secret-0123456789", "alice")
	again.AddCookie(&http.Cookie{Name: auth.SessionCookie, Value: id.NewCookie})
	id2, err := a.AuthenticateConsole(t.Context(), again, true)
	if err != nil || id2.NewCookie != "" || id2.Session.CSRF != id.Session.CSRF {
		t.Fatalf("SSO with its session: %+v %v", id2, err)
	}
	// The REST API does not start a session: the request may read, and
	// a state change is refused (no CSRF token to send).
	api, err := a.AuthenticateConsole(t.Context(), req("proxy-secret-0123456789", "carol"), false)
	if err != nil || api.UserID != "carol" || api.NewCookie != "" || api.Session != nil {
		t.Fatalf("SSO without a session, not started: %+v %v", api, err)
	}
	if err := auth.CheckCSRF(api, "POST", "anything"); duet.ErrorCode(err) != duet.CodePermissionDenied {
		t.Fatalf("a state change without a session: %v, want PERMISSION_DENIED", err)
	}
	// Another user behind the proxy with alice's cookie gets a session of
	// their own.
	other := req("proxy-secret-0123456789", "bob")
	other.AddCookie(&http.Cookie{Name: auth.SessionCookie, Value: id.NewCookie})
	id3, err := a.AuthenticateConsole(t.Context(), other, true)
	if err != nil || id3.UserID != "bob" || id3.NewCookie == "" || id3.Session.CSRF == id.Session.CSRF {
		t.Fatalf("bob with alice's cookie: %+v %v", id3, err)
	}
}

// TestConsoleSessionEndsWithItsToken: a session started with a personal
// access token ends when the token is revoked, and never outlives the
// token's expiry.
func TestConsoleSessionEndsWithItsToken(t *testing.T) {
	t.Parallel()
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "d.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	a := auth.New(db, nil, "")
	a.EnableConsole(auth.ConsoleOptions{Sessions: db, SessionTTL: 12 * time.Hour})
	plain, hash := auth.NewToken()
	soon := time.Now().Add(time.Hour)
	tok := &duet.Token{UserID: "alice", Hash: hash, ExpiresAt: &soon}
	if err := db.CreateToken(t.Context(), tok); err != nil {
		t.Fatal(err)
	}
	cookie, sess, err := a.SignIn(t.Context(), plain)
	if err != nil {
		t.Fatal(err)
	}
	if sess.ExpiresAt.After(soon) {
		t.Errorf("the session ends %v, after its token (%v)", sess.ExpiresAt, soon)
	}
	r := httptest.NewRequest("GET", "/", nil)
	r.AddCookie(&http.Cookie{Name: auth.SessionCookie, Value: cookie})
	if _, err := a.AuthenticateConsole(t.Context(), r, true); err != nil {
		t.Fatalf("before the revocation: %v", err)
	}
	if err := db.DeleteToken(t.Context(), "alice", tok.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := a.AuthenticateConsole(t.Context(), r, true); duet.ErrorCode(err) != duet.CodeUnauthenticated {
		t.Fatalf("after the token was revoked: got %v, want UNAUTHENTICATED", err)
	}
}
