package storetest

import (
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/duet-test/duet"
)

// testOAuth: Duet's authorization server keeps clients and hashed tokens;
// a single-use token is used exactly once however many callers race, a
// second use is CONFLICT with the token (so its grant can be revoked), and
// revoking a grant removes all its tokens.
func testOAuth(t *testing.T, s duet.Store) {
	c := &duet.OAuthClient{ID: "dcr_1", Name: "Editor", RedirectURIs: []string{"http://127.0.0.1:5000/cb"}}
	if err := s.CreateOAuthClient(ctx(t), c); err != nil {
		t.Fatal(err)
	}
	got, err := s.FindOAuthClient(ctx(t), "dcr_1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(c.RedirectURIs, got.RedirectURIs); diff != "" || got.Name != "Editor" {
		t.Errorf("client: got %+v (-want +got %s)", got, diff)
	}
	if _, err := s.FindOAuthClient(ctx(t), "nope"); duet.ErrorCode(err) != duet.CodeNotFound {
		t.Errorf("missing client: got %v, want NOT_FOUND", err)
	}
	if err := s.CreateOAuthClient(ctx(t), &duet.OAuthClient{ID: "x"}); duet.ErrorCode(err) != duet.CodeInvalidArgument {
		t.Errorf("client without redirect URI: got %v, want INVALID_ARGUMENT", err)
	}

	exp := time.Now().Add(time.Hour)
	put := func(hash string, kind duet.OAuthTokenKind, grant string, exp time.Time) {
		t.Helper()
		if err := s.PutOAuthToken(ctx(t), &duet.OAuthToken{Hash: hash, Kind: kind, GrantID: grant, ClientID: "dcr_1", UserID: "alice", Scope: "duet:read", ExpiresAt: exp, Data: `{"a":1}`}); err != nil {
			t.Fatal(err)
		}
	}
	put("code1", duet.OAuthCode, "g1", exp)
	put("at1", duet.OAuthAccess, "g1", exp)
	put("rt1", duet.OAuthRefresh, "g1", exp)
	put("old", duet.OAuthAccess, "g2", time.Now().Add(-time.Minute))

	at, err := s.FindOAuthToken(ctx(t), duet.OAuthAccess, "at1")
	if err != nil || at.UserID != "alice" || at.Scope != "duet:read" || at.GrantID != "g1" || at.Data != `{"a":1}` {
		t.Fatalf("FindOAuthToken: got %+v, %v", at, err)
	}
	if _, err := s.FindOAuthToken(ctx(t), duet.OAuthRefresh, "at1"); duet.ErrorCode(err) != duet.CodeUnauthenticated {
		t.Errorf("token of another kind: got %v, want UNAUTHENTICATED", err)
	}
	if _, err := s.FindOAuthToken(ctx(t), duet.OAuthAccess, "old"); duet.ErrorCode(err) != duet.CodeUnauthenticated {
		t.Errorf("expired token: got %v, want UNAUTHENTICATED", err)
	}

	// Ten racing uses of one code: one wins, the others see CONFLICT.
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins, conflicts := 0, 0
	for range 10 {
		wg.Go(func() {
			tok, err := s.UseOAuthToken(ctx(t), duet.OAuthCode, "code1")
			mu.Lock()
			defer mu.Unlock()
			switch duet.ErrorCode(err) {
			case "":
				wins++
			case duet.CodeConflict:
				if tok == nil || tok.GrantID != "g1" {
					t.Errorf("a reused code must come back with its grant, got %+v", tok)
				}
				conflicts++
			default:
				t.Errorf("UseOAuthToken: %v", err)
			}
		})
	}
	wg.Wait()
	if wins != 1 || conflicts != 9 {
		t.Errorf("racing uses: got %d wins and %d conflicts, want 1 and 9", wins, conflicts)
	}
	if _, err := s.FindOAuthToken(ctx(t), duet.OAuthCode, "code1"); duet.ErrorCode(err) != duet.CodeUnauthenticated {
		t.Errorf("a used code is not found: got %v", err)
	}
	if _, err := s.UseOAuthToken(ctx(t), duet.OAuthRefresh, "nope"); duet.ErrorCode(err) != duet.CodeUnauthenticated {
		t.Errorf("using a missing token: got %v, want UNAUTHENTICATED", err)
	}

	if err := s.RevokeOAuthGrant(ctx(t), "g1"); err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"at1", "rt1"} {
		kind := duet.OAuthAccess
		if h == "rt1" {
			kind = duet.OAuthRefresh
		}
		if _, err := s.FindOAuthToken(ctx(t), kind, h); duet.ErrorCode(err) != duet.CodeUnauthenticated {
			t.Errorf("%s after revocation: got %v, want UNAUTHENTICATED", h, err)
		}
	}
	n, err := s.DeleteExpiredOAuth(ctx(t), time.Now())
	if err != nil || n != 1 {
		t.Errorf("DeleteExpiredOAuth: got %d, %v; want 1 (the expired token)", n, err)
	}

	// Clients that registered over a day ago and never obtained an access
	// token go too — unless a sign-in of theirs is under way; one that did
	// obtain a token stays after its tokens are gone.
	old := time.Now().Add(-duet.UnusedOAuthClientTTL - time.Hour)
	for _, id := range []string{"dcr_unused", "dcr_pending", "dcr_used"} {
		if err := s.CreateOAuthClient(ctx(t), &duet.OAuthClient{ID: id, RedirectURIs: []string{"http://127.0.0.1:5000/cb"}, CreatedAt: old}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.PutOAuthToken(ctx(t), &duet.OAuthToken{Hash: "login1", Kind: duet.OAuthLogin, ClientID: "dcr_pending", ExpiresAt: exp}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutOAuthToken(ctx(t), &duet.OAuthToken{Hash: "at3", Kind: duet.OAuthAccess, GrantID: "g3", ClientID: "dcr_used", UserID: "bob", ExpiresAt: exp}); err != nil {
		t.Fatal(err)
	}
	if err := s.RevokeOAuthGrant(ctx(t), "g3"); err != nil {
		t.Fatal(err)
	}
	if n, err := s.DeleteExpiredOAuth(ctx(t), time.Now()); err != nil || n != 1 {
		t.Errorf("DeleteExpiredOAuth with an old unused client: got %d, %v; want 1", n, err)
	}
	for id, want := range map[string]duet.Code{"dcr_unused": duet.CodeNotFound, "dcr_pending": "", "dcr_used": "", "dcr_1": ""} {
		if _, err := s.FindOAuthClient(ctx(t), id); duet.ErrorCode(err) != want {
			t.Errorf("client %s after the clean-up: got %v, want %q", id, err, want)
		}
	}
}
