package sqlite

import (
	"context"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/storerules"
)

// FindCasesCallingServer returns the active cases whose steps call a tool
// of serverKey.
func (d *DB) FindCasesCallingServer(ctx context.Context, serverKey string) ([]*duet.Case, error) {
	rows, err := d.q.QueryContext(ctx, `SELECT `+storerules.CaseFields+` FROM cases c WHERE c.status = 'active' AND instr(c.steps, ?) > 0 ORDER BY c.task_id, c.key`, `"`+serverKey+`"`)
	if err != nil {
		return nil, mapErr(err)
	}
	cases, err := collect(rows, storerules.ScanCase)
	return storerules.CallingServer(cases, err, serverKey)
}
