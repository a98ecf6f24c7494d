package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/app/apptest"
)

// TestRESTDoors: the REST API takes a personal token, a gateway key with
// its user, or the console's session cookie — and with the cookie, a
// state change needs the session's CSRF token. A request with no
// credentials, a foreign Origin or a foreign Host is refused with the
// REST error shape, and each refusal is audited.
func TestRESTDoors(t *testing.T) {
	t.Parallel()
	e := apptest.New(t, map[string]string{"DUET_GATEWAY_API_KEYS": "gateway-key-0123456789", "DUET_ALLOWED_HOSTS": "duet.example"})
	status, b, _ := e.Call("", "GET", "/api/v1/tasks", nil)
	if status != 401 || apptest.ErrCode(b) != duet.CodeUnauthenticated {
		t.Fatalf("no credentials: %d %s", status, b)
	}
	status, b, _ = e.Call("", "GET", "/api/v1/me", nil, "X-Api-Key", "gateway-key-0123456789", "SSO-Emp-Id", "dave")
	if status != 200 || !strings.Contains(string(b), `"user":"dave"`) {
		t.Fatalf("gateway: %d %s", status, b)
	}
	status, b, _ = e.Call("alice", "GET", "/api/v1/tasks", nil, "Origin", "https://evil.example")
	if status != 403 || apptest.ErrCode(b) != duet.CodePermissionDenied {
		t.Fatalf("foreign origin: %d %s", status, b)
	}
	// Served under an allowed name (behind a proxy that ends TLS), the
	// console's own pages are same-origin; other sites and names are not.
	for _, tc := range []struct {
		host, origin string
		want         int
	}{
		{"duet.example", "https://duet.example", 200},
		{"duet.example", "http://duet.example", 200},
		{"duet.example", "https://evil.example", 403},
		{"evil.example", "https://evil.example", 403},
		{"duet.example", "https://duet.example.evil.example", 403},
	} {
		if status, b, _ := e.Call("alice", "GET", "/api/v1/me", nil, "Host", tc.host, "Origin", tc.origin); status != tc.want {
			t.Errorf("Host %s, Origin %s: %d %s, want %d", tc.host, tc.origin, status, b, tc.want)
		}
	}
	status, b, _ = e.Call("alice", "GET", "/api/v1/nope", nil)
	if status != 404 || apptest.ErrCode(b) != duet.CodeNotFound {
		t.Fatalf("unknown route: %d %s", status, b)
	}

	client, csrf := e.SignIn("alice")
	post := func(hdr map[string]string) (int, string) {
		req, _ := http.NewRequest("POST", e.URL+"/api/v1/tokens", strings.NewReader(`{"name":"from-the-console"}`))
		req.Header.Set("Content-Type", "application/json")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var sb strings.Builder
		buf := make([]byte, 4096)
		for {
			n, err := resp.Body.Read(buf)
			sb.Write(buf[:n])
			if err != nil {
				break
			}
		}
		return resp.StatusCode, sb.String()
	}
	if status, body := post(nil); status != 403 || !strings.Contains(body, "CSRF") {
		t.Fatalf("cookie without the CSRF token: %d %s", status, body)
	}
	if status, body := post(map[string]string{"X-Csrf-Token": "forged"}); status != 403 {
		t.Fatalf("cookie with a wrong CSRF token: %d %s", status, body)
	}
	if status, body := post(map[string]string{"X-Csrf-Token": csrf}); status != 201 {
		t.Fatalf("cookie with the CSRF token: %d %s", status, body)
	}
	resp, err := client.Get(e.URL + "/api/v1/me")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("a GET with the cookie needs no CSRF token: %v %v", resp, err)
	}
	resp.Body.Close()

	e.App.Audit.Flush()
	recs, err := e.App.Store.FindAudit(t.Context(), duet.AuditFilter{Caller: "alice", Outcome: duet.CodePermissionDenied})
	if err != nil || len(recs) < 2 {
		t.Fatalf("CSRF refusals audited: %d records, %v", len(recs), err)
	}
}

// TestRESTBodiesAreStrict: a body is read once, strictly: unknown or
// miscased members, duplicate keys, wrong types and oversized bodies are
// refused with INVALID_ARGUMENT or TOO_LARGE before anything runs.
func TestRESTBodiesAreStrict(t *testing.T) {
	t.Parallel()
	e := apptest.New(t, map[string]string{"DUET_MAX_BODY_BYTES": "2048"})
	for name, body := range map[string]string{
		"unknown member":  `{"name":"x","admin":true}`,
		"miscased member": `{"Name":"x"}`,
		"duplicate key":   `{"name":"x","name":"y"}`,
		"wrong type":      `{"name":1}`,
		"not JSON":        `{"name":`,
		"two values":      `{"name":"x"} {}`,
		"empty":           ``,
	} {
		status, b, _ := e.CallRaw("alice", "POST", "/api/v1/tokens", body)
		if status != 400 || apptest.ErrCode(b) != duet.CodeInvalidArgument {
			t.Errorf("%s: %d %s, want 400 INVALID_ARGUMENT", name, status, b)
		}
	}
	status, b, _ := e.CallRaw("alice", "POST", "/api/v1/tokens", `{"name":"`+strings.Repeat("x", 4096)+`"}`)
	if status != 413 || apptest.ErrCode(b) != duet.CodeTooLarge {
		t.Errorf("oversized body: %d %s", status, b)
	}
	if toks, _ := e.App.Store.FindTokens(t.Context(), "alice"); len(toks) != 1 {
		t.Errorf("a refused body created a token: %d tokens", len(toks))
	}
}
