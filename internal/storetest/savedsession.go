package storetest

import (
	"bytes"
	"testing"
	"time"

	"github.com/duet-test/duet"
)

// testSavedSessions: a run's saved session is found by its run and name
// only, replaced by a later save, gone once expired, and checked.
func testSavedSessions(t *testing.T, s duet.Store) {
	exp := time.Now().Add(time.Hour)
	a := &duet.SavedSession{RunID: "run-a", Name: "admin", Owner: "alice", Ciphertext: []byte("sealed-1"), ExpiresAt: exp}
	if err := s.SaveSavedSession(ctx(t), a); err != nil {
		t.Fatal(err)
	}
	got, err := s.FindSavedSession(ctx(t), "run-a", "admin")
	if err != nil || got.Owner != "alice" || !bytes.Equal(got.Ciphertext, []byte("sealed-1")) || !got.ExpiresAt.Equal(exp.Truncate(time.Microsecond)) || got.CreatedAt.IsZero() {
		t.Fatalf("find: got %+v %v", got, err)
	}
	a.Ciphertext = []byte("sealed-2")
	if err := s.SaveSavedSession(ctx(t), a); err != nil {
		t.Fatal(err)
	}
	if got, err := s.FindSavedSession(ctx(t), "run-a", "admin"); err != nil || string(got.Ciphertext) != "sealed-2" {
		t.Fatalf("replaced: got %+v %v", got, err)
	}
	// Another run (bob's, or alice's next) cannot name it.
	_, err = s.FindSavedSession(ctx(t), "run-b", "admin")
	wantCode(t, err, duet.CodeNotFound)
	_, err = s.FindSavedSession(ctx(t), "run-a", "Admin")
	wantCode(t, err, duet.CodeNotFound)

	old := &duet.SavedSession{RunID: "run-c", Name: "admin", Owner: "bob", Ciphertext: []byte("x"), ExpiresAt: time.Now().Add(-time.Minute)}
	if err := s.SaveSavedSession(ctx(t), old); err != nil {
		t.Fatal(err)
	}
	_, err = s.FindSavedSession(ctx(t), "run-c", "admin")
	wantCode(t, err, duet.CodeNotFound)

	for _, bad := range []*duet.SavedSession{
		{RunID: "", Name: "a", Owner: "alice", Ciphertext: []byte("x"), ExpiresAt: exp},
		{RunID: "r", Name: "1a", Owner: "alice", Ciphertext: []byte("x"), ExpiresAt: exp},
		{RunID: "r", Name: "a", Owner: "a b", Ciphertext: []byte("x"), ExpiresAt: exp},
		{RunID: "r", Name: "a", Owner: "alice", ExpiresAt: exp},
		{RunID: "r", Name: "a", Owner: "alice", Ciphertext: []byte("x")},
	} {
		wantCode(t, s.SaveSavedSession(ctx(t), bad), duet.CodeInvalidArgument)
	}
}
