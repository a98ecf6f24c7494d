package storerules

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/duet-test/duet"
)

// SuiteTx is what ApplySuite asks of one engine's transaction: SQL-level
// reads and writes, each one statement (or one batch), nothing decided.
// Times are the transaction's now, already at the engine's precision.
type SuiteTx interface {
	// TaskByName reads owner's task named name with its shares, or
	// NOT_FOUND.
	TaskByName(ctx context.Context, owner, name string) (*duet.Task, error)
	// InsertTask writes a new task (not its shares) with its stored
	// post-run actions and run configuration.
	InsertTask(ctx context.Context, t *duet.Task, postRun, runConfig string) error
	// UpdateTask writes t's description, base URL, device, post-run
	// actions and their writer, run configuration, hooks' writer and
	// UpdatedAt.
	UpdateTask(ctx context.Context, t *duet.Task, postRun, runConfig string) error
	// SetTrace writes the task's trace mode and UpdatedAt.
	SetTrace(ctx context.Context, t *duet.Task) error
	// SetShares replaces the task's share list with users.
	SetShares(ctx context.Context, taskID string, users []string, now time.Time) error
	// Cases reads every case of the task, whatever its status.
	Cases(ctx context.Context, taskID string) ([]*duet.Case, error)
	// InsertCase writes a new case; UpdateCase writes a new version of
	// one (all but its key, task and CreatedAt).
	InsertCase(ctx context.Context, c *duet.Case, w CaseColumns) error
	UpdateCase(ctx context.Context, c *duet.Case, w CaseColumns) error
	// ArchiveCase marks a case archived.
	ArchiveCase(ctx context.Context, id string, now time.Time) error
	ScheduleTx
}

// CaseColumns are a case's encoded columns.
type CaseColumns struct{ Steps, Row, Tags string }

// EncodeCase encodes c's steps, data row and tags as they are stored.
func EncodeCase(c *duet.Case) (CaseColumns, error) {
	steps, err := json.Marshal(c.Steps)
	if err != nil {
		return CaseColumns{}, err
	}
	row, err := EncodeRow(c.Row)
	return CaseColumns{Steps: string(steps), Row: row, Tags: EncodeTags(c.Tags)}, err
}

// DecodeCase completes a case scanned from the cases table with its stored
// steps, data row and tags (EncodeCase's columns).
func DecodeCase(c *duet.Case, steps, row, tags string) error {
	if tags != "" {
		if err := json.Unmarshal([]byte(tags), &c.Tags); err != nil {
			return fmt.Errorf("case %s: decoding its tags: %w", c.ID, err)
		}
	}
	if err := json.Unmarshal([]byte(steps), &c.Steps); err != nil {
		return fmt.Errorf("case %s: decoding steps: %w", c.ID, err)
	}
	var err error
	if c.Row, err = DecodeRow(row); err != nil {
		return fmt.Errorf("case %s: decoding its data row: %w", c.ID, err)
	}
	return nil
}

// CheckSuite refuses what no engine may store of owner's suite s, before
// any transaction: no owner or task name, an invalid owner or sharee.
func CheckSuite(owner string, s *duet.Suite) error {
	if owner == "" {
		return duet.Errorf(duet.CodeInvalidArgument, "owner is empty")
	}
	if s == nil || s.Task.Name == "" {
		return duet.Errorf(duet.CodeInvalidArgument, "task name is empty")
	}
	if err := duet.ValidUserID(owner); err != nil {
		return err
	}
	for _, u := range s.Task.SharedWith {
		if err := duet.ValidPrincipal(strings.TrimSpace(u)); err != nil {
			return duet.Errorf(duet.CodeInvalidArgument, "sharedWith: %s", duet.ErrorMessage(err))
		}
	}
	return nil
}

// ApplySuite creates or updates owner's task and its cases and schedules
// through tx, in the caller's transaction, as of now: a task or case whose
// content changed gets a new version written by owner (approvals depend on
// who wrote the post-run actions, hooks and case versions), a case the
// suite no longer has is archived. s was checked by CheckSuite.
func ApplySuite(ctx context.Context, tx SuiteTx, owner string, s *duet.Suite, now time.Time) (*duet.ApplyResult, error) {
	res := &duet.ApplyResult{}
	task, err := applyTask(ctx, tx, owner, &s.Task, now, res)
	if err != nil {
		return nil, err
	}
	res.Task = task
	if err := applyCases(ctx, tx, owner, task.ID, s.Cases, now, res); err != nil {
		return nil, err
	}
	if err := ApplySchedules(ctx, tx, owner, task.ID, s.Schedules, now); err != nil {
		return nil, err
	}
	return res, nil
}

// applyTask creates or updates the task of the suite (want) and sets
// res.TaskAction.
func applyTask(ctx context.Context, tx SuiteTx, owner string, want *duet.Task, now time.Time, res *duet.ApplyResult) (*duet.Task, error) {
	postRun, err := EncodePostRun(want.PostRun)
	if err != nil {
		return nil, err
	}
	runCfg, err := EncodeRunConfig(want)
	if err != nil {
		return nil, err
	}
	task, err := tx.TaskByName(ctx, owner, want.Name)
	switch {
	case duet.ErrorCode(err) == duet.CodeNotFound:
		task = &duet.Task{
			ID: duet.NewID("task"), Owner: owner, Name: want.Name, Description: want.Description,
			BaseURL: want.BaseURL, Device: want.Device, SharedWith: SortedUnique(want.SharedWith, owner),
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
		if err := tx.InsertTask(ctx, task, postRun, runCfg); err != nil {
			return nil, err
		}
		if err := tx.SetShares(ctx, task.ID, task.SharedWith, now); err != nil {
			return nil, err
		}
		res.TaskAction = duet.ApplyCreated
	case err != nil:
		return nil, err
	default:
		res.TaskAction = duet.ApplyUnchanged
		changed, err := updateTask(ctx, tx, owner, task, want, runCfg, now)
		if err != nil {
			return nil, err
		}
		if changed {
			res.TaskAction = duet.ApplyUpdated
		}
	}
	if task.Trace != want.Trace { // the task's trace mode (00027)
		task.Trace, task.UpdatedAt = want.Trace, now
		if err := tx.SetTrace(ctx, task); err != nil {
			return nil, err
		}
		if res.TaskAction == duet.ApplyUnchanged {
			res.TaskAction = duet.ApplyUpdated
		}
	}
	return task, nil
}

// updateTask brings the stored task in line with want, if anything
// differs, and says whether it did.
func updateTask(ctx context.Context, tx SuiteTx, owner string, task, want *duet.Task, runCfg string, now time.Time) (bool, error) {
	shares := task.SharedWith
	if want.SharedWith != nil {
		shares = SortedUnique(want.SharedWith, owner)
	}
	postRunChanged := duet.PostRunHash(task.PostRun) != duet.PostRunHash(want.PostRun)
	oldCfg, err := EncodeRunConfig(task)
	if err != nil {
		return false, err
	}
	hooksChanged := duet.HooksHash(task) != duet.HooksHash(want)
	if task.Description == want.Description && task.BaseURL == want.BaseURL && task.Device == want.Device && slices.Equal(shares, task.SharedWith) && !postRunChanged && oldCfg == runCfg {
		return false, nil
	}
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
		// The applier wrote this version of the actions: approvals
		// depend on it.
		task.PostRun, task.PostRunBy = want.PostRun, ""
		if len(want.PostRun) > 0 {
			task.PostRunBy = owner
		}
	}
	stored, err := EncodePostRun(task.PostRun)
	if err != nil {
		return false, err
	}
	if err := tx.UpdateTask(ctx, task, stored, runCfg); err != nil {
		return false, err
	}
	if !slices.Equal(shares, task.SharedWith) {
		if err := tx.SetShares(ctx, task.ID, shares, now); err != nil {
			return false, err
		}
		task.SharedWith = shares
	}
	return true, nil
}

// applyCases writes the suite's cases of the task: new ones, new versions
// of changed ones, and archives the active ones the suite no longer has.
func applyCases(ctx context.Context, tx SuiteTx, owner, taskID string, cases []*duet.Case, now time.Time, res *duet.ApplyResult) error {
	list, err := tx.Cases(ctx, taskID)
	if err != nil {
		return err
	}
	existing, _ := index(list, func(c *duet.Case) string { return c.Key })
	inSuite := map[string]bool{}
	for _, c := range cases {
		if c.Key == "" {
			return duet.Errorf(duet.CodeInvalidArgument, "a case has an empty key")
		}
		if inSuite[c.Key] {
			return duet.Errorf(duet.CodeInvalidArgument, "case key %q appears twice", c.Key)
		}
		inSuite[c.Key] = true
		w, err := EncodeCase(c)
		if err != nil {
			return err
		}
		old := existing[c.Key]
		switch {
		case old == nil:
			c.ID, c.TaskID, c.Version, c.Status, c.CreatedBy = duet.NewID("case"), taskID, 1, duet.CaseActive, owner
			c.CreatedAt, c.UpdatedAt = now, now
			if err := tx.InsertCase(ctx, c, w); err != nil {
				return err
			}
			res.Cases = append(res.Cases, duet.ApplyCaseResult{Key: c.Key, ID: c.ID, Version: c.Version, Action: duet.ApplyCreated})
		case old.SourceHash == c.SourceHash && old.Title == c.Title && old.Status == duet.CaseActive:
			res.Cases = append(res.Cases, duet.ApplyCaseResult{Key: c.Key, ID: old.ID, Version: old.Version, Action: duet.ApplyUnchanged})
		default:
			// The owner wrote this version (CreatedBy is the writer of the
			// current version: approvals depend on it).
			c.ID, c.TaskID, c.Version, c.Status, c.CreatedBy = old.ID, taskID, old.Version+1, duet.CaseActive, owner
			c.UpdatedAt = now
			if err := tx.UpdateCase(ctx, c, w); err != nil {
				return err
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
		if err := tx.ArchiveCase(ctx, old.ID, now); err != nil {
			return err
		}
		res.Cases = append(res.Cases, duet.ApplyCaseResult{Key: k, ID: old.ID, Version: old.Version, Action: duet.ApplyArchived})
	}
	return nil
}

// ScheduleTx is what ApplySchedules asks of one engine's transaction.
type ScheduleTx interface {
	// SuiteSchedules reads owner's schedules of the task declared in its
	// suite.
	SuiteSchedules(ctx context.Context, owner, taskID string) ([]*duet.Schedule, error)
	InsertSchedule(ctx context.Context, s *duet.Schedule, now time.Time) error
	// SetScheduleTags writes the tags of schedule id.
	SetScheduleTags(ctx context.Context, id, tags string, now time.Time) error
	// SetScheduleTiming writes s's timing (cron, time zone, interval,
	// missed, overlap, next fire time) and tags into schedule id.
	SetScheduleTiming(ctx context.Context, id string, s *duet.Schedule, now time.Time) error
	DeleteSchedule(ctx context.Context, id string) error
}

// ApplySchedules makes owner's suite-declared schedules of the task those
// of want: new ones inserted, changed timing written (the schedule's state
// kept), the others deleted.
func ApplySchedules(ctx context.Context, tx ScheduleTx, owner, taskID string, want []*duet.Schedule, now time.Time) error {
	have, err := tx.SuiteSchedules(ctx, owner, taskID)
	if err != nil {
		return err
	}
	old, _ := index(have, func(s *duet.Schedule) string { return s.Name })
	seen := map[string]bool{}
	for _, s := range want {
		s.TaskID, s.Owner, s.Source = taskID, owner, duet.ScheduleFromSuite
		if err := ValidSchedule(s); err != nil {
			return err
		}
		if seen[s.Name] {
			return duet.Errorf(duet.CodeInvalidArgument, "two schedules are named %q", s.Name)
		}
		seen[s.Name] = true
		o := old[s.Name]
		switch {
		case o == nil:
			if err := tx.InsertSchedule(ctx, s, now); err != nil {
				return err
			}
		case o.SpecHash() == s.SpecHash():
			s.ID = o.ID // unchanged timing: its state stays as stored
			if EncodeTags(o.Tags) != EncodeTags(s.Tags) {
				if err := tx.SetScheduleTags(ctx, o.ID, EncodeTags(s.Tags), now); err != nil {
					return err
				}
			}
		default:
			if err := tx.SetScheduleTiming(ctx, o.ID, s, now); err != nil {
				return err
			}
			s.ID, s.CreatedAt, s.UpdatedAt, s.Paused, s.PausedReason, s.LastFireAt, s.LastRunID = o.ID, o.CreatedAt, now, o.Paused, o.PausedReason, o.LastFireAt, o.LastRunID
		}
	}
	for _, o := range have {
		if !seen[o.Name] {
			if err := tx.DeleteSchedule(ctx, o.ID); err != nil {
				return err
			}
		}
	}
	return nil
}

// DraftTx is what SaveDraftCase needs of an engine's transaction: the
// task's case with a key (nil when there is none), and SuiteTx's case
// writes.
type DraftTx interface {
	CaseByKey(ctx context.Context, taskID, key string) (*duet.Case, error)
	InsertCase(ctx context.Context, c *duet.Case, w CaseColumns) error
	UpdateCase(ctx context.Context, c *duet.Case, w CaseColumns) error
}

// SaveDraftCase stores c as a draft case of its task, in the transaction
// of an engine that found the task (and, where instances write at once,
// holds the task's key). A new key makes version 1; the author's own draft
// of the key is replaced by a new version; an active or archived case of
// the key, or another user's draft (a draft is its author's proposal), is a
// CONFLICT. A draft has no data row. Returns INVALID_ARGUMENT, CONFLICT.
func SaveDraftCase(ctx context.Context, tx DraftTx, c *duet.Case, now time.Time) error {
	if c.Key == "" || c.TaskID == "" {
		return duet.Errorf(duet.CodeInvalidArgument, "a draft case needs a task and a key")
	}
	w, err := EncodeCase(c)
	if err != nil {
		return err
	}
	w.Row = ""
	old, err := tx.CaseByKey(ctx, c.TaskID, c.Key)
	switch {
	case err != nil:
		return err
	case old == nil:
		c.ID, c.Version, c.Status, c.CreatedAt, c.UpdatedAt = duet.NewID("case"), 1, duet.CaseDraft, now, now
		return tx.InsertCase(ctx, c, w)
	case old.Status != duet.CaseDraft:
		return duet.Errorf(duet.CodeConflict, "case key %q is already used by a %s case", c.Key, old.Status)
	case old.CreatedBy != c.CreatedBy:
		return duet.Errorf(duet.CodeConflict, "case key %q is already used by a draft of %s; choose another key", c.Key, old.CreatedBy)
	}
	c.ID, c.Version, c.Status, c.CreatedAt, c.UpdatedAt = old.ID, old.Version+1, duet.CaseDraft, old.CreatedAt, now
	return tx.UpdateCase(ctx, c, w)
}
