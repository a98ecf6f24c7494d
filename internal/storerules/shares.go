package storerules

import "github.com/duet-test/duet"

// AssetsByID starts the assets private, with no shares, and indexes them
// by id; ids lists each id once, in order.
func AssetsByID(assets []*duet.Asset) (byID map[string]*duet.Asset, ids []string) {
	byID = make(map[string]*duet.Asset, len(assets))
	for _, a := range assets {
		a.SharedWith, a.Visibility = []string{}, duet.VisibilityPrivate
		if _, dup := byID[a.ID]; !dup {
			ids = append(ids, a.ID)
		}
		byID[a.ID] = a
	}
	return byID, ids
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
	byID = make(map[string]*duet.Task, len(tasks))
	for _, t := range tasks {
		if _, dup := byID[t.ID]; !dup {
			ids = append(ids, t.ID)
		}
		byID[t.ID] = t
	}
	return byID, ids
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
