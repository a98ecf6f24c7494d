package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

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
	return d.tx(ctx, func(tx pgx.Tx) error {
		c, err := storerules.ScanCase(tx.QueryRow(ctx, `SELECT `+storerules.CaseFields+` FROM cases c JOIN tasks t ON t.id = c.task_id WHERE c.id = $2 AND `+visibleTo, a.User, a.CaseID))
		if err != nil {
			return found(err, "case", a.CaseID)
		}
		if err := storerules.ApprovedVersion(c, a); err != nil {
			return err
		}
		a.SourceHash, a.TaskID, a.ApprovedAt = c.SourceHash, c.TaskID, ts(d.now()).UTC()
		// A second approval of the same version for the same destinations
		// keeps the first; for other destinations it replaces it.
		old, err := storerules.ScanApproval(tx.QueryRow(ctx, `INSERT INTO case_approvals AS a (user_id, case_id, version, source_hash, destinations_hash, task_id, approved_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7)
			ON CONFLICT (user_id, case_id, version) DO UPDATE SET
				destinations_hash = excluded.destinations_hash,
				approved_at = CASE WHEN a.destinations_hash = excluded.destinations_hash THEN a.approved_at ELSE excluded.approved_at END
			RETURNING `+storerules.ApprovalColumns, a.User, a.CaseID, a.Version, a.SourceHash, a.DestinationsHash, a.TaskID, a.ApprovedAt))
		if err != nil {
			return mapErr(err)
		}
		*a = *old
		return nil
	})
}

// FindCaseApproval returns user's approval of that version of the case.
// Returns NOT_FOUND.
func (d *DB) FindCaseApproval(ctx context.Context, user, caseID string, version int) (*duet.CaseApproval, error) {
	a, err := storerules.ScanApproval(d.pool.QueryRow(ctx, `SELECT `+storerules.ApprovalColumns+` FROM case_approvals a WHERE a.user_id = $1 AND a.case_id = $2 AND a.version = $3`,
		user, caseID, version))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, duet.Errorf(duet.CodeNotFound, "%s has not approved version %d of case %s", user, version, caseID)
	}
	return a, mapErr(err)
}

// FindCaseApprovals lists user's approvals (of one task's cases when taskID
// is not ""), newest first.
func (d *DB) FindCaseApprovals(ctx context.Context, user, taskID string) ([]*duet.CaseApproval, error) {
	q := `SELECT ` + storerules.ApprovalColumns + ` FROM case_approvals a WHERE a.user_id = $1`
	args := []any{user}
	if taskID != "" {
		q += ` AND a.task_id = $2`
		args = append(args, taskID)
	}
	return all(ctx, d.pool, storerules.ScanApproval, q+` ORDER BY a.approved_at DESC, a.case_id, a.version DESC`, args...)
}

// RevokeCaseApproval deletes user's approvals of every version of the case.
// Returns NOT_FOUND when there was none.
func (d *DB) RevokeCaseApproval(ctx context.Context, user, caseID string) error {
	tag, err := d.pool.Exec(ctx, `DELETE FROM case_approvals WHERE user_id = $1 AND case_id = $2`, user, caseID)
	return changed(tag, err, duet.Errorf(duet.CodeNotFound, "%s has not approved case %s", user, caseID))
}

// ApprovePostRun records user's approval of the current version of the
// post-run actions of a task they may see. Returns NOT_FOUND, CONFLICT,
// INVALID_ARGUMENT.
func (d *DB) ApprovePostRun(ctx context.Context, user, taskID, hash string) (*duet.PostRunApproval, error) {
	if user == "" || taskID == "" {
		return nil, duet.Errorf(duet.CodeInvalidArgument, "an approval needs a user and a task")
	}
	var out *duet.PostRunApproval
	err := d.tx(ctx, func(tx pgx.Tx) error {
		t, err := storerules.ScanTask(tx.QueryRow(ctx, `SELECT `+storerules.TaskColumns+` FROM tasks t WHERE t.id = $2 AND `+visibleTo, user, taskID))
		if err != nil {
			return found(err, "task", taskID)
		}
		if err := storerules.PostRunApprovable(t, hash); err != nil {
			return err
		}
		a := &duet.PostRunApproval{User: user, TaskID: taskID, Hash: hash}
		// A second approval of the same version keeps the first.
		err = tx.QueryRow(ctx, `INSERT INTO post_run_approvals AS a (user_id, task_id, hash, approved_at) VALUES ($1, $2, $3, $4)
			ON CONFLICT (user_id, task_id, hash) DO UPDATE SET user_id = a.user_id
			RETURNING a.approved_at`, user, taskID, hash, ts(d.now()).UTC()).Scan(&a.ApprovedAt)
		if err != nil {
			return mapErr(err)
		}
		a.ApprovedAt = utc(a.ApprovedAt)
		out = a
		return nil
	})
	return out, err
}

// FindPostRunApproval returns user's approval of that version of the
// task's post-run actions. Returns NOT_FOUND.
func (d *DB) FindPostRunApproval(ctx context.Context, user, taskID, hash string) (*duet.PostRunApproval, error) {
	a := &duet.PostRunApproval{User: user, TaskID: taskID, Hash: hash}
	err := d.pool.QueryRow(ctx, `SELECT approved_at FROM post_run_approvals WHERE user_id = $1 AND task_id = $2 AND hash = $3`, user, taskID, hash).Scan(&a.ApprovedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, duet.Errorf(duet.CodeNotFound, "%s has not approved this version of the post-run actions of task %s", user, taskID)
	} else if err != nil {
		return nil, mapErr(err)
	}
	a.ApprovedAt = utc(a.ApprovedAt)
	return a, nil
}
