package vault_test

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/vault"
)

// env returns a getenv function backed by m.
func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func writeFile(t *testing.T, path, contents string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(contents), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestParseKey(t *testing.T) {
	t.Parallel()
	key := testKey(7)
	tests := []struct {
		name    string
		in      string
		wantErr string
	}{
		{"base64", base64.StdEncoding.EncodeToString(key), ""},
		{"base64 unpadded", base64.RawStdEncoding.EncodeToString(key), ""},
		{"base64 with whitespace", "  " + base64.StdEncoding.EncodeToString(key) + "\n", ""},
		{"hex", hex.EncodeToString(key), ""},
		{"hex upper", strings.ToUpper(hex.EncodeToString(key)), ""},
		{"empty", "", "key is empty"},
		{"blank", " \t", "key is empty"},
		{"short base64", base64.StdEncoding.EncodeToString(key[:16]), "decodes to 16 bytes"},
		{"short hex", hex.EncodeToString(key[:31]), "decodes to 31 bytes"},
		{"long base64", base64.StdEncoding.EncodeToString(append(key, 1)), "decodes to 33 bytes"},
		{"garbage", "not a key!", "neither valid base64 nor valid hex"},
		{"zero", hex.EncodeToString(make([]byte, 32)), "all zero"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := vault.ParseKey(tt.in)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("ParseKey: %v", err)
				}
				if diff := cmp.Diff(key, got); diff != "" {
					t.Errorf("ParseKey mismatch (-want +got):\n%s", diff)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("got error %v, want one containing %q", err, tt.wantErr)
			}
			if code := duet.ErrorCode(err); code != duet.CodeInvalidArgument {
				t.Errorf("got code %s, want %s", code, duet.CodeInvalidArgument)
			}
			if s := strings.TrimSpace(tt.in); s != "" && strings.Contains(err.Error(), s) {
				t.Errorf("error %q echoes the input", err)
			}
		})
	}
}

func TestEncodeKeyRoundTrip(t *testing.T) {
	t.Parallel()
	key, err := vault.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	if len(key) != vault.KeySize {
		t.Fatalf("len(GenerateKey()) = %d, want %d", len(key), vault.KeySize)
	}
	got, err := vault.ParseKey(vault.EncodeKey(key))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(key, got); diff != "" {
		t.Errorf("ParseKey(EncodeKey(k)) mismatch (-want +got):\n%s", diff)
	}
	other, _ := vault.GenerateKey()
	if cmp.Equal(key, other) {
		t.Errorf("two GenerateKey calls returned the same key")
	}
}

func TestLoadKeyringPrecedence(t *testing.T) {
	t.Parallel()
	envKey, fileKey, homeKey, prevKey := testKey(1), testKey(2), testKey(3), testKey(4)
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "custom.key")
	writeFile(t, keyFile, hex.EncodeToString(fileKey)+"\n")
	home := filepath.Join(dir, "home")
	if err := vault.WriteKeyFile(filepath.Join(home, vault.KeyFileName), homeKey); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name        string
		env         map[string]string
		home        string
		wantSource  vault.Source
		wantPath    string
		wantPrimary []byte
		wantPrev    [][]byte
	}{
		{
			name:        "env wins over file and home",
			env:         map[string]string{vault.EnvMasterKey: vault.EncodeKey(envKey), vault.EnvMasterKeyFile: keyFile},
			home:        home,
			wantSource:  vault.SourceEnv,
			wantPrimary: envKey,
		},
		{
			name:        "env hex",
			env:         map[string]string{vault.EnvMasterKey: hex.EncodeToString(envKey)},
			home:        home,
			wantSource:  vault.SourceEnv,
			wantPrimary: envKey,
		},
		{
			name:        "file wins over home",
			env:         map[string]string{vault.EnvMasterKeyFile: keyFile},
			home:        home,
			wantSource:  vault.SourceEnvFile,
			wantPath:    keyFile,
			wantPrimary: fileKey,
		},
		{
			name:        "home",
			env:         map[string]string{},
			home:        home,
			wantSource:  vault.SourceHome,
			wantPath:    filepath.Join(home, vault.KeyFileName),
			wantPrimary: homeKey,
		},
		{
			name: "previous keys from env",
			env: map[string]string{
				vault.EnvMasterKey:         vault.EncodeKey(envKey),
				vault.EnvMasterKeyPrevious: " " + vault.EncodeKey(prevKey) + ", ," + hex.EncodeToString(fileKey),
			},
			home:        home,
			wantSource:  vault.SourceEnv,
			wantPrimary: envKey,
			wantPrev:    [][]byte{prevKey, fileKey},
		},
		{
			name:        "previous keys with home file",
			env:         map[string]string{vault.EnvMasterKeyPrevious: vault.EncodeKey(prevKey)},
			home:        home,
			wantSource:  vault.SourceHome,
			wantPath:    filepath.Join(home, vault.KeyFileName),
			wantPrimary: homeKey,
			wantPrev:    [][]byte{prevKey},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			kr, info, err := vault.LoadKeyring(env(tt.env), tt.home)
			if err != nil {
				t.Fatalf("LoadKeyring: %v", err)
			}
			want := vault.LoadInfo{
				Source:      tt.wantSource,
				Path:        tt.wantPath,
				PrimaryID:   vault.KeyID(tt.wantPrimary),
				PreviousIDs: []string{},
			}
			for _, p := range tt.wantPrev {
				want.PreviousIDs = append(want.PreviousIDs, vault.KeyID(p))
			}
			if diff := cmp.Diff(want, info); diff != "" {
				t.Errorf("LoadInfo mismatch (-want +got):\n%s", diff)
			}
			if got := kr.PrimaryID(); got != want.PrimaryID {
				t.Errorf("PrimaryID() = %s, want %s", got, want.PrimaryID)
			}
			// A ciphertext from each previous key opens.
			for _, p := range tt.wantPrev {
				ct, _ := mustKeyring(t, p).Seal([]byte("x"), nil)
				if _, err := kr.Open(ct, nil); err != nil {
					t.Errorf("Open(ciphertext from previous key %s): %v", vault.KeyID(p), err)
				}
			}
		})
	}
}

func TestLoadKeyringGenerates(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "new", "duet")
	kr, info, err := vault.LoadKeyring(env(nil), home)
	if err != nil {
		t.Fatalf("LoadKeyring: %v", err)
	}
	path := filepath.Join(home, vault.KeyFileName)
	if !info.Generated || info.Path != path || info.Source != vault.SourceHome {
		t.Errorf("got LoadInfo %+v, want Generated with Path %s", info, path)
	}
	if len(info.Warnings) != 0 {
		t.Errorf("got warnings %q, want none", info.Warnings)
	}
	if runtime.GOOS != "windows" {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != 0o600 {
			t.Errorf("key file mode = %04o, want 0600", got)
		}
		di, err := os.Stat(home)
		if err != nil {
			t.Fatal(err)
		}
		if got := di.Mode().Perm(); got != 0o700 {
			t.Errorf("key directory mode = %04o, want 0700", got)
		}
	}
	entries, _ := os.ReadDir(home)
	if len(entries) != 1 {
		t.Errorf("home holds %d entries, want only %s (no temporary files left)", len(entries), vault.KeyFileName)
	}

	// The second load reads the same key and does not generate again.
	kr2, info2, err := vault.LoadKeyring(env(nil), home)
	if err != nil {
		t.Fatalf("second LoadKeyring: %v", err)
	}
	if info2.Generated {
		t.Errorf("second load: Generated = true, want false")
	}
	if kr2.PrimaryID() != kr.PrimaryID() {
		t.Errorf("second load: PrimaryID = %s, want %s", kr2.PrimaryID(), kr.PrimaryID())
	}
}

func TestLoadKeyringGeneratesOnceConcurrently(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	const n = 8
	var (
		wg        sync.WaitGroup
		ids       [n]string
		generated [n]bool
		errs      [n]error
	)
	for i := range n {
		wg.Go(func() {
			kr, info, err := vault.LoadKeyring(env(nil), home)
			if err != nil {
				errs[i] = err
				return
			}
			ids[i], generated[i] = kr.PrimaryID(), info.Generated
		})
	}
	wg.Wait()
	count := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("LoadKeyring %d: %v", i, errs[i])
		}
		if ids[i] != ids[0] {
			t.Errorf("LoadKeyring %d: PrimaryID = %s, want %s", i, ids[i], ids[0])
		}
		if generated[i] {
			count++
		}
	}
	if count != 1 {
		t.Errorf("got %d loads reporting Generated, want 1", count)
	}
}

func TestLoadKeyringErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	short := vault.EncodeKey(testKey(5)[:20])
	empty := filepath.Join(dir, "empty.key")
	writeFile(t, empty, "# only a comment\n\n")
	badLine := filepath.Join(dir, "bad.key")
	badSecret := "c2VjcmV0LXNlY3JldC1zZWNyZXQ="
	writeFile(t, badLine, vault.EncodeKey(testKey(1))+"\n"+badSecret+"\n")

	tests := []struct {
		name     string
		env      map[string]string
		home     string
		wantCode duet.Code
		wantMsg  string
		secret   string // must not appear in the error
	}{
		{
			name:     "env wrong length",
			env:      map[string]string{vault.EnvMasterKey: short},
			wantCode: duet.CodeInvalidArgument,
			wantMsg:  "DUET_MASTER_KEY: key decodes to 20 bytes; want 32 bytes",
			secret:   short,
		},
		{
			name:     "env not base64 or hex",
			env:      map[string]string{vault.EnvMasterKey: "hunter2-hunter2"},
			wantCode: duet.CodeInvalidArgument,
			wantMsg:  "DUET_MASTER_KEY: key is neither valid base64 nor valid hex",
			secret:   "hunter2",
		},
		{
			name:     "env hex with bad digit",
			env:      map[string]string{vault.EnvMasterKey: strings.Repeat("g", 64)},
			wantCode: duet.CodeInvalidArgument,
			wantMsg:  "DUET_MASTER_KEY:",
			secret:   "gggg",
		},
		{
			name:     "previous wrong length",
			env:      map[string]string{vault.EnvMasterKey: vault.EncodeKey(testKey(1)), vault.EnvMasterKeyPrevious: vault.EncodeKey(testKey(2)) + "," + short},
			wantCode: duet.CodeInvalidArgument,
			wantMsg:  "DUET_MASTER_KEY_PREVIOUS, entry 2: key decodes to 20 bytes",
			secret:   short,
		},
		{
			name:     "key file missing",
			env:      map[string]string{vault.EnvMasterKeyFile: filepath.Join(dir, "nope.key")},
			wantCode: duet.CodeInvalidArgument,
			wantMsg:  "DUET_MASTER_KEY_FILE: key file " + filepath.Join(dir, "nope.key") + " does not exist",
		},
		{
			name:     "key file empty",
			env:      map[string]string{vault.EnvMasterKeyFile: empty},
			wantCode: duet.CodeInvalidArgument,
			wantMsg:  "holds no key",
		},
		{
			name:     "key file bad line",
			env:      map[string]string{vault.EnvMasterKeyFile: badLine},
			wantCode: duet.CodeInvalidArgument,
			wantMsg:  "line 2: key decodes to 20 bytes",
			secret:   badSecret,
		},
		{
			name:     "no home",
			env:      map[string]string{},
			wantCode: duet.CodeInvalidArgument,
			wantMsg:  "no home directory",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			kr, _, err := vault.LoadKeyring(env(tt.env), tt.home)
			if err == nil {
				t.Fatalf("LoadKeyring = %v, nil; want error", kr)
			}
			if code := duet.ErrorCode(err); code != tt.wantCode {
				t.Errorf("got code %s, want %s", code, tt.wantCode)
			}
			if msg := duet.ErrorMessage(err); !strings.Contains(msg, tt.wantMsg) {
				t.Errorf("got message %q, want it to contain %q", msg, tt.wantMsg)
			}
			if tt.secret != "" && strings.Contains(err.Error(), tt.secret) {
				t.Errorf("error %q contains the key material", err)
			}
		})
	}
}

func TestLoadKeyringWarnsAboutMode(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("file modes are not POSIX on windows")
	}
	t.Parallel()
	path := filepath.Join(t.TempDir(), "open.key")
	writeFile(t, path, vault.EncodeKey(testKey(1)))
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	_, info, err := vault.LoadKeyring(env(map[string]string{vault.EnvMasterKeyFile: path}), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Warnings) != 1 || !strings.Contains(info.Warnings[0], "chmod 600") {
		t.Errorf("got warnings %q, want one suggesting chmod 600", info.Warnings)
	}
}

func TestKeyFileFormat(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "k")
	writeFile(t, path, "\n# comment\n  "+hex.EncodeToString(testKey(1))+"  \r\n\n"+vault.EncodeKey(testKey(2)))
	got, err := vault.ReadKeyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([][]byte{testKey(1), testKey(2)}, got); diff != "" {
		t.Errorf("ReadKeyFile mismatch (-want +got):\n%s", diff)
	}
}

func TestWriteAndRotateKeyFile(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "sub")
	path := filepath.Join(dir, vault.KeyFileName)
	if err := vault.WriteKeyFile(path, testKey(1), testKey(2)); err != nil {
		t.Fatalf("WriteKeyFile: %v", err)
	}
	if runtime.GOOS != "windows" {
		if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
			t.Errorf("key file mode = %04o, want 0600", fi.Mode().Perm())
		}
	}
	got, err := vault.ReadKeyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([][]byte{testKey(1), testKey(2)}, got); diff != "" {
		t.Errorf("ReadKeyFile after WriteKeyFile mismatch (-want +got):\n%s", diff)
	}

	aad := vault.AAD("alice", "mcp_x_00000000")
	before := mustKeyring(t, got[0], got[1:]...)
	ct, _ := before.Seal([]byte("token"), aad)

	newID, err := vault.RotateKeyFile(path)
	if err != nil {
		t.Fatalf("RotateKeyFile: %v", err)
	}
	kr, info, err := vault.LoadKeyring(env(map[string]string{vault.EnvMasterKeyFile: path}), "")
	if err != nil {
		t.Fatal(err)
	}
	wantIDs := []string{newID, vault.KeyID(testKey(1)), vault.KeyID(testKey(2))}
	if diff := cmp.Diff(wantIDs, kr.KeyIDs()); diff != "" {
		t.Errorf("key ids after rotation mismatch (-want +got):\n%s", diff)
	}
	if info.PrimaryID != newID {
		t.Errorf("PrimaryID = %s, want %s", info.PrimaryID, newID)
	}
	if !kr.NeedsRewrap(ct) {
		t.Errorf("NeedsRewrap(pre-rotation ciphertext) = false, want true")
	}
	re, err := kr.Rewrap(ct, aad)
	if err != nil {
		t.Fatalf("Rewrap: %v", err)
	}
	if kr.NeedsRewrap(re) {
		t.Errorf("NeedsRewrap(rewrapped) = true, want false")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want 1 (no temporary files left)", len(entries))
	}

	if err := vault.WriteKeyFile(path, testKey(1)[:8]); duet.ErrorCode(err) != duet.CodeInvalidArgument {
		t.Errorf("WriteKeyFile(short key): got %v, want %s", err, duet.CodeInvalidArgument)
	}
	if _, err := vault.RotateKeyFile(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("RotateKeyFile(missing): got %v, want a not-exist error", err)
	}
}
