package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/storerules"
)

// runColumns and scanRun read a run (storerules.ScanRun).
const runColumns = storerules.RunColumns

func scanRun(r rowScanner) (*duet.Run, error) { return storerules.ScanRun(r) }

// fillTotals counts the executions of each run by status, on q.
func fillTotals(ctx context.Context, q querier, runs ...*duet.Run) error {
	return storerules.FillTotals(ctx, engineOf(q), runs...)
}

// anys returns ss as arguments of a statement.
func anys(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// CreateRun stores a queued run and its executions, honouring idempotency
// (storerules.PlanRun decides what is written).
func (d *DB) CreateRun(ctx context.Context, p duet.StartRunParams) (*duet.IdempotencyRecord, bool, error) {
	if err := storerules.CheckRun(p); err != nil {
		return nil, false, err
	}
	now := d.now()
	plan, err := storerules.PlanRun(p, now)
	if err != nil {
		return nil, false, err
	}
	run := plan.Run
	var replay *duet.IdempotencyRecord
	err = d.tx(ctx, func(tx *cachedTx) error {
		if err := claimSlot(ctx, tx, p.Fire, run.ID, now); err != nil {
			return err
		}
		if in := p.Idempotency; in != nil {
			var old duet.IdempotencyRecord
			var result string
			var created, expires int64
			err := tx.QueryRowContext(ctx, `SELECT caller, key, tool, args_hash, result, created_at, expires_at FROM idempotency WHERE caller = ? AND key = ? AND expires_at > ?`,
				in.Caller, in.Key, micros(now)).Scan(&old.Caller, &old.Key, &old.Tool, &old.ArgsHash, &result, &created, &expires)
			switch {
			case err == nil:
				old.Result, old.CreatedAt, old.ExpiresAt = json.RawMessage(result), fromMicros(created), fromMicros(expires)
				replay = &old
				return storerules.Replay(&old, in)
			case !errors.Is(err, sql.ErrNoRows):
				return mapErr(err)
			}
		}
		if p.MaxPerMinute > 0 {
			var started int
			var oldest sql.NullInt64
			if err := tx.QueryRowContext(ctx, `SELECT count(*), min(created_at) FROM runs WHERE triggered_by = ? AND created_at > ?`,
				run.TriggeredBy, micros(now.Add(-time.Minute))).Scan(&started, &oldest); err != nil {
				return mapErr(err)
			}
			if started >= p.MaxPerMinute {
				return storerules.PerMinuteError(run.TriggeredBy, started, fromMicros(oldest.Int64), now)
			}
		}
		if p.MaxQueued > 0 {
			var queued int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM runs WHERE triggered_by = ? AND status = 'queued'`, run.TriggeredBy).Scan(&queued); err != nil {
				return mapErr(err)
			}
			if queued >= p.MaxQueued {
				return storerules.QueuedError(run.TriggeredBy, queued)
			}
		}
		return insertRun(ctx, tx, plan, p.Executions)
	})
	switch {
	case err != nil:
		return nil, false, err
	case replay != nil:
		return replay, true, nil
	}
	return plan.Idempotency, false, nil
}

// insertRun writes plan's run, executions and idempotency record.
func insertRun(ctx context.Context, tx *cachedTx, plan *storerules.RunPlan, execs []*duet.Execution) error {
	run := plan.Run
	o := run.Origin
	if o == nil {
		o = &duet.RunOrigin{}
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO runs (id, task_id, status, triggered_by, call_source, trace_id, device, created_at, call_depth, origin_commit, origin_branch, origin_pr, origin_pipeline, environment, trace)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		run.ID, run.TaskID, run.Status, run.TriggeredBy, run.CallSource, run.TraceID, run.Device, micros(run.CreatedAt), run.CallDepth, o.Commit, o.Branch, o.PullRequest, o.Pipeline, run.Environment, run.Trace); err != nil {
		return mapErr(err)
	}
	for i, e := range execs {
		if _, err := tx.ExecContext(ctx, `INSERT INTO executions (id, run_id, case_id, case_key, case_title, case_version, ordinal, timeout_ms, status, steps, row, retries, attempt) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1)`,
			e.ID, e.RunID, e.CaseID, e.CaseKey, e.CaseTitle, e.CaseVersion, e.Ordinal, e.TimeoutMs, e.Status, plan.Steps[i], plan.Rows[i], e.Retries); err != nil {
			return mapErr(err)
		}
	}
	if rec := plan.Idempotency; rec != nil {
		if _, err := tx.ExecContext(ctx, `INSERT INTO idempotency (caller, key, tool, args_hash, result, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (caller, key) DO UPDATE SET tool = excluded.tool, args_hash = excluded.args_hash, result = excluded.result, created_at = excluded.created_at, expires_at = excluded.expires_at`,
			rec.Caller, rec.Key, rec.Tool, rec.ArgsHash, string(rec.Result), micros(rec.CreatedAt), micros(rec.ExpiresAt)); err != nil {
			return mapErr(err)
		}
	}
	return nil
}

// FindRunByID returns the run if viewer may see its task ("" = any).
func (d *DB) FindRunByID(ctx context.Context, viewer, id string) (*duet.Run, error) {
	q := `SELECT ` + runColumns + ` FROM runs r JOIN tasks t ON t.id = r.task_id WHERE r.id = ?2` + visibility(viewer)
	run, err := scanRun(d.q.QueryRowContext(ctx, q, viewer, id))
	if err != nil {
		return nil, found(err, "run", id)
	}
	return run, fillTotals(ctx, d.q, run)
}

// FindRuns returns a page of runs, newest first.
func (d *DB) FindRuns(ctx context.Context, f duet.RunFilter) ([]*duet.Run, string, error) {
	if f.TaskID != "" && f.Limit == 1 && f.Cursor == "" && f.Status == "" && f.UpTo == "" && f.Branch == "" && f.Commit == "" {
		// A task's latest run (get_test_task): cached (cache.go).
		type page struct {
			runs []*duet.Run
			next string
		}
		p, err := cached(ctx, d, "lastrun\x00"+f.Viewer+"\x00"+f.TaskID, func() (page, error) {
			runs, next, err := d.findRuns(ctx, f)
			return page{runs, next}, err
		}, func(p page) page { return page{cloneRuns(p.runs), p.next} })
		return p.runs, p.next, err
	}
	return d.findRuns(ctx, f)
}

// runsWhere returns the FROM and WHERE of the runs f selects (its Cursor
// and Limit aside) and their arguments.
func runsWhere(f duet.RunFilter) (from, cond string, args []any) {
	var w storerules.Filter
	from = ` FROM runs r JOIN tasks t ON t.id = r.task_id`
	switch {
	case f.Viewer != "" && f.TaskID != "":
		w.Conds, w.Args = []string{visibleTo}, []any{f.Viewer}
	case f.Viewer != "":
		// Every visible task's runs (runs_task), not every run tested
		// against visibleTo.
		from = ` FROM ` + visibleTaskIDs + ` AS v CROSS JOIN runs r ON r.task_id = v.id`
		w.Args = []any{f.Viewer}
	}
	w.Eq("r.task_id", f.TaskID)
	w.Eq("r.status", string(f.Status))
	w.Eq("r.origin_branch", f.Branch)
	w.Eq("r.origin_commit", f.Commit)
	if f.UpTo != "" {
		w.Conds = append(w.Conds, "r.id <= "+w.Add(f.UpTo))
	}
	return from, w.Where(), w.Args
}

// CountRuns returns how many runs f selects.
func (d *DB) CountRuns(ctx context.Context, f duet.RunFilter) (int, error) {
	from, cond, args := runsWhere(f)
	var n int
	if err := d.q.QueryRowContext(ctx, `SELECT count(*)`+from+` WHERE `+cond, args...).Scan(&n); err != nil {
		return 0, mapErr(err)
	}
	return n, nil
}

func (d *DB) findRuns(ctx context.Context, f duet.RunFilter) ([]*duet.Run, string, error) {
	before, err := storerules.DecodeCursor(f.Cursor)
	if err != nil {
		return nil, "", err
	}
	limit := storerules.ClampLimit(f.Limit, 20, 100)
	from, cond, args := runsWhere(f)
	if before != "" {
		args = append(args, before)
		cond += ` AND r.id < $` + strconv.Itoa(len(args))
	}
	args = append(args, limit+1)
	rows, err := d.q.QueryContext(ctx, `SELECT `+runColumns+from+` WHERE `+cond+` ORDER BY r.id DESC LIMIT $`+strconv.Itoa(len(args)), args...)
	if err != nil {
		return nil, "", mapErr(err)
	}
	defer rows.Close()
	runs := []*duet.Run{}
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, "", mapErr(err)
		}
		runs = append(runs, r)
	}
	if err := rows.Err(); err != nil {
		return nil, "", mapErr(err)
	}
	rows.Close()
	runs, next := storerules.Page(runs, limit, func(r *duet.Run) string { return r.ID })
	return runs, next, fillTotals(ctx, d.q, runs...)
}

// loadResults fills Results and Attempts of the executions, on q.
func loadResults(ctx context.Context, q querier, execs ...*duet.Execution) error {
	return storerules.LoadResults(ctx, engineOf(q), execs...)
}

// FindExecutionByID returns an execution if viewer may see its task ("" = any).
func (d *DB) FindExecutionByID(ctx context.Context, viewer, id string) (*duet.Execution, error) {
	q := `SELECT ` + storerules.ExecColumns + ` FROM executions e JOIN runs r ON r.id = e.run_id JOIN tasks t ON t.id = r.task_id WHERE e.id = ?2` + visibility(viewer)
	e, err := storerules.ScanExecution(d.q.QueryRowContext(ctx, q, viewer, id))
	if err != nil {
		return nil, found(err, "execution", id)
	}
	return e, loadResults(ctx, d.q, e)
}

// ClaimRun takes a queued run, or a running run whose lease expired, fairly
// across executors (see duet.RunStore).
func (d *DB) ClaimRun(ctx context.Context, worker string, lease time.Duration) (*duet.Run, error) {
	return d.claim(ctx, "", worker, lease)
}

// ClaimRunByID claims one run if it is queued or its lease expired.
func (d *DB) ClaimRunByID(ctx context.Context, runID, worker string, lease time.Duration) (*duet.Run, error) {
	return d.claim(ctx, runID, worker, lease)
}

// claimQuery picks the next run: among the claimable runs (queued, or
// running under an expired lease), those of the executor with the fewest
// runs running under a live lease, then of the executor whose last claim is
// the oldest (never claimed first), then the oldest run. The keys are
// computed once per executor with a claimable run (executors), not once per
// run, so a claim does not read the whole of a long queue; as subqueries
// rather than a GROUP BY, like PostgreSQL's claim, which locks the
// candidate rows with FOR UPDATE SKIP LOCKED.
const claimQuery = `WITH executors AS MATERIALIZED (
		SELECT k.triggered_by,
			(SELECT count(*) FROM runs x WHERE x.triggered_by = k.triggered_by AND x.status = 'running' AND x.lease_expires_at >= ?1) AS busy,
			(SELECT max(x.claimed_at) FROM runs x WHERE x.triggered_by = k.triggered_by) AS served
		FROM (SELECT DISTINCT c.triggered_by FROM runs c
			WHERE (c.status = 'queued' OR (c.status = 'running' AND c.lease_expires_at < ?1)) AND (?2 = '' OR c.id = ?2)) k
	)
	SELECT r.id FROM runs r JOIN executors k ON k.triggered_by = r.triggered_by
	WHERE (r.status = 'queued' OR (r.status = 'running' AND r.lease_expires_at < ?1)) AND (?2 = '' OR r.id = ?2)
	ORDER BY k.busy, k.served NULLS FIRST, r.id
	LIMIT 1`

func (d *DB) claim(ctx context.Context, only, worker string, lease time.Duration) (*duet.Run, error) {
	var run *duet.Run
	err := d.tx(ctx, func(tx *cachedTx) error {
		now := d.now()
		var id string
		err := tx.QueryRowContext(ctx, claimQuery, micros(now), only).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		} else if err != nil {
			return mapErr(err)
		}
		// A run still marked running here lost its worker.
		if _, err := tx.ExecContext(ctx, `UPDATE runs SET lost = lost + CASE WHEN status = 'running' THEN 1 ELSE 0 END, status = 'running', lease_owner = ?, lease_expires_at = ?,
			attempt = attempt + 1, claimed_at = ?, started_at = COALESCE(started_at, ?) WHERE id = ?`,
			worker, micros(now.Add(lease)), micros(now), micros(now), id); err != nil {
			return mapErr(err)
		}
		run, err = scanRun(tx.QueryRowContext(ctx, `SELECT `+runColumns+` FROM runs r WHERE r.id = ?`, id))
		if err != nil {
			return mapErr(err)
		}
		return fillTotals(ctx, tx, run)
	})
	return run, err
}

// RenewLease extends the worker's lease and returns the current run.
// Returns LEASE_LOST when the worker no longer holds the run under l.
func (d *DB) RenewLease(ctx context.Context, l duet.Lease, lease time.Duration) (*duet.Run, error) {
	var run *duet.Run
	err := d.tx(ctx, func(tx *cachedTx) error {
		res, err := tx.ExecContext(ctx, `UPDATE runs SET lease_expires_at = ? WHERE id = ? AND lease_owner = ? AND attempt = ? AND status = 'running'`,
			micros(d.now().Add(lease)), l.RunID, l.Worker, l.Token)
		if err != nil {
			return mapErr(err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return duet.LeaseLost(l)
		}
		run, err = scanRun(tx.QueryRowContext(ctx, `SELECT `+runColumns+` FROM runs r WHERE r.id = ?`, l.RunID))
		return mapErr(err)
	})
	return run, err
}

// heldCond is the fence of a write of an execution: the execution (?4)
// belongs to the run (?1) that worker ?2 holds under its claim ?3. SQLite
// has one writer at a time, so the check and the write in one statement
// (or one transaction) are atomic.
const heldCond = `EXISTS (SELECT 1 FROM runs r JOIN executions e ON e.run_id = r.id
		WHERE r.id = ?1 AND r.lease_owner = ?2 AND r.attempt = ?3 AND r.status = 'running' AND e.id = ?4)`

// held checks, in tx, that the worker holds the run of execution id.
func held(ctx context.Context, tx *cachedTx, l duet.Lease, id string) error {
	var ok bool
	if err := tx.QueryRowContext(ctx, `SELECT `+heldCond, l.RunID, l.Worker, l.Token, id).Scan(&ok); err != nil {
		return mapErr(err)
	}
	if !ok {
		return duet.LeaseLost(l)
	}
	return nil
}

// StartExecution marks an execution running and drops results of an earlier
// interrupted attempt, from e.ResumeFrom on (fenced).
func (d *DB) StartExecution(ctx context.Context, l duet.Lease, e *duet.Execution) error {
	from := max(e.ResumeFrom, 0)
	err := d.tx(ctx, func(tx *cachedTx) error {
		if err := held(ctx, tx, l, e.ID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM step_results WHERE execution_id = ? AND idx >= ?`, e.ID, from); err != nil {
			return mapErr(err)
		}
		_, err := tx.ExecContext(ctx, `UPDATE executions SET status = ?1, started_at = CASE WHEN ?3 > 0 THEN COALESCE(started_at, ?2) ELSE ?2 END, finished_at = NULL,
			error_code = '', error_message = '', vars = CASE WHEN ?3 > 0 THEN vars ELSE '{}' END, resume_from = 0 WHERE id = ?4`,
			duet.StatusRunning, nullMicros(e.StartedAt), from, e.ID)
		return mapErr(err)
	})
	if err != nil {
		return err
	}
	storerules.StartedExecution(e, from)
	return nil
}

// SuspendExecution records the step an interrupted execution resumes at
// (fenced, in one statement).
func (d *DB) SuspendExecution(ctx context.Context, l duet.Lease, executionID string, next int) error {
	res, err := d.q.ExecContext(ctx, `UPDATE executions SET resume_from = ?5 WHERE id = ?4 AND `+heldCond, l.RunID, l.Worker, l.Token, executionID, max(next, 0))
	return changed(res, err, duet.LeaseLost(l))
}

// SaveStepResult stores one step result and the execution's variables
// (fenced).
func (d *DB) SaveStepResult(ctx context.Context, l duet.Lease, executionID string, r *duet.StepResult, vars map[string]any) error {
	data, varsJSON, err := storerules.EncodeStepResult(r, vars)
	if err != nil {
		return err
	}
	return d.tx(ctx, func(tx *cachedTx) error {
		if err := held(ctx, tx, l, executionID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO step_results (execution_id, idx, data) VALUES (?, ?, ?)
			ON CONFLICT (execution_id, idx) DO UPDATE SET data = excluded.data`, executionID, r.Index, data); err != nil {
			return mapErr(err)
		}
		_, err := tx.ExecContext(ctx, `UPDATE executions SET vars = ? WHERE id = ?`, varsJSON, executionID)
		return mapErr(err)
	})
}

// FinishExecution stores the final state of an execution (fenced, in one
// statement).
func (d *DB) FinishExecution(ctx context.Context, l duet.Lease, e *duet.Execution) error {
	varsJSON, err := storerules.MarshalVars(e.Vars)
	if err != nil {
		return err
	}
	res, err := d.q.ExecContext(ctx, `UPDATE executions SET status = ?5, error_code = ?6, error_message = ?7, vars = ?8, started_at = ?9, finished_at = ?10 WHERE id = ?4 AND `+heldCond,
		l.RunID, l.Worker, l.Token, e.ID, e.Status, e.ErrorCode, e.ErrorMessage, varsJSON, nullMicros(e.StartedAt), nullMicros(e.FinishedAt))
	return changed(res, err, duet.LeaseLost(l))
}

// ReleaseRun puts a run the worker holds back in the queue.
func (d *DB) ReleaseRun(ctx context.Context, l duet.Lease) error {
	res, err := d.q.ExecContext(ctx, `UPDATE runs SET status = 'queued', lease_owner = '', lease_expires_at = 0 WHERE id = ? AND lease_owner = ? AND attempt = ? AND status = 'running'`,
		l.RunID, l.Worker, l.Token)
	return changed(res, err, duet.LeaseLost(l))
}

// incompleteSQL finds an execution of run ?1 that a verdict cannot
// summarise: unfinished, or with fewer step results than steps.
const incompleteSQL = `SELECT e.case_title, e.status, e.res, e.n FROM (
		SELECT x.case_title, x.status,
			(SELECT count(*) FROM step_results s WHERE s.execution_id = x.id) AS res,
			json_array_length(x.steps) AS n
		FROM executions x WHERE x.run_id = ?1) e
	WHERE e.status IN ('pending', 'running') OR e.res < e.n
	LIMIT 1`

// runTx is storerules.FinishTx and CancelTx on a SQLite transaction.
type runTx struct {
	storerules.RunRows
	tx *cachedTx
}

// runTx is storerules.FinishTx, CancelTx and RetryTx on tx.
func (d *DB) runTx(tx *cachedTx) runTx { return runTx{storerules.RunRows{E: d.engineOn(tx)}, tx} }

func (t runTx) HeldExecution(ctx context.Context, l duet.Lease, id string) (*duet.Execution, error) {
	if err := held(ctx, t.tx, l, id); err != nil {
		return nil, err
	}
	x, err := storerules.ScanExecution(t.tx.QueryRowContext(ctx, `SELECT `+storerules.ExecColumns+` FROM executions e WHERE e.id = ?`, id))
	if err != nil {
		return nil, mapErr(err)
	}
	return x, loadResults(ctx, t.tx, x)
}

func (t runTx) Incomplete(ctx context.Context, runID string) (title string, status duet.RunStatus, res, n int, ok bool, err error) {
	return storerules.FindIncomplete(ctx, t.E, incompleteSQL, runID)
}

func (t runTx) EndRun(ctx context.Context, runID string, r *duet.Run, postRun string) error {
	_, err := t.tx.ExecContext(ctx, `UPDATE runs SET status = ?, error_code = ?, error_message = ?, finished_at = ?, post_run = ?, lease_owner = '', lease_expires_at = 0 WHERE id = ?`,
		r.Status, r.ErrorCode, r.ErrorMessage, nullMicros(r.FinishedAt), postRun, runID)
	return mapErr(err)
}

func (t runTx) RunFinished(ctx context.Context, runID string, status duet.RunStatus, flaky int, now time.Time) error {
	return enqueueRunFinished(ctx, t.tx, runID, status, flaky, now)
}

func (t runTx) VisibleRun(ctx context.Context, viewer, runID string) (*duet.Run, error) {
	q := `SELECT ` + runColumns + ` FROM runs r JOIN tasks t ON t.id = r.task_id WHERE r.id = ?2` + visibility(viewer)
	run, err := scanRun(t.tx.QueryRowContext(ctx, q, viewer, runID))
	return run, found(err, "run", runID)
}

// DeleteExpiredIdempotency removes expired idempotency records.
func (d *DB) DeleteExpiredIdempotency(ctx context.Context, now time.Time) (int, error) {
	res, err := d.q.ExecContext(ctx, `DELETE FROM idempotency WHERE expires_at <= ?`, micros(now))
	if err != nil {
		return 0, mapErr(err)
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}
