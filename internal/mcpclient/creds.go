package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/netip"
	"net/url"
	"sync"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/netguard"
	"github.com/duet-test/duet/internal/vault"
)

// keyring loads the vault keyring once and again when a ciphertext names a
// key it lacks.
type keyring struct {
	load func() (*vault.Keyring, error)
	mu   sync.Mutex
	kr   *vault.Keyring
}

func (k *keyring) get(reload bool) (*vault.Keyring, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.kr != nil && !reload {
		return k.kr, nil
	}
	if k.load == nil {
		return nil, duet.Errorf(duet.CodeUnavailable, "no master key is configured, so credentials cannot be stored or used")
	}
	kr, err := k.load()
	if err != nil {
		return nil, duet.WrapError(duet.CodeUnavailable, err, "cannot load the master key: %s", duet.ErrorMessage(err))
	}
	k.kr = kr
	return kr, nil
}

// secret is the plaintext a credential seals: header values and, for an
// OAuth registration, the client configuration and the tokens obtained.
type secret struct {
	Headers map[string]string `json:"headers"`
	OAuth   *oauthSecret      `json:"oauth,omitempty"`
}

func (c *Client) seal(owner, serverKey string, sec *secret) ([]byte, error) {
	kr, err := c.keys.get(false)
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
	if s.CredentialRef == "" {
		return &secret{}, nil
	}
	cred, err := c.store.FindCredential(ctx, s.CredentialRef)
	if err != nil {
		return nil, err
	}
	kr, err := c.keys.get(false)
	if err != nil {
		return nil, err
	}
	aad := vault.AAD(s.Owner, s.ServerKey)
	pt, err := kr.Open(cred.Ciphertext, aad)
	if errors.Is(err, vault.ErrUnknownKey) {
		// Sealed under a key this process has not loaded yet: the master
		// key was rotated since it started.
		if kr, err = c.keys.get(true); err == nil {
			pt, err = kr.Open(cred.Ciphertext, aad)
		}
	}
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

// saveSecret seals sec again and stores it in the registration's existing
// credential (tokens obtained or refreshed). Returns NOT_FOUND when the
// credential is gone (the registration was replaced or removed).
func (c *Client) saveSecret(ctx context.Context, s *duet.MCPServer, sec *secret) error {
	kr, err := c.keys.get(false)
	if err != nil {
		return err
	}
	aad := vault.AAD(s.Owner, s.ServerKey)
	if cur, err := c.store.FindCredential(ctx, s.CredentialRef); err == nil && kr.NeedsRewrap(cur.Ciphertext) {
		// Sealed under a key this process has not loaded: the master key was
		// rotated since it started. Seal under the new primary key, so that
		// pruning the old one later loses nothing.
		if _, err := kr.Open(cur.Ciphertext, aad); errors.Is(err, vault.ErrUnknownKey) {
			if kr, err = c.keys.get(true); err != nil {
				return err
			}
		}
	}
	pt, err := json.Marshal(sec)
	if err != nil {
		return duet.WrapError(duet.CodeInternal, err, "cannot encode credentials")
	}
	defer clear(pt)
	ct, err := kr.Seal(pt, aad)
	if err != nil {
		return err
	}
	return c.store.UpdateCredentials(ctx, []*duet.Credential{{Ref: s.CredentialRef, Owner: s.Owner, ServerKey: s.ServerKey, Ciphertext: ct}})
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
	kr, err := c.keys.get(true)
	if err != nil {
		return RewrapResult{}, err
	}
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
// the policy refuses. A name that does not resolve is not refused here (the
// connection reports it).
func checkDestination(ctx context.Context, p netguard.Policy, raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return duet.Errorf(duet.CodeInvalidArgument, "invalid URL")
	}
	host := u.Hostname()
	if addr, err := netip.ParseAddr(host); err == nil {
		return p.CheckIP(addr)
	}
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil
	}
	for _, a := range addrs {
		if err := p.CheckIP(a); err != nil {
			return err
		}
	}
	return nil
}
