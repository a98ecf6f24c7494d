package secret_test

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/secret"
	"github.com/duet-test/duet/internal/sqlite"
	"github.com/duet-test/duet/internal/vault"
)

// TestSessions: a saved session is stored sealed, opened only by its run
// for its owner, and a ciphertext moved to another run or owner does not
// open.
func TestSessions(t *testing.T) {
	t.Parallel()
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "duet.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	kr, _ := vault.NewKeyring(newKey(t))
	s := secret.NewSessions(db, secret.New(db, func() (*vault.Keyring, error) { return kr, nil }))
	state := []byte(`{"cookies":[{"name":"sid","value":"s3cr3t-cookie"}]}`)
	if err := s.SaveSession(t.Context(), "run-1", "alice", "admin", state); err != nil {
		t.Fatal(err)
	}
	stored, err := db.FindSavedSession(t.Context(), "run-1", "admin")
	if err != nil || bytes.Contains(stored.Ciphertext, []byte("s3cr3t-cookie")) || stored.Owner != "alice" {
		t.Fatalf("stored: %+v %v", stored, err)
	}
	got, err := s.LoadSession(t.Context(), "run-1", "alice", "admin")
	if err != nil || !bytes.Equal(got, state) {
		t.Fatalf("load: %q %v", got, err)
	}
	// bob, even naming alice's run, gets nothing; nor does another run.
	if _, err := s.LoadSession(t.Context(), "run-1", "bob", "admin"); duet.ErrorCode(err) != duet.CodeNotFound {
		t.Fatalf("bob: got %v, want NOT_FOUND", err)
	}
	if _, err := s.LoadSession(t.Context(), "run-2", "alice", "admin"); duet.ErrorCode(err) != duet.CodeNotFound {
		t.Fatalf("another run: got %v, want NOT_FOUND", err)
	}
	// alice's ciphertext copied to bob's run under bob's name does not open.
	if err := db.SaveSavedSession(t.Context(), &duet.SavedSession{RunID: "run-2", Name: "admin", Owner: "bob", Ciphertext: stored.Ciphertext, ExpiresAt: stored.ExpiresAt}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.LoadSession(t.Context(), "run-2", "bob", "admin"); duet.ErrorCode(err) != duet.CodeInternal {
		t.Fatalf("a moved ciphertext: got %v, want INTERNAL", err)
	}
	if err := s.SaveSession(t.Context(), "run-1", "alice", "bad name", state); duet.ErrorCode(err) != duet.CodeInvalidArgument {
		t.Fatalf("bad name: %v", err)
	}
}
