package postgres

import (
	"context"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/storerules"
)

// execSummaryColumns are storerules.ExecColumns without the compiled steps and the
// variables, which a summary page does not need (storerules.ScanExecution reads them as
// empty).
const execSummaryColumns = `e.id, e.run_id, e.case_id, e.case_key, e.case_title, e.case_version, e.ordinal, e.timeout_ms, e.status, '[]'::text, '{}'::text,
	e.error_code, e.error_message, e.started_at, e.finished_at, e.resume_from, e.row, e.retries, e.attempt`

// FindExecutionPage returns one page of a run's executions in ordinal order.
func (d *DB) FindExecutionPage(ctx context.Context, f duet.ExecutionFilter) ([]*duet.Execution, string, error) {
	q, a, limit, err := execPageQuery(f)
	if err != nil {
		return nil, "", err
	}
	rows, err := d.pool.Query(ctx, q, a...)
	if err != nil {
		return nil, "", mapErr(err)
	}
	return d.execPage(ctx, rows, f, limit)
}

// execPageQuery is the statement of FindExecutionPage (execPage reads
// its rows), and its page size.
func execPageQuery(f duet.ExecutionFilter) (string, []any, int, error) {
	var a args
	cond, limit, err := execWhere(f, &a, a.add(f.RunID))
	if err != nil {
		return "", nil, 0, err
	}
	return `SELECT ` + execCols(f) + ` FROM executions e WHERE ` + cond + ` ORDER BY e.ordinal LIMIT ` + a.add(limit+1), a, limit, nil
}

// execWhere returns the condition on e of the page f selects of the run
// run (a placeholder or a column), after f's cursor, and the page size;
// their arguments are added to a. Returns INVALID_ARGUMENT for a bad
// cursor.
func execWhere(f duet.ExecutionFilter, a *args, run string) (cond string, limit int, err error) {
	after := -1
	if f.Cursor != "" {
		k, err := storerules.DecodeCursor(f.Cursor)
		if err != nil {
			return "", 0, err
		}
		if after, err = strconv.Atoi(k); err != nil || after < 0 {
			return "", 0, duet.Errorf(duet.CodeInvalidArgument, "invalid cursor")
		}
	}
	return `e.run_id = ` + run + ` AND e.ordinal > ` + a.add(after), storerules.ClampLimit(f.Limit, 100, 1000), nil
}

// execCols are the columns of the executions of a page: with their steps
// and variables for f.Results, else execSummaryColumns.
func execCols(f duet.ExecutionFilter) string {
	if f.Results {
		return storerules.ExecColumns
	}
	return execSummaryColumns
}

// execPage reads the rows of execPageQuery: the page and the next cursor.
func (d *DB) execPage(ctx context.Context, rows pgx.Rows, f duet.ExecutionFilter, limit int) ([]*duet.Execution, string, error) {
	execs, err := collect(rows, storerules.ScanExecution)
	if err != nil {
		return nil, "", err
	}
	execs, next := storerules.ExecutionPageEnd(execs, f, limit)
	if !f.Results {
		return execs, next, nil
	}
	return execs, next, loadResults(ctx, d.pool, execs...)
}

// FindRunPage reads the run with its totals and a page of its executions
// (with f.Results, each with its step results and earlier attempts) in one
// statement (runPageQuery): one round trip, the visibility checked once.
// Nothing of a run the viewer may not see is read: NOT_FOUND, the same for
// a bad cursor; INVALID_ARGUMENT for a bad cursor of a run they may see.
func (d *DB) FindRunPage(ctx context.Context, viewer string, f duet.ExecutionFilter) (*duet.Run, []*duet.Execution, string, error) {
	q, a, limit, err := runPageQuery(viewer, f)
	if err != nil {
		if _, rerr := d.FindRunByID(ctx, viewer, f.RunID); rerr != nil {
			return nil, nil, "", rerr
		}
		return nil, nil, "", err
	}
	rows, err := d.pool.Query(ctx, q, a...)
	if err != nil {
		return nil, nil, "", mapErr(err)
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return nil, nil, "", mapErr(err)
		}
		return nil, nil, "", storerules.NotFound("run", f.RunID)
	}
	var page []pgtype.UndecodedBytes
	run, err := scanRunTotals(tailRow{Row: rows, tail: []any{&page}})
	if err != nil {
		return nil, nil, "", mapErr(err)
	}
	// Decoded before the rows close (recordRow).
	scan := storerules.ScanExecution
	if f.Results {
		scan = scanExecutionResults
	}
	execs, err := scanRecords(rows.Conn().TypeMap(), page, scan)
	if err != nil {
		return nil, nil, "", mapErr(err)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, nil, "", mapErr(err)
	}
	execs, next := storerules.ExecutionPageEnd(execs, f, limit)
	return run, execs, next, nil
}

// runPageQuery is the statement of FindRunPage ($1 the viewer, $2 the
// run's id), its arguments and its page size: the run with its totals (as
// FindRunByID), and the page of its executions (execPageQuery's, one more
// than the page) as a list of row values of execCols and, for f.Results,
// each execution's step results and earlier attempts (scanExecutionResults
// reads them). The executions are read only for a run the viewer may see.
func runPageQuery(viewer string, f duet.ExecutionFilter) (string, []any, int, error) {
	a := args{viewer, f.RunID}
	cond, limit, err := execWhere(f, &a, `r.id`)
	if err != nil {
		return "", nil, 0, err
	}
	cols := execCols(f)
	if f.Results {
		cols += `, ` + execResultLists
	}
	return `SELECT ` + runWithTotals + `, ARRAY(SELECT ROW(` + cols + `) FROM executions e WHERE ` + cond + ` ORDER BY e.ordinal LIMIT ` + a.add(limit+1) + `)
		FROM runs r JOIN tasks t ON t.id = r.task_id WHERE r.id = $2` + visibility(viewer), a, limit, nil
}

// execResultLists are the columns, after storerules.ExecColumns, of an execution's
// step results and earlier attempts as lists (scanExecutionResults and
// findExecution read them).
const execResultLists = `ARRAY(SELECT s.data::text FROM step_results s WHERE s.execution_id = e.id ORDER BY s.idx),
	ARRAY(SELECT a.data FROM execution_attempts a WHERE a.execution_id = e.id ORDER BY a.attempt)`

// scanExecutionResults scans storerules.ExecColumns and execResultLists.
func scanExecutionResults(r rowScanner) (*duet.Execution, error) {
	var results, attempts []string
	e, err := storerules.ScanExecution(tailRow{r, []any{&results, &attempts}})
	if err != nil {
		return nil, err
	}
	return e, addResultLists(e, results, attempts)
}

// addResultLists adds the step results and earlier attempts read as
// execResultLists to e.
func addResultLists(e *duet.Execution, results, attempts []string) error {
	for _, data := range results {
		if err := storerules.AddResult(e, data); err != nil {
			return err
		}
	}
	for _, data := range attempts {
		if err := storerules.AddAttempt(e, data); err != nil {
			return err
		}
	}
	return nil
}
