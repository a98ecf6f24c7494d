package storetest

import (
	"testing"
	"time"

	"github.com/duet-test/duet"
)

// RunAgreement runs the checks of points where the engines once differed
// (issue #26: the rules written once in storerules) against stores made by
// open.
func RunAgreement(t *testing.T, open Opener) {
	t.Run("SessionTimesAsStored", func(t *testing.T) { testSessionTimesAsStored(t, open(t)) })
	t.Run("TokenTimeAsStored", func(t *testing.T) { testTokenTimeAsStored(t, open(t)) })
	t.Run("OAuthTimesAsStored", func(t *testing.T) { testOAuthTimesAsStored(t, open(t)) })
}

// testSessionTimesAsStored: CreateSession leaves the session's times as
// the store keeps them (to the microsecond, in UTC), so the session
// written equals the session read (PostgreSQL truncated them, SQLite left
// the nanoseconds).
func testSessionTimesAsStored(t *testing.T, s duet.Store) {
	zone := time.FixedZone("UTC+2", 2*60*60)
	created := time.Now().In(zone).Truncate(time.Microsecond).Add(789 * time.Nanosecond)
	sess := &duet.Session{Hash: "sess-ns", UserID: "alice", CSRF: "c", Method: "token", CreatedAt: created, ExpiresAt: created.Add(time.Hour)}
	if err := s.CreateSession(ctx(t), sess); err != nil {
		t.Fatal(err)
	}
	got, err := s.FindSession(ctx(t), "sess-ns")
	if err != nil {
		t.Fatal(err)
	}
	if !got.CreatedAt.Equal(sess.CreatedAt) || !got.ExpiresAt.Equal(sess.ExpiresAt) {
		t.Errorf("written %v, %v; read %v, %v: want the same times", sess.CreatedAt, sess.ExpiresAt, got.CreatedAt, got.ExpiresAt)
	}
	if sess.CreatedAt.Nanosecond()%1000 != 0 || sess.CreatedAt.Location() != time.UTC {
		t.Errorf("CreatedAt %v: want it to the microsecond, in UTC", sess.CreatedAt)
	}
}

// testTokenTimeAsStored: CreateToken leaves the token's creation time as
// the store keeps it (PostgreSQL truncated it, SQLite left the
// nanoseconds).
func testTokenTimeAsStored(t *testing.T, s duet.Store) {
	created := time.Now().In(time.FixedZone("UTC-5", -5*60*60)).Truncate(time.Microsecond).Add(321 * time.Nanosecond)
	tok := &duet.Token{UserID: "alice", Name: "ci", Hash: "hash-ns", CreatedAt: created}
	if err := s.CreateToken(ctx(t), tok); err != nil {
		t.Fatal(err)
	}
	got, err := s.FindTokenByHash(ctx(t), "hash-ns")
	if err != nil {
		t.Fatal(err)
	}
	if !got.CreatedAt.Equal(tok.CreatedAt) || tok.CreatedAt.Location() != time.UTC {
		t.Errorf("written %v, read %v: want the same time, in UTC", tok.CreatedAt, got.CreatedAt)
	}
}

// testOAuthTimesAsStored: PutOAuthToken and CreateOAuthClient leave their
// times as the store keeps them (PostgreSQL truncated them, SQLite left
// the nanoseconds).
func testOAuthTimesAsStored(t *testing.T, s duet.Store) {
	now := time.Now().Truncate(time.Microsecond).Add(654 * time.Nanosecond)
	c := &duet.OAuthClient{ID: "client-ns", Name: "ci", RedirectURIs: []string{"https://ci.example/cb"}, CreatedAt: now}
	if err := s.CreateOAuthClient(ctx(t), c); err != nil {
		t.Fatal(err)
	}
	gc, err := s.FindOAuthClient(ctx(t), "client-ns")
	if err != nil || !gc.CreatedAt.Equal(c.CreatedAt) {
		t.Errorf("client written at %v, read %+v %v: want the same time", c.CreatedAt, gc, err)
	}
	tok := &duet.OAuthToken{Hash: "oauth-ns", Kind: duet.OAuthAccess, ClientID: "client-ns", UserID: "alice", CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	if err := s.PutOAuthToken(ctx(t), tok); err != nil {
		t.Fatal(err)
	}
	got, err := s.FindOAuthToken(ctx(t), duet.OAuthAccess, "oauth-ns")
	if err != nil {
		t.Fatal(err)
	}
	if !got.CreatedAt.Equal(tok.CreatedAt) || !got.ExpiresAt.Equal(tok.ExpiresAt) {
		t.Errorf("token written %v, %v; read %v, %v: want the same times", tok.CreatedAt, tok.ExpiresAt, got.CreatedAt, got.ExpiresAt)
	}
}
