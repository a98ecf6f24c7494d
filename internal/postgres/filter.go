package postgres

import (
	"strings"
	"time"
)

// filter builds the WHERE clause of a query from optional conditions: a
// condition whose value is empty is left out.
type filter struct {
	conds []string
	args  args
}

// eq adds "col = v" unless v is empty.
func (f *filter) eq(col, v string) {
	if v != "" {
		f.conds = append(f.conds, col+" = "+f.args.add(v))
	}
}

// between adds since <= col < until for the bounds that are set.
func (f *filter) between(col string, since, until time.Time) {
	if !since.IsZero() {
		f.conds = append(f.conds, col+" >= "+f.args.add(ts(since)))
	}
	if !until.IsZero() {
		f.conds = append(f.conds, col+" < "+f.args.add(ts(until)))
	}
}

// where returns the clause ("TRUE" when there is no condition).
func (f *filter) where() string {
	if len(f.conds) == 0 {
		return "TRUE"
	}
	return strings.Join(f.conds, " AND ")
}
