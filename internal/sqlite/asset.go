package sqlite

import (
	"context"
	"strconv"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/storerules"
)

var (
	_ duet.AssetStore      = (*DB)(nil)
	_ duet.GenerationStore = (*DB)(nil)
)

// assetVisible is the condition under which viewer ?1 may see asset a.
// An asset shared with "team:NAME" is visible to the team's members as they
// are at the time of the query.
const assetVisible = `(a.owner = ?1 OR EXISTS (SELECT 1 FROM asset_shares s WHERE s.asset_id = a.id AND (s.user_id IN (?1, '*') OR s.user_id IN ` + teamsOf + `)))`

// otherVisibleAssetIDs lists the ids of the assets shared with viewer ?1,
// with everyone, or with a team of theirs, each branch on an index (it may
// name an asset the viewer owns). The Asset Center reads the viewer's own
// assets from their owner index and merges these (assetListQuery), so it
// costs what the viewer sees, not the table.
const otherVisibleAssetIDs = `SELECT asset_id AS id FROM asset_shares WHERE user_id IN (?1, '*')
	UNION SELECT asset_id FROM asset_shares WHERE user_id IN ` + teamsOf

// SaveAsset creates the asset or a new version of it
// (storerules.SaveAsset). Returns INVALID_ARGUMENT, TOO_LARGE.
func (d *DB) SaveAsset(ctx context.Context, a *duet.Asset) (duet.ApplyAction, error) {
	if err := storerules.CheckAsset(a); err != nil {
		return "", err
	}
	action, err := storerules.TxValue(ctx, d.tx, func(tx *cachedTx) (duet.ApplyAction, error) {
		return storerules.SaveAsset(ctx, assetTx{storerules.AssetRows{E: d.engineOn(tx)}, tx}, a, d.now())
	})
	if err != nil {
		return "", err
	}
	return action, nil
}

// assetTx is storerules.AssetTx on a SQLite transaction.
type assetTx struct {
	storerules.AssetRows
	tx *cachedTx
}

func (t assetTx) SetAssetShares(ctx context.Context, id string, users []string, now time.Time) error {
	if _, err := t.tx.ExecContext(ctx, `DELETE FROM asset_shares WHERE asset_id = ?`, id); err != nil {
		return mapErr(err)
	}
	for _, u := range users {
		team, err := shareTeamID(ctx, t.tx, u)
		if err != nil {
			return err
		}
		if _, err := t.tx.ExecContext(ctx, `INSERT INTO asset_shares (asset_id, user_id, team_id, created_at) VALUES (?, ?, ?, ?)`, id, u, team, micros(now)); err != nil {
			return mapErr(err)
		}
	}
	return nil
}

// FindAsset returns the asset of kind that ref names as viewer sees it.
// Returns NOT_FOUND, INVALID_ARGUMENT.
func (d *DB) FindAsset(ctx context.Context, viewer string, kind duet.AssetKind, ref string, version int) (*duet.Asset, error) {
	return storerules.FindAsset(ctx, viewer, kind, ref, version, d.assetCandidates, d.assetShares)
}

// assetShares reads the shares of assets.
func (d *DB) assetShares(ctx context.Context, assets ...*duet.Asset) error {
	return storerules.LoadAssetShares(ctx, d.Assets.E, assets...)
}

// assetCandidates is FindAsset's storerules.AssetCandidates.
func (d *DB) assetCandidates(ctx context.Context, viewer string, kind duet.AssetKind, owner, name string, version int) ([]*duet.Asset, error) {
	q := `SELECT ` + storerules.AssetColumns + ` FROM assets a JOIN asset_versions v ON v.asset_id = a.id AND v.version = `
	args := []any{viewer, kind, name}
	if version > 0 {
		q += `?4`
		args = append(args, version)
	} else {
		q += `a.version`
	}
	q += ` WHERE a.kind = ?2 AND a.name = ?3 AND ` + assetVisible
	if owner != "" {
		q += ` AND a.owner = ?` + strconv.Itoa(len(args)+1)
		args = append(args, owner)
	}
	// The viewer's own asset first, then the others by owner.
	q += ` ORDER BY a.owner <> ?1, a.owner LIMIT 3`
	return all(ctx, d.q, storerules.ScanAsset, q, args...)
}

// FindAssets returns the latest versions of the assets matching f.
func (d *DB) FindAssets(ctx context.Context, f duet.AssetFilter) ([]*duet.Asset, error) {
	return storerules.FindAssets(ctx, f, d.assetList, d.assetShares)
}

// assetList is FindAssets' storerules.AssetList.
func (d *DB) assetList(ctx context.Context, f duet.AssetFilter) ([]*duet.Asset, error) {
	cond := `1 = 1`
	args := []any{f.Viewer}
	if f.Kind != "" {
		args = append(args, f.Kind)
		cond += ` AND a.kind = ?` + strconv.Itoa(len(args))
	}
	if f.Owner != "" {
		args = append(args, f.Owner)
		cond += ` AND a.owner = ?` + strconv.Itoa(len(args))
	}
	args = append(args, storerules.ClampLimit(f.Limit, 200, 1000))
	q := assetListQuery(cond, `?`+strconv.Itoa(len(args)))
	return all(ctx, d.q, storerules.ScanAsset, q, args...)
}

// assetListQuery returns the Asset Center's query for viewer ?1, the
// condition cond on a and at most limitParam rows: the viewer's own assets
// straight from their owner index (owner, kind, name) — in order, no second
// lookup of each by id — merged with the other visible assets the viewer
// does not own: two disjoint sets, so UNION ALL; ordered by kind, owner,
// name (columns 2, 4, 3).
func assetListQuery(cond, limitParam string) string {
	return `SELECT ` + storerules.AssetColumns + ` FROM assets a JOIN asset_versions v ON v.asset_id = a.id AND v.version = a.version WHERE a.owner = ?1 AND ` + cond +
		` UNION ALL SELECT ` + storerules.AssetColumns + ` FROM (` + otherVisibleAssetIDs + `) AS w CROSS JOIN assets a ON a.id = w.id JOIN asset_versions v ON v.asset_id = a.id AND v.version = a.version WHERE a.owner <> ?1 AND ` + cond +
		` ORDER BY 2, 4, 3 LIMIT ` + limitParam
}
