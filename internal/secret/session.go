package secret

import (
	"context"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/vault"
)

// Sessions keeps the browser sessions runs save (saveSession) for their
// later cases (session: NAME): sealed like secrets, under the same master
// key, bound to the run, its executor and the name, and expiring after
// duet.SavedSessionTTL. Only the run that saved a session opens it, and
// only for its executor.
type Sessions struct {
	store duet.SavedSessionStore
	vault *Vault
	now   func() time.Time
}

// NewSessions returns the keeper of saved sessions in store, sealed with
// v's master key.
func NewSessions(store duet.SavedSessionStore, v *Vault) *Sessions {
	return &Sessions{store: store, vault: v, now: time.Now}
}

// sessionAAD binds a saved session's ciphertext to its owner, run and name
// (and to being a session: a secret's or a credential's never equals it).
func sessionAAD(owner, runID, name string) []byte {
	return vault.AAD(owner, "session:"+runID+"/"+name)
}

// SaveSession seals state as owner's session name of run runID. Returns
// INVALID_ARGUMENT, UNAVAILABLE (no master key).
func (s *Sessions) SaveSession(ctx context.Context, runID, owner, name string, state []byte) error {
	if err := duet.ValidSessionName(name); err != nil {
		return err
	}
	kr, err := s.vault.keys.Keyring(false)
	if err != nil {
		return err
	}
	ct, err := kr.Seal(state, sessionAAD(owner, runID, name))
	if err != nil {
		return err
	}
	return s.store.SaveSavedSession(ctx, &duet.SavedSession{RunID: runID, Name: name, Owner: owner, Ciphertext: ct, ExpiresAt: s.now().Add(duet.SavedSessionTTL)})
}

// LoadSession opens owner's session name of run runID. Returns NOT_FOUND
// when the run has none of that name for owner (or it expired),
// UNAVAILABLE, INTERNAL (one that does not open).
func (s *Sessions) LoadSession(ctx context.Context, runID, owner, name string) ([]byte, error) {
	saved, err := s.store.FindSavedSession(ctx, runID, name)
	if err == nil && saved.Owner != owner {
		err = duet.Errorf(duet.CodeNotFound, "the run has no session named %s", name)
	}
	if err != nil {
		return nil, err
	}
	if _, err := s.vault.keys.Keyring(false); err != nil {
		return nil, err
	}
	pt, err := s.vault.keys.Open(saved.Ciphertext, sessionAAD(owner, runID, name))
	if err != nil {
		return nil, duet.WrapError(duet.CodeInternal, err, "the session %s cannot be decrypted: %s (run the case that saves it again)", name, duet.ErrorMessage(err))
	}
	return pt, nil
}
