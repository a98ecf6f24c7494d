package storerules

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
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

// AssetColumns are the columns of assets a and asset_versions v that
// ScanAsset reads.
const AssetColumns = `a.id, a.kind, a.name, a.owner, v.version, v.description, v.body, a.created_at, v.created_at`

// ScanAsset reads an asset of AssetColumns, without its shares.
func ScanAsset(r Row) (*duet.Asset, error) {
	var a duet.Asset
	return scanned(&a, r.Scan(&a.ID, &a.Kind, &a.Name, &a.Owner, &a.Version, &a.Description, &a.Body, TimeOf(&a.CreatedAt), TimeOf(&a.UpdatedAt)))
}

// AssetRows is the part of AssetTx that is the same on every engine, on an
// Engine whose statements run in the transaction; a driver adds
// SetAssetShares.
type AssetRows struct{ E Engine }

// AssetShares reads the asset's shares into it.
func (t AssetRows) AssetShares(ctx context.Context, a *duet.Asset) error {
	return LoadAssetShares(ctx, t.E, a)
}

// read reads the current version of the asset cond selects, without its
// shares; nil if there is none.
func (t AssetRows) read(ctx context.Context, cond string, args ...any) (*duet.Asset, error) {
	a, err := One(ctx, t.E, ScanAsset, `SELECT `+AssetColumns+` FROM assets a JOIN asset_versions v ON v.asset_id = a.id AND v.version = a.version WHERE `+cond, args...)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return a, err
}

// AssetByName reads owner's current asset of kind named name, without its
// shares; nil if there is none.
func (t AssetRows) AssetByName(ctx context.Context, owner string, kind duet.AssetKind, name string) (*duet.Asset, error) {
	return t.read(ctx, `a.owner = $1 AND a.kind = $2 AND a.name = $3`, owner, kind, name)
}

// AssetByID reads the asset's current version, without its shares; nil if
// there is none.
func (t AssetRows) AssetByID(ctx context.Context, id string) (*duet.Asset, error) {
	return t.read(ctx, `a.id = $1`, id)
}

// InsertAsset writes a new asset at version 1.
func (t AssetRows) InsertAsset(ctx context.Context, a *duet.Asset, now time.Time) error {
	if _, err := t.E.Exec(ctx, `INSERT INTO assets (id, owner, kind, name, version, created_at, updated_at) VALUES ($1, $2, $3, $4, 1, $5, $5)`,
		a.ID, a.Owner, a.Kind, a.Name, t.E.Stored(now)); err != nil {
		return err
	}
	_, err := t.E.Exec(ctx, `INSERT INTO asset_versions (asset_id, version, description, body, created_at) VALUES ($1, 1, $2, $3, $4)`, a.ID, a.Description, a.Body, t.E.Stored(now))
	return err
}

// InsertVersion writes a.Version of the asset and makes it the current
// version.
func (t AssetRows) InsertVersion(ctx context.Context, a *duet.Asset, now time.Time) error {
	if _, err := t.E.Exec(ctx, `INSERT INTO asset_versions (asset_id, version, description, body, created_at) VALUES ($1, $2, $3, $4, $5)`,
		a.ID, a.Version, a.Description, a.Body, t.E.Stored(now)); err != nil {
		return err
	}
	_, err := t.E.Exec(ctx, `UPDATE assets SET version = $1, updated_at = $2 WHERE id = $3`, a.Version, t.E.Stored(now), a.ID)
	return err
}

// Assets is the part of duet.AssetStore and duet.GenerationStore that is
// the same on every engine.
type Assets struct{ E Engine }

// DeleteAsset removes owner's asset and its versions. Returns NOT_FOUND.
func (s Assets) DeleteAsset(ctx context.Context, owner string, kind duet.AssetKind, name string) error {
	n, err := s.E.Exec(ctx, `DELETE FROM assets WHERE owner = $1 AND kind = $2 AND name = $3`, owner, kind, name)
	if err == nil && n == 0 {
		return duet.Errorf(duet.CodeNotFound, "%s %q not found", kind, name)
	}
	return err
}

// CreateGeneration stores a generation record, its time as stored.
// Returns INVALID_ARGUMENT.
func (s Assets) CreateGeneration(ctx context.Context, g *duet.Generation) error {
	if g.User == "" || g.TaskID == "" || g.Outcome == "" {
		return duet.Errorf(duet.CodeInvalidArgument, "a generation record needs a user, a task and an outcome")
	}
	if g.ID == "" {
		g.ID = duet.NewID("gen")
	}
	if g.CreatedAt.IsZero() {
		g.CreatedAt = s.E.Now()
	}
	g.CreatedAt = g.CreatedAt.Truncate(time.Microsecond)
	assets, err := json.Marshal(NonNil(g.Assets))
	if err != nil {
		return err
	}
	_, err = s.E.Exec(ctx, `INSERT INTO generations (id, task_id, user_id, model, goal, assets, turns, tool_calls, repairs,
		prompt_tokens, completion_tokens, total_tokens, attempts, outcome, error_message, duration_ms, case_id, case_version, trace_id, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20)`,
		g.ID, g.TaskID, g.User, g.Model, g.Goal, string(assets), g.Turns, g.ToolCalls, g.Repairs,
		g.PromptTokens, g.CompletionTokens, g.TotalTokens, g.Attempts, g.Outcome, g.ErrorMessage, g.DurationMs,
		g.CaseID, g.CaseVersion, g.TraceID, s.E.Stored(g.CreatedAt))
	return err
}

// FindGenerations returns a user's generation records, newest first.
// Returns INVALID_ARGUMENT without a user.
func (s Assets) FindGenerations(ctx context.Context, f duet.GenerationFilter) ([]*duet.Generation, error) {
	if f.User == "" {
		return nil, duet.Errorf(duet.CodeInvalidArgument, "no user")
	}
	w := Filter{Args: []any{f.User}}
	q := `SELECT id, task_id, user_id, model, goal, assets, turns, tool_calls, repairs, prompt_tokens, completion_tokens, total_tokens,
		attempts, outcome, error_message, duration_ms, case_id, case_version, trace_id, created_at FROM generations WHERE user_id = $1`
	if f.TaskID != "" {
		q += ` AND task_id = ` + w.Add(f.TaskID)
	}
	q += ` ORDER BY id DESC LIMIT ` + w.Add(ClampLimit(f.Limit, 20, 200))
	return All(ctx, s.E, scanGeneration, q, w.Args...)
}

// scanGeneration reads a generation record of FindGenerations' columns.
func scanGeneration(r Row) (*duet.Generation, error) {
	var g duet.Generation
	var assets string
	if err := r.Scan(&g.ID, &g.TaskID, &g.User, &g.Model, &g.Goal, &assets, &g.Turns, &g.ToolCalls, &g.Repairs,
		&g.PromptTokens, &g.CompletionTokens, &g.TotalTokens, &g.Attempts, &g.Outcome, &g.ErrorMessage, &g.DurationMs,
		&g.CaseID, &g.CaseVersion, &g.TraceID, TimeOf(&g.CreatedAt)); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(assets), &g.Assets); err != nil {
		return nil, err
	}
	if len(g.Assets) == 0 {
		g.Assets = nil
	}
	return &g, nil
}
