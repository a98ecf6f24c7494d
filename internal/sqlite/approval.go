package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/storerules"
)

// ApproveCase records a.User's approval of the current version of a case
// they may see, for a.DestinationsHash: approving the same version for the
// same destinations again keeps the first approval, for others replaces
// it. Returns NOT_FOUND, CONFLICT, INVALID_ARGUMENT.
func (d *DB) ApproveCase(ctx context.Context, a *duet.CaseApproval) error {
	if err := storerules.CheckApproval(a); err != nil {
		return err
	}
	return d.tx(ctx, func(tx *cachedTx) error {
		c, err := storerules.ScanCase(tx.QueryRowContext(ctx, `SELECT `+storerules.CaseFields+` FROM cases c JOIN tasks t ON t.id = c.task_id WHERE c.id = ?2 AND `+visibleTo, a.User, a.CaseID))
		if err != nil {
			return found(err, "case", a.CaseID)
		}
		if err := storerules.ApprovedVersion(c, a); err != nil {
			return err
		}
		old, err := storerules.ScanApproval(tx.QueryRowContext(ctx, `SELECT `+storerules.ApprovalColumns+` FROM case_approvals a WHERE a.user_id = ? AND a.case_id = ? AND a.version = ?`,
			a.User, a.CaseID, a.Version))
		switch {
		case err == nil && old.DestinationsHash == a.DestinationsHash:
			*a = *old
			return nil
		case err != nil && !errors.Is(err, sql.ErrNoRows):
			return mapErr(err)
		}
		a.SourceHash, a.TaskID, a.ApprovedAt = c.SourceHash, c.TaskID, fromMicros(micros(d.now()))
		_, err = tx.ExecContext(ctx, `INSERT INTO case_approvals (user_id, case_id, version, source_hash, destinations_hash, task_id, approved_at) VALUES (?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (user_id, case_id, version) DO UPDATE SET destinations_hash = excluded.destinations_hash, approved_at = excluded.approved_at`,
			a.User, a.CaseID, a.Version, a.SourceHash, a.DestinationsHash, a.TaskID, micros(a.ApprovedAt))
		return mapErr(err)
	})
}

// FindCaseApproval returns user's approval of that version of the case.
// Returns NOT_FOUND.
func (d *DB) FindCaseApproval(ctx context.Context, user, caseID string, version int) (*duet.CaseApproval, error) {
	a, err := storerules.ScanApproval(d.q.QueryRowContext(ctx, `SELECT `+storerules.ApprovalColumns+` FROM case_approvals a WHERE a.user_id = ? AND a.case_id = ? AND a.version = ?`,
		user, caseID, version))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, duet.Errorf(duet.CodeNotFound, "%s has not approved version %d of case %s", user, version, caseID)
	}
	return a, mapErr(err)
}

// FindCaseApprovals lists user's approvals (of one task's cases when taskID
// is not ""), newest first.
func (d *DB) FindCaseApprovals(ctx context.Context, user, taskID string) ([]*duet.CaseApproval, error) {
	q := `SELECT ` + storerules.ApprovalColumns + ` FROM case_approvals a WHERE a.user_id = ?`
	args := []any{user}
	if taskID != "" {
		q += ` AND a.task_id = ?`
		args = append(args, taskID)
	}
	return all(ctx, d.q, storerules.ScanApproval, q+` ORDER BY a.approved_at DESC, a.case_id, a.version DESC`, args...)
}

// RevokeCaseApproval deletes user's approvals of every version of the case.
// Returns NOT_FOUND when there was none.
func (d *DB) RevokeCaseApproval(ctx context.Context, user, caseID string) error {
	res, err := d.q.ExecContext(ctx, `DELETE FROM case_approvals WHERE user_id = ? AND case_id = ?`, user, caseID)
	return changed(res, err, duet.Errorf(duet.CodeNotFound, "%s has not approved case %s", user, caseID))
}

// ApprovePostRun records user's approval of the current version of the
// post-run actions of a task they may see. Returns NOT_FOUND, CONFLICT,
// INVALID_ARGUMENT.
func (d *DB) ApprovePostRun(ctx context.Context, user, taskID, hash string) (*duet.PostRunApproval, error) {
	if user == "" || taskID == "" {
		return nil, duet.Errorf(duet.CodeInvalidArgument, "an approval needs a user and a task")
	}
	var out *duet.PostRunApproval
	err := d.tx(ctx, func(tx *cachedTx) error {
		t, err := storerules.ScanTask(tx.QueryRowContext(ctx, `SELECT `+storerules.TaskColumns+` FROM tasks t WHERE t.id = ?2 AND `+visibleTo, user, taskID))
		if err != nil {
			return found(err, "task", taskID)
		}
		if err := storerules.PostRunApprovable(t, hash); err != nil {
			return err
		}
		a := &duet.PostRunApproval{User: user, TaskID: taskID, Hash: hash}
		var at int64
		err = tx.QueryRowContext(ctx, `SELECT approved_at FROM post_run_approvals WHERE user_id = ? AND task_id = ? AND hash = ?`, user, taskID, hash).Scan(&at)
		switch {
		case err == nil:
			a.ApprovedAt = fromMicros(at)
		case errors.Is(err, sql.ErrNoRows):
			a.ApprovedAt = fromMicros(micros(d.now()))
			if _, err := tx.ExecContext(ctx, `INSERT INTO post_run_approvals (user_id, task_id, hash, approved_at) VALUES (?, ?, ?, ?)`,
				user, taskID, hash, micros(a.ApprovedAt)); err != nil {
				return mapErr(err)
			}
		default:
			return mapErr(err)
		}
		out = a
		return nil
	})
	return out, err
}

// FindPostRunApproval returns user's approval of that version of the
// task's post-run actions. Returns NOT_FOUND.
func (d *DB) FindPostRunApproval(ctx context.Context, user, taskID, hash string) (*duet.PostRunApproval, error) {
	var at int64
	err := d.q.QueryRowContext(ctx, `SELECT approved_at FROM post_run_approvals WHERE user_id = ? AND task_id = ? AND hash = ?`, user, taskID, hash).Scan(&at)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, duet.Errorf(duet.CodeNotFound, "%s has not approved this version of the post-run actions of task %s", user, taskID)
	} else if err != nil {
		return nil, mapErr(err)
	}
	return &duet.PostRunApproval{User: user, TaskID: taskID, Hash: hash, ApprovedAt: fromMicros(at)}, nil
}
