package sqlite

import (
	"strings"
	"time"
)

// filter builds the WHERE clause of a query from optional conditions: a
// condition whose value is empty is left out.
type filter struct {
	conds []string
	args  []any
}

// eq adds "col = v" unless v is empty.
func (f *filter) eq(col, v string) {
	if v != "" {
		f.conds = append(f.conds, col+" = ?")
		f.args = append(f.args, v)
	}
}

// between adds since <= col < until for the bounds that are set.
func (f *filter) between(col string, since, until time.Time) {
	if !since.IsZero() {
		f.conds = append(f.conds, col+" >= ?")
		f.args = append(f.args, micros(since))
	}
	if !until.IsZero() {
		f.conds = append(f.conds, col+" < ?")
		f.args = append(f.args, micros(until))
	}
}

// where returns the clause ("1 = 1" when there is no condition).
func (f *filter) where() string {
	if len(f.conds) == 0 {
		return "1 = 1"
	}
	return strings.Join(f.conds, " AND ")
}
