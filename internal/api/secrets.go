package api

import (
	"context"
	"net/http"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/catalog"
)

// SecretVault keeps the users' named secrets (${secrets.NAME}) sealed under
// the master key; *secret.Vault is one.
type SecretVault interface {
	Set(ctx context.Context, user, name, value string) (duet.ApplyAction, error)
	List(ctx context.Context, user string) ([]*duet.Secret, error)
	Delete(ctx context.Context, user, name string) error
}

// SecretIn sets one of the caller's secrets.
type SecretIn struct {
	Name  string `json:"name" jsonschema:"the secret's name: steps read it as ${secrets.NAME}"`
	Value string `json:"value" jsonschema:"its value: sealed under the master key, never shown again"`
}

// SecretSet is the outcome of setting a secret.
type SecretSet struct {
	Name   string           `json:"name"`
	Action duet.ApplyAction `json:"action" jsonschema:"created or updated"`
}

// SecretList are the caller's secrets: names and times, never values.
type SecretList struct {
	Secrets []*duet.Secret `json:"secrets"`
}

func (s *Service) secrets() (SecretVault, error) {
	if s.d.Secrets == nil {
		return nil, duet.Errorf(duet.CodeUnavailable, "this Duet keeps no secrets (no vault)")
	}
	return s.d.Secrets, nil
}

// SetSecret creates or replaces the caller's secret in.Name. Governed and
// audited with the name, never the value (it is measured, not encoded).
// Returns INVALID_ARGUMENT, UNAVAILABLE.
func (s *Service) SetSecret(ctx context.Context, c duet.Caller, in SecretIn) (SecretSet, error) {
	var out SecretSet
	err := s.d.Catalog.Govern(ctx, catalog.Op{Caller: c, Method: "setSecret", Name: in.Name, ArgBytes: len(in.Name) + len(in.Value)}, func(ctx context.Context) (int, error) {
		v, err := s.secrets()
		if err != nil {
			return 0, err
		}
		action, err := v.Set(ctx, c.UserID, in.Name, in.Value)
		if err != nil {
			return 0, err
		}
		out = SecretSet{Name: in.Name, Action: action}
		return len(in.Name) + len(action), nil
	})
	return out, err
}

// ListSecrets lists the caller's secrets (never their values).
func (s *Service) ListSecrets(ctx context.Context, c duet.Caller) (SecretList, error) {
	return govern(ctx, s, c, "listSecrets", nil, func(ctx context.Context) (SecretList, error) {
		v, err := s.secrets()
		if err != nil {
			return SecretList{}, err
		}
		list, err := v.List(ctx, c.UserID)
		if list == nil {
			list = []*duet.Secret{}
		}
		return SecretList{Secrets: list}, err
	})
}

// DeleteSecret removes the caller's secret name. Returns NOT_FOUND.
func (s *Service) DeleteSecret(ctx context.Context, c duet.Caller, name string) (Empty, error) {
	err := s.d.Catalog.Govern(ctx, catalogOp(c, "deleteSecret", name), func(ctx context.Context) (int, error) {
		v, err := s.secrets()
		if err != nil {
			return 0, err
		}
		return 0, v.Delete(ctx, c.UserID, name)
	})
	return Empty{}, err
}

// secretRoutes are the REST routes of the caller's secrets.
func secretRoutes() []*route {
	return []*route{
		op("GET", Prefix+"/secrets", "listSecrets", "secrets", "Your secrets (${secrets.NAME}): names and times, never values",
			func(ctx context.Context, s *Service, c duet.Caller, r *http.Request, _ Empty) (SecretList, error) {
				return s.ListSecrets(ctx, c)
			}),
		op("POST", Prefix+"/secrets", "setSecret", "secrets", "Create or replace one of your secrets: the steps of the runs you execute read it as ${secrets.NAME} (audited by name)",
			func(ctx context.Context, s *Service, c duet.Caller, r *http.Request, in SecretIn) (SecretSet, error) {
				return s.SetSecret(ctx, c, in)
			}),
		op("DELETE", Prefix+"/secrets/{name}", "deleteSecret", "secrets", "Delete one of your secrets",
			func(ctx context.Context, s *Service, c duet.Caller, r *http.Request, _ Empty) (Empty, error) {
				return s.DeleteSecret(ctx, c, r.PathValue("name"))
			}, path("name", "the secret's name")),
	}
}
