package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/netguard"
	"github.com/duet-test/duet/internal/oauthclient"
	"github.com/duet-test/duet/internal/vault"
)

// secret is the plaintext a credential seals: header values and, for an
// OAuth registration, the client configuration and the tokens obtained.
type secret struct {
	Headers map[string]string   `json:"headers"`
	OAuth   *oauthclient.Secret `json:"oauth,omitempty"`
}

func (c *Client) seal(owner, serverKey string, sec *secret) ([]byte, error) {
	c.credGen.Add(1) // new values are being stored
	kr, err := c.keys.Keyring(false)
	if err != nil {
		return nil, err
	}
	pt, err := json.Marshal(sec)
	if err != nil {
		return nil, duet.WrapError(duet.CodeInternal, err, "cannot encode credentials")
	}
	defer clear(pt)
	return kr.Seal(pt, vault.AAD(owner, serverKey))
}

// secret returns the plaintext credential of a registration (an empty one
// when it has none). Returns UNAVAILABLE when the keyring cannot be loaded
// and INTERNAL when the ciphertext does not open.
func (c *Client) secret(ctx context.Context, s *duet.MCPServer) (*secret, error) {
	sec, _, err := c.loadSecret(ctx, s)
	return sec, err
}

// loadSecret returns the plaintext credential of a registration and the
// version of the stored credential it came from (0 when it has none).
func (c *Client) loadSecret(ctx context.Context, s *duet.MCPServer) (*secret, int64, error) {
	if s.CredentialRef == "" {
		return &secret{}, 0, nil
	}
	sec, cred, err := c.readSecret(ctx, s)
	if err != nil {
		return nil, 0, err
	}
	return sec, cred.Version, nil
}

// readSecret reads the stored credential of registration s (which has one)
// and opens it.
func (c *Client) readSecret(ctx context.Context, s *duet.MCPServer) (*secret, *duet.Credential, error) {
	cred, err := c.store.FindCredential(ctx, s.CredentialRef)
	if err != nil {
		return nil, nil, err
	}
	sec, err := c.open(s, cred)
	if err != nil {
		return nil, nil, err
	}
	return sec, cred, nil
}

// open decrypts the stored credential of registration s. A ciphertext sealed
// under a key this process has not loaded (the master key was rotated since
// it started) makes it load the keyring again.
func (c *Client) open(s *duet.MCPServer, cred *duet.Credential) (*secret, error) {
	// Without a keyring nothing opens: UNAVAILABLE, not the credential's
	// fault.
	if _, err := c.keys.Keyring(false); err != nil {
		return nil, err
	}
	aad := vault.AAD(s.Owner, s.ServerKey)
	pt, err := c.keys.Open(cred.Ciphertext, aad)
	if err != nil {
		return nil, duet.WrapError(duet.CodeInternal, err, "the credentials of MCP server %s cannot be decrypted: %s", s.Name, duet.ErrorMessage(err))
	}
	defer clear(pt)
	var sec secret
	if err := json.Unmarshal(pt, &sec); err != nil {
		return nil, duet.WrapError(duet.CodeInternal, errors.New("credential plaintext is not valid JSON"), "the credentials of MCP server %s are corrupt", s.Name)
	}
	return &sec, nil
}

// maxSwaps bounds the attempts of one compare-and-swap of a credential.
const maxSwaps = 8

// swapSecret changes the stored credential of registration s by a
// compare-and-swap: it reads the credential, lets change modify the
// plaintext (change reports whether it changed anything), seals it again
// (under the primary key, so that pruning an old key later loses nothing)
// and writes it only if nobody wrote since the read; otherwise it starts
// again from the newer credential. change must depend only on what it is
// given: it may run several times. It returns the credential as stored
// afterwards and its version. Returns NOT_FOUND when the credential is gone
// (the registration was replaced or removed), CONFLICT after maxSwaps lost
// races, UNAVAILABLE, INTERNAL.
func (c *Client) swapSecret(ctx context.Context, s *duet.MCPServer, change func(*secret) bool) (*secret, int64, error) {
	for attempt := 1; ; attempt++ {
		sec, cred, err := c.readSecret(ctx, s)
		if err != nil {
			return nil, 0, err
		}
		if !change(sec) {
			return sec, cred.Version, nil
		}
		ct, err := c.seal(s.Owner, s.ServerKey, sec)
		if err != nil {
			return nil, 0, err
		}
		next := &duet.Credential{Ref: s.CredentialRef, Owner: s.Owner, ServerKey: s.ServerKey, Ciphertext: ct, Version: cred.Version}
		err = c.store.UpdateCredentials(ctx, []*duet.Credential{next})
		if err == nil {
			return sec, next.Version, nil
		}
		if duet.ErrorCode(err) != duet.CodeConflict || attempt == maxSwaps {
			return nil, 0, err
		}
	}
}

// RewrapResult says what [Client.Rewrap] did.
type RewrapResult struct {
	Total     int    // credentials stored
	Rewrapped int    // re-encrypted under the primary key
	PrimaryID string // the primary key's id
}

// Rewrap re-encrypts, in one transaction, every stored credential that is not
// sealed under the keyring's primary key (after the master key was rotated).
// The keyring is loaded afresh. Returns UNAVAILABLE when it cannot be loaded
// and INTERNAL when a credential does not open with any known key (nothing is
// changed then).
func (c *Client) Rewrap(ctx context.Context) (RewrapResult, error) {
	kr, err := c.keys.Keyring(true)
	if err != nil {
		return RewrapResult{}, err
	}
	// A token renewed between the read and the write makes the write fail
	// (CONFLICT, nothing changed): read again.
	for attempt := 1; ; attempt++ {
		res, err := c.rewrap(ctx, kr)
		if duet.ErrorCode(err) != duet.CodeConflict || attempt == maxSwaps {
			return res, err
		}
	}
}

func (c *Client) rewrap(ctx context.Context, kr *vault.Keyring) (RewrapResult, error) {
	all, err := c.store.FindCredentials(ctx)
	if err != nil {
		return RewrapResult{}, err
	}
	res := RewrapResult{Total: len(all), PrimaryID: kr.PrimaryID()}
	var changed []*duet.Credential
	for _, cr := range all {
		if !kr.NeedsRewrap(cr.Ciphertext) {
			continue
		}
		ct, err := kr.Rewrap(cr.Ciphertext, vault.AAD(cr.Owner, cr.ServerKey))
		if err != nil {
			return RewrapResult{}, duet.WrapError(duet.CodeInternal, err, "credential %s (owner %s) cannot be re-encrypted: %s; nothing was changed",
				cr.Ref, cr.Owner, duet.ErrorMessage(err))
		}
		cr.Ciphertext = ct
		changed = append(changed, cr)
	}
	if err := c.store.UpdateCredentials(ctx, changed); err != nil {
		return RewrapResult{}, err
	}
	res.Rewrapped = len(changed)
	return res, nil
}

// checkDestination refuses a URL whose host is, or resolves to, an address
// the policy refuses — Duet's own addresses and public name included. A
// name that does not resolve is not refused here (the connection reports
// it); every connection is checked again when it is dialled.
func checkDestination(ctx context.Context, p netguard.Policy, raw string) error {
	if _, err := url.Parse(raw); err != nil {
		return duet.Errorf(duet.CodeInvalidArgument, "invalid URL")
	}
	return p.CheckURL(ctx, raw)
}
