package storerules

import "github.com/duet-test/duet"

// AssetsByID starts the assets private, with no shares, and indexes them
// by id; ids lists each id once, in order.
func AssetsByID(assets []*duet.Asset) (byID map[string]*duet.Asset, ids []string) {
	for _, a := range assets {
		a.SharedWith, a.Visibility = []string{}, duet.VisibilityPrivate
	}
	return index(assets, func(a *duet.Asset) string { return a.ID })
}

// ReadAssetShares reads rows of (asset id, user) into the share lists of
// the assets of byID (AssetsByID); an asset with a share is shared.
func ReadAssetShares(rows Rows, byID map[string]*duet.Asset) error {
	return readShares(rows, func(id, user string) {
		a := byID[id]
		a.SharedWith = append(a.SharedWith, user)
		a.Visibility = duet.VisibilityShared
	})
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
