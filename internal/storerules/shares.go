package storerules

import (
	"context"

	"github.com/duet-test/duet"
)

// AssetsByID starts the assets private, with no shares, and indexes them
// by id; ids lists each id once, in order.
func AssetsByID(assets []*duet.Asset) (byID map[string]*duet.Asset, ids []string) {
	for _, a := range assets {
		a.SharedWith, a.Visibility = []string{}, duet.VisibilityPrivate
	}
	return index(assets, func(a *duet.Asset) string { return a.ID })
}

// LoadAssetShares reads, on e, the share lists of the assets: an asset
// with a share is shared, one without is private.
func LoadAssetShares(ctx context.Context, e Engine, assets ...*duet.Asset) error {
	if len(assets) == 0 {
		return nil
	}
	byID, ids := AssetsByID(assets)
	in, args := e.In("asset_id", ids)
	return e.Query(ctx, func(r Row) error {
		var id, user string
		if err := r.Scan(&id, &user); err != nil {
			return err
		}
		a := byID[id]
		a.SharedWith = append(a.SharedWith, user)
		a.Visibility = duet.VisibilityShared
		return nil
	}, `SELECT asset_id, user_id FROM asset_shares WHERE `+in+` ORDER BY asset_id, user_id`, args...)
}

// TasksByID indexes tasks by id; ids lists each id once, in order.
func TasksByID(tasks []*duet.Task) (byID map[string]*duet.Task, ids []string) {
	return index(tasks, func(t *duet.Task) string { return t.ID })
}

// ReadTaskShares reads rows of (task id, user) into the share lists of the
// tasks of byID (TasksByID).
func ReadTaskShares(rows Rows, byID map[string]*duet.Task) error {
	return readShares(rows, func(id, user string) {
		if t := byID[id]; t != nil {
			t.SharedWith = append(t.SharedWith, user)
		}
	})
}

// index indexes items by id; ids lists each id once, in order (the last
// of several items with one id is the one indexed).
func index[T any](items []T, id func(T) string) (byID map[string]T, ids []string) {
	byID = make(map[string]T, len(items))
	for _, it := range items {
		k := id(it)
		if _, dup := byID[k]; !dup {
			ids = append(ids, k)
		}
		byID[k] = it
	}
	return byID, ids
}

// readShares hands each row of (id, user) to add.
func readShares(rows Rows, add func(id, user string)) error {
	for rows.Next() {
		var id, user string
		if err := rows.Scan(&id, &user); err != nil {
			return err
		}
		add(id, user)
	}
	return rows.Err()
}
