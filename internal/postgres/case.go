package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/storerules"
)

// tailRow is a row whose last columns, after those its scanner reads,
// go to tail.
type tailRow struct {
	pgx.Row
	tail []any
}

func (r tailRow) Scan(dest ...any) error { return r.Row.Scan(append(dest, r.tail...)...) }

// FindCaseByID returns the case if viewer may see its task. Returns NOT_FOUND.
func (d *DB) FindCaseByID(ctx context.Context, viewer, id string) (*duet.Case, error) {
	if viewer == "" || d.cases == nil {
		return d.findCaseByID(ctx, viewer, id)
	}
	return d.cases.get(ctx, readKey{viewer, id})
}

// findCaseByID is FindCaseByID's read alone.
func (d *DB) findCaseByID(ctx context.Context, viewer, id string) (*duet.Case, error) {
	c, err := storerules.ScanCase(d.pool.QueryRow(ctx, caseByID.of(viewer), viewer, id))
	return c, found(err, "case", id)
}

// caseByID is caseByIDQuery's two statements.
var caseByID = statementsOf(caseByIDQuery)

// caseByIDQuery is the statement of FindCaseByID ($1 the viewer, $2 the
// case's id).
func caseByIDQuery(viewer string) string {
	return `SELECT ` + storerules.CaseFields + ` FROM cases c JOIN tasks t ON t.id = c.task_id WHERE c.id = $2` + visibility(viewer)
}

// casesTogetherQuery is the statement of case reads together:
// caseByIDQuery for readPairs.
var casesTogetherQuery = `SELECT q.ord, o.* FROM ` + readPairs + `
	CROSS JOIN LATERAL (` + pairParams.Replace(caseByIDQuery("viewer")) + `) o`

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
	var a args
	cond, page, limit, err := caseWhere(f, &a, a.add(f.TaskID))
	if err != nil {
		return "", nil, 0, err
	}
	return `SELECT ` + storerules.CaseFields + `, (SELECT count(*) FROM cases c WHERE ` + cond + `) FROM cases c WHERE ` + page + ` ORDER BY c.key LIMIT ` + a.add(limit+1), a, limit, nil
}

// caseWhere returns the condition on c of the cases f selects of the task
// task (a placeholder or a column), the condition of the page after f's
// cursor, and the page size; their arguments are added to a. Returns
// INVALID_ARGUMENT for a bad cursor.
func caseWhere(f duet.CaseFilter, a *args, task string) (cond, page string, limit int, err error) {
	after, err := storerules.DecodeCursor(f.Cursor)
	if err != nil {
		return "", "", 0, err
	}
	cond = `c.task_id = ` + task + ` AND c.status = ANY(` + a.add(caseStatuses(f)) + `)`
	page = cond
	if after != "" {
		page += ` AND c.key > ` + a.add(after)
	}
	return cond, page, storerules.ClampLimit(f.Limit, 50, 200), nil
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
	cases, err := collect(rows, func(r rowScanner) (*duet.Case, error) { return storerules.ScanCase(tailRow{r, []any{&total}}) })
	if err != nil {
		return nil, "", 0, err
	}
	if len(cases) == 0 {
		if err := d.pool.QueryRow(ctx, `SELECT count(*) FROM cases c WHERE c.task_id = $1 AND c.status = ANY($2)`, f.TaskID, caseStatuses(f)).Scan(&total); err != nil {
			return nil, "", 0, mapErr(err)
		}
	}
	cases, next := storerules.Page(cases, limit, func(c *duet.Case) string { return c.Key })
	return cases, next, total, nil
}

// FindTaskCases reads the task, the count of the cases f selects and
// their page in one statement (taskCasesQuery): one round trip, the
// visibility checked once. Nothing of a task the viewer may not see is
// read: NOT_FOUND, the same for a bad cursor; INVALID_ARGUMENT for a bad
// cursor of a task they may see.
func (d *DB) FindTaskCases(ctx context.Context, viewer string, f duet.CaseFilter) (*duet.Task, []*duet.Case, string, int, error) {
	q, a, limit, err := taskCasesQuery(viewer, f)
	if err != nil {
		if _, terr := d.FindTaskByID(ctx, viewer, f.TaskID); terr != nil {
			return nil, nil, "", 0, terr
		}
		return nil, nil, "", 0, err
	}
	rows, err := d.pool.Query(ctx, q, a...)
	if err != nil {
		return nil, nil, "", 0, mapErr(err)
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return nil, nil, "", 0, mapErr(err)
		}
		return nil, nil, "", 0, storerules.NotFound("task", f.TaskID)
	}
	var total int
	var page []pgtype.UndecodedBytes
	t, err := scanTaskShares(tailRow{Row: rows, tail: []any{&total, &page}}, f.TaskID)
	if err != nil {
		return nil, nil, "", 0, err
	}
	// Decoded before the rows close (recordRow).
	cases, err := scanRecords(rows.Conn().TypeMap(), page, storerules.ScanCase)
	if err != nil {
		return nil, nil, "", 0, mapErr(err)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, nil, "", 0, mapErr(err)
	}
	cases, next := storerules.Page(cases, limit, func(c *duet.Case) string { return c.Key })
	return t, cases, next, total, nil
}

// taskCasesQuery is the statement of FindTaskCases ($1 the viewer, $2 the
// task's id), its arguments and its page size: the task and its shares
// (as taskByIDQuery), the count of the cases f selects, and their page
// (casePageQuery's, one case more than the page) as a list of row values
// of storerules.CaseFields. The cases are read only for a task the viewer may see.
func taskCasesQuery(viewer string, f duet.CaseFilter) (string, []any, int, error) {
	a := args{viewer, f.TaskID}
	cond, page, limit, err := caseWhere(f, &a, `t.id`)
	if err != nil {
		return "", nil, 0, err
	}
	return `SELECT ` + storerules.TaskColumns + `, ARRAY(SELECT user_id FROM task_shares s WHERE s.task_id = t.id ORDER BY user_id),
		(SELECT count(*) FROM cases c WHERE ` + cond + `),
		ARRAY(SELECT ROW(` + storerules.CaseFields + `) FROM cases c WHERE ` + page + ` ORDER BY c.key LIMIT ` + a.add(limit+1) + `)
		FROM tasks t WHERE t.id = $2` + visibility(viewer), a, limit, nil
}
