package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/duet-test/duet"
)

const caseColumns = `c.id, c.task_id, c.key, c.title, c.source, c.source_hash, c.steps, c.timeout_ms, c.version, c.status, c.created_by, c.created_at, c.updated_at, c.row, c.retries, c.tags`

func scanCase(r rowScanner) (*duet.Case, error) {
	var c duet.Case
	var steps, row, tags string
	var created, updated int64
	if err := r.Scan(&c.ID, &c.TaskID, &c.Key, &c.Title, &c.Source, &c.SourceHash, &steps, &c.TimeoutMs, &c.Version, &c.Status, &c.CreatedBy, &created, &updated, &row, &c.Retries, &tags); err != nil {
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
	c.CreatedAt, c.UpdatedAt = fromMicros(created), fromMicros(updated)
	return &c, nil
}

// ApplySuite creates or updates owner's task and its cases in one transaction.
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
	res := &duet.ApplyResult{}
	err := d.tx(ctx, func(tx *sql.Tx) error {
		now := d.now()
		nowUs := micros(now)
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
			if _, err := tx.ExecContext(ctx, `INSERT INTO tasks (id, owner, name, description, base_url, device, post_run, post_run_by, run_config, hooks_by, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				task.ID, owner, task.Name, task.Description, task.BaseURL, task.Device, postRun, task.PostRunBy, runCfg, task.HooksBy, nowUs, nowUs); err != nil {
				return mapErr(err)
			}
			if err := setShares(ctx, tx, task.ID, task.SharedWith, nowUs); err != nil {
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
				if _, err := tx.ExecContext(ctx, `UPDATE tasks SET description = ?, base_url = ?, device = ?, post_run = ?, post_run_by = ?, run_config = ?, hooks_by = ?, updated_at = ? WHERE id = ?`,
					task.Description, task.BaseURL, task.Device, stored, task.PostRunBy, runCfg, task.HooksBy, nowUs, task.ID); err != nil {
					return mapErr(err)
				}
				if !slices.Equal(shares, task.SharedWith) {
					if err := setShares(ctx, tx, task.ID, shares, nowUs); err != nil {
						return err
					}
					task.SharedWith = shares
				}
				res.TaskAction = duet.ApplyUpdated
			}
		}
		if task.Trace != want.Trace { // the task's trace mode (00027)
			if _, err := tx.ExecContext(ctx, `UPDATE tasks SET trace = ?, updated_at = ? WHERE id = ?`, want.Trace, nowUs, task.ID); err != nil {
				return mapErr(err)
			}
			task.Trace, task.UpdatedAt = want.Trace, now
			if res.TaskAction == duet.ApplyUnchanged {
				res.TaskAction = duet.ApplyUpdated
			}
		}
		res.Task = task

		existing := map[string]*duet.Case{}
		rows, err := tx.QueryContext(ctx, `SELECT `+caseColumns+` FROM cases c WHERE c.task_id = ?`, task.ID)
		if err != nil {
			return mapErr(err)
		}
		for rows.Next() {
			c, err := scanCase(rows)
			if err != nil {
				rows.Close()
				return mapErr(err)
			}
			existing[c.Key] = c
		}
		if err := rows.Err(); err != nil {
			rows.Close()
			return mapErr(err)
		}
		rows.Close()

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
			tags := encodeTags(c.Tags)
			old := existing[c.Key]
			switch {
			case old == nil:
				c.ID, c.TaskID, c.Version, c.Status, c.CreatedBy = duet.NewID("case"), task.ID, 1, duet.CaseActive, owner
				c.CreatedAt, c.UpdatedAt = now, now
				if _, err := tx.ExecContext(ctx, `INSERT INTO cases (id, task_id, key, title, source, source_hash, steps, timeout_ms, version, status, created_by, created_at, updated_at, row, retries, tags) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
					c.ID, c.TaskID, c.Key, c.Title, c.Source, c.SourceHash, string(steps), c.TimeoutMs, c.Version, c.Status, c.CreatedBy, nowUs, nowUs, row, c.Retries, tags); err != nil {
					return mapErr(err)
				}
				res.Cases = append(res.Cases, duet.ApplyCaseResult{Key: c.Key, ID: c.ID, Version: c.Version, Action: duet.ApplyCreated})
			case old.SourceHash == c.SourceHash && old.Title == c.Title && old.Status == duet.CaseActive:
				res.Cases = append(res.Cases, duet.ApplyCaseResult{Key: c.Key, ID: old.ID, Version: old.Version, Action: duet.ApplyUnchanged})
			default:
				// The owner wrote this version (CreatedBy is the writer of
				// the current version: approvals depend on it).
				c.ID, c.TaskID, c.Version, c.Status, c.CreatedBy = old.ID, task.ID, old.Version+1, duet.CaseActive, owner
				if _, err := tx.ExecContext(ctx, `UPDATE cases SET title = ?, source = ?, source_hash = ?, steps = ?, timeout_ms = ?, version = ?, status = ?, created_by = ?, updated_at = ?, row = ?, retries = ?, tags = ? WHERE id = ?`,
					c.Title, c.Source, c.SourceHash, string(steps), c.TimeoutMs, c.Version, c.Status, c.CreatedBy, nowUs, row, c.Retries, tags, c.ID); err != nil {
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
			if _, err := tx.ExecContext(ctx, `UPDATE cases SET status = ?, updated_at = ? WHERE id = ?`, duet.CaseArchived, nowUs, old.ID); err != nil {
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
	return d.tx(ctx, func(tx *sql.Tx) error {
		if _, err := d.findTaskAny(ctx, tx, c.TaskID); err != nil {
			return err
		}
		now := d.now()
		old, err := scanCase(tx.QueryRowContext(ctx, `SELECT `+caseColumns+` FROM cases c WHERE c.task_id = ? AND c.key = ?`, c.TaskID, c.Key))
		switch {
		case errors.Is(err, sql.ErrNoRows):
			c.ID, c.Version, c.Status, c.CreatedAt, c.UpdatedAt = duet.NewID("case"), 1, duet.CaseDraft, now, now
			_, err := tx.ExecContext(ctx, `INSERT INTO cases (id, task_id, key, title, source, source_hash, steps, timeout_ms, version, status, created_by, created_at, updated_at, retries, tags) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				c.ID, c.TaskID, c.Key, c.Title, c.Source, c.SourceHash, string(steps), c.TimeoutMs, c.Version, c.Status, c.CreatedBy, micros(now), micros(now), c.Retries, encodeTags(c.Tags))
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
			_, err := tx.ExecContext(ctx, `UPDATE cases SET title = ?, source = ?, source_hash = ?, steps = ?, timeout_ms = ?, version = ?, created_by = ?, updated_at = ?, retries = ?, tags = ? WHERE id = ?`,
				c.Title, c.Source, c.SourceHash, string(steps), c.TimeoutMs, c.Version, c.CreatedBy, micros(now), c.Retries, encodeTags(c.Tags), c.ID)
			return mapErr(err)
		}
	})
}

// FindCaseByID returns the case if viewer may see its task. Returns NOT_FOUND.
func (d *DB) FindCaseByID(ctx context.Context, viewer, id string) (*duet.Case, error) {
	q := `SELECT ` + caseColumns + ` FROM cases c JOIN tasks t ON t.id = c.task_id WHERE c.id = ?2`
	args := []any{viewer, id}
	if viewer != "" {
		q += ` AND ` + visibleTo
	}
	c, err := scanCase(d.q.QueryRowContext(ctx, q, args...))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("case", id)
	}
	return c, mapErr(err)
}

// CountCases returns how many active cases a task has.
func (d *DB) CountCases(ctx context.Context, taskID string) (int, error) {
	return cached(ctx, d, "cases\x00"+taskID, func() (int, error) { return d.countCases(ctx, taskID) }, func(n int) int { return n })
}

func (d *DB) countCases(ctx context.Context, taskID string) (int, error) {
	var n int
	err := d.q.QueryRowContext(ctx, `SELECT count(*) FROM cases WHERE task_id = ? AND status = 'active'`, taskID).Scan(&n)
	return n, mapErr(err)
}

// FindCases returns a page of a task's cases in key order.
func (d *DB) FindCases(ctx context.Context, f duet.CaseFilter) ([]*duet.Case, string, int, error) {
	after, err := decodeCursor(f.Cursor)
	if err != nil {
		return nil, "", 0, err
	}
	limit := clampLimit(f.Limit, 50, 200)
	cond := `c.task_id = ?`
	args := []any{f.TaskID}
	statuses := []any{string(duet.CaseActive)}
	if f.IncludeDrafts {
		statuses = append(statuses, string(duet.CaseDraft))
	}
	if f.IncludeArchived {
		statuses = append(statuses, string(duet.CaseArchived))
	}
	cond += ` AND c.status IN (` + placeholders(len(statuses)) + `)`
	args = append(args, statuses...)
	var total int
	if err := d.q.QueryRowContext(ctx, `SELECT count(*) FROM cases c WHERE `+cond, args...).Scan(&total); err != nil {
		return nil, "", 0, mapErr(err)
	}
	if after != "" {
		cond += ` AND c.key > ?`
		args = append(args, after)
	}
	args = append(args, limit+1)
	rows, err := d.q.QueryContext(ctx, `SELECT `+caseColumns+` FROM cases c WHERE `+cond+` ORDER BY c.key LIMIT ?`, args...)
	if err != nil {
		return nil, "", 0, mapErr(err)
	}
	defer rows.Close()
	cases := []*duet.Case{}
	for rows.Next() {
		c, err := scanCase(rows)
		if err != nil {
			return nil, "", 0, mapErr(err)
		}
		cases = append(cases, c)
	}
	if err := rows.Err(); err != nil {
		return nil, "", 0, mapErr(err)
	}
	var next string
	if len(cases) > limit {
		cases = cases[:limit]
		next = encodeCursor(cases[limit-1].Key)
	}
	return cases, next, total, nil
}

// encodeTags is how a case's tags are stored: JSON, or "" for none.
func encodeTags(tags []string) string {
	if len(tags) == 0 {
		return ""
	}
	b, _ := json.Marshal(tags)
	return string(b)
}
