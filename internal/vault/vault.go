// Package vault encrypts credentials at rest with AES-256-GCM.
//
// A [Keyring] holds one primary key, used by [Keyring.Seal], and any number
// of previous keys that [Keyring.Open] still accepts, so that the master key
// can be rotated without losing access to stored credentials.
//
// # Ciphertext format
//
// A sealed value is self-describing and versioned:
//
//	version (1 byte, 0x01) | key id (8 bytes) | nonce (12 bytes) | ciphertext | GCM tag (16 bytes)
//
// The key id is the first 8 bytes of the SHA-256 of the key; [KeyID] returns
// it in hex. The nonce is random for every Seal. The version byte and the key
// id are authenticated together with the caller's associated data, so none of
// the 1+8+12+16 = 37 bytes of overhead can be changed without Open failing.
//
// # Associated data
//
// Every credential is sealed with associated data from [AAD], which binds the
// ciphertext to its owner and serverKey: a ciphertext copied to another row
// (another owner, another server) does not open.
//
// # Master keys
//
// [LoadKeyring] reads the primary key from, in order of precedence,
//
//  1. DUET_MASTER_KEY: 32 bytes encoded as standard base64 or hex;
//  2. DUET_MASTER_KEY_FILE: the path of a key file;
//  3. <home>/master.key, which is generated on first use (mode 0600, in a
//     directory created with mode 0700).
//
// DUET_MASTER_KEY_PREVIOUS (comma-separated, same encoding) adds previous keys
// whichever source holds the primary key.
//
// # Key file format
//
// A key file is UTF-8 text with one key per line, each 32 bytes encoded as
// standard base64 (as [EncodeKey] writes it) or hex. The first key is the
// primary key; the following lines are previous keys, newest first. Blank
// lines and lines starting with '#' are ignored and surrounding whitespace is
// trimmed, so a file holding a single key, with or without a trailing newline,
// is valid. [WriteKeyFile] writes one atomically; [ReadKeyFile] reads one.
//
// # Rotation
//
//  1. Make a new primary key: [RotateKeyFile] for a key file (the old keys
//     stay in the file as previous keys), or set a new DUET_MASTER_KEY and move
//     the old one to DUET_MASTER_KEY_PREVIOUS.
//  2. Reload the keyring and [Keyring.Rewrap] every ciphertext for which
//     [Keyring.NeedsRewrap] reports true (this is what `duet vault rotate`
//     does).
//  3. Only then remove the previous keys.
//
// Errors are *duet.Error values. Their messages never contain key material or
// plaintext.
package vault

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/duet-test/duet"
)

// KeySize is the size in bytes of an AES-256 key.
const KeySize = 32

// Overhead is the number of bytes [Keyring.Seal] adds to a plaintext.
const Overhead = headerSize + nonceSize + tagSize

const (
	version1   byte = 0x01
	idSize          = 8
	headerSize      = 1 + idSize
	nonceSize       = 12
	tagSize         = 16
)

// Sentinel errors wrapped by the *duet.Error values that [Keyring.Open] and
// [Keyring.Rewrap] return; test for them with errors.Is.
var (
	// ErrMalformed means the input is not a vault ciphertext (too short or an
	// unknown version).
	ErrMalformed = errors.New("vault: malformed ciphertext")
	// ErrUnknownKey means the ciphertext was sealed with a key that is not in
	// the keyring.
	ErrUnknownKey = errors.New("vault: ciphertext sealed with an unknown key")
	// ErrAuthentication means the ciphertext was altered or the associated
	// data differs from the one it was sealed with.
	ErrAuthentication = errors.New("vault: message authentication failed")
)

// A Keyring seals with its primary key and opens with any of its keys. It
// holds no raw key bytes, only the expanded AES ciphers, and is safe for
// concurrent use.
type Keyring struct {
	entries []entry // entries[0] is the primary key
	// derive is HMAC-SHA256(primary key, derivationLabel): the root of
	// DeriveKey, not the key itself.
	derive [sha256.Size]byte
}

const derivationLabel = "duet keyring derivation v1"

// DeriveKey returns a 32-byte key for purpose (a fixed label, such as "mcp
// request state") derived from the primary key with HMAC-SHA256, for a use
// other than sealing credentials: every instance that has the same primary
// key derives the same key, and no derived key reveals the primary key or
// another purpose's key.
func (k *Keyring) DeriveKey(purpose string) []byte {
	m := hmac.New(sha256.New, k.derive[:])
	m.Write([]byte(purpose))
	return m.Sum(nil)
}

type entry struct {
	id   [idSize]byte
	aead cipher.AEAD
}

// NewKeyring returns a keyring with the given primary key and previous keys
// (newest first). Every key must be [KeySize] bytes and not all zero;
// otherwise NewKeyring returns a CodeInvalidArgument error. A previous key
// equal to an earlier one is ignored.
func NewKeyring(primary []byte, previous ...[]byte) (*Keyring, error) {
	const op = "vault.NewKeyring"
	k := &Keyring{entries: make([]entry, 0, 1+len(previous))}
	if err := k.add(op, "primary key", primary); err != nil {
		return nil, err
	}
	m := hmac.New(sha256.New, primary)
	m.Write([]byte(derivationLabel))
	copy(k.derive[:], m.Sum(nil))
	for i, key := range previous {
		if err := k.add(op, fmt.Sprintf("previous key %d", i+1), key); err != nil {
			return nil, err
		}
	}
	return k, nil
}

func (k *Keyring) add(op, name string, key []byte) error {
	if err := checkKey(key); err != nil {
		return newError(op, duet.CodeInvalidArgument, nil, "%s: %v", name, err)
	}
	id := keyID(key)
	for _, e := range k.entries {
		// Equal ids mean equal keys: a collision of 64 bits of SHA-256
		// between two random keys is not a practical concern.
		if e.id == id {
			return nil
		}
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return newError(op, duet.CodeInternal, err, "cannot create AES cipher")
	}
	aead, err := cipher.NewGCMWithRandomNonce(block)
	if err != nil {
		return newError(op, duet.CodeInternal, err, "cannot create AES-GCM cipher")
	}
	k.entries = append(k.entries, entry{id: id, aead: aead})
	return nil
}

// checkKey reports why key is not a usable AES-256 key. The error never
// contains key bytes.
func checkKey(key []byte) error {
	if len(key) != KeySize {
		return fmt.Errorf("key is %d bytes, want %d", len(key), KeySize)
	}
	if bytes.Count(key, []byte{0}) == KeySize {
		return errors.New("key is all zero bytes; generate a random key")
	}
	return nil
}

// KeyID returns the id of key: the first 8 bytes of its SHA-256, in hex. The
// id identifies a key in ciphertexts and messages without revealing it.
func KeyID(key []byte) string {
	id := keyID(key)
	return hex.EncodeToString(id[:])
}

func keyID(key []byte) [idSize]byte {
	sum := sha256.Sum256(key)
	return [idSize]byte(sum[:idSize])
}

// PrimaryID returns the id of the primary key (see [KeyID]).
func (k *Keyring) PrimaryID() string {
	return hex.EncodeToString(k.entries[0].id[:])
}

// KeyIDs returns the ids of all keys, primary first.
func (k *Keyring) KeyIDs() []string {
	ids := make([]string, len(k.entries))
	for i, e := range k.entries {
		ids[i] = hex.EncodeToString(e.id[:])
	}
	return ids
}

// String describes the keyring by key ids only, so that printing or logging
// a keyring never shows key material.
func (k *Keyring) String() string {
	if k == nil || len(k.entries) == 0 {
		return "vault.Keyring{}"
	}
	return "vault.Keyring{primary: " + k.PrimaryID() + ", keys: " + strings.Join(k.KeyIDs(), ",") + "}"
}

// GoString is like String, for the %#v verb.
func (k *Keyring) GoString() string { return k.String() }

// Seal encrypts plaintext under the primary key with a random nonce and binds
// it to aad (usually from [AAD]). The result is in the format described in the
// package documentation and is len(plaintext)+[Overhead] bytes long. Seal
// returns a CodeInternal error only for a nil or empty keyring.
func (k *Keyring) Seal(plaintext, aad []byte) ([]byte, error) {
	const op = "vault.Keyring.Seal"
	if k == nil || len(k.entries) == 0 {
		return nil, newError(op, duet.CodeInternal, nil, "keyring is empty")
	}
	e := k.entries[0]
	out := make([]byte, headerSize, len(plaintext)+Overhead)
	out[0] = version1
	copy(out[1:], e.id[:])
	// NewGCMWithRandomNonce prepends a fresh random 12-byte nonce.
	return e.aead.Seal(out, nil, plaintext, additionalData(out[:headerSize], aad)), nil
}

// Open authenticates and decrypts a ciphertext made by [Keyring.Seal] with
// the same aad, using whichever key of the keyring sealed it. It returns a
// CodeInternal error that wraps [ErrMalformed], [ErrUnknownKey] or
// [ErrAuthentication] (a wrong aad is an authentication failure), and never
// any plaintext with an error.
func (k *Keyring) Open(ciphertext, aad []byte) ([]byte, error) {
	const op = "vault.Keyring.Open"
	e, err := k.lookup(op, ciphertext)
	if err != nil {
		return nil, err
	}
	pt, err := e.aead.Open(nil, nil, ciphertext[headerSize:], additionalData(ciphertext[:headerSize], aad))
	if err != nil {
		return nil, newError(op, duet.CodeInternal, ErrAuthentication,
			"ciphertext failed authentication: it was altered, or sealed for another owner or server")
	}
	return pt, nil
}

// lookup parses the header of ciphertext and returns the key that sealed it.
func (k *Keyring) lookup(op string, ciphertext []byte) (entry, error) {
	if k == nil || len(k.entries) == 0 {
		return entry{}, newError(op, duet.CodeInternal, nil, "keyring is empty")
	}
	if len(ciphertext) < Overhead {
		return entry{}, newError(op, duet.CodeInternal, ErrMalformed,
			"ciphertext is %d bytes, shorter than the minimum %d", len(ciphertext), Overhead)
	}
	if ciphertext[0] != version1 {
		return entry{}, newError(op, duet.CodeInternal, ErrMalformed,
			"unsupported ciphertext version %d", ciphertext[0])
	}
	id := [idSize]byte(ciphertext[1:headerSize])
	for _, e := range k.entries {
		if e.id == id {
			return e, nil
		}
	}
	return entry{}, newError(op, duet.CodeInternal, ErrUnknownKey,
		"ciphertext was sealed with key %x, which is not in the keyring; add it as a previous key (%s or the key file)",
		id[:], EnvMasterKeyPrevious)
}

// NeedsRewrap reports whether ciphertext should be passed to
// [Keyring.Rewrap]: it is false only for a current-version ciphertext sealed
// with the primary key. NeedsRewrap does not authenticate; a malformed input
// reports true, and Rewrap then returns the error.
func (k *Keyring) NeedsRewrap(ciphertext []byte) bool {
	if k == nil || len(k.entries) == 0 || len(ciphertext) < headerSize || ciphertext[0] != version1 {
		return true
	}
	return [idSize]byte(ciphertext[1:headerSize]) != k.entries[0].id
}

// Rewrap opens ciphertext with aad and seals the plaintext again under the
// primary key with a fresh nonce and the same aad. It returns the errors of
// [Keyring.Open].
func (k *Keyring) Rewrap(ciphertext, aad []byte) ([]byte, error) {
	pt, err := k.Open(ciphertext, aad)
	if err != nil {
		var e *duet.Error
		if errors.As(err, &e) {
			e.Op = "vault.Keyring.Rewrap"
		}
		return nil, err
	}
	defer clear(pt)
	return k.Seal(pt, aad)
}

// aadLabel separates credential associated data from any other use of the
// keyring.
const aadLabel = "duet.vault.credential.v1"

// AAD returns the associated data that binds a credential ciphertext to its
// owner and serverKey. The encoding is a fixed label followed by each field
// prefixed with its length (uvarint), so that distinct (owner, serverKey)
// pairs always give distinct results.
func AAD(owner, serverKey string) []byte {
	b := make([]byte, 0, len(aadLabel)+2*binary.MaxVarintLen64+len(owner)+len(serverKey))
	b = append(b, aadLabel...)
	b = binary.AppendUvarint(b, uint64(len(owner)))
	b = append(b, owner...)
	b = binary.AppendUvarint(b, uint64(len(serverKey)))
	b = append(b, serverKey...)
	return b
}

// additionalData is what GCM authenticates: the fixed-size header, then the
// caller's aad.
func additionalData(header, aad []byte) []byte {
	ad := make([]byte, 0, len(header)+len(aad))
	ad = append(ad, header...)
	return append(ad, aad...)
}

func newError(op string, code duet.Code, err error, format string, args ...any) *duet.Error {
	e := duet.Errorf(code, format, args...)
	e.Op = op
	e.Err = err
	return e
}
