package vault

import (
	"errors"
	"sync"

	"github.com/duet-test/duet"
)

// Loader is the keyring of a long-lived process: loaded when first used,
// and loaded again when asked to (a rotation) or when a ciphertext names a
// key it lacks (the master key was rotated since the process loaded it).
type Loader struct {
	load func() (*Keyring, error)
	// without says what cannot be done without a master key.
	without string

	mu sync.Mutex
	kr *Keyring
}

// NewLoader returns the loader of the keyring load loads (nil: no master
// key is configured); without completes the error that says so: "no master
// key is configured, so " + without.
func NewLoader(load func() (*Keyring, error), without string) *Loader {
	return &Loader{load: load, without: without}
}

// Keyring returns the keyring, loading it on first use or when reload.
// Returns UNAVAILABLE when no master key is configured or it cannot be
// loaded.
func (l *Loader) Keyring(reload bool) (*Keyring, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.kr != nil && !reload {
		return l.kr, nil
	}
	if l.load == nil {
		return nil, duet.Errorf(duet.CodeUnavailable, "no master key is configured, so %s", l.without)
	}
	kr, err := l.load()
	if err != nil {
		return nil, duet.WrapError(duet.CodeUnavailable, err, "cannot load the master key: %s", duet.ErrorMessage(err))
	}
	l.kr = kr
	return kr, nil
}

// Open opens ciphertext with the keyring; one sealed under a key the
// keyring lacks makes l load it again and open it with the new one, which
// it keeps. Returns UNAVAILABLE when the keyring cannot be loaded, else
// Keyring.Open's errors.
func (l *Loader) Open(ciphertext, aad []byte) ([]byte, error) {
	kr, err := l.Keyring(false)
	if err != nil {
		return nil, err
	}
	pt, err := kr.Open(ciphertext, aad)
	if errors.Is(err, ErrUnknownKey) {
		if kr, err = l.Keyring(true); err == nil {
			pt, err = kr.Open(ciphertext, aad)
		}
	}
	return pt, err
}
