package vault

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/duet-test/duet"
)

// Environment variables read by [LoadKeyring].
const (
	// EnvMasterKey holds the primary key, base64 (standard) or hex.
	EnvMasterKey = "DUET_MASTER_KEY"
	// EnvMasterKeyFile names a key file; used when EnvMasterKey is empty.
	EnvMasterKeyFile = "DUET_MASTER_KEY_FILE"
	// EnvMasterKeyPrevious holds comma-separated previous keys.
	EnvMasterKeyPrevious = "DUET_MASTER_KEY_PREVIOUS"
)

// KeyFileName is the name of the key file in the home directory.
const KeyFileName = "master.key"

// maxKeyFileSize bounds how much of a key file is read; real ones are a few
// hundred bytes.
const maxKeyFileSize = 64 << 10

// GenerateKey returns a new random [KeySize]-byte key. It returns a
// CodeInternal error if the system random source fails.
func GenerateKey() ([]byte, error) {
	key := make([]byte, KeySize)
	if _, err := rand.Read(key); err != nil {
		return nil, newError("vault.GenerateKey", duet.CodeInternal, err, "cannot read random bytes")
	}
	return key, nil
}

// EncodeKey returns key in standard base64, the encoding [WriteKeyFile]
// writes and DUET_MASTER_KEY accepts.
func EncodeKey(key []byte) string {
	return base64.StdEncoding.EncodeToString(key)
}

// ParseKey decodes a [KeySize]-byte key written as standard base64 (padded
// or not) or hex, ignoring surrounding whitespace. It returns a
// CodeInvalidArgument error whose message never contains s.
func ParseKey(s string) ([]byte, error) {
	key, err := parseKey(s)
	if err != nil {
		return nil, newError("vault.ParseKey", duet.CodeInvalidArgument, nil, "%v", err)
	}
	return key, nil
}

// parseKey is ParseKey with a plain error for callers to prefix with the
// key's source. Decoder errors are not wrapped because some of them quote
// the offending input.
func parseKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	const want = "want 32 bytes encoded as standard base64 (44 characters) or hex (64 characters)"
	if s == "" {
		return nil, errors.New("key is empty; " + want)
	}
	var key []byte
	if isHex(s) {
		// An even run of hex digits is never a well-formed 32-byte key in
		// base64 (44 characters ending in "=", or 43 unpadded), so treating
		// it as hex gives the clearer message when its length is wrong.
		key, _ = hex.DecodeString(s)
	} else {
		enc := base64.StdEncoding
		if !strings.HasSuffix(s, "=") {
			enc = base64.RawStdEncoding
		}
		k, err := enc.DecodeString(s)
		if err != nil {
			return nil, fmt.Errorf("key is neither valid base64 nor valid hex (%d characters); %s", len(s), want)
		}
		key = k
	}
	if len(key) != KeySize {
		return nil, fmt.Errorf("key decodes to %d bytes; %s", len(key), want)
	}
	if err := checkKey(key); err != nil {
		return nil, err
	}
	return key, nil
}

// isHex reports whether s is a non-empty, even-length run of hex digits.
func isHex(s string) bool {
	if s == "" || len(s)%2 != 0 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// Source says where [LoadKeyring] found the primary key.
type Source string

// Sources of the primary key.
const (
	SourceEnv     Source = "env"      // DUET_MASTER_KEY
	SourceEnvFile Source = "env-file" // the file named by DUET_MASTER_KEY_FILE
	SourceHome    Source = "home"     // <home>/master.key
)

// LoadInfo describes what [LoadKeyring] loaded. It holds no key material.
type LoadInfo struct {
	Source Source
	// Path is the key file that was read, or "" for SourceEnv.
	Path string
	// Generated is true when LoadKeyring created Path with a new key. The
	// caller should tell the user to back the file up: without it, stored
	// credentials cannot be decrypted.
	Generated bool
	// PrimaryID and PreviousIDs are the key ids (see KeyID).
	PrimaryID   string
	PreviousIDs []string
	// Warnings are problems worth logging that did not stop loading, such
	// as a key file readable by other users.
	Warnings []string
}

// LoadKeyring loads the master keys as described in the package
// documentation: the primary key from DUET_MASTER_KEY, else the file named by
// DUET_MASTER_KEY_FILE, else <home>/master.key, which is generated if it does
// not exist; then any previous keys from the key file and from
// DUET_MASTER_KEY_PREVIOUS. getenv is usually os.Getenv. It returns a
// CodeInvalidArgument error for malformed or missing key material and a
// CodeInternal error when a file cannot be read or written.
func LoadKeyring(getenv func(string) string, home string) (*Keyring, LoadInfo, error) {
	const op = "vault.LoadKeyring"
	var (
		info LoadInfo
		keys [][]byte
	)
	defer func() {
		for _, k := range keys {
			clear(k)
		}
	}()
	switch {
	case getenv(EnvMasterKey) != "":
		info.Source = SourceEnv
		key, err := parseKey(getenv(EnvMasterKey))
		if err != nil {
			return nil, LoadInfo{}, newError(op, duet.CodeInvalidArgument, nil, "%s: %v", EnvMasterKey, err)
		}
		keys = append(keys, key)
	case getenv(EnvMasterKeyFile) != "":
		info.Source = SourceEnvFile
		info.Path = getenv(EnvMasterKeyFile)
		ks, err := readKeyFile(op, info.Path, EnvMasterKeyFile)
		if err != nil {
			return nil, LoadInfo{}, err
		}
		keys = append(keys, ks...)
	default:
		if home == "" {
			return nil, LoadInfo{}, newError(op, duet.CodeInvalidArgument, nil,
				"no home directory to keep %s in; set %s or %s", KeyFileName, EnvMasterKey, EnvMasterKeyFile)
		}
		info.Source = SourceHome
		info.Path = filepath.Join(home, KeyFileName)
		generated, err := createKeyFile(op, info.Path)
		if err != nil {
			return nil, LoadInfo{}, err
		}
		info.Generated = generated
		ks, err := readKeyFile(op, info.Path, "")
		if err != nil {
			return nil, LoadInfo{}, err
		}
		keys = append(keys, ks...)
	}
	if info.Path != "" {
		if w := modeWarning(info.Path); w != "" {
			info.Warnings = append(info.Warnings, w)
		}
	}

	if prev := getenv(EnvMasterKeyPrevious); prev != "" {
		n := 0
		for field := range strings.SplitSeq(prev, ",") {
			if strings.TrimSpace(field) == "" {
				continue
			}
			n++
			key, err := parseKey(field)
			if err != nil {
				return nil, LoadInfo{}, newError(op, duet.CodeInvalidArgument, nil,
					"%s, entry %d: %v", EnvMasterKeyPrevious, n, err)
			}
			keys = append(keys, key)
		}
	}
	kr, err := NewKeyring(keys[0], keys[1:]...)
	if err != nil {
		return nil, LoadInfo{}, err
	}
	ids := kr.KeyIDs()
	info.PrimaryID, info.PreviousIDs = ids[0], ids[1:]
	return kr, info, nil
}

// modeWarning returns a warning if the key file at path can be read by
// users other than its owner.
func modeWarning(path string) string {
	if runtime.GOOS == "windows" {
		return ""
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm()&0o077 == 0 {
		return ""
	}
	return fmt.Sprintf("key file %s has mode %04o, so other users may read it; run chmod 600 on it",
		path, fi.Mode().Perm())
}

// ReadKeyFile returns the keys in the key file at path, primary first (see
// the package documentation for the format). It returns a
// CodeInvalidArgument error if the file does not exist or holds malformed or
// no keys, and a CodeInternal error if it cannot be read.
func ReadKeyFile(path string) ([][]byte, error) {
	return readKeyFile("vault.ReadKeyFile", path, "")
}

// readKeyFile implements ReadKeyFile; setting, if not empty, is the
// environment variable that named the file, for messages.
func readKeyFile(op, path, setting string) ([][]byte, error) {
	where := "key file " + path
	if setting != "" {
		where = setting + ": " + where
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, newError(op, duet.CodeInvalidArgument, err, "%s does not exist", where)
	}
	if err != nil {
		return nil, newError(op, duet.CodeInternal, err, "cannot open %s", where)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxKeyFileSize+1))
	if err != nil {
		return nil, newError(op, duet.CodeInternal, err, "cannot read %s", where)
	}
	defer clear(data)
	if len(data) > maxKeyFileSize {
		return nil, newError(op, duet.CodeInvalidArgument, nil, "%s is larger than %d bytes", where, maxKeyFileSize)
	}

	var keys [][]byte
	sc := bufio.NewScanner(bytes.NewReader(data))
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		key, err := parseKey(text)
		if err != nil {
			return nil, newError(op, duet.CodeInvalidArgument, nil, "%s, line %d: %v", where, line, err)
		}
		keys = append(keys, key)
	}
	if err := sc.Err(); err != nil {
		return nil, newError(op, duet.CodeInvalidArgument, nil, "%s: a line is too long", where)
	}
	if len(keys) == 0 {
		return nil, newError(op, duet.CodeInvalidArgument, nil, "%s holds no key", where)
	}
	return keys, nil
}

// keyFileHeader starts every file that WriteKeyFile writes.
const keyFileHeader = `# Duet master key file. Keep it secret and back it up: without it, stored
# credentials cannot be decrypted. One key per line (base64 or hex); the first
# is the primary key, the others are previous keys kept for decryption.
`

func keyFileContents(keys [][]byte) []byte {
	var b bytes.Buffer
	b.WriteString(keyFileHeader)
	for _, k := range keys {
		b.WriteString(EncodeKey(k))
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// WriteKeyFile atomically replaces the key file at path with primary
// followed by the previous keys: it writes a temporary file with mode 0600 in
// the same directory (created with mode 0700 if missing), syncs it and
// renames it over path. It returns a CodeInvalidArgument error for a bad key
// and a CodeInternal error if the file cannot be written.
func WriteKeyFile(path string, primary []byte, previous ...[]byte) error {
	const op = "vault.WriteKeyFile"
	keys := append([][]byte{primary}, previous...)
	for i, k := range keys {
		if err := checkKey(k); err != nil {
			return newError(op, duet.CodeInvalidArgument, nil, "key %d: %v", i+1, err)
		}
	}
	tmp, err := writeTemp(op, path, keys)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return newError(op, duet.CodeInternal, err, "cannot replace key file %s", path)
	}
	syncDir(filepath.Dir(path))
	return nil
}

// RotateKeyFile generates a new primary key and atomically rewrites the key
// file at path with the new key first and all the keys it held before as
// previous keys. It returns the new key's id. It is not safe to run
// concurrently with itself on the same file. It returns the errors of
// [ReadKeyFile] and [WriteKeyFile].
func RotateKeyFile(path string) (string, error) {
	old, err := ReadKeyFile(path)
	if err != nil {
		return "", err
	}
	key, err := GenerateKey()
	if err != nil {
		return "", err
	}
	defer func() {
		clear(key)
		for _, k := range old {
			clear(k)
		}
	}()
	if err := WriteKeyFile(path, key, old...); err != nil {
		return "", err
	}
	return KeyID(key), nil
}

// createKeyFile creates path holding a new random key unless it exists. It
// reports whether it created the file. Two processes starting at once both
// end up using the one file that won: the new file is written in full under
// a temporary name and then hard-linked into place, which fails if path
// exists.
func createKeyFile(op, path string) (bool, error) {
	if _, err := os.Lstat(path); err == nil {
		return false, nil
	}
	key, err := GenerateKey()
	if err != nil {
		return false, err
	}
	defer clear(key)
	tmp, err := writeTemp(op, path, [][]byte{key})
	if err != nil {
		return false, err
	}
	defer os.Remove(tmp)

	err = os.Link(tmp, path)
	if errors.Is(err, fs.ErrExist) {
		return false, nil
	}
	if err != nil {
		// Some file systems have no hard links; fall back to an exclusive
		// create, which is atomic about existence but not about content.
		f, ferr := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(ferr, fs.ErrExist) {
			return false, nil
		}
		if ferr != nil {
			return false, newError(op, duet.CodeInternal, ferr, "cannot create key file %s", path)
		}
		contents := keyFileContents([][]byte{key})
		defer clear(contents)
		_, werr := f.Write(contents)
		if serr := f.Sync(); werr == nil {
			werr = serr
		}
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			os.Remove(path)
			return false, newError(op, duet.CodeInternal, werr, "cannot write key file %s", path)
		}
	}
	syncDir(filepath.Dir(path))
	return true, nil
}

// writeTemp writes keys to a new 0600 temporary file next to path, creating
// the directory with mode 0700 if needed, and returns the temporary file's
// name.
func writeTemp(op, path string, keys [][]byte) (string, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", newError(op, duet.CodeInternal, err, "cannot create directory %s", dir)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return "", newError(op, duet.CodeInternal, err, "cannot create a temporary file in %s", dir)
	}
	contents := keyFileContents(keys)
	defer clear(contents)
	// CreateTemp already uses 0600; Chmod makes it explicit and independent
	// of that detail.
	err = f.Chmod(0o600)
	if err == nil {
		_, err = f.Write(contents)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", newError(op, duet.CodeInternal, err, "cannot write temporary key file in %s", dir)
	}
	return f.Name(), nil
}

// syncDir makes a rename or link in dir durable. It is best effort: not every
// platform can sync a directory, and the data itself is already synced.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}
