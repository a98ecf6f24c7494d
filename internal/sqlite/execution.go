package sqlite

import (
	"context"
	"strconv"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/storerules"
)

// execSummaryColumns are storerules.ExecColumns without the compiled steps and the
// variables, which a summary page does not need (storerules.ScanExecution reads them as
// empty).
const execSummaryColumns = `e.id, e.run_id, e.case_id, e.case_key, e.case_title, e.case_version, e.ordinal, e.timeout_ms, e.status, '[]', '{}',
	e.error_code, e.error_message, e.started_at, e.finished_at, e.resume_from, e.row, e.retries, e.attempt`

// FindExecutionPage returns one page of a run's executions in ordinal order.
// Returns INVALID_ARGUMENT for a bad cursor.
func (d *DB) FindExecutionPage(ctx context.Context, f duet.ExecutionFilter) ([]*duet.Execution, string, error) {
	after := -1
	if f.Cursor != "" {
		k, err := storerules.DecodeCursor(f.Cursor)
		if err != nil {
			return nil, "", err
		}
		if after, err = strconv.Atoi(k); err != nil || after < 0 {
			return nil, "", duet.Errorf(duet.CodeInvalidArgument, "invalid cursor")
		}
	}
	limit := storerules.ClampLimit(f.Limit, 100, 1000)
	cols := execSummaryColumns
	if f.Results {
		cols = storerules.ExecColumns
	}
	execs, err := all(ctx, d.q, storerules.ScanExecution, `SELECT `+cols+` FROM executions e WHERE e.run_id = ? AND e.ordinal > ? ORDER BY e.ordinal LIMIT ?`, f.RunID, after, limit+1)
	if err != nil {
		return nil, "", err
	}
	execs, next := storerules.ExecutionPageEnd(execs, f, limit)
	if !f.Results {
		return execs, next, nil
	}
	return execs, next, loadResults(ctx, d.q, execs...)
}
