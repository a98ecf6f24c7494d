package postgres

import (
	"context"
	"errors"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/storerules"
)

// execSummaryColumns are execColumns without the compiled steps and the
// variables, which a summary page does not need (scanExecution reads them as
// empty).
const execSummaryColumns = `e.id, e.run_id, e.case_id, e.case_key, e.case_title, e.case_version, e.ordinal, e.timeout_ms, e.status, '[]', '{}',
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
	after := -1
	if f.Cursor != "" {
		k, err := storerules.DecodeCursor(f.Cursor)
		if err != nil {
			return "", nil, 0, err
		}
		if after, err = strconv.Atoi(k); err != nil || after < 0 {
			return "", nil, 0, duet.Errorf(duet.CodeInvalidArgument, "invalid cursor")
		}
	}
	limit := storerules.ClampLimit(f.Limit, 100, 1000)
	cols := execSummaryColumns
	if f.Results {
		cols = execColumns
	}
	return `SELECT ` + cols + ` FROM executions e WHERE e.run_id = $1 AND e.ordinal > $2 ORDER BY e.ordinal LIMIT $3`, []any{f.RunID, after, limit + 1}, limit, nil
}

// execPage reads the rows of execPageQuery: the page and the next cursor.
func (d *DB) execPage(ctx context.Context, rows pgx.Rows, f duet.ExecutionFilter, limit int) ([]*duet.Execution, string, error) {
	execs, err := collect(rows, scanExecution)
	if err != nil {
		return nil, "", err
	}
	var next string
	if len(execs) > limit {
		execs = execs[:limit]
		next = storerules.EncodeCursor(strconv.Itoa(execs[limit-1].Ordinal))
	}
	if !f.Results {
		for _, e := range execs {
			e.Steps, e.Vars = nil, nil
		}
		return execs, next, nil
	}
	return execs, next, loadResults(ctx, d.pool, execs...)
}

// FindRunPage reads the run and a page of its executions in one batch.
// The page of a run the viewer may not see is read and dropped: NOT_FOUND.
func (d *DB) FindRunPage(ctx context.Context, viewer string, f duet.ExecutionFilter) (*duet.Run, []*duet.Execution, string, error) {
	pq, pa, limit, perr := execPageQuery(f)
	var b pgx.Batch
	b.Queue(`SELECT `+runWithTotals+` FROM runs r JOIN tasks t ON t.id = r.task_id WHERE r.id = $2`+visibility(viewer), viewer, f.RunID)
	if perr == nil {
		b.Queue(pq, pa...)
	}
	br := d.pool.SendBatch(ctx, &b)
	defer br.Close()
	run, err := scanRunTotals(br.QueryRow())
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil, "", storerules.NotFound("run", f.RunID)
	} else if err != nil {
		return nil, nil, "", mapErr(err)
	}
	if perr != nil {
		return nil, nil, "", perr
	}
	rows, err := br.Query()
	if err != nil {
		return nil, nil, "", mapErr(err)
	}
	execs, next, err := d.execPage(ctx, rows, f, limit)
	if err != nil {
		return nil, nil, "", err
	}
	return run, execs, next, mapErr(br.Close())
}
