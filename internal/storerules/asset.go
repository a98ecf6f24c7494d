package storerules

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/duet-test/duet"
)

// AssetTx is what SaveAsset asks of one engine's transaction.
type AssetTx interface {
	// AssetByName reads owner's current asset of kind named name, without
	// its shares; nil if there is none.
	AssetByName(ctx context.Context, owner string, kind duet.AssetKind, name string) (*duet.Asset, error)
	// AssetShares reads the asset's shares into it.
	AssetShares(ctx context.Context, a *duet.Asset) error
	// InsertAsset writes a new asset at version 1; InsertVersion writes
	// a.Version of it and makes it the current version.
	InsertAsset(ctx context.Context, a *duet.Asset, now time.Time) error
	InsertVersion(ctx context.Context, a *duet.Asset, now time.Time) error
	// SetAssetShares replaces the asset's share list with users.
	SetAssetShares(ctx context.Context, id string, users []string, now time.Time) error
	// AssetByID reads the asset's current version, without its shares;
	// nil if there is none.
	AssetByID(ctx context.Context, id string) (*duet.Asset, error)
}

// CheckAsset refuses an asset no engine may store.
func CheckAsset(a *duet.Asset) error {
	if a.Owner == "" {
		return duet.Errorf(duet.CodeInvalidArgument, "an asset needs an owner")
	}
	return a.Validate()
}

// SaveAsset creates the asset a, checked by CheckAsset, or a new version of
// it through tx, as of now; a changes into what is stored. Its share list
// is replaced when a.SharedWith is not nil. The action says what changed.
func SaveAsset(ctx context.Context, tx AssetTx, a *duet.Asset, now time.Time) (duet.ApplyAction, error) {
	var shares []string
	if a.SharedWith != nil {
		shares = SortedUnique(a.SharedWith, a.Owner)
	}
	old, err := tx.AssetByName(ctx, a.Owner, a.Kind, a.Name)
	if err != nil {
		return "", err
	}
	action := duet.ApplyUnchanged
	switch {
	case old == nil:
		action = duet.ApplyCreated
		a.ID, a.Version = duet.NewID("asset"), 1
		if err := tx.InsertAsset(ctx, a, now); err != nil {
			return "", err
		}
		if shares == nil {
			shares = []string{}
		}
	default:
		a.ID, a.Version = old.ID, old.Version
		if old.Description != a.Description || old.Body != a.Body {
			action = duet.ApplyUpdated
			a.Version++
			if err := tx.InsertVersion(ctx, a, now); err != nil {
				return "", err
			}
		}
	}
	if shares != nil && old != nil {
		if err := tx.AssetShares(ctx, old); err != nil {
			return "", err
		}
	}
	if shares != nil && (old == nil || !slices.Equal(old.SharedWith, shares)) {
		if action == duet.ApplyUnchanged {
			action = duet.ApplyUpdated
		}
		if err := tx.SetAssetShares(ctx, a.ID, shares, now); err != nil {
			return "", err
		}
	}
	saved, err := tx.AssetByID(ctx, a.ID)
	if err == nil && saved == nil {
		err = NotFound("asset", a.ID)
	}
	if err == nil {
		err = tx.AssetShares(ctx, saved)
	}
	if err != nil {
		return "", err
	}
	*a = *saved
	return action, nil
}

// PickAsset is the asset of kind that ref (name, or owner/name) names for
// viewer among found, the current versions it may see, viewer's own first:
// NOT_FOUND when none, INVALID_ARGUMENT when a bare name is shared with
// viewer by several owners and viewer has none of that name.
func PickAsset(found []*duet.Asset, viewer string, kind duet.AssetKind, ref, name string, version int) (*duet.Asset, error) {
	what := string(kind) + " " + ref
	if version > 0 {
		what += "@" + strconv.Itoa(version)
	}
	switch {
	case len(found) == 0:
		return nil, duet.Errorf(duet.CodeNotFound, "%s not found", what)
	case len(found) > 1 && found[0].Owner != viewer:
		var refs []string
		for _, a := range found {
			refs = append(refs, a.Ref())
		}
		return nil, duet.Errorf(duet.CodeInvalidArgument, "several %ss named %q are shared with you (%s); write owner/name", kind, name, strings.Join(refs, ", "))
	}
	return found[0], nil
}

// AssetCandidates lists, on one engine, the current versions (at version
// when it is over 0) of the assets of kind named name that viewer may see
// — owner's only, when owner is not "" — viewer's own first, then by
// owner, at most 3.
type AssetCandidates func(ctx context.Context, viewer string, kind duet.AssetKind, owner, name string, version int) ([]*duet.Asset, error)

// FindAsset is the asset of kind that ref (name, or owner/name) names for
// viewer, at version (0: the latest), among what candidates lists
// (PickAsset), with its shares read by shares. Returns NOT_FOUND,
// INVALID_ARGUMENT.
func FindAsset(ctx context.Context, viewer string, kind duet.AssetKind, ref string, version int,
	candidates AssetCandidates, shares func(context.Context, ...*duet.Asset) error) (*duet.Asset, error) {
	if viewer == "" {
		return nil, duet.Errorf(duet.CodeInvalidArgument, "no viewer")
	}
	owner, name, qualified := strings.Cut(ref, "/")
	if !qualified {
		owner, name = "", ref
	}
	var found []*duet.Asset
	if !qualified || owner != "" { // "/name" names no owner: none found
		var err error
		if found, err = candidates(ctx, viewer, kind, owner, name, version); err != nil {
			return nil, err
		}
	}
	a, err := PickAsset(found, viewer, kind, ref, name, version)
	if err != nil {
		return nil, err
	}
	if err := shares(ctx, a); err != nil {
		return nil, err
	}
	return a, nil
}

// AssetList lists, on one engine, the latest versions of the assets f
// selects (f.Viewer is set).
type AssetList func(ctx context.Context, f duet.AssetFilter) ([]*duet.Asset, error)

// FindAssets lists the latest versions of the assets f selects, with
// their shares read by shares. Returns INVALID_ARGUMENT without a viewer.
func FindAssets(ctx context.Context, f duet.AssetFilter, list AssetList, shares func(context.Context, ...*duet.Asset) error) ([]*duet.Asset, error) {
	if f.Viewer == "" {
		return nil, duet.Errorf(duet.CodeInvalidArgument, "no viewer")
	}
	out, err := list(ctx, f)
	if err != nil {
		return nil, err
	}
	if err := shares(ctx, out...); err != nil {
		return nil, err
	}
	return out, nil
}
