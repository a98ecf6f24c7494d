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

// LoadTaskShares reads, on e, the share lists of the tasks.
func LoadTaskShares(ctx context.Context, e Engine, tasks ...*duet.Task) error {
	if len(tasks) == 0 {
		return nil
	}
	byID, ids := index(tasks, func(t *duet.Task) string { return t.ID })
	in, args := e.In("task_id", ids)
	return e.Query(ctx, func(r Row) error {
		var id, user string
		if err := r.Scan(&id, &user); err != nil {
			return err
		}
		t := byID[id]
		t.SharedWith = append(t.SharedWith, user)
		return nil
	}, `SELECT task_id, user_id FROM task_shares WHERE `+in+` ORDER BY user_id`, args...)
}

// Tasks are the reads of tasks written once.
type Tasks struct{ E Engine }

// FindTaskByName returns owner's task with that name. Returns NOT_FOUND.
func (s Tasks) FindTaskByName(ctx context.Context, owner, name string) (*duet.Task, error) {
	return TaskByName(ctx, s.E, owner, name)
}

// TaskByName reads, on e, owner's task named name with its shares.
// Returns NOT_FOUND.
func TaskByName(ctx context.Context, e Engine, owner, name string) (*duet.Task, error) {
	t, err := One(ctx, e, ScanTask, `SELECT `+TaskColumns+` FROM tasks t WHERE t.owner = $1 AND t.name = $2`, owner, name)
	if err != nil {
		return nil, Found(err, "task", name, func(err error) error { return err })
	}
	return t, LoadTaskShares(ctx, e, t)
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
