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

func newKey(t *testing.T) []byte {
	k, err := vault.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestVault: a secret is stored sealed, opened only for its owner under
// its name, re-encrypted under a new master key, and read again after a
// rotation by a process that loaded the old keyring.
func TestVault(t *testing.T) {
	t.Parallel()
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "duet.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	old := newKey(t)
	kr, _ := vault.NewKeyring(old)
	current := kr
	v := secret.New(db, func() (*vault.Keyring, error) { return current, nil })

	if _, err := v.Set(t.Context(), "alice", "PW", "hunter2"); err != nil {
		t.Fatal(err)
	}
	stored, _ := db.FindSecrets(t.Context(), "alice", []string{"PW"})
	if len(stored) != 1 || bytes.Contains(stored[0].Ciphertext, []byte("hunter2")) {
		t.Fatalf("stored: %+v", stored)
	}
	got, err := v.ReadSecrets(t.Context(), "alice", []string{"PW", "NOPE"})
	if err != nil || len(got) != 1 || got["PW"] != "hunter2" {
		t.Fatalf("read: %v %v", got, err)
	}
	if got, err := v.ReadSecrets(t.Context(), "bob", []string{"PW"}); err != nil || len(got) != 0 {
		t.Fatalf("bob reads alice's: %v %v", got, err)
	}
	// alice's ciphertext under bob's name does not open: it is bound to
	// its owner and name.
	if _, err := db.SaveSecret(t.Context(), &duet.Secret{User: "bob", Name: "PW", Ciphertext: stored[0].Ciphertext}); err != nil {
		t.Fatal(err)
	}
	if _, err := v.ReadSecrets(t.Context(), "bob", []string{"PW"}); duet.ErrorCode(err) != duet.CodeInternal {
		t.Fatalf("a moved ciphertext: got %v, want INTERNAL", err)
	}
	db.DeleteSecret(t.Context(), "bob", "PW")

	for _, bad := range []struct{ name, value string }{{"1X", "v"}, {"X", ""}, {"X", string(make([]byte, duet.MaxSecretBytes+1))}} {
		if _, err := v.Set(t.Context(), "alice", bad.name, bad.value); duet.ErrorCode(err) != duet.CodeInvalidArgument {
			t.Errorf("set %q (%d bytes): got %v", bad.name, len(bad.value), err)
		}
	}

	// Rotation: a new primary key, the old one kept as previous.
	rotated, _ := vault.NewKeyring(newKey(t), old)
	reader := secret.New(db, func() (*vault.Keyring, error) { return current, nil })
	if _, err := reader.ReadSecrets(t.Context(), "alice", []string{"PW"}); err != nil { // loads the old keyring
		t.Fatal(err)
	}
	current = rotated
	replaced, total, err := v.Rewrap(t.Context())
	if err != nil || replaced != 1 || total != 1 {
		t.Fatalf("rewrap: %d of %d, %v", replaced, total, err)
	}
	// The reader still holds the old keyring: it loads the new one.
	if got, err := reader.ReadSecrets(t.Context(), "alice", []string{"PW"}); err != nil || got["PW"] != "hunter2" {
		t.Fatalf("after rotation: %v %v", got, err)
	}
}
