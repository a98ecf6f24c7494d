package storerules

import (
	"context"

	"github.com/duet-test/duet"
)

// LoadAssetShares reads, on e, the share lists of the assets: an asset
// with a share is shared, one without is private.
func LoadAssetShares(ctx context.Context, e Engine, assets ...*duet.Asset) error {
	for _, a := range assets {
		a.SharedWith, a.Visibility = []string{}, duet.VisibilityPrivate
	}
	return loadShares(ctx, e, assets, func(a *duet.Asset) string { return a.ID }, "asset_shares", "asset_id", func(a *duet.Asset, user string) {
		a.SharedWith = append(a.SharedWith, user)
		a.Visibility = duet.VisibilityShared
	})
}

// LoadTaskShares reads, on e, the share lists of the tasks.
func LoadTaskShares(ctx context.Context, e Engine, tasks ...*duet.Task) error {
	return loadShares(ctx, e, tasks, func(t *duet.Task) string { return t.ID }, "task_shares", "task_id", func(t *duet.Task, user string) {
		t.SharedWith = append(t.SharedWith, user)
	})
}

// loadShares reads, on e, the shares of items kept in table (col the
// item's id, user_id the user it is shared with) and hands each to add,
// an item's in the order of their users.
func loadShares[T any](ctx context.Context, e Engine, items []T, id func(T) string, table, col string, add func(T, string)) error {
	if len(items) == 0 {
		return nil
	}
	byID, ids := index(items, id)
	in, args := e.In(col, ids)
	return e.Query(ctx, func(r Row) error {
		var id, user string
		if err := r.Scan(&id, &user); err != nil {
			return err
		}
		add(byID[id], user)
		return nil
	}, `SELECT `+col+`, user_id FROM `+table+` WHERE `+in+` ORDER BY `+col+`, user_id`, args...)
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
