package postgres

import (
	"strings"
	"time"

	"github.com/duet-test/duet/internal/storerules"
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

// newestFirst is the query of columns of the records of the log table
// (audit, mcp_invocations) that f selects, newest first, at most limit
// of them (100 unless given, 10,000 at most); its arguments are f.args.
func (f *filter) newestFirst(columns, table string, limit int) string {
	return `SELECT ` + columns + ` FROM ` + table + ` WHERE ` + f.where() + ` ORDER BY id DESC LIMIT ` + f.args.add(storerules.ClampLimit(limit, 100, 10000))
}

// where returns the clause ("TRUE" when there is no condition).
func (f *filter) where() string {
	if len(f.conds) == 0 {
		return "TRUE"
	}
	return strings.Join(f.conds, " AND ")
}
