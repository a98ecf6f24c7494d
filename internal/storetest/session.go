package storetest

import (
	"testing"
	"time"

	"github.com/duet-test/duet"
)

func testSessions(t *testing.T, s duet.Store) {
	exp := time.Now().Add(time.Hour)
	sess := &duet.Session{Hash: "sess-1", UserID: "alice", CSRF: "csrf-1", Method: "token", ExpiresAt: exp}
	if err := s.CreateSession(ctx(t), sess); err != nil {
		t.Fatal(err)
	}
	got, err := s.FindSession(ctx(t), "sess-1")
	if err != nil || got.UserID != "alice" || got.CSRF != "csrf-1" || got.Method != "token" || !got.ExpiresAt.Equal(exp.Truncate(time.Microsecond)) {
		t.Fatalf("find: got %+v %v", got, err)
	}
	_, err = s.FindSession(ctx(t), "nope")
	wantCode(t, err, duet.CodeUnauthenticated)
	wantCode(t, s.CreateSession(ctx(t), &duet.Session{Hash: "x", UserID: "a b", CSRF: "c", ExpiresAt: exp}), duet.CodeInvalidArgument)
	wantCode(t, s.CreateSession(ctx(t), &duet.Session{Hash: "y", UserID: "bob", ExpiresAt: exp}), duet.CodeInvalidArgument)

	old := &duet.Session{Hash: "sess-old", UserID: "bob", CSRF: "c", CreatedAt: time.Now().Add(-2 * time.Hour), ExpiresAt: time.Now().Add(-time.Hour)}
	if err := s.CreateSession(ctx(t), old); err != nil {
		t.Fatal(err)
	}
	_, err = s.FindSession(ctx(t), "sess-old")
	wantCode(t, err, duet.CodeUnauthenticated)
	n, err := s.DeleteExpiredSessions(ctx(t), time.Now())
	if err != nil || n != 1 {
		t.Fatalf("delete expired: got %d %v, want 1", n, err)
	}
	if err := s.DeleteSession(ctx(t), "sess-1"); err != nil {
		t.Fatal(err)
	}
	_, err = s.FindSession(ctx(t), "sess-1")
	wantCode(t, err, duet.CodeUnauthenticated)
	if err := s.DeleteSession(ctx(t), "sess-1"); err != nil {
		t.Fatalf("deleting an ended session: %v", err)
	}

	// Revoking a personal access token ends the sessions started with it,
	// and only those.
	tok := &duet.Token{UserID: "carol", Name: "laptop", Hash: "tok-sess"}
	if err := s.CreateToken(ctx(t), tok); err != nil {
		t.Fatal(err)
	}
	for _, ss := range []*duet.Session{
		{Hash: "sess-tok-a", UserID: "carol", CSRF: "c", Method: "token", TokenID: tok.ID, ExpiresAt: exp},
		{Hash: "sess-tok-b", UserID: "carol", CSRF: "c", Method: "token", TokenID: tok.ID, ExpiresAt: exp},
		{Hash: "sess-sso", UserID: "carol", CSRF: "c", Method: "sso", ExpiresAt: exp},
	} {
		if err := s.CreateSession(ctx(t), ss); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := s.FindSession(ctx(t), "sess-tok-a"); err != nil || got.TokenID != tok.ID {
		t.Fatalf("a token's session: got %+v %v", got, err)
	}
	if err := s.DeleteToken(ctx(t), "carol", tok.ID); err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"sess-tok-a", "sess-tok-b"} {
		_, err := s.FindSession(ctx(t), h)
		wantCode(t, err, duet.CodeUnauthenticated)
	}
	if _, err := s.FindSession(ctx(t), "sess-sso"); err != nil {
		t.Errorf("the SSO session ended with a token it was not started with: %v", err)
	}
}
