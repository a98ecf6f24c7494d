package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/duet-test/duet"
)

const caseColumns = `c.id, c.task_id, c.key, c.title, c.source, c.source_hash, c.steps, c.timeout_ms, c.version, c.status, c.created_by, c.created_at, c.updated_at, c.row, c.retries, c.tags`

func scanCase(r pgx.Row) (*duet.Case, error) {
	var c duet.Case
	var steps, row, tags string
	if err := r.Scan(&c.ID, &c.TaskID, &c.Key, &c.Title, &c.Source, &c.SourceHash, &steps, &c.TimeoutMs, &c.Version, &c.Status, &c.CreatedBy, &c.CreatedAt, &c.UpdatedAt, &row, &c.Retries, &tags); err != nil {
		return nil, err
	}
	if tags != "" {
		if err := json.Unmarshal([]byte(tags), &c.Tags); err != nil {
			return nil, fmt.Errorf("case %s: decoding its tags: %w", c.ID, err)
		}
	}
	if err := json.Unmarshal([]byte(steps), &c.Steps); err != nil {
		return nil, fmt.Errorf("case %s: decoding steps: %w", c.ID, err)
	}
	var err error
	if c.Row, err = decodeRow(row); err != nil {
		return nil, fmt.Errorf("case %s: decoding its data row: %w", c.ID, err)
	}
	c.CreatedAt, c.UpdatedAt = utc(c.CreatedAt), utc(c.UpdatedAt)
	return &c, nil
}

// tailRow is a row whose last columns, after those its scanner reads,
// go to tail.
type tailRow struct {
	pgx.Row
	tail []any
}

func (r tailRow) Scan(dest ...any) error { return r.Row.Scan(append(dest, r.tail...)...) }

const insertCase = `INSERT INTO cases (id, task_id, key, title, source, source_hash, steps, timeout_ms, version, status, created_by, created_at, updated_at, row, retries, tags)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)`

// ApplySuite creates or updates owner's task and its cases in one transaction.
// Applies of the same task by several instances take turns (an advisory
// lock on owner and name). Returns INVALID_ARGUMENT.
func (d *DB) ApplySuite(ctx context.Context, owner string, s *duet.Suite) (*duet.ApplyResult, error) {
	if owner == "" {
		return nil, duet.Errorf(duet.CodeInvalidArgument, "owner is empty")
	}
	if s == nil || s.Task.Name == "" {
		return nil, duet.Errorf(duet.CodeInvalidArgument, "task name is empty")
	}
	if err := duet.ValidUserID(owner); err != nil {
		return nil, err
	}
	for _, u := range s.Task.SharedWith {
		if err := duet.ValidPrincipal(strings.TrimSpace(u)); err != nil {
			return nil, duet.Errorf(duet.CodeInvalidArgument, "sharedWith: %s", duet.ErrorMessage(err))
		}
	}
	var res *duet.ApplyResult
	err := d.tx(ctx, func(tx pgx.Tx) error {
		res = &duet.ApplyResult{}
		if err := lockKey(ctx, tx, "task\x1f"+owner+"\x1f"+s.Task.Name); err != nil {
			return err
		}
		now := ts(d.now())
		want := s.Task
		postRun, err := encodePostRun(want.PostRun)
		if err != nil {
			return err
		}
		runCfg, err := encodeRunConfig(&want)
		if err != nil {
			return err
		}
		task, err := findTaskByName(ctx, tx, owner, want.Name)
		switch {
		case duet.ErrorCode(err) == duet.CodeNotFound:
			task = &duet.Task{
				ID: duet.NewID("task"), Owner: owner, Name: want.Name, Description: want.Description,
				BaseURL: want.BaseURL, Device: want.Device, SharedWith: sortedUnique(want.SharedWith, owner),
				PostRun: want.PostRun, CreatedAt: now, UpdatedAt: now,
				Environments: want.Environments, DefaultEnvironment: want.DefaultEnvironment, BeforeAll: want.BeforeAll, AfterAll: want.AfterAll,
				BeforeEach: want.BeforeEach, AfterEach: want.AfterEach, HookSaves: want.HookSaves,
			}
			if len(task.PostRun) > 0 {
				task.PostRunBy = owner
			}
			if duet.HooksHash(task) != "" {
				task.HooksBy = owner
			}
			if _, err := tx.Exec(ctx, `INSERT INTO tasks (id, owner, name, description, base_url, device, post_run, post_run_by, run_config, hooks_by, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
				task.ID, owner, task.Name, task.Description, task.BaseURL, task.Device, postRun, task.PostRunBy, runCfg, task.HooksBy, now, now); err != nil {
				return mapErr(err)
			}
			if err := setShares(ctx, tx, task.ID, task.SharedWith, now); err != nil {
				return err
			}
			res.TaskAction = duet.ApplyCreated
		case err != nil:
			return err
		default:
			res.TaskAction = duet.ApplyUnchanged
			shares := task.SharedWith
			if want.SharedWith != nil {
				shares = sortedUnique(want.SharedWith, owner)
			}
			postRunChanged := duet.PostRunHash(task.PostRun) != duet.PostRunHash(want.PostRun)
			oldCfg, err := encodeRunConfig(task)
			if err != nil {
				return err
			}
			hooksChanged := duet.HooksHash(task) != duet.HooksHash(&want)
			if task.Description != want.Description || task.BaseURL != want.BaseURL || task.Device != want.Device || !slices.Equal(shares, task.SharedWith) || postRunChanged || oldCfg != runCfg {
				task.Description, task.BaseURL, task.Device, task.UpdatedAt = want.Description, want.BaseURL, want.Device, now
				task.Environments, task.DefaultEnvironment, task.BeforeAll, task.AfterAll = want.Environments, want.DefaultEnvironment, want.BeforeAll, want.AfterAll
				task.BeforeEach, task.AfterEach, task.HookSaves = want.BeforeEach, want.AfterEach, want.HookSaves
				task.Retries, task.CaseTimeoutMs, task.Tags, task.Parallel = want.Retries, want.CaseTimeoutMs, want.Tags, want.Parallel
				if hooksChanged {
					// The applier wrote this version of the hooks.
					task.HooksBy = ""
					if duet.HooksHash(task) != "" {
						task.HooksBy = owner
					}
				}
				if postRunChanged {
					// The applier wrote this version of the actions:
					// approvals depend on it.
					task.PostRun, task.PostRunBy = want.PostRun, ""
					if len(want.PostRun) > 0 {
						task.PostRunBy = owner
					}
				}
				stored, err := encodePostRun(task.PostRun)
				if err != nil {
					return err
				}
				if _, err := tx.Exec(ctx, `UPDATE tasks SET description = $1, base_url = $2, device = $3, post_run = $4, post_run_by = $5, run_config = $6, hooks_by = $7, updated_at = $8 WHERE id = $9`,
					task.Description, task.BaseURL, task.Device, stored, task.PostRunBy, runCfg, task.HooksBy, now, task.ID); err != nil {
					return mapErr(err)
				}
				if !slices.Equal(shares, task.SharedWith) {
					if err := setShares(ctx, tx, task.ID, shares, now); err != nil {
						return err
					}
					task.SharedWith = shares
				}
				res.TaskAction = duet.ApplyUpdated
			}
		}
		if task.Trace != want.Trace { // the task's trace mode (00027)
			if _, err := tx.Exec(ctx, `UPDATE tasks SET trace = $1, updated_at = $2 WHERE id = $3`, want.Trace, now, task.ID); err != nil {
				return mapErr(err)
			}
			task.Trace, task.UpdatedAt = want.Trace, now
			if res.TaskAction == duet.ApplyUnchanged {
				res.TaskAction = duet.ApplyUpdated
			}
		}
		res.Task = task

		rows, err := tx.Query(ctx, `SELECT `+caseColumns+` FROM cases c WHERE c.task_id = $1`, task.ID)
		if err != nil {
			return mapErr(err)
		}
		list, err := collect(rows, scanCase)
		if err != nil {
			return err
		}
		existing := map[string]*duet.Case{}
		for _, c := range list {
			existing[c.Key] = c
		}

		inSuite := map[string]bool{}
		for _, c := range s.Cases {
			if c.Key == "" {
				return duet.Errorf(duet.CodeInvalidArgument, "a case has an empty key")
			}
			if inSuite[c.Key] {
				return duet.Errorf(duet.CodeInvalidArgument, "case key %q appears twice", c.Key)
			}
			inSuite[c.Key] = true
			steps, err := json.Marshal(c.Steps)
			if err != nil {
				return err
			}
			row, err := encodeRow(c.Row)
			if err != nil {
				return err
			}
			old := existing[c.Key]
			switch {
			case old == nil:
				c.ID, c.TaskID, c.Version, c.Status, c.CreatedBy = duet.NewID("case"), task.ID, 1, duet.CaseActive, owner
				c.CreatedAt, c.UpdatedAt = now, now
				if _, err := tx.Exec(ctx, insertCase,
					c.ID, c.TaskID, c.Key, c.Title, c.Source, c.SourceHash, string(steps), c.TimeoutMs, c.Version, c.Status, c.CreatedBy, now, now, row, c.Retries, encodeTags(c.Tags)); err != nil {
					return mapErr(err)
				}
				res.Cases = append(res.Cases, duet.ApplyCaseResult{Key: c.Key, ID: c.ID, Version: c.Version, Action: duet.ApplyCreated})
			case old.SourceHash == c.SourceHash && old.Title == c.Title && old.Status == duet.CaseActive:
				res.Cases = append(res.Cases, duet.ApplyCaseResult{Key: c.Key, ID: old.ID, Version: old.Version, Action: duet.ApplyUnchanged})
			default:
				// The owner wrote this version (CreatedBy is the writer of
				// the current version: approvals depend on it).
				c.ID, c.TaskID, c.Version, c.Status, c.CreatedBy = old.ID, task.ID, old.Version+1, duet.CaseActive, owner
				if _, err := tx.Exec(ctx, `UPDATE cases SET title = $1, source = $2, source_hash = $3, steps = $4, timeout_ms = $5, version = $6, status = $7, created_by = $8, updated_at = $9, row = $10, retries = $12, tags = $13 WHERE id = $11`,
					c.Title, c.Source, c.SourceHash, string(steps), c.TimeoutMs, c.Version, c.Status, c.CreatedBy, now, row, c.ID, c.Retries, encodeTags(c.Tags)); err != nil {
					return mapErr(err)
				}
				res.Cases = append(res.Cases, duet.ApplyCaseResult{Key: c.Key, ID: c.ID, Version: c.Version, Action: duet.ApplyUpdated})
			}
		}
		keys := make([]string, 0, len(existing))
		for k := range existing {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			old := existing[k]
			if inSuite[k] || old.Status != duet.CaseActive {
				continue
			}
			if _, err := tx.Exec(ctx, `UPDATE cases SET status = $1, updated_at = $2 WHERE id = $3`, duet.CaseArchived, now, old.ID); err != nil {
				return mapErr(err)
			}
			res.Cases = append(res.Cases, duet.ApplyCaseResult{Key: k, ID: old.ID, Version: old.Version, Action: duet.ApplyArchived})
		}
		if err := applySchedules(ctx, tx, owner, task.ID, s.Schedules, now); err != nil {
			return err
		}
		return saveSuiteSource(ctx, tx, task.ID, owner, s.Source, now) // suitesource.go
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// SaveDraftCase stores c as a draft case of its task. A draft with the same
// key by the same author is replaced by a new version; an active or archived
// case with that key, or another author's draft, is a CONFLICT. Returns
// NOT_FOUND, CONFLICT, INVALID_ARGUMENT.
func (d *DB) SaveDraftCase(ctx context.Context, c *duet.Case) error {
	if c.Key == "" || c.TaskID == "" {
		return duet.Errorf(duet.CodeInvalidArgument, "a draft case needs a task and a key")
	}
	steps, err := json.Marshal(c.Steps)
	if err != nil {
		return err
	}
	return d.tx(ctx, func(tx pgx.Tx) error {
		if _, err := findTaskAny(ctx, tx, c.TaskID); err != nil {
			return err
		}
		if err := lockKey(ctx, tx, "case\x1f"+c.TaskID+"\x1f"+c.Key); err != nil {
			return err
		}
		now := ts(d.now())
		old, err := scanCase(tx.QueryRow(ctx, `SELECT `+caseColumns+` FROM cases c WHERE c.task_id = $1 AND c.key = $2`, c.TaskID, c.Key))
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			c.ID, c.Version, c.Status, c.CreatedAt, c.UpdatedAt = duet.NewID("case"), 1, duet.CaseDraft, now, now
			_, err := tx.Exec(ctx, insertCase,
				c.ID, c.TaskID, c.Key, c.Title, c.Source, c.SourceHash, string(steps), c.TimeoutMs, c.Version, c.Status, c.CreatedBy, now, now, "", c.Retries, encodeTags(c.Tags))
			return mapErr(err)
		case err != nil:
			return mapErr(err)
		case old.Status != duet.CaseDraft:
			return duet.Errorf(duet.CodeConflict, "case key %q is already used by a %s case", c.Key, old.Status)
		case old.CreatedBy != c.CreatedBy:
			// A draft is its author's proposal: another user's draft
			// (the owner's, or another sharee's) never replaces it.
			return duet.Errorf(duet.CodeConflict, "case key %q is already used by a draft of %s; choose another key", c.Key, old.CreatedBy)
		default:
			c.ID, c.Version, c.Status, c.CreatedAt, c.UpdatedAt = old.ID, old.Version+1, duet.CaseDraft, old.CreatedAt, now
			_, err := tx.Exec(ctx, `UPDATE cases SET title = $1, source = $2, source_hash = $3, steps = $4, timeout_ms = $5, version = $6, created_by = $7, updated_at = $8, retries = $10, tags = $11 WHERE id = $9`,
				c.Title, c.Source, c.SourceHash, string(steps), c.TimeoutMs, c.Version, c.CreatedBy, now, c.ID, c.Retries, encodeTags(c.Tags))
			return mapErr(err)
		}
	})
}

// FindCaseByID returns the case if viewer may see its task. Returns NOT_FOUND.
func (d *DB) FindCaseByID(ctx context.Context, viewer, id string) (*duet.Case, error) {
	q := `SELECT ` + caseColumns + ` FROM cases c JOIN tasks t ON t.id = c.task_id WHERE c.id = $2` + visibility(viewer)
	c, err := scanCase(d.pool.QueryRow(ctx, q, viewer, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, notFound("case", id)
	}
	return c, mapErr(err)
}

// CountCases returns how many active cases a task has.
func (d *DB) CountCases(ctx context.Context, taskID string) (int, error) {
	var n int
	err := d.pool.QueryRow(ctx, `SELECT count(*) FROM cases WHERE task_id = $1 AND status = 'active'`, taskID).Scan(&n)
	return n, mapErr(err)
}

// FindCases returns a page of a task's cases in key order.
func (d *DB) FindCases(ctx context.Context, f duet.CaseFilter) ([]*duet.Case, string, int, error) {
	q, a, limit, err := casePageQuery(f)
	if err != nil {
		return nil, "", 0, err
	}
	rows, err := d.pool.Query(ctx, q, a...)
	if err != nil {
		return nil, "", 0, mapErr(err)
	}
	return d.casePage(ctx, rows, f, limit)
}

// casePageQuery is the statement of FindCases (casePage reads its rows),
// and its page size: the page and the count of every match in one
// statement (the count is an uncorrelated subquery: computed once).
func casePageQuery(f duet.CaseFilter) (string, []any, int, error) {
	after, err := decodeCursor(f.Cursor)
	if err != nil {
		return "", nil, 0, err
	}
	limit := clampLimit(f.Limit, 50, 200)
	a := args{f.TaskID, caseStatuses(f)}
	cond := `c.task_id = $1 AND c.status = ANY($2)`
	page := cond
	if after != "" {
		page += ` AND c.key > ` + a.add(after)
	}
	return `SELECT ` + caseColumns + `, (SELECT count(*) FROM cases c WHERE ` + cond + `) FROM cases c WHERE ` + page + ` ORDER BY c.key LIMIT ` + a.add(limit+1), a, limit, nil
}

// caseStatuses are the statuses of the cases f selects.
func caseStatuses(f duet.CaseFilter) []string {
	statuses := []string{string(duet.CaseActive)}
	if f.IncludeDrafts {
		statuses = append(statuses, string(duet.CaseDraft))
	}
	if f.IncludeArchived {
		statuses = append(statuses, string(duet.CaseArchived))
	}
	return statuses
}

// casePage reads the rows of casePageQuery: the page, the next cursor and
// the count. An empty page, which carries no count, counts apart.
func (d *DB) casePage(ctx context.Context, rows pgx.Rows, f duet.CaseFilter, limit int) ([]*duet.Case, string, int, error) {
	var total int
	cases, err := collect(rows, func(r pgx.Row) (*duet.Case, error) { return scanCase(tailRow{r, []any{&total}}) })
	if err != nil {
		return nil, "", 0, err
	}
	if len(cases) == 0 {
		if err := d.pool.QueryRow(ctx, `SELECT count(*) FROM cases c WHERE c.task_id = $1 AND c.status = ANY($2)`, f.TaskID, caseStatuses(f)).Scan(&total); err != nil {
			return nil, "", 0, mapErr(err)
		}
	}
	var next string
	if len(cases) > limit {
		cases = cases[:limit]
		next = encodeCursor(cases[limit-1].Key)
	}
	return cases, next, total, nil
}

// FindTaskCases reads the task and a page of its cases in one batch. The
// page of a task the viewer may not see is read and dropped: NOT_FOUND.
func (d *DB) FindTaskCases(ctx context.Context, viewer string, f duet.CaseFilter) (*duet.Task, []*duet.Case, string, int, error) {
	pq, pa, limit, perr := casePageQuery(f)
	var b pgx.Batch
	b.Queue(taskByIDQuery(viewer), viewer, f.TaskID)
	if perr == nil {
		b.Queue(pq, pa...)
	}
	br := d.pool.SendBatch(ctx, &b)
	defer br.Close()
	t, err := scanTaskShares(br.QueryRow(), f.TaskID)
	if err != nil {
		return nil, nil, "", 0, err
	}
	if perr != nil {
		return nil, nil, "", 0, perr
	}
	rows, err := br.Query()
	if err != nil {
		return nil, nil, "", 0, mapErr(err)
	}
	cases, next, total, err := d.casePage(ctx, rows, f, limit)
	if err != nil {
		return nil, nil, "", 0, err
	}
	return t, cases, next, total, mapErr(br.Close())
}

// encodeTags is how a case's tags are stored: JSON, or "" for none.
func encodeTags(tags []string) string {
	if len(tags) == 0 {
		return ""
	}
	b, _ := json.Marshal(tags)
	return string(b)
}
