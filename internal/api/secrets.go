package api

import (
	"context"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/catalog"
	"github.com/duet-test/duet/internal/secret"
)

// SecretIn is a vault secret to set: its value is written, never read
// back.
type SecretIn struct {
	Name  string `json:"name" jsonschema:"letters, digits and _ (not starting with a digit), at most 64: what ${secrets.NAME} names"`
	Value string `json:"value" jsonschema:"the value (write-only: no answer, page or record ever contains it)"`
}

// SecretView is a secret without its value.
type SecretView struct {
	User      string    `json:"user"`
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

func secretView(x *duet.Secret) SecretView {
	return SecretView{User: x.User, Name: x.Name, CreatedAt: x.CreatedAt, UpdatedAt: x.UpdatedAt}
}

// SecretSet is what setting a secret did.
type SecretSet struct {
	Name   string           `json:"name"`
	Action duet.ApplyAction `json:"action" jsonschema:"created, updated or unchanged"`
}

// SecretList is a user's secrets (names and times).
type SecretList struct {
	User    string       `json:"user"`
	Secrets []SecretView `json:"secrets"`
}

// secretsOwner is whose secrets c may list or remove: c's own, or, for an
// administrator, the user named. Returns PERMISSION_DENIED.
func (s *Service) secretsOwner(c duet.Caller, user string) (string, error) {
	if user == "" || user == c.UserID {
		return c.UserID, nil
	}
	if !s.Admin(c.UserID) {
		return "", duet.Errorf(duet.CodePermissionDenied, "only administrators (DUET_ADMINS) see or remove other people's secrets")
	}
	return user, duet.ValidUserID(user)
}

func (s *Service) vault() (*secret.Vault, error) {
	if s.d.Secrets == nil {
		return nil, duet.Errorf(duet.CodeUnavailable, "secrets are not available on this instance")
	}
	return s.d.Secrets, nil
}

// ownersVault is secretsOwner and the vault that holds that user's
// secrets. Returns PERMISSION_DENIED, UNAVAILABLE.
func (s *Service) ownersVault(c duet.Caller, user string) (string, *secret.Vault, error) {
	owner, err := s.secretsOwner(c, user)
	if err != nil {
		return "", nil, err
	}
	v, err := s.vault()
	return owner, v, err
}

// SetSecret creates or replaces one of the caller's own secrets (no one
// sets another's: its value would reach that person's runs). The value is
// sealed under the master key and never returned; the audit record keeps
// its size only. Returns INVALID_ARGUMENT, UNAVAILABLE, INSUFFICIENT_SCOPE.
func (s *Service) SetSecret(ctx context.Context, c duet.Caller, in SecretIn) (SecretSet, error) {
	return governSized(ctx, s, c, "setSecret", len(in.Name)+len(in.Value), func(ctx context.Context) (SecretSet, error) {
		if err := mayWrite(c, "secrets"); err != nil {
			return SecretSet{}, err
		}
		v, err := s.vault()
		if err != nil {
			return SecretSet{}, err
		}
		action, err := v.Set(ctx, c.UserID, in.Name, in.Value)
		if err != nil {
			return SecretSet{}, err
		}
		return SecretSet{Name: in.Name, Action: action}, nil
	})
}

// ListSecrets lists a user's secrets, names and times only: the caller's
// own, or anyone's for an administrator. Returns PERMISSION_DENIED.
func (s *Service) ListSecrets(ctx context.Context, c duet.Caller, user string) (SecretList, error) {
	return govern(ctx, s, c, "listSecrets", nil, func(ctx context.Context) (SecretList, error) {
		owner, v, err := s.ownersVault(c, user)
		if err != nil {
			return SecretList{}, err
		}
		list, err := v.List(ctx, owner)
		if err != nil {
			return SecretList{}, err
		}
		return SecretList{User: owner, Secrets: catalog.Views(list, secretView)}, nil
	})
}

// DeleteSecret removes a secret: the caller's own, or anyone's for an
// administrator. Returns NOT_FOUND, PERMISSION_DENIED.
func (s *Service) DeleteSecret(ctx context.Context, c duet.Caller, user, name string) (Empty, error) {
	return govern(ctx, s, c, "deleteSecret", nil, func(ctx context.Context) (Empty, error) {
		if err := mayWrite(c, "secrets"); err != nil {
			return Empty{}, err
		}
		owner, v, err := s.ownersVault(c, user)
		if err != nil {
			return Empty{}, err
		}
		return Empty{}, v.Delete(ctx, owner, name)
	})
}
