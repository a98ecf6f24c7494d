package storerules

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"

	"github.com/duet-test/duet"
)

// Writes are the writes written once for both engines whose transaction
// also runs statements of the engine's own (the lease fence, a lock, the
// run's rows): each engine gives its transaction type T and those
// statements, and embeds Writes in its DB. The rules (what is checked,
// what is written, in which order) are here, the SQL in the drivers.
type Writes[T any] struct {
	// Tx runs fn in a transaction, retrying as the engine does: fn
	// depends only on what it reads in it.
	Tx func(ctx context.Context, fn func(T) error) error
	// On is an Engine whose statements run in tx.
	On func(tx T) Engine
	// Held checks, in tx, that the lease l still holds execution id's run
	// (and on engines with row locks, locks the run): LEASE_LOST when it
	// does not.
	Held func(ctx context.Context, tx T, l duet.Lease, id string) error
	// Lock serialises the transactions that lock key until tx ends; nil
	// on an engine with one writer at a time.
	Lock func(ctx context.Context, tx T, key string) error
	// Run is the run's rows in tx.
	Run func(tx T) RunTx
	// Suite is what ApplySuite reads and writes in tx.
	Suite func(tx T) SuiteTx
	// SaveSource keeps the source of a suite applied to task taskID by
	// owner at now, in tx; nil src keeps the task's source as it is.
	SaveSource func(ctx context.Context, tx T, taskID, owner string, src *duet.SuiteSource, now time.Time) error
	// OwnsTask checks, in tx, that owner (or a team of theirs) owns task
	// taskID, and on engines with row locks locks its row: NOT_FOUND.
	OwnsTask func(ctx context.Context, tx T, owner, taskID string) error
	// ShareTeamID is the id of the team principal names, bound to a share
	// of it; nil for a user. Returns NOT_FOUND (the team).
	ShareTeamID func(ctx context.Context, tx T, principal string) (any, error)
	// Now is the current time, as the engine stores it.
	Now func() time.Time
}

// RunTx is what FinishRun, RequestCancel and RetryExecution read and
// write in a transaction.
type RunTx interface {
	FinishTx
	CancelTx
	RetryTx
}

// TxValue runs fn in a transaction (tx) and returns what it made.
func TxValue[V, T any](ctx context.Context, tx func(context.Context, func(T) error) error, fn func(T) (V, error)) (V, error) {
	var out V
	err := tx(ctx, func(t T) error {
		var err error
		out, err = fn(t)
		return err
	})
	return out, err
}

// CreateBaseline stores b as the next version of its key, fenced by the
// lease l on the run that recorded it. Versions of one key are numbered
// one at a time (Lock). Returns INVALID_ARGUMENT, LEASE_LOST.
func (w Writes[T]) CreateBaseline(ctx context.Context, l duet.Lease, b *duet.Baseline) error {
	if err := CheckBaseline(l, b); err != nil {
		return err
	}
	return w.Tx(ctx, func(tx T) error {
		if err := w.Held(ctx, tx, l, b.ExecutionID); err != nil {
			return err
		}
		if err := w.lock(ctx, tx, "baseline", b.TaskID, b.CaseID, b.Name, b.Device, b.Environment, b.Owner); err != nil {
			return err
		}
		return InsertBaseline(ctx, w.On(tx), b)
	})
}

// SaveMetrics stores page-speed values under the lease l, replacing those
// of the same execution, step and name.
func (w Writes[T]) SaveMetrics(ctx context.Context, l duet.Lease, ms []*duet.Metric) error {
	if len(ms) == 0 {
		return nil
	}
	return w.Tx(ctx, func(tx T) error {
		return SaveMetrics(ctx, w.On(tx), l, ms, func(id string) error { return w.Held(ctx, tx, l, id) })
	})
}

// SaveAIPlan stores p under the lease l (InsertAIPlan).
func (w Writes[T]) SaveAIPlan(ctx context.Context, l duet.Lease, p *duet.AIPlan) error {
	actions, err := EncodeAIPlan(l, p)
	if err != nil {
		return err
	}
	return w.Tx(ctx, func(tx T) error {
		if err := w.Held(ctx, tx, l, p.ExecutionID); err != nil {
			return err
		}
		return InsertAIPlan(ctx, w.On(tx), p, actions)
	})
}

// RetryExecution keeps the failed attempt e.Attempt of an execution among
// its attempts and begins the next one (fenced, in one transaction).
func (w Writes[T]) RetryExecution(ctx context.Context, l duet.Lease, e *duet.Execution) error {
	attempts, err := TxValue(ctx, w.Tx, func(tx T) ([]*duet.ExecutionAttempt, error) {
		return RetryExecution(ctx, w.Run(tx), l, e)
	})
	if err != nil {
		return err
	}
	duet.RetriedExecution(e, attempts)
	return nil
}

// FinishRun stores the final state of a run and releases its lease
// (fenced; a verdict only over every result; see FinishRun).
func (w Writes[T]) FinishRun(ctx context.Context, l duet.Lease, r *duet.Run) error {
	return w.Tx(ctx, func(tx T) error {
		return FinishRun(ctx, w.Run(tx), l, r, w.Now())
	})
}

// RequestCancel asks a run to stop; a queued run is cancelled at once
// (see RequestCancel).
func (w Writes[T]) RequestCancel(ctx context.Context, viewer, runID string) (*duet.Run, error) {
	return TxValue(ctx, w.Tx, func(tx T) (*duet.Run, error) {
		return RequestCancel(ctx, w.Run(tx), viewer, runID, w.Now())
	})
}

// ApplySuite creates or updates owner's task and its cases, and keeps the
// versions it saved and the suite's source, in one transaction
// (ApplySuite decides; Suite writes). Applies of one task name take turns
// (Lock).
func (w Writes[T]) ApplySuite(ctx context.Context, owner string, s *duet.Suite) (*duet.ApplyResult, error) {
	if err := CheckSuite(owner, s); err != nil {
		return nil, err
	}
	return TxValue(ctx, w.Tx, func(tx T) (*duet.ApplyResult, error) {
		if err := w.lock(ctx, tx, "task", owner, s.Task.Name); err != nil {
			return nil, err
		}
		now := w.Now()
		res, err := ApplySuite(ctx, w.Suite(tx), owner, s, now)
		if err != nil {
			return nil, err
		}
		if err := SaveCaseVersions(ctx, w.On(tx), s, res); err != nil {
			return nil, err
		}
		if err := w.SaveSource(ctx, tx, res.Task.ID, owner, s.Source, now); err != nil {
			return nil, err
		}
		return res, nil
	})
}

// SaveDraftCase stores c as a draft case of its task and keeps the version
// it saved, in one transaction. Drafts of one key take turns (Lock).
// Returns NOT_FOUND, CONFLICT, INVALID_ARGUMENT (SaveDraftCase).
func (w Writes[T]) SaveDraftCase(ctx context.Context, c *duet.Case) error {
	return w.Tx(ctx, func(tx T) error {
		e := w.On(tx)
		var one int
		if err := e.Read(ctx, []any{&one}, `SELECT 1 FROM tasks WHERE id = $1`, c.TaskID); errors.Is(err, sql.ErrNoRows) {
			return NotFound("task", c.TaskID)
		} else if err != nil {
			return err
		}
		if err := w.lock(ctx, tx, "case", c.TaskID, c.Key); err != nil {
			return err
		}
		if err := SaveDraftCase(ctx, SuiteRows{e}, c, w.Now()); err != nil {
			return err
		}
		return SaveCaseVersion(ctx, e, c, duet.SavedAsDraft)
	})
}

// ShareTask shares owner's task with user (a user or a team). Returns
// NOT_FOUND, INVALID_ARGUMENT.
func (w Writes[T]) ShareTask(ctx context.Context, owner, taskID, user string) error {
	if err := duet.ValidPrincipal(user); err != nil {
		return err
	}
	return w.Tx(ctx, func(tx T) error {
		if err := w.OwnsTask(ctx, tx, owner, taskID); err != nil {
			return err
		}
		if user == owner {
			return duet.Errorf(duet.CodeInvalidArgument, "%s owns the task already", user)
		}
		team, err := w.ShareTeamID(ctx, tx, user)
		if err != nil {
			return err
		}
		e := w.On(tx)
		now := e.Stored(w.Now())
		if _, err := e.Exec(ctx, `INSERT INTO task_shares (task_id, user_id, team_id, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`, taskID, user, team, now); err != nil {
			return err
		}
		_, err = e.Exec(ctx, `UPDATE tasks SET updated_at = $1 WHERE id = $2`, now, taskID)
		return err
	})
}

// UnshareTask stops sharing owner's task with user. Returns NOT_FOUND.
func (w Writes[T]) UnshareTask(ctx context.Context, owner, taskID, user string) error {
	return w.Tx(ctx, func(tx T) error {
		if err := w.OwnsTask(ctx, tx, owner, taskID); err != nil {
			return err
		}
		n, err := w.On(tx).Exec(ctx, `DELETE FROM task_shares WHERE task_id = $1 AND user_id = $2`, taskID, user)
		if err == nil && n == 0 {
			return duet.Errorf(duet.CodeNotFound, "task %q is not shared with %q", taskID, user)
		}
		return err
	})
}

// lock takes the engine's lock on the key made of parts, if it has locks.
func (w Writes[T]) lock(ctx context.Context, tx T, parts ...string) error {
	if w.Lock == nil {
		return nil
	}
	return w.Lock(ctx, tx, strings.Join(parts, "\x1f"))
}
