package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/storerules"
)

// runColumns, scanRun and scanRunTail read a run (storerules.ScanRun).
const runColumns = storerules.RunColumns

func scanRun(r rowScanner) (*duet.Run, error) { return storerules.ScanRun(r) }

var scanRunTail = storerules.ScanRun

// runTotals is a column that counts a run's executions by status (the
// order of setTotals), so that a run is read with its totals in one
// statement: the subquery in the select list runs only for the rows the
// statement returns.
const runTotals = `(SELECT ARRAY[count(*),
	count(*) FILTER (WHERE e.status = 'pending'), count(*) FILTER (WHERE e.status = 'running'),
	count(*) FILTER (WHERE e.status = 'passed'), count(*) FILTER (WHERE e.status = 'failed'),
	count(*) FILTER (WHERE e.status = 'error'), count(*) FILTER (WHERE e.status IN ('cancelled', 'skipped')),
	count(*) FILTER (WHERE e.status = 'flaky')]
	FROM executions e WHERE e.run_id = r.id)`

// runWithTotals is runColumns and runTotals: scanRunTotals reads them.
const runWithTotals = runColumns + `, ` + runTotals

// scanRunTotals scans runWithTotals.
func scanRunTotals(r rowScanner) (*duet.Run, error) {
	var n []int64
	run, err := scanRunTail(r, &n)
	if err != nil {
		return nil, err
	}
	if len(n) != 8 {
		return nil, fmt.Errorf("run %s: %d totals", run.ID, len(n))
	}
	run.Totals = duet.RunTotals{Cases: int(n[0]), Pending: int(n[1]), Running: int(n[2]), Passed: int(n[3]), Failed: int(n[4]), Error: int(n[5]), Cancelled: int(n[6]), Flaky: int(n[7])}
	return run, nil
}

// fillTotals counts the executions of each run by status, on q.
func fillTotals(ctx context.Context, q querier, runs ...*duet.Run) error {
	return storerules.FillTotals(ctx, engineOf(q), runs...)
}

// CreateRun stores a queued run and its executions, honouring idempotency.
// Concurrent calls with the same idempotency key, on any instance, take
// turns on an advisory lock of (caller, key): the first creates the run, the
// others replay its result. Returns IDEMPOTENCY_CONFLICT, INVALID_ARGUMENT,
// RATE_LIMITED.
//
// It is one round trip: one batch, which PostgreSQL runs as one
// transaction. Its statements take the locks, read the stored idempotency
// record and the user's run counts, and insert the run only when no record
// is stored and the counts are under the caps; the executions, the new
// idempotency record and the call's pending audit record
// (duet.AuditIntent) are inserted only with the run. What the batch read
// then says what happened: a replay, a refusal, or the new run.
func (d *DB) CreateRun(ctx context.Context, p duet.StartRunParams) (*duet.IdempotencyRecord, bool, error) {
	if err := storerules.CheckRun(p); err != nil {
		return nil, false, err
	}
	now := ts(d.now())
	if p.Idempotency != nil {
		p.Idempotency.ExpiresAt = ts(p.Idempotency.ExpiresAt)
	}
	plan, err := storerules.PlanRun(p, now)
	if err != nil {
		return nil, false, err
	}
	n := len(p.Executions)
	ids, caseIDs, keys, titles := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	versions, ordinals, timeouts, retries := make([]int32, n), make([]int32, n), make([]int64, n), make([]int32, n)
	for i, e := range p.Executions {
		ids[i], caseIDs[i], keys[i], titles[i] = e.ID, e.CaseID, e.CaseKey, e.CaseTitle
		versions[i], ordinals[i], timeouts[i], retries[i] = int32(e.CaseVersion), int32(i), e.TimeoutMs, int32(e.Retries)
	}
	rec := plan.Idempotency
	steps, rows := plan.Steps, plan.Rows

	in := duet.AuditIntentFrom(ctx)
	for attempt := 0; attempt < 3; attempt++ {
		var old *duet.IdempotencyRecord
		var audit *duet.AuditRecord
		old, audit, err = d.createRun(ctx, p, now, steps, ids, caseIDs, keys, titles, rows, versions, ordinals, timeouts, retries, in)
		if audit != nil {
			if err == nil && old == nil {
				in.Stored(audit.ID)
			} else {
				in.Released()
			}
		}
		if err == nil && old != nil {
			return old, true, nil
		}
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || (pe.Code != "40P01" && pe.Code != "40001") {
			break
		}
	}
	if err != nil {
		return nil, false, mapErr(err)
	}
	return rec, false, nil
}

// createRun sends CreateRun's batch. It returns the stored idempotency
// record of a replay (nothing was written), or an error (a refusal: nothing
// was written); else the run was stored, with the audit record it returns,
// if it took one from in.
func (d *DB) createRun(ctx context.Context, p duet.StartRunParams, now time.Time, steps, ids, caseIDs, keys, titles, rows []string,
	versions, ordinals []int32, timeouts []int64, retries []int32, in *duet.AuditIntent) (*duet.IdempotencyRecord, *duet.AuditRecord, error) {
	run := p.Run
	var b pgx.Batch
	// $1 the run's id: a statement after the run's insert writes only if
	// the run was inserted.
	const withRun = ` WHERE EXISTS (SELECT 1 FROM runs WHERE id = $1)`
	idem := p.Idempotency
	// $12 and $13 the idempotency record's caller and key ("": none).
	guard := `($12 = '' OR NOT EXISTS (SELECT 1 FROM idempotency WHERE caller = $12 AND key = $13 AND expires_at > $8))`
	if idem != nil {
		b.Queue(`SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, "idem\x1f"+idem.Caller+"\x1f"+idem.Key)
		b.Queue(`SELECT caller, key, tool, args_hash, result, created_at, expires_at FROM idempotency WHERE caller = $1 AND key = $2 AND expires_at > $3`,
			idem.Caller, idem.Key, now)
	}
	if p.MaxQueued > 0 || p.MaxPerMinute > 0 {
		// One user's starts take turns here, so that concurrent starts on
		// several instances cannot all see room under the caps.
		b.Queue(`SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, "queue\x1f"+run.TriggeredBy)
	}
	var idemCaller, idemKey string
	if idem != nil {
		idemCaller, idemKey = idem.Caller, idem.Key
	}
	// A schedule's run: the slot's claim (p.Fire) is the schedule's row
	// locked while it still waits for that slot; the run is inserted only
	// if it does, and the claim written only with the run.
	fire := p.Fire
	var fireID string
	fireSlot := now
	if fire != nil {
		fireID, fireSlot = fire.ScheduleID, ts(fire.Slot)
		b.Queue(`SELECT 1 FROM schedules WHERE id = $1 AND next_fire_at = $2 AND NOT paused FOR UPDATE`, fireID, fireSlot)
	}
	o := run.Origin
	if o == nil {
		o = &duet.RunOrigin{}
	}
	b.Queue(`WITH started AS (SELECT count(*) AS n, min(created_at) AS oldest FROM runs WHERE triggered_by = $4 AND created_at > $14),
		queued AS (SELECT count(*) AS n FROM runs WHERE triggered_by = $4 AND status = 'queued' AND $11 > 0),
		ins AS (INSERT INTO runs (id, task_id, status, triggered_by, call_source, trace_id, device, created_at, call_depth,
				origin_commit, origin_branch, origin_pr, origin_pipeline, environment, trace)
			SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $15, $16, $17, $18, $19, $20 FROM started, queued
			WHERE `+guard+` AND ($10 = 0 OR started.n < $10) AND ($11 = 0 OR queued.n < $11)
				AND ($21 = '' OR EXISTS (SELECT 1 FROM schedules WHERE id = $21 AND next_fire_at = $22 AND NOT paused))
			RETURNING 1)
		SELECT started.n, started.oldest, queued.n, (SELECT count(*) FROM ins) FROM started, queued`,
		run.ID, run.TaskID, run.Status, run.TriggeredBy, run.CallSource, run.TraceID, run.Device, now, run.CallDepth,
		p.MaxPerMinute, p.MaxQueued, idemCaller, idemKey, now.Add(-time.Minute),
		o.Commit, o.Branch, o.PullRequest, o.Pipeline, run.Environment, run.Trace, fireID, fireSlot)
	b.Queue(`INSERT INTO executions (id, run_id, case_id, case_key, case_title, case_version, ordinal, timeout_ms, status, steps, row, retries, attempt)
		SELECT x.id, $1, x.case_id, x.case_key, x.case_title, x.case_version, x.ordinal, x.timeout_ms, 'pending', x.steps, x.row, x.retries, 1
		FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::int[], $7::int[], $8::bigint[], $9::text[], $10::text[], $11::int[])
			AS x (id, case_id, case_key, case_title, case_version, ordinal, timeout_ms, steps, row, retries)`+withRun,
		run.ID, ids, caseIDs, keys, titles, versions, ordinals, timeouts, steps, rows, retries)
	if fire != nil {
		b.Queue(`UPDATE schedules SET next_fire_at = $2, last_fire_at = $3, last_run_id = $1, last_error = '', updated_at = $4
			WHERE id = $5 AND next_fire_at = $6 AND NOT paused AND EXISTS (SELECT 1 FROM runs WHERE id = $1)`,
			run.ID, ts(fire.Next), ts(fire.RunSlot), now, fireID, fireSlot)
	}
	if idem != nil {
		b.Queue(`INSERT INTO idempotency (caller, key, tool, args_hash, result, created_at, expires_at) SELECT $2, $3, $4, $5, $6, $7, $8`+withRun+`
			ON CONFLICT (caller, key) DO UPDATE SET tool = excluded.tool, args_hash = excluded.args_hash, result = excluded.result, created_at = excluded.created_at, expires_at = excluded.expires_at`,
			run.ID, idem.Caller, idem.Key, idem.Tool, idem.ArgsHash, string(idem.Result), now, idem.ExpiresAt)
	}
	audit := in.Take()
	if audit != nil {
		b.Queue(`INSERT INTO audit (time, trace_id, call_source, caller, method, tool, outcome, duration_us, arg_bytes, result_bytes)
			SELECT $2, $3, $4, $5, $6, $7, $8, $9, $10, $11`+withRun+` RETURNING id`,
			run.ID, ts(audit.Time), audit.TraceID, string(audit.CallSource), audit.Caller, audit.Method, audit.Tool, string(audit.Outcome), audit.DurationUs, int32(audit.ArgBytes), int32(audit.ResultBytes))
	}

	br := d.pool.SendBatch(ctx, &b)
	defer br.Close()
	var old *duet.IdempotencyRecord
	if idem != nil {
		if _, err := br.Exec(); err != nil {
			return nil, audit, err
		}
		var o duet.IdempotencyRecord
		var result string
		err := br.QueryRow().Scan(&o.Caller, &o.Key, &o.Tool, &o.ArgsHash, &result, &o.CreatedAt, &o.ExpiresAt)
		switch {
		case err == nil:
			o.Result, o.CreatedAt, o.ExpiresAt = json.RawMessage(result), utc(o.CreatedAt), utc(o.ExpiresAt)
			old = &o
		case !errors.Is(err, pgx.ErrNoRows):
			return nil, audit, err
		}
	}
	if p.MaxQueued > 0 || p.MaxPerMinute > 0 {
		if _, err := br.Exec(); err != nil {
			return nil, audit, err
		}
	}
	claimed := true
	if fire != nil {
		var one int
		err := br.QueryRow().Scan(&one)
		if errors.Is(err, pgx.ErrNoRows) {
			claimed = false
		} else if err != nil {
			return nil, audit, err
		}
	}
	var started, queued, inserted int
	var oldest *time.Time
	if err := br.QueryRow().Scan(&started, &oldest, &queued, &inserted); err != nil {
		return nil, audit, err
	}
	if _, err := br.Exec(); err != nil { // the executions
		return nil, audit, err
	}
	if fire != nil {
		if _, err := br.Exec(); err != nil { // the claim
			return nil, audit, err
		}
	}
	if idem != nil {
		if _, err := br.Exec(); err != nil {
			return nil, audit, err
		}
	}
	if audit != nil {
		err := br.QueryRow().Scan(&audit.ID)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return nil, audit, err
		}
	}
	if err := br.Close(); err != nil {
		return nil, audit, err
	}
	switch {
	case !claimed:
		return nil, audit, storerules.SlotTaken(fire)
	case old != nil:
		return old, audit, storerules.Replay(old, idem)
	case inserted == 1:
		return nil, audit, nil
	case p.MaxPerMinute > 0 && started >= p.MaxPerMinute && oldest != nil:
		return nil, audit, storerules.PerMinuteError(run.TriggeredBy, started, *oldest, now)
	case p.MaxQueued > 0 && queued >= p.MaxQueued:
		return nil, audit, storerules.QueuedError(run.TriggeredBy, queued)
	}
	return nil, audit, fmt.Errorf("postgres: the run %s was not stored", run.ID)
}

// FindRunByID returns the run if viewer may see its task ("" = any).
// Returns NOT_FOUND.
func (d *DB) FindRunByID(ctx context.Context, viewer, id string) (*duet.Run, error) {
	if viewer == "" || d.runs == nil {
		return d.findRunByID(ctx, viewer, id)
	}
	return d.runs.get(ctx, readKey{viewer, id})
}

// findRunByID is FindRunByID's read alone.
func (d *DB) findRunByID(ctx context.Context, viewer, id string) (*duet.Run, error) {
	run, err := scanRunTotals(d.pool.QueryRow(ctx, runByID.of(viewer), viewer, id))
	if err != nil {
		return nil, found(err, "run", id)
	}
	return run, nil
}

// runByID is runByIDQuery's two statements.
var runByID = statementsOf(runByIDQuery)

// runByIDQuery is the statement of FindRunByID ($1 the viewer, $2 the
// run's id).
func runByIDQuery(viewer string) string {
	return `SELECT ` + runWithTotals + ` FROM runs r JOIN tasks t ON t.id = r.task_id WHERE r.id = $2` + visibility(viewer)
}

// runsTogetherQuery is the statement of run reads together: runByIDQuery for
// readPairs.
var runsTogetherQuery = `SELECT q.ord, o.* FROM ` + readPairs + `
	CROSS JOIN LATERAL (` + pairParams.Replace(runByIDQuery("viewer")) + `) o`

// runsWhere returns the FROM and WHERE of the runs f selects (its Cursor
// and Limit aside), their arguments added to a.
func runsWhere(f duet.RunFilter, a *args) (from, cond string) {
	cond = `TRUE`
	from = ` FROM runs r JOIN tasks t ON t.id = r.task_id`
	switch {
	case f.Viewer != "" && f.TaskID != "":
		a.add(f.Viewer) // $1 of visibleTo
		cond = visibleTo
	case f.Viewer != "":
		// Every visible task's runs (runs_task), not every run tested
		// against visibleTo.
		a.add(f.Viewer) // $1 of visibleTaskIDs
		from = ` FROM ` + visibleTaskIDs + ` AS v JOIN runs r ON r.task_id = v.id`
	}
	if f.TaskID != "" {
		cond += ` AND r.task_id = ` + a.add(f.TaskID)
	}
	if f.Status != "" {
		cond += ` AND r.status = ` + a.add(string(f.Status))
	}
	if f.Branch != "" {
		cond += ` AND r.origin_branch = ` + a.add(f.Branch)
	}
	if f.Commit != "" {
		cond += ` AND r.origin_commit = ` + a.add(f.Commit)
	}
	if f.UpTo != "" {
		cond += ` AND r.id <= ` + a.add(f.UpTo)
	}
	return from, cond
}

// CountRuns returns how many runs f selects.
func (d *DB) CountRuns(ctx context.Context, f duet.RunFilter) (int, error) {
	a := args{}
	from, cond := runsWhere(f, &a)
	var n int
	if err := d.pool.QueryRow(ctx, `SELECT count(*)`+from+` WHERE `+cond, a...).Scan(&n); err != nil {
		return 0, mapErr(err)
	}
	return n, nil
}

// runsQuery is the statement of FindRuns: limit+1 runs of f, newest
// first, with their totals (scanRunTotals), older than the run before if
// set.
func runsQuery(f duet.RunFilter, before string, limit int) (string, args) {
	a := args{}
	from, cond := runsWhere(f, &a)
	if before != "" {
		cond += ` AND r.id < ` + a.add(before)
	}
	return `SELECT ` + runWithTotals + from + ` WHERE ` + cond + ` ORDER BY r.id DESC LIMIT ` + a.add(limit+1), a
}

// FindRuns returns a page of runs, newest first.
func (d *DB) FindRuns(ctx context.Context, f duet.RunFilter) ([]*duet.Run, string, error) {
	before, err := storerules.DecodeCursor(f.Cursor)
	if err != nil {
		return nil, "", err
	}
	limit := storerules.ClampLimit(f.Limit, 20, 100)
	q, a := runsQuery(f, before, limit)
	rows, err := d.pool.Query(ctx, q, a...)
	if err != nil {
		return nil, "", mapErr(err)
	}
	runs, err := collect(rows, scanRunTotals)
	if err != nil {
		return nil, "", err
	}
	runs, next := storerules.Page(runs, limit, func(r *duet.Run) string { return r.ID })
	return runs, next, nil
}

// loadResults fills Results and Attempts of the executions, on q.
func loadResults(ctx context.Context, q querier, execs ...*duet.Execution) error {
	return storerules.LoadResults(ctx, engineOf(q), execs...)
}

// FindExecutionByID returns an execution if viewer may see its task ("" =
// any). Returns NOT_FOUND.
func (d *DB) FindExecutionByID(ctx context.Context, viewer, id string) (*duet.Execution, error) {
	e, _, err := d.findExecution(ctx, viewer, id, false)
	return e, err
}

// FindExecutionAndRun reads the execution, with its results, and its run,
// with its totals, in one statement.
func (d *DB) FindExecutionAndRun(ctx context.Context, viewer, id string) (*duet.Execution, *duet.Run, error) {
	return d.findExecution(ctx, viewer, id, true)
}

// findExecution reads the execution and its step results in one
// statement; withRun, its run with its totals too, as a row value of the
// same statement (the run it joins to check the visibility).
func (d *DB) findExecution(ctx context.Context, viewer, id string, withRun bool) (*duet.Execution, *duet.Run, error) {
	runCol := ``
	if withRun {
		runCol = `, ROW(` + runWithTotals + `)`
	}
	rows, err := d.pool.Query(ctx, `SELECT `+storerules.ExecColumns+`, `+execResultLists+runCol+`
		FROM executions e JOIN runs r ON r.id = e.run_id JOIN tasks t ON t.id = r.task_id WHERE e.id = $2`+visibility(viewer), viewer, id)
	if err != nil {
		return nil, nil, mapErr(err)
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return nil, nil, mapErr(err)
		}
		return nil, nil, storerules.NotFound("execution", id)
	}
	var results, attempts []string
	var runRec pgtype.UndecodedBytes
	tail := []any{&results, &attempts}
	if withRun {
		tail = append(tail, &runRec)
	}
	e, err := storerules.ScanExecution(tailRow{rows, tail})
	if err != nil {
		return nil, nil, mapErr(err)
	}
	if err := addResultLists(e, results, attempts); err != nil {
		return nil, nil, err
	}
	var run *duet.Run
	if withRun {
		// Decoded before the rows close (recordRow).
		if run, err = scanRunTotals(recordRow{rows.Conn().TypeMap(), runRec}); err != nil {
			return nil, nil, mapErr(err)
		}
	}
	rows.Close()
	return e, run, mapErr(rows.Err())
}

// ClaimRun takes a queued run, or a running run whose lease expired (its
// worker died), for worker, fairly across executors (see duet.RunStore).
func (d *DB) ClaimRun(ctx context.Context, worker string, lease time.Duration) (*duet.Run, error) {
	return d.claim(ctx, "", worker, lease)
}

// ClaimRunByID claims one run if it is queued or its lease expired.
func (d *DB) ClaimRunByID(ctx context.Context, runID, worker string, lease time.Duration) (*duet.Run, error) {
	return d.claim(ctx, runID, worker, lease)
}

// claimSQL takes one claimable run in one statement. The candidate query
// locks its row with FOR UPDATE SKIP LOCKED: a run another worker is
// claiming at this instant is skipped, not waited for, so concurrent workers
// of any number of processes never take the same run and never queue behind
// each other. A row that another transaction changed meanwhile is checked
// again after its lock (READ COMMITTED re-evaluates the WHERE clause on the
// new row), so a run claimed or cancelled a moment ago is not taken.
//
// The order of candidates is the scheduling policy, the same as SQLite's:
// the runs of the executor with the fewest runs running under a live lease
// first, then of the executor served least recently (never served first),
// then the oldest run (ids sort by creation time). The keys are
// subqueries, which FOR UPDATE SKIP LOCKED allows (an aggregate over the
// locked rows themselves it would not), computed once per executor with a
// claimable run (executors), not once per claimable run: with one person's
// 600 runs queued, keys per run made each claim read some 21,000 pages and
// the claims of the queue grow with its square (docs/performance.md, part
// 16). A run still marked running when it is claimed lost its worker: lost
// counts it.
const claimSQL = `WITH executors AS MATERIALIZED (
		SELECT k.triggered_by,
			(SELECT count(*) FROM runs x WHERE x.triggered_by = k.triggered_by AND x.status = 'running' AND x.lease_expires_at >= $1) AS busy,
			(SELECT max(x.claimed_at) FROM runs x WHERE x.triggered_by = k.triggered_by) AS served
		FROM (SELECT DISTINCT c.triggered_by FROM runs c
			WHERE c.status IN ('queued', 'running')
			  AND (c.status = 'queued' OR c.lease_expires_at < $1)
			  AND ($2 = '' OR c.id = $2)) k
	),
	candidate AS (
		SELECT c.id FROM runs c JOIN executors k ON k.triggered_by = c.triggered_by
		WHERE c.status IN ('queued', 'running')
		  AND (c.status = 'queued' OR c.lease_expires_at < $1)
		  AND ($2 = '' OR c.id = $2)
		ORDER BY k.busy, k.served NULLS FIRST, c.id
		LIMIT 1
		FOR UPDATE OF c SKIP LOCKED
	)
	UPDATE runs r SET lost = r.lost + CASE WHEN r.status = 'running' THEN 1 ELSE 0 END,
		status = 'running', lease_owner = $3, lease_expires_at = $4, attempt = r.attempt + 1,
		claimed_at = $1, started_at = COALESCE(r.started_at, $1)
	FROM candidate WHERE r.id = candidate.id
	RETURNING ` + runColumns

func (d *DB) claim(ctx context.Context, only, worker string, lease time.Duration) (*duet.Run, error) {
	now := ts(d.now())
	run, err := scanRun(d.pool.QueryRow(ctx, claimSQL, now, only, worker, now.Add(lease)))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	} else if err != nil {
		return nil, mapErr(err)
	}
	return run, fillTotals(ctx, d.pool, run)
}

// RenewLease extends the worker's lease and returns the current run.
// Returns LEASE_LOST when the worker no longer holds the run under l.
func (d *DB) RenewLease(ctx context.Context, l duet.Lease, lease time.Duration) (*duet.Run, error) {
	run, err := scanRun(d.pool.QueryRow(ctx, `UPDATE runs r SET lease_expires_at = $1 WHERE r.id = $2 AND r.lease_owner = $3 AND r.attempt = $4 AND r.status = 'running' RETURNING `+runColumns,
		ts(d.now().Add(lease)), l.RunID, l.Worker, l.Token))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, duet.LeaseLost(l)
	}
	return run, mapErr(err)
}

// heldSQL is the fence of a write of an execution's results: the execution
// ($4) of the run ($1) that worker $2 holds under its claim $3. It locks
// the run row FOR SHARE, so the write and a claim of the run take turns: a
// claim that commits first leaves the fence empty (READ COMMITTED checks
// the locked row again), and a claim that comes second waits for the write.
const heldSQL = `held AS (SELECT e.id FROM runs r JOIN executions e ON e.run_id = r.id
		WHERE r.id = $1 AND r.lease_owner = $2 AND r.attempt = $3 AND r.status = 'running' AND e.id = $4
		FOR SHARE OF r)`

// held fences a write of execution id's results in tx: LEASE_LOST unless
// l holds its run (heldSQL, which locks the run row until tx ends).
func held(ctx context.Context, tx pgx.Tx, l duet.Lease, id string) error {
	var n int
	if err := tx.QueryRow(ctx, `WITH `+heldSQL+` SELECT count(*) FROM held`, l.RunID, l.Worker, l.Token, id).Scan(&n); err != nil {
		return mapErr(err)
	}
	if n == 0 {
		return duet.LeaseLost(l)
	}
	return nil
}

// StartExecution marks an execution running and drops results of an earlier
// interrupted attempt (from e.ResumeFrom on), in one fenced statement (one
// round trip per case).
func (d *DB) StartExecution(ctx context.Context, l duet.Lease, e *duet.Execution) error {
	from := max(e.ResumeFrom, 0)
	tag, err := d.pool.Exec(ctx, `WITH `+heldSQL+`,
		dropped AS (DELETE FROM step_results WHERE execution_id IN (SELECT id FROM held) AND idx >= $7)
		UPDATE executions SET status = $5, started_at = CASE WHEN $7 > 0 THEN COALESCE(started_at, $6) ELSE $6 END, finished_at = NULL,
			error_code = '', error_message = '', vars = CASE WHEN $7 > 0 THEN vars ELSE '{}' END, resume_from = 0
		WHERE id IN (SELECT id FROM held)`,
		l.RunID, l.Worker, l.Token, e.ID, duet.StatusRunning, nullTime(e.StartedAt), from)
	if err != nil {
		return mapErr(err)
	}
	if tag.RowsAffected() == 0 {
		return duet.LeaseLost(l)
	}
	storerules.StartedExecution(e, from)
	return nil
}

// SuspendExecution records the step an interrupted execution resumes at
// (fenced).
func (d *DB) SuspendExecution(ctx context.Context, l duet.Lease, executionID string, next int) error {
	tag, err := d.pool.Exec(ctx, `WITH `+heldSQL+` UPDATE executions SET resume_from = $5 WHERE id IN (SELECT id FROM held)`,
		l.RunID, l.Worker, l.Token, executionID, max(next, 0))
	return changed(tag, err, duet.LeaseLost(l))
}

// SaveStepResult stores one step result and the execution's variables, in
// one fenced round trip.
func (d *DB) SaveStepResult(ctx context.Context, l duet.Lease, executionID string, r *duet.StepResult, vars map[string]any) error {
	data, varsJSON, err := storerules.EncodeStepResult(r, vars)
	if err != nil {
		return err
	}
	tag, err := d.pool.Exec(ctx, `WITH `+heldSQL+`,
		saved AS (
			INSERT INTO step_results (execution_id, idx, data) SELECT id, $5, $6 FROM held
			ON CONFLICT (execution_id, idx) DO UPDATE SET data = excluded.data
		)
		UPDATE executions SET vars = $7 WHERE id IN (SELECT id FROM held)`, l.RunID, l.Worker, l.Token, executionID, r.Index, data, varsJSON)
	return changed(tag, err, duet.LeaseLost(l))
}

// FinishExecution stores the final state of an execution (fenced).
func (d *DB) FinishExecution(ctx context.Context, l duet.Lease, e *duet.Execution) error {
	varsJSON, err := storerules.MarshalVars(e.Vars)
	if err != nil {
		return err
	}
	tag, err := d.pool.Exec(ctx, `WITH `+heldSQL+`
		UPDATE executions SET status = $5, error_code = $6, error_message = $7, vars = $8, started_at = $9, finished_at = $10 WHERE id IN (SELECT id FROM held)`,
		l.RunID, l.Worker, l.Token, e.ID, e.Status, e.ErrorCode, e.ErrorMessage, varsJSON, nullTime(e.StartedAt), nullTime(e.FinishedAt))
	return changed(tag, err, duet.LeaseLost(l))
}

// ReleaseRun puts a run the worker holds back in the queue.
func (d *DB) ReleaseRun(ctx context.Context, l duet.Lease) error {
	tag, err := d.pool.Exec(ctx, `UPDATE runs SET status = 'queued', lease_owner = '', lease_expires_at = NULL WHERE id = $1 AND lease_owner = $2 AND attempt = $3 AND status = 'running'`,
		l.RunID, l.Worker, l.Token)
	return changed(tag, err, duet.LeaseLost(l))
}

// incompleteSQL finds an execution of run $1 that a verdict cannot
// summarise: unfinished, or with fewer step results than steps.
const incompleteSQL = `SELECT e.case_title, e.status, e.res, e.n FROM (
		SELECT x.case_title, x.status,
			(SELECT count(*) FROM step_results s WHERE s.execution_id = x.id) AS res,
			CASE WHEN json_typeof(x.steps::json) = 'array' THEN json_array_length(x.steps::json) ELSE 0 END AS n
		FROM executions x WHERE x.run_id = $1) e
	WHERE e.status IN ('pending', 'running') OR e.res < e.n
	LIMIT 1`

// runTx is storerules.FinishTx and CancelTx on a PostgreSQL transaction.
// The run row is locked first, then its executions: the order FinishRun,
// RequestCancel and RetryExecution all take them in, so they never
// deadlock.
type runTx struct {
	storerules.RunRows
	tx pgx.Tx
}

// runTx is storerules.FinishTx, CancelTx and RetryTx on tx.
func (d *DB) runTx(tx pgx.Tx) runTx { return runTx{storerules.RunRows{E: d.engineOn(tx)}, tx} }

func (t runTx) HeldExecution(ctx context.Context, l duet.Lease, id string) (*duet.Execution, error) {
	x, err := storerules.ScanExecution(t.tx.QueryRow(ctx, `WITH `+heldSQL+` SELECT `+storerules.ExecColumns+` FROM executions e WHERE e.id IN (SELECT id FROM held) FOR UPDATE OF e`,
		l.RunID, l.Worker, l.Token, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, duet.LeaseLost(l)
	} else if err != nil {
		return nil, mapErr(err)
	}
	return x, loadResults(ctx, t.tx, x)
}

func (t runTx) Incomplete(ctx context.Context, runID string) (title string, status duet.RunStatus, res, n int, ok bool, err error) {
	return storerules.FindIncomplete(ctx, t.E, incompleteSQL, runID)
}

func (t runTx) EndRun(ctx context.Context, runID string, r *duet.Run, postRun string) error {
	_, err := t.tx.Exec(ctx, `UPDATE runs SET status = $1, error_code = $2, error_message = $3, finished_at = $4, post_run = $5, lease_owner = '', lease_expires_at = NULL WHERE id = $6`,
		r.Status, r.ErrorCode, r.ErrorMessage, nullTime(r.FinishedAt), postRun, runID)
	return mapErr(err)
}

func (t runTx) RunFinished(ctx context.Context, runID string, status duet.RunStatus, flaky int, now time.Time) error {
	return enqueueRunFinished(ctx, t.tx, runID, status, flaky, now)
}

func (t runTx) VisibleRun(ctx context.Context, viewer, runID string) (*duet.Run, error) {
	q := `SELECT ` + runColumns + ` FROM runs r JOIN tasks t ON t.id = r.task_id WHERE r.id = $2` + visibility(viewer) + ` FOR UPDATE OF r`
	run, err := scanRun(t.tx.QueryRow(ctx, q, viewer, runID))
	return run, found(err, "run", runID)
}

// DeleteExpiredIdempotency removes expired idempotency records.
func (d *DB) DeleteExpiredIdempotency(ctx context.Context, now time.Time) (int, error) {
	tag, err := d.pool.Exec(ctx, `DELETE FROM idempotency WHERE expires_at <= $1`, ts(now))
	if err != nil {
		return 0, mapErr(err)
	}
	return int(tag.RowsAffected()), nil
}
