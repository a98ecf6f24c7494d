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
