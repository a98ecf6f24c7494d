// Package secret keeps each user's named secrets (${secrets.NAME} in a
// suite): sealed under the master key with AES-256-GCM, bound to their
// owner and name, opened only for a run that user executes.
package secret

import (
	"context"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/vault"
)

// Vault seals, stores and opens users' secrets.
type Vault struct {
	store duet.SecretStore
	keys  *vault.Loader
}

// New returns the vault of the secrets in store, sealed under the keyring
// load loads (the master key of MCP credentials).
func New(store duet.SecretStore, load func() (*vault.Keyring, error)) *Vault {
	return &Vault{store: store, keys: vault.NewLoader(load, "secrets cannot be stored or read")}
}

// aad binds a ciphertext to its owner and name, and to being a secret (an
// MCP credential's associated data never equals it).
func aad(user, name string) []byte { return vault.AAD(user, "secret:"+name) }

// Set creates or replaces user's secret name with value. Returns
// INVALID_ARGUMENT (a bad name, an empty or too long value), UNAVAILABLE.
func (v *Vault) Set(ctx context.Context, user, name, value string) (duet.ApplyAction, error) {
	if err := duet.ValidSecretName(name); err != nil {
		return "", err
	}
	if value == "" {
		return "", duet.Errorf(duet.CodeInvalidArgument, "secret %s: the value is empty", name)
	}
	if len(value) > duet.MaxSecretBytes {
		return "", duet.Errorf(duet.CodeInvalidArgument, "secret %s: the value has %d bytes; at most %d", name, len(value), duet.MaxSecretBytes)
	}
	kr, err := v.keys.Keyring(false)
	if err != nil {
		return "", err
	}
	ct, err := kr.Seal([]byte(value), aad(user, name))
	if err != nil {
		return "", err
	}
	return v.store.SaveSecret(ctx, &duet.Secret{User: user, Name: name, Ciphertext: ct})
}

// List returns user's secrets (names and times, never values).
func (v *Vault) List(ctx context.Context, user string) ([]*duet.Secret, error) {
	return v.store.ListSecrets(ctx, user)
}

// Delete removes user's secret name. Returns NOT_FOUND.
func (v *Vault) Delete(ctx context.Context, user, name string) error {
	return v.store.DeleteSecret(ctx, user, name)
}

// ReadSecrets returns the values of user's secrets of the names given that
// exist (engine.SecretReader). A ciphertext sealed under a key this process
// has not loaded makes it load the keyring again (the master key was
// rotated since). Returns UNAVAILABLE, INTERNAL (a secret that does not
// open).
func (v *Vault) ReadSecrets(ctx context.Context, user string, names []string) (map[string]string, error) {
	found, err := v.store.FindSecrets(ctx, user, names)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(found))
	if len(found) == 0 {
		return out, nil
	}
	// Without a keyring nothing opens: UNAVAILABLE, not a secret's fault.
	if _, err := v.keys.Keyring(false); err != nil {
		return nil, err
	}
	for _, s := range found {
		pt, err := v.keys.Open(s.Ciphertext, aad(user, s.Name))
		if err != nil {
			return nil, duet.WrapError(duet.CodeInternal, err, "%s's secret %s cannot be decrypted: %s (set it again with `duet vault set %s`)",
				user, s.Name, duet.ErrorMessage(err), s.Name)
		}
		out[s.Name] = string(pt)
		clear(pt)
	}
	return out, nil
}

// Rewrap re-encrypts, in one transaction, every stored secret not sealed
// under the primary key of a freshly loaded keyring (after a rotation),
// and returns how many it replaced of how many there are. A secret that
// does not open changes nothing: INTERNAL naming it.
func (v *Vault) Rewrap(ctx context.Context) (replaced, total int, err error) {
	kr, err := v.keys.Keyring(true)
	if err != nil {
		return 0, 0, err
	}
	return v.store.RewrapSecrets(ctx, func(s *duet.Secret) ([]byte, error) {
		if !kr.NeedsRewrap(s.Ciphertext) {
			return nil, nil
		}
		ct, err := kr.Rewrap(s.Ciphertext, aad(s.User, s.Name))
		if err != nil {
			return nil, duet.WrapError(duet.CodeInternal, err, "secret %s of %s cannot be re-encrypted: %s; nothing was changed", s.Name, s.User, duet.ErrorMessage(err))
		}
		return ct, nil
	})
}
