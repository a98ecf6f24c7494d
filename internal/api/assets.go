package api

import (
	"context"
	"strings"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/compiler"
)

// AssetList is the asset center: the skills, rules and prompts the caller
// may read (own and shared), and the caller's MCP servers with their tools.
type AssetList struct {
	Assets     []*duet.Asset          `json:"assets"`
	MCPServers []*duet.MCPServerAsset `json:"mcpServers"`
}

// AssetListIn selects assets.
type AssetListIn struct {
	Kind duet.AssetKind `json:"kind,omitempty" jsonschema:"skill, rule or prompt; default all"`
}

// ListAssets lists the assets the caller may read, latest versions.
// Returns INVALID_ARGUMENT for an unknown kind.
func (s *Service) ListAssets(ctx context.Context, c duet.Caller, in AssetListIn) (AssetList, error) {
	return govern(ctx, s, c, "listAssets", in, func(ctx context.Context) (AssetList, error) {
		if in.Kind != "" && !in.Kind.Valid() {
			return AssetList{}, duet.Errorf(duet.CodeInvalidArgument, "asset kind %q: want skill, rule or prompt", in.Kind)
		}
		assets, err := s.d.Store.FindAssets(ctx, duet.AssetFilter{Viewer: c.UserID, Kind: in.Kind, Limit: 1000})
		if err != nil {
			return AssetList{}, err
		}
		out := AssetList{Assets: nonNil(assets), MCPServers: []*duet.MCPServerAsset{}}
		if lister, ok := s.d.MCP.(duet.MCPAssetLister); ok && in.Kind == "" {
			if out.MCPServers, err = lister.MCPAssets(ctx, c.UserID); err != nil {
				return AssetList{}, err
			}
		}
		return out, nil
	})
}

// AssetIn creates an asset or edits it as a new version.
type AssetIn struct {
	Kind        duet.AssetKind `json:"kind" jsonschema:"skill, rule or prompt"`
	Name        string         `json:"name" jsonschema:"lower-case letters, digits, '.', '_' and '-'"`
	Description string         `json:"description,omitempty" jsonschema:"one line"`
	Body        string         `json:"body" jsonschema:"the text (Markdown)"`
	// SharedWith replaces the sharing when present; absent keeps it.
	SharedWith *[]string `json:"sharedWith,omitempty" jsonschema:"user ids, team:NAME or * for everyone; absent keeps the current sharing, [] makes it private"`
}

// AssetSaved is what saving an asset did.
type AssetSaved struct {
	Asset  *duet.Asset      `json:"asset"`
	Action duet.ApplyAction `json:"action" jsonschema:"created, updated (a new version) or unchanged"`
}

// SaveAsset creates the caller's asset or, when its description or body
// changed, makes a new version of it. Returns INVALID_ARGUMENT, TOO_LARGE.
func (s *Service) SaveAsset(ctx context.Context, c duet.Caller, in AssetIn) (AssetSaved, error) {
	return govern(ctx, s, c, "saveAsset", in, func(ctx context.Context) (AssetSaved, error) {
		a := &duet.Asset{Kind: in.Kind, Name: strings.TrimSpace(in.Name), Owner: c.UserID, Description: strings.TrimSpace(in.Description), Body: in.Body}
		if in.SharedWith != nil {
			a.SharedWith = cleanList(*in.SharedWith)
		}
		if err := a.Validate(); err != nil {
			return AssetSaved{}, err
		}
		if a.Kind == duet.AssetFlow {
			// A flow is checked when it is saved, not first when a case uses it.
			if err := compiler.CheckFlow(ctx, a.Body, func(ctx context.Context, ref string, version int) (*duet.Asset, error) {
				return s.d.Store.FindAsset(ctx, c.UserID, duet.AssetFlow, ref, version)
			}); err != nil {
				return AssetSaved{}, err
			}
		}
		act, err := s.d.Store.SaveAsset(ctx, a)
		if err != nil {
			return AssetSaved{}, err
		}
		return AssetSaved{Asset: a, Action: act}, nil
	})
}

// assetKind refuses a kind of asset there is none of, as it refuses a
// name there is no asset of. Returns NOT_FOUND.
func assetKind(kind duet.AssetKind) error {
	if !kind.Valid() {
		return duet.Errorf(duet.CodeNotFound, "no asset kind %q", kind)
	}
	return nil
}

func cleanList(in []string) []string {
	out := []string{}
	for _, u := range in {
		if u = strings.TrimSpace(u); u != "" {
			out = append(out, u)
		}
	}
	return out
}

// GetAsset returns an asset the caller may read: ref is "name" or
// "owner/name"; version 0 is the latest. Returns NOT_FOUND.
func (s *Service) GetAsset(ctx context.Context, c duet.Caller, kind duet.AssetKind, ref string, version int) (*duet.Asset, error) {
	return govern(ctx, s, c, "getAsset", nil, func(ctx context.Context) (*duet.Asset, error) {
		if err := assetKind(kind); err != nil {
			return nil, err
		}
		return s.d.Store.FindAsset(ctx, c.UserID, kind, ref, version)
	})
}

// ShareIn of an asset replaces whom it is shared with.
type AssetShareIn struct {
	SharedWith []string `json:"sharedWith" jsonschema:"user ids, team:NAME or * for everyone; [] makes it private"`
}

// ShareAsset replaces the sharing of the caller's asset (its version stays).
// Returns NOT_FOUND, INVALID_ARGUMENT.
func (s *Service) ShareAsset(ctx context.Context, c duet.Caller, kind duet.AssetKind, name string, in AssetShareIn) (AssetSaved, error) {
	return govern(ctx, s, c, "shareAsset", in, func(ctx context.Context) (AssetSaved, error) {
		if err := assetKind(kind); err != nil {
			return AssetSaved{}, err
		}
		cur, err := s.d.Store.FindAsset(ctx, c.UserID, kind, c.UserID+"/"+name, 0)
		if err != nil {
			return AssetSaved{}, err
		}
		a := &duet.Asset{Kind: kind, Name: cur.Name, Owner: c.UserID, Description: cur.Description, Body: cur.Body, SharedWith: cleanList(in.SharedWith)}
		if err := a.Validate(); err != nil {
			return AssetSaved{}, err
		}
		act, err := s.d.Store.SaveAsset(ctx, a)
		if err != nil {
			return AssetSaved{}, err
		}
		return AssetSaved{Asset: a, Action: act}, nil
	})
}

// DeleteAsset removes the caller's asset and its versions. Returns
// NOT_FOUND.
func (s *Service) DeleteAsset(ctx context.Context, c duet.Caller, kind duet.AssetKind, name string) (Empty, error) {
	return govern(ctx, s, c, "deleteAsset", nil, func(ctx context.Context) (Empty, error) {
		if err := assetKind(kind); err != nil {
			return Empty{}, err
		}
		return Empty{}, s.d.Store.DeleteAsset(ctx, c.UserID, kind, name)
	})
}

// ---- tokens ----

// TokenList is the caller's personal access tokens (never their values).
type TokenList struct {
	Tokens []*duet.Token `json:"tokens"`
}

// ListTokens lists the caller's tokens.
func (s *Service) ListTokens(ctx context.Context, c duet.Caller) (TokenList, error) {
	return govern(ctx, s, c, "listTokens", nil, func(ctx context.Context) (TokenList, error) {
		t, err := s.d.Store.FindTokens(ctx, c.UserID)
		return TokenList{Tokens: nonNil(t)}, err
	})
}

// TokenIn creates a token.
type TokenIn struct {
	Name          string    `json:"name" jsonschema:"what the token is for (e.g. laptop, ci)"`
	ExpiresInDays int       `json:"expiresInDays,omitempty" jsonschema:"days until it expires; 0 never (or give expiresAt)"`
	ExpiresAt     time.Time `json:"expiresAt,omitzero" jsonschema:"when it expires (RFC 3339), instead of expiresInDays"`
}

// TokenCreated is a new token: Secret is shown this once and never again.
type TokenCreated struct {
	Token  *duet.Token `json:"token"`
	Secret string      `json:"secret" jsonschema:"the token itself: shown once, store it now"`
}

// maxTokenLife is the longest life a token may be given.
const maxTokenLife = 3650 * 24 * time.Hour

// CreateToken mints a personal access token for the caller. A caller that
// authenticated with a token (or a console session started with one)
// creates a child of that token: it must expire no later than its parent,
// and goes when the parent is revoked (duet.Token). Returns
// INVALID_ARGUMENT, PERMISSION_DENIED (an expiry beyond the parent's),
// UNAUTHENTICATED (the parent was revoked meanwhile).
func (s *Service) CreateToken(ctx context.Context, c duet.Caller, in TokenIn) (TokenCreated, error) {
	return govern(ctx, s, c, "createToken", in, func(ctx context.Context) (TokenCreated, error) {
		name := strings.TrimSpace(in.Name)
		if name == "" || len(name) > 100 || strings.ContainsAny(name, "\r\n") {
			return TokenCreated{}, duet.Errorf(duet.CodeInvalidArgument, "a token needs a name of 1 to 100 characters on one line")
		}
		if in.ExpiresInDays < 0 || in.ExpiresInDays > 3650 {
			return TokenCreated{}, duet.Errorf(duet.CodeInvalidArgument, "expiresInDays: from 0 (never) to 3650")
		}
		now := time.Now().UTC()
		var exp *time.Time
		switch {
		case !in.ExpiresAt.IsZero() && in.ExpiresInDays > 0:
			return TokenCreated{}, duet.Errorf(duet.CodeInvalidArgument, "give expiresInDays or expiresAt, not both")
		case !in.ExpiresAt.IsZero():
			e := in.ExpiresAt.UTC()
			if !e.After(now) || e.Sub(now) > maxTokenLife {
				return TokenCreated{}, duet.Errorf(duet.CodeInvalidArgument, "expiresAt: a time in the next 3650 days")
			}
			exp = &e
		case in.ExpiresInDays > 0:
			e := now.Add(time.Duration(in.ExpiresInDays) * 24 * time.Hour)
			exp = &e
		}
		plain, hash := s.d.Tokens()
		t := &duet.Token{UserID: c.UserID, Name: name, Hash: hash, ParentID: c.TokenID, ExpiresAt: exp}
		if err := s.d.Store.CreateToken(ctx, t); err != nil {
			return TokenCreated{}, err
		}
		return TokenCreated{Token: t, Secret: plain}, nil
	})
}

// RevokeToken deletes one of the caller's tokens and every token it
// created, transitively. Returns NOT_FOUND.
func (s *Service) RevokeToken(ctx context.Context, c duet.Caller, id string) (Empty, error) {
	return govern(ctx, s, c, "revokeToken", nil, func(ctx context.Context) (Empty, error) {
		return Empty{}, s.d.Store.DeleteToken(ctx, c.UserID, id)
	})
}
