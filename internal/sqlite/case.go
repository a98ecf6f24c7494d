package sqlite

import (
	"context"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/storerules"
)

// FindCaseByID returns the case if viewer may see its task. Returns NOT_FOUND.
func (d *DB) FindCaseByID(ctx context.Context, viewer, id string) (*duet.Case, error) {
	q := `SELECT ` + storerules.CaseFields + ` FROM cases c JOIN tasks t ON t.id = c.task_id WHERE c.id = ?2` + visibility(viewer)
	args := []any{viewer, id}
	c, err := storerules.ScanCase(d.q.QueryRowContext(ctx, q, args...))
	return c, found(err, "case", id)
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
	after, err := storerules.DecodeCursor(f.Cursor)
	if err != nil {
		return nil, "", 0, err
	}
	limit := storerules.ClampLimit(f.Limit, 50, 200)
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
	cases, err := all(ctx, d.q, storerules.ScanCase, `SELECT `+storerules.CaseFields+` FROM cases c WHERE `+cond+` ORDER BY c.key LIMIT ?`, args...)
	if err != nil {
		return nil, "", 0, err
	}
	cases, next := storerules.Page(cases, limit, func(c *duet.Case) string { return c.Key })
	return cases, next, total, nil
}
