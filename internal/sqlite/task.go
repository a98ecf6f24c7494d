package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"strings"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/storerules"
)

// visibleTo is the one SQL condition for "the viewer owns the task or it was
// shared with the viewer". Every read of user-facing data goes through it, so
// a task that exists but is not visible costs the same query as a missing one.
//
// A team ("team:NAME") that owns a task or that a task is shared with stands
// for its members as they are at the time of the query, so adding or
// removing a member takes effect at once.
const visibleTo = `(t.owner = ?1 OR t.owner IN ` + teamsOf + ` OR EXISTS (SELECT 1 FROM task_shares s WHERE s.task_id = t.id AND (s.user_id = ?1 OR s.user_id IN ` + teamsOf + `)))`

// visibility is the condition that viewer ?1 may see task t ("" viewer:
// anyone).
func visibility(viewer string) string {
	if viewer == "" {
		return ""
	}
	return ` AND ` + visibleTo
}

// teamsOf is the set of "team:NAME" principals of the teams user ?1 is a
// member of.
const teamsOf = `(SELECT 'team:' || m.team FROM team_members m WHERE m.user_id = ?1)`

// visibleTaskIDs lists the ids of the tasks viewer ?1 may see — owned by
// them or a team of theirs, or shared with them or a team of theirs — each
// branch served by an index (tasks_owner_id, task_shares_user), so a list
// costs in proportion to what the viewer can see, not to the whole table.
// Lists start from it (CROSS JOIN keeps SQLite from scanning tasks in id
// order and testing visibleTo on every row); visibleTo stays the condition
// of reads of one object.
const visibleTaskIDs = `(SELECT id FROM tasks WHERE owner = ?1
	UNION ` + otherVisibleTaskIDs + `)`

// otherVisibleTaskIDs is visibleTaskIDs without the viewer's own tasks: those
// of a team of theirs, or shared with them or a team of theirs (it may still
// name a task the viewer owns, shared with a team they are in).
const otherVisibleTaskIDs = `SELECT id FROM tasks WHERE owner IN ` + teamsOf + `
	UNION SELECT task_id FROM task_shares WHERE user_id = ?1
	UNION SELECT task_id FROM task_shares WHERE user_id IN ` + teamsOf

type rowScanner = storerules.Row

// collect reads every row with scan and closes rows.
func collect[T any](rows *sql.Rows, scan func(rowScanner) (T, error)) ([]T, error) {
	defer rows.Close()
	out, err := storerules.Collect(rows, scan)
	return out, mapErr(err)
}

// all runs query on q and reads every row with scan.
func all[T any](ctx context.Context, q querier, scan func(rowScanner) (T, error), query string, args ...any) ([]T, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, mapErr(err)
	}
	return collect(rows, scan)
}

// changed is the outcome of a statement that must change a row: err
// mapped, else none if it changed none.
func changed(res sql.Result, err error, none error) error {
	if err != nil {
		return mapErr(err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return none
	}
	return nil
}

type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?,", n), ",")
}

// scoped returns ctx with a read scope: the reads in it check the
// cache's freshness once.
func scoped(ctx context.Context) context.Context {
	if duet.ReadScopeFrom(ctx) == nil {
		return duet.WithReadScope(ctx)
	}
	return ctx
}

// FindTaskCases reads the task and a page of its cases in one read scope.
func (d *DB) FindTaskCases(ctx context.Context, viewer string, f duet.CaseFilter) (*duet.Task, []*duet.Case, string, int, error) {
	ctx = scoped(ctx)
	t, err := d.FindTaskByID(ctx, viewer, f.TaskID)
	if err != nil {
		return nil, nil, "", 0, err
	}
	f.TaskID = t.ID
	cases, next, total, err := d.FindCases(ctx, f)
	if err != nil {
		return nil, nil, "", 0, err
	}
	return t, cases, next, total, nil
}

// FindRunPage reads the run and a page of its executions in one read
// scope.
func (d *DB) FindRunPage(ctx context.Context, viewer string, f duet.ExecutionFilter) (*duet.Run, []*duet.Execution, string, error) {
	ctx = scoped(ctx)
	r, err := d.FindRunByID(ctx, viewer, f.RunID)
	if err != nil {
		return nil, nil, "", err
	}
	f.RunID = r.ID
	execs, next, err := d.FindExecutionPage(ctx, f)
	if err != nil {
		return nil, nil, "", err
	}
	return r, execs, next, nil
}

// FindExecutionAndRun reads the execution and its run in one read scope.
func (d *DB) FindExecutionAndRun(ctx context.Context, viewer, id string) (*duet.Execution, *duet.Run, error) {
	ctx = scoped(ctx)
	x, err := d.FindExecutionByID(ctx, viewer, id)
	if err != nil {
		return nil, nil, err
	}
	r, err := d.FindRunByID(ctx, viewer, x.RunID)
	if err != nil {
		return nil, nil, err
	}
	return x, r, nil
}

// FindTaskOverview reads the task, its active case count, its latest run
// and (for a viewer) its contract alerts and schedules in one read scope:
// the cache's freshness is checked once, and every part is cached
// (cache.go), so a repeated overview is one lookup of the counter.
func (d *DB) FindTaskOverview(ctx context.Context, viewer, id string) (*duet.TaskOverview, error) {
	ctx = scoped(ctx)
	t, err := d.FindTaskByID(ctx, viewer, id)
	if err != nil {
		return nil, err
	}
	n, err := d.CountCases(ctx, t.ID)
	if err != nil {
		return nil, err
	}
	o := &duet.TaskOverview{Task: t, ActiveCases: n}
	runs, _, err := d.FindRuns(ctx, duet.RunFilter{Viewer: viewer, TaskID: t.ID, Limit: 1})
	if err != nil {
		return nil, err
	}
	if len(runs) > 0 {
		o.LastRun = runs[0]
	}
	if viewer != "" {
		// Cached as the rest: migration 00038 moves the counter on
		// every change to alerts and schedules.
		x, err := cached(ctx, d, "extras\x00"+viewer+"\x00"+t.ID, func() (overviewExtras, error) {
			var x overviewExtras
			var err error
			if x.alerts, err = d.FindContractAlerts(ctx, viewer, t.ID); err != nil {
				return x, err
			}
			x.schedules, err = d.FindSchedules(ctx, duet.ScheduleFilter{Viewer: viewer, TaskID: t.ID})
			return x, err
		}, cloneExtras)
		if err != nil {
			return nil, err
		}
		o.Alerts, o.Schedules = x.alerts, x.schedules
	}
	return o, nil
}

// overviewExtras are the parts of a task's overview only a viewer gets.
type overviewExtras struct {
	alerts    []*duet.ContractAlert
	schedules []*duet.Schedule
}

// FindTaskByID returns the task if viewer may see it ("" = any: internal
// use only). Returns NOT_FOUND. One query reads the task and its share list;
// the answer is cached until any task, share, team or membership changes
// (cache.go).
func (d *DB) FindTaskByID(ctx context.Context, viewer, id string) (*duet.Task, error) {
	epoch, ok := d.epoch(ctx)
	if !ok {
		c, err := d.readTaskByID(ctx, viewer, id)
		if err != nil {
			return nil, err
		}
		return cloneTask(c)
	}
	key := "task\x00" + viewer + "\x00" + id
	if v, hit := d.cache.get(epoch, key); hit {
		return cloneTask(v.(cachedTask))
	}
	c, err := d.readTaskByID(ctx, viewer, id)
	if err != nil {
		return nil, err
	}
	t, err := cloneTask(c)
	if err != nil {
		return nil, err
	}
	d.cache.put(epoch, key, c)
	return t, nil
}

func (d *DB) readTaskByID(ctx context.Context, viewer, id string) (cachedTask, error) {
	q := `SELECT ` + storerules.TaskColumns + `, (SELECT group_concat(user_id, char(10)) FROM (SELECT user_id FROM task_shares s WHERE s.task_id = t.id ORDER BY user_id))
		FROM tasks t WHERE t.id = ?2` + visibility(viewer)
	var c cachedTask
	t := &c.task
	var created, updated int64
	var shares sql.NullString
	err := d.q.QueryRowContext(ctx, q, viewer, id).Scan(&t.ID, &t.Owner, &t.Name, &t.Description, &t.BaseURL, &t.Device, &created, &updated, &c.postRun, &t.PostRunBy, &c.runConfig, &t.HooksBy, &t.Trace, &shares)
	if errors.Is(err, sql.ErrNoRows) {
		return c, storerules.NotFound("task", id)
	} else if err != nil {
		return c, mapErr(err)
	}
	t.CreatedAt, t.UpdatedAt = fromMicros(created), fromMicros(updated)
	t.SharedWith = []string{}
	if shares.Valid && shares.String != "" {
		t.SharedWith = strings.Split(shares.String, "\n")
	}
	return c, nil
}

// FindTasks returns a page of visible tasks in creation order.
func (d *DB) FindTasks(ctx context.Context, f duet.TaskFilter) ([]*duet.Task, string, int, error) {
	after, err := storerules.DecodeCursor(f.Cursor)
	if err != nil {
		return nil, "", 0, err
	}
	limit := storerules.ClampLimit(f.Limit, 20, 100)
	where := []string{`1 = 1`}
	args := []any{f.Viewer}
	if f.Query != "" {
		where = append(where, `(t.name LIKE ? ESCAPE '\' OR t.description LIKE ? ESCAPE '\')`)
		p := "%" + storerules.LikeEscape(f.Query) + "%"
		args = append(args, p, p)
	}
	if f.Owner != "" {
		where = append(where, `t.owner = ?`)
		args = append(args, f.Owner)
	}
	cond := strings.Join(where, " AND ")
	var total int
	countQuery, pageQuery := taskListQueries(cond, len(where) > 1, after != "")
	if err := d.q.QueryRowContext(ctx, countQuery, args...).Scan(&total); err != nil {
		return nil, "", 0, mapErr(err)
	}
	if after != "" {
		args = append(args, after)
	}
	// The placeholders of the page's second branch are numbered after the
	// first's, so its arguments are given again.
	pageArgs := append(append(append([]any{}, args...), args[1:]...), limit+1)
	tasks, err := all(ctx, d.q, storerules.ScanTask, pageQuery, pageArgs...)
	if err != nil {
		return nil, "", 0, err
	}
	tasks, next := storerules.Page(tasks, limit, func(t *duet.Task) string { return t.ID })
	return tasks, next, total, storerules.LoadTaskShares(ctx, d.Tasks.E, tasks...)
}

// taskListQueries returns list_test_tasks' count and page for viewer ?1 and
// the condition cond on t (filtered: cond is more than "1 = 1"; after: the
// page starts after a cursor, one more placeholder).
//
// Without a filter the count is that of the visible ids, each branch read
// from its index alone; with one, of the visible tasks that pass it. The
// page is the viewer's own tasks straight from tasks_owner_id — in id order,
// no second lookup of each by id, no sort of all of them — merged with the
// other visible tasks that the viewer does not own: two disjoint sets, so
// UNION ALL.
func taskListQueries(cond string, filtered, after bool) (count, page string) {
	count = `SELECT count(*) FROM ` + visibleTaskIDs + ` AS v`
	if filtered {
		count = `SELECT count(*) FROM ` + visibleTaskIDs + ` AS v CROSS JOIN tasks t ON t.id = v.id WHERE ` + cond
	}
	if after {
		cond += ` AND t.id > ?`
	}
	page = `SELECT ` + storerules.TaskColumns + ` FROM tasks t WHERE t.owner = ?1 AND ` + cond +
		` UNION ALL SELECT ` + storerules.TaskColumns + ` FROM (` + otherVisibleTaskIDs + `) AS v CROSS JOIN tasks t ON t.id = v.id WHERE t.owner <> ?1 AND ` + cond +
		` ORDER BY 1 LIMIT ?`
	return count, page
}

func ownsTask(ctx context.Context, q querier, owner, taskID string) error {
	var one int
	// A member of the team that owns the task acts as its owner.
	err := q.QueryRowContext(ctx, `SELECT 1 FROM tasks t WHERE t.id = ?2 AND (t.owner = ?1 OR t.owner IN `+teamsOf+`)`, owner, taskID).Scan(&one)
	return found(err, "task", taskID)
}

// setShares makes the task's share list exactly users (each a user or a
// team that exists, bound to its id).
func setShares(ctx context.Context, tx *cachedTx, taskID string, users []string, now int64) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM task_shares WHERE task_id = ?`, taskID); err != nil {
		return mapErr(err)
	}
	for _, u := range users {
		team, err := shareTeamID(ctx, tx, u)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO task_shares (task_id, user_id, team_id, created_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING`, taskID, u, team, now); err != nil {
			return mapErr(err)
		}
	}
	return nil
}
