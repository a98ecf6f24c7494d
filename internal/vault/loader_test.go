package vault_test

import (
	"testing"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/vault"
)

// TestLoaderReloadsForAnUnknownKey: a process's keyring is loaded once; a
// ciphertext sealed under a key it lacks (the master key was rotated by
// another process) makes it load the keyring again, and the new keyring is
// kept for what comes after.
func TestLoaderReloadsForAnUnknownKey(t *testing.T) {
	t.Parallel()
	old, rotated := mustKeyring(t, testKey(1)), mustKeyring(t, testKey(2), testKey(1))
	current, loads := old, 0
	l := vault.NewLoader(func() (*vault.Keyring, error) { loads++; return current, nil }, "nothing opens")
	aad := vault.AAD("alice", "srv")
	first, err := old.Seal([]byte("one"), aad)
	if err != nil {
		t.Fatal(err)
	}
	if pt, err := l.Open(first, aad); err != nil || string(pt) != "one" || loads != 1 {
		t.Fatalf("Open = %q, %v after %d loads; want one after 1", pt, err, loads)
	}
	current = rotated
	second, err := rotated.Seal([]byte("two"), aad)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if pt, err := l.Open(second, aad); err != nil || string(pt) != "two" {
			t.Fatalf("Open of a ciphertext under the new key = %q, %v", pt, err)
		}
	}
	if loads != 2 {
		t.Errorf("%d loads, want 2: one at first use, one for the new key, then kept", loads)
	}
	if kr, err := l.Keyring(false); err != nil || kr.PrimaryID() != rotated.PrimaryID() {
		t.Errorf("the kept keyring is not the reloaded one (%v)", err)
	}
}

// TestLoaderWithoutAKey: no master key configured is UNAVAILABLE, saying
// what cannot be done.
func TestLoaderWithoutAKey(t *testing.T) {
	t.Parallel()
	_, err := vault.NewLoader(nil, "secrets cannot be read").Open([]byte("x"), nil)
	if duet.ErrorCode(err) != duet.CodeUnavailable || duet.ErrorMessage(err) != "no master key is configured, so secrets cannot be read" {
		t.Errorf("err = %v, want UNAVAILABLE naming what cannot be done", err)
	}
}
