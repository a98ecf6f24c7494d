package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/storerules"
)

var (
	_ duet.AssetStore      = (*DB)(nil)
	_ duet.GenerationStore = (*DB)(nil)
)

// assetVisible is the condition under which viewer $1 may see asset a.
// An asset shared with "team:NAME" is visible to the team's members as they
// are at the time of the query.
const assetVisible = `(a.owner = $1 OR EXISTS (SELECT 1 FROM asset_shares s WHERE s.asset_id = a.id AND (s.user_id IN ($1, '*') OR s.user_id IN ` + teamsOf + `)))`

// otherVisibleAssetIDs lists the ids of the assets shared with viewer $1,
// with everyone, or with a team of theirs, each branch on an index (it may
// name an asset the viewer owns). The Asset Center reads the viewer's own
// assets from their owner index and merges these (assetListQuery), so it
// costs what the viewer sees, not the table.
const otherVisibleAssetIDs = `SELECT asset_id AS id FROM asset_shares WHERE user_id IN ($1, '*')
	UNION SELECT asset_id FROM asset_shares WHERE user_id IN ` + teamsOf

// SaveAsset creates the asset or a new version of it
// (storerules.SaveAsset). Saves of the same asset by several instances take
// turns (an advisory lock on owner, kind and name). Returns
// INVALID_ARGUMENT, TOO_LARGE.
func (d *DB) SaveAsset(ctx context.Context, a *duet.Asset) (duet.ApplyAction, error) {
	if err := storerules.CheckAsset(a); err != nil {
		return "", err
	}
	in := *a
	var action duet.ApplyAction
	err := d.tx(ctx, func(tx pgx.Tx) error {
		*a = in // a retried transaction starts again
		if err := lockKey(ctx, tx, "asset\x1f"+a.Owner+"\x1f"+string(a.Kind)+"\x1f"+a.Name); err != nil {
			return err
		}
		var err error
		action, err = storerules.SaveAsset(ctx, assetTx{storerules.AssetRows{E: d.engineOn(tx)}, tx}, a, ts(d.now()))
		return err
	})
	if err != nil {
		return "", err
	}
	return action, nil
}

// assetTx is storerules.AssetTx on a PostgreSQL transaction.
type assetTx struct {
	storerules.AssetRows
	tx pgx.Tx
}

func (t assetTx) SetAssetShares(ctx context.Context, id string, users []string, now time.Time) error {
	if _, err := t.tx.Exec(ctx, `DELETE FROM asset_shares WHERE asset_id = $1`, id); err != nil {
		return mapErr(err)
	}
	if len(users) == 0 {
		return nil
	}
	teams, err := shareTeamIDs(ctx, t.tx, users)
	if err != nil {
		return err
	}
	_, err = t.tx.Exec(ctx, `INSERT INTO asset_shares (asset_id, user_id, team_id, created_at) SELECT $1, u, tid, $4 FROM unnest($2::text[], $3::text[]) AS x (u, tid)`,
		id, users, teams, now)
	return mapErr(err)
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
	a := args{viewer, string(kind), name}
	q := `SELECT ` + storerules.AssetColumns + ` FROM assets a JOIN asset_versions v ON v.asset_id = a.id AND v.version = `
	if version > 0 {
		q += a.add(version)
	} else {
		q += `a.version`
	}
	q += ` WHERE a.kind = $2 AND a.name = $3 AND ` + assetVisible
	if owner != "" {
		q += ` AND a.owner = ` + a.add(owner)
	}
	// The viewer's own asset first, then the others by owner.
	q += ` ORDER BY a.owner <> $1, a.owner LIMIT 3`
	return all(ctx, d.pool, storerules.ScanAsset, q, a...)
}

// FindAssets returns the latest versions of the assets matching f.
func (d *DB) FindAssets(ctx context.Context, f duet.AssetFilter) ([]*duet.Asset, error) {
	return storerules.FindAssets(ctx, f, d.assetList, d.assetShares)
}

// assetList is FindAssets' storerules.AssetList.
func (d *DB) assetList(ctx context.Context, f duet.AssetFilter) ([]*duet.Asset, error) {
	a := args{f.Viewer}
	cond := `TRUE`
	if f.Kind != "" {
		cond += ` AND a.kind = ` + a.add(string(f.Kind))
	}
	if f.Owner != "" {
		cond += ` AND a.owner = ` + a.add(f.Owner)
	}
	q := assetListQuery(cond, a.add(storerules.ClampLimit(f.Limit, 200, 1000)))
	return all(ctx, d.pool, storerules.ScanAsset, q, a...)
}

// assetListQuery returns the Asset Center's query for viewer $1, the
// condition cond on a and at most limitParam rows: the viewer's own assets
// straight from their owner index (owner, kind, name) — in order, no second
// lookup of each by id — merged with the other visible assets the viewer
// does not own: two disjoint sets, so UNION ALL; ordered by kind, owner,
// name (columns 2, 4, 3).
func assetListQuery(cond, limitParam string) string {
	return `(SELECT ` + storerules.AssetColumns + ` FROM assets a JOIN asset_versions v ON v.asset_id = a.id AND v.version = a.version WHERE a.owner = $1 AND ` + cond +
		` ORDER BY a.kind, a.name LIMIT ` + limitParam + `)` +
		` UNION ALL (SELECT ` + storerules.AssetColumns + ` FROM (` + otherVisibleAssetIDs + `) AS w JOIN assets a ON a.id = w.id JOIN asset_versions v ON v.asset_id = a.id AND v.version = a.version WHERE a.owner <> $1 AND ` + cond +
		` ORDER BY a.kind, a.owner, a.name LIMIT ` + limitParam + `)` +
		` ORDER BY 2, 4, 3 LIMIT ` + limitParam
}
