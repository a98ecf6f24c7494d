package vault_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/vault"
)

// testKey returns a deterministic, non-zero key; n selects which one.
func testKey(n byte) []byte {
	k := make([]byte, vault.KeySize)
	for i := range k {
		k[i] = n + byte(i)
	}
	return k
}

func mustKeyring(t *testing.T, primary []byte, previous ...[]byte) *vault.Keyring {
	t.Helper()
	kr, err := vault.NewKeyring(primary, previous...)
	if err != nil {
		t.Fatalf("NewKeyring: %v", err)
	}
	return kr
}

func TestSealOpenRoundTrip(t *testing.T) {
	t.Parallel()
	kr := mustKeyring(t, testKey(1))
	tests := []struct {
		name      string
		plaintext []byte
		aad       []byte
	}{
		{"empty", nil, nil},
		{"token", []byte("sk-secret-token"), vault.AAD("alice", "mcp_orders_1a2b3c4d")},
		{"binary", []byte{0, 1, 2, 255, 0}, []byte{0}},
		{"large", bytes.Repeat([]byte("x"), 1<<16), vault.AAD("", "")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ct, err := kr.Seal(tt.plaintext, tt.aad)
			if err != nil {
				t.Fatalf("Seal: %v", err)
			}
			if got, want := len(ct), len(tt.plaintext)+vault.Overhead; got != want {
				t.Errorf("len(ciphertext) = %d, want %d", got, want)
			}
			if len(tt.plaintext) > 4 && bytes.Contains(ct, tt.plaintext) {
				t.Errorf("ciphertext contains the plaintext")
			}
			got, err := kr.Open(ct, tt.aad)
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			if !bytes.Equal(got, tt.plaintext) {
				t.Errorf("Open = %q, want %q", got, tt.plaintext)
			}
			if kr.NeedsRewrap(ct) {
				t.Errorf("NeedsRewrap(fresh ciphertext) = true, want false")
			}
		})
	}
}

func TestSealUsesFreshNonces(t *testing.T) {
	t.Parallel()
	kr := mustKeyring(t, testKey(1))
	a, _ := kr.Seal([]byte("same"), nil)
	b, _ := kr.Seal([]byte("same"), nil)
	if bytes.Equal(a, b) {
		t.Errorf("two Seals of the same plaintext are equal, want different nonces")
	}
}

func TestOpenWrongAAD(t *testing.T) {
	t.Parallel()
	kr := mustKeyring(t, testKey(1))
	ct, err := kr.Seal([]byte("secret"), vault.AAD("alice", "mcp_a_00000000"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		aad  []byte
	}{
		{"other owner", vault.AAD("bob", "mcp_a_00000000")},
		{"other server", vault.AAD("alice", "mcp_b_00000000")},
		{"shifted boundary", vault.AAD("alicem", "cp_a_00000000")},
		{"nil", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := kr.Open(ct, tt.aad)
			if err == nil {
				t.Fatalf("Open with wrong aad = %q, nil; want error", got)
			}
			if got != nil {
				t.Errorf("Open returned plaintext %q with an error", got)
			}
			if !errors.Is(err, vault.ErrAuthentication) {
				t.Errorf("got error %v, want ErrAuthentication", err)
			}
			if code := duet.ErrorCode(err); code != duet.CodeInternal {
				t.Errorf("got code %s, want %s", code, duet.CodeInternal)
			}
		})
	}
}

func TestAADUnambiguous(t *testing.T) {
	t.Parallel()
	pairs := [][2]string{
		{"ab", "c"}, {"a", "bc"}, {"", "abc"}, {"abc", ""}, {"a\x01b", "c"}, {"a", "\x01bc"},
	}
	seen := map[string][2]string{}
	for _, p := range pairs {
		k := string(vault.AAD(p[0], p[1]))
		if prev, ok := seen[k]; ok {
			t.Errorf("AAD(%q, %q) == AAD(%q, %q), want distinct", p[0], p[1], prev[0], prev[1])
		}
		seen[k] = p
	}
}

func TestOpenTamperedEveryByte(t *testing.T) {
	t.Parallel()
	kr := mustKeyring(t, testKey(1), testKey(2))
	aad := vault.AAD("alice", "mcp_x_12345678")
	ct, err := kr.Seal([]byte("a credential"), aad)
	if err != nil {
		t.Fatal(err)
	}
	for i := range ct {
		for _, mask := range []byte{0x01, 0x80, 0xff} {
			bad := bytes.Clone(ct)
			bad[i] ^= mask
			if got, err := kr.Open(bad, aad); err == nil || got != nil {
				t.Errorf("byte %d ^ %#x: Open = %q, %v; want nil, error", i, mask, got, err)
			}
		}
	}
	for n := range len(ct) {
		if got, err := kr.Open(ct[:n], aad); err == nil || got != nil {
			t.Errorf("truncated to %d bytes: Open = %q, %v; want nil, error", n, got, err)
		}
	}
	if _, err := kr.Open(append(bytes.Clone(ct), 0), aad); err == nil {
		t.Errorf("extended by one byte: Open succeeded, want error")
	}
}

func TestOpenErrors(t *testing.T) {
	t.Parallel()
	kr := mustKeyring(t, testKey(1))
	other := mustKeyring(t, testKey(9))
	foreign, _ := other.Seal([]byte("x"), nil)
	good, _ := kr.Seal([]byte("x"), nil)
	badVersion := bytes.Clone(good)
	badVersion[0] = 2

	tests := []struct {
		name string
		ct   []byte
		want error
	}{
		{"nil", nil, vault.ErrMalformed},
		{"short", good[:vault.Overhead-1], vault.ErrMalformed},
		{"version", badVersion, vault.ErrMalformed},
		{"unknown key", foreign, vault.ErrUnknownKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := kr.Open(tt.ct, nil)
			if !errors.Is(err, tt.want) {
				t.Errorf("got error %v, want %v", err, tt.want)
			}
			if code := duet.ErrorCode(err); code != duet.CodeInternal {
				t.Errorf("got code %s, want %s", code, duet.CodeInternal)
			}
		})
	}
	t.Run("unknown key names the key id", func(t *testing.T) {
		t.Parallel()
		_, err := kr.Open(foreign, nil)
		if want := vault.KeyID(testKey(9)); !strings.Contains(err.Error(), want) {
			t.Errorf("got %q, want it to mention key id %s", err, want)
		}
	})
}

func TestRotation(t *testing.T) {
	t.Parallel()
	oldKey, newKey := testKey(1), testKey(2)
	aad := vault.AAD("alice", "mcp_x_12345678")
	oldRing := mustKeyring(t, oldKey)
	ct, err := oldRing.Seal([]byte("token"), aad)
	if err != nil {
		t.Fatal(err)
	}

	rotated := mustKeyring(t, newKey, oldKey)
	if got, err := rotated.Open(ct, aad); err != nil || string(got) != "token" {
		t.Fatalf("Open(old ciphertext) = %q, %v; want %q, nil", got, err, "token")
	}
	if !rotated.NeedsRewrap(ct) {
		t.Errorf("NeedsRewrap(old ciphertext) = false, want true")
	}
	re, err := rotated.Rewrap(ct, aad)
	if err != nil {
		t.Fatalf("Rewrap: %v", err)
	}
	if rotated.NeedsRewrap(re) {
		t.Errorf("NeedsRewrap(rewrapped) = true, want false")
	}
	// Once rewrapped, the old key is no longer needed.
	newOnly := mustKeyring(t, newKey)
	if got, err := newOnly.Open(re, aad); err != nil || string(got) != "token" {
		t.Errorf("Open(rewrapped) with new key only = %q, %v; want %q, nil", got, err, "token")
	}
	if _, err := newOnly.Open(ct, aad); !errors.Is(err, vault.ErrUnknownKey) {
		t.Errorf("Open(old ciphertext) with new key only: got %v, want ErrUnknownKey", err)
	}
	if _, err := rotated.Rewrap(ct, vault.AAD("bob", "mcp_x_12345678")); !errors.Is(err, vault.ErrAuthentication) {
		t.Errorf("Rewrap with wrong aad: got %v, want ErrAuthentication", err)
	}
}

func TestNeedsRewrapMalformed(t *testing.T) {
	t.Parallel()
	kr := mustKeyring(t, testKey(1))
	for _, ct := range [][]byte{nil, {1}, {2, 0, 0, 0, 0, 0, 0, 0, 0}} {
		if !kr.NeedsRewrap(ct) {
			t.Errorf("NeedsRewrap(%x) = false, want true", ct)
		}
	}
}

func TestNewKeyring(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		primary  []byte
		previous [][]byte
		wantErr  string // substring; "" means success
		wantIDs  int
	}{
		{"primary only", testKey(1), nil, "", 1},
		{"with previous", testKey(1), [][]byte{testKey(2), testKey(3)}, "", 3},
		{"duplicate previous ignored", testKey(1), [][]byte{testKey(1), testKey(2), testKey(2)}, "", 2},
		{"short primary", testKey(1)[:16], nil, "primary key: key is 16 bytes, want 32", 0},
		{"nil primary", nil, nil, "primary key: key is 0 bytes", 0},
		{"zero key", make([]byte, 32), nil, "all zero", 0},
		{"long previous", testKey(1), [][]byte{append(testKey(2), 0)}, "previous key 1: key is 33 bytes", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			kr, err := vault.NewKeyring(tt.primary, tt.previous...)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got error %v, want one containing %q", err, tt.wantErr)
				}
				if code := duet.ErrorCode(err); code != duet.CodeInvalidArgument {
					t.Errorf("got code %s, want %s", code, duet.CodeInvalidArgument)
				}
				return
			}
			if err != nil {
				t.Fatalf("NewKeyring: %v", err)
			}
			if got := len(kr.KeyIDs()); got != tt.wantIDs {
				t.Errorf("got %d keys, want %d", got, tt.wantIDs)
			}
			if got, want := kr.PrimaryID(), vault.KeyID(tt.primary); got != want {
				t.Errorf("PrimaryID() = %s, want %s", got, want)
			}
		})
	}
}

func TestKeyringPrintsNoKeyMaterial(t *testing.T) {
	t.Parallel()
	key := testKey(1)
	kr := mustKeyring(t, key)
	for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
		out := fmt.Sprintf(verb, kr)
		if !strings.Contains(out, kr.PrimaryID()) {
			t.Errorf("Sprintf(%s) = %q, want it to show the key id", verb, out)
		}
		for _, enc := range []string{vault.EncodeKey(key), fmt.Sprintf("%x", key), string(key)} {
			if strings.Contains(out, enc) {
				t.Errorf("Sprintf(%s) = %q, contains the key", verb, out)
			}
		}
	}
}

func TestKeyID(t *testing.T) {
	t.Parallel()
	id := vault.KeyID(testKey(1))
	if len(id) != 16 {
		t.Errorf("len(KeyID) = %d, want 16 hex digits", len(id))
	}
	if id == vault.KeyID(testKey(2)) {
		t.Errorf("KeyID of two keys are equal: %s", id)
	}
	if id != vault.KeyID(testKey(1)) {
		t.Errorf("KeyID is not stable")
	}
}

func FuzzOpen(f *testing.F) {
	key := testKey(1)
	kr, err := vault.NewKeyring(key, testKey(2))
	if err != nil {
		f.Fatal(err)
	}
	good, _ := kr.Seal([]byte("credential"), []byte("aad"))
	f.Add(good, []byte("aad"))
	f.Add([]byte{}, []byte{})
	f.Add([]byte{1}, []byte("aad"))
	f.Add(good[:vault.Overhead], []byte("aad"))
	f.Add(bytes.Repeat([]byte{1}, 64), []byte(nil))
	f.Fuzz(func(t *testing.T, ct, aad []byte) {
		pt, err := kr.Open(ct, aad)
		if err != nil {
			if pt != nil {
				t.Errorf("Open returned plaintext with error %v", err)
			}
			var de *duet.Error
			if !errors.As(err, &de) {
				t.Errorf("Open error %T is not a *duet.Error", err)
			}
			return
		}
		// Anything that opens must have been sealed by us; re-sealing it
		// must round-trip.
		re, err := kr.Rewrap(ct, aad)
		if err != nil {
			t.Fatalf("Rewrap of an openable ciphertext: %v", err)
		}
		if got, err := kr.Open(re, aad); err != nil || !bytes.Equal(got, pt) {
			t.Errorf("Open(Rewrap) = %q, %v; want %q, nil", got, err, pt)
		}
	})
}

// TestDeriveKey: a derived key depends on the primary key and the purpose
// only — the same on every instance with the same primary key, whatever the
// previous keys — and differs per purpose and per primary key.
func TestDeriveKey(t *testing.T) {
	t.Parallel()
	k1, _ := vault.GenerateKey()
	k2, _ := vault.GenerateKey()
	a, err := vault.NewKeyring(k1)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := vault.NewKeyring(k1, k2)
	c, _ := vault.NewKeyring(k2, k1)
	x := a.DeriveKey("mcp request state")
	if len(x) != 32 || !bytes.Equal(x, b.DeriveKey("mcp request state")) {
		t.Errorf("the same primary key derives different keys")
	}
	if bytes.Equal(x, c.DeriveKey("mcp request state")) || bytes.Equal(x, a.DeriveKey("other")) || bytes.Equal(x, k1) {
		t.Errorf("derived keys do not depend on the primary key and the purpose alone")
	}
}
