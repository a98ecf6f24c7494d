package postgres

import (
	"context"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/storerules"
)

// visibleTo is the one SQL condition for "the viewer ($1) owns the task or
// it was shared with the viewer". Every read of user-facing data goes
// through it, so a task that exists but is not visible costs the same query
// as a missing one.
//
// A team ("team:NAME") that owns a task or that a task is shared with stands
// for its members as they are at the time of the query, so adding or
// removing a member takes effect at once.
const visibleTo = `(t.owner = $1 OR t.owner IN ` + teamsOf + ` OR EXISTS (SELECT 1 FROM task_shares s WHERE s.task_id = t.id AND (s.user_id = $1 OR s.user_id IN ` + teamsOf + `)))`

// teamsOf is the set of "team:NAME" principals of the teams user $1 is a
// member of.
const teamsOf = `(SELECT 'team:' || m.team FROM team_members m WHERE m.user_id = $1)`

// visibleTaskIDs lists the ids of the tasks viewer $1 may see — owned by
// them or a team of theirs, or shared with them or a team of theirs — each
// branch served by an index (tasks_owner_id, task_shares_user), so a list
// costs in proportion to what the viewer can see, not to the whole table.
// Lists start from it; visibleTo stays the condition of reads of one object.
const visibleTaskIDs = `(SELECT id FROM tasks WHERE owner = $1
	UNION ` + otherVisibleTaskIDs + `)`

// otherVisibleTaskIDs is visibleTaskIDs without the viewer's own tasks: those
// of a team of theirs, or shared with them or a team of theirs (it may still
// name a task the viewer owns, shared with a team they are in).
const otherVisibleTaskIDs = `SELECT id FROM tasks WHERE owner IN ` + teamsOf + `
	UNION SELECT task_id FROM task_shares WHERE user_id = $1
	UNION SELECT task_id FROM task_shares WHERE user_id IN ` + teamsOf

// visibility returns the condition a query of one object by id ($2) adds
// for viewer ($1): visibleTo, or for an internal caller (viewer "") a
// condition that is true and still gives $1 its type.
func visibility(viewer string) string {
	if viewer == "" {
		return ` AND $1::text = ''`
	}
	return ` AND ` + visibleTo
}

// byViewer is a statement built once in its two forms: with a viewer's
// visibility (the viewer is $1) and for internal reads (no viewer). A read
// that built its statement on every call spent microseconds joining a
// kilobyte of SQL that never changes.
type byViewer struct{ viewer, internal string }

// statementsOf builds both forms of build's statement.
func statementsOf(build func(viewer string) string) byViewer {
	return byViewer{viewer: build("viewer"), internal: build("")}
}

// of returns the statement for viewer ("" = internal).
func (b byViewer) of(viewer string) string {
	if viewer == "" {
		return b.internal
	}
	return b.viewer
}

// FindTaskByID returns the task if viewer may see it ("" = any: internal
// use only). Returns NOT_FOUND. One query reads the task and its share list.
func (d *DB) FindTaskByID(ctx context.Context, viewer, id string) (*duet.Task, error) {
	return scanTaskShares(d.pool.QueryRow(ctx, taskByID.of(viewer), viewer, id), id)
}

// taskByID is taskByIDQuery's two statements.
var taskByID = statementsOf(taskByIDQuery)

// taskByIDQuery is the statement of FindTaskByID ($1 the viewer, $2 the
// id): the task and its shares.
func taskByIDQuery(viewer string) string {
	return `SELECT ` + storerules.TaskColumns + `, ARRAY(SELECT user_id FROM task_shares s WHERE s.task_id = t.id ORDER BY user_id)
		FROM tasks t WHERE t.id = $2` + visibility(viewer)
}

// scanTaskShares reads the row of taskByIDQuery. Returns NOT_FOUND.
func scanTaskShares(row rowScanner, id string) (*duet.Task, error) {
	var t duet.Task
	var postRun, runConfig string
	err := row.Scan(&t.ID, &t.Owner, &t.Name, &t.Description, &t.BaseURL, &t.Device, &t.CreatedAt, &t.UpdatedAt, &postRun, &t.PostRunBy, &runConfig, &t.HooksBy, &t.Trace, &t.SharedWith)
	if err != nil {
		return nil, found(err, "task", id)
	}
	if t.PostRun, err = storerules.DecodePostRun(t.ID, postRun); err != nil {
		return nil, err
	}
	if err := storerules.DecodeRunConfig(&t, runConfig); err != nil {
		return nil, err
	}
	t.CreatedAt, t.UpdatedAt = utc(t.CreatedAt), utc(t.UpdatedAt)
	if t.SharedWith == nil {
		t.SharedWith = []string{}
	}
	return &t, nil
}

// FindTaskOverview reads the task (with the viewer's visibility), its
// active case count, its latest run with its totals, and (for a viewer) its
// contract alerts and schedules in one statement (overviewQuery): one round
// trip, and the visibility checked once. A viewer's reads that arrive while
// others are in flight are read together, in one statement of
// overviewsQuery (d.overviews, coalescer).
func (d *DB) FindTaskOverview(ctx context.Context, viewer, id string) (*duet.TaskOverview, error) {
	if viewer == "" || d.overviews == nil {
		return d.findTaskOverview(ctx, viewer, id)
	}
	return d.overviews.get(ctx, readKey{viewer, id})
}

// findTaskOverview is FindTaskOverview's read alone.
func (d *DB) findTaskOverview(ctx context.Context, viewer, id string) (*duet.TaskOverview, error) {
	rows, err := d.pool.Query(ctx, overview.of(viewer), viewer, id)
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return nil, mapErr(err)
		}
		return nil, storerules.NotFound("task", id)
	}
	o, err := scanOverview(rows, viewer != "", id)
	if err != nil {
		return nil, err
	}
	rows.Close()
	return o, mapErr(rows.Err())
}

// scanOverview reads the current row of overviewQuery (of a viewer, or
// not) or overviewsQuery (after its head). The row values are decoded
// before the rows move on: their bytes are the connection's read buffer,
// and its type map is the connection's.
func scanOverview(rows pgx.Rows, viewer bool, id string) (*duet.TaskOverview, error) {
	o := &duet.TaskOverview{}
	var run pgtype.UndecodedBytes
	var alerts, schedules []pgtype.UndecodedBytes
	tail := []any{&o.ActiveCases, &run}
	if viewer {
		tail = append(tail, &alerts, &schedules)
	}
	var err error
	if o.Task, err = scanTaskShares(tailRow{Row: rows, tail: tail}, id); err != nil {
		return nil, err
	}
	m := rows.Conn().TypeMap()
	if run != nil {
		if o.LastRun, err = scanRunTotals(recordRow{m, run}); err != nil {
			return nil, mapErr(err)
		}
	}
	if viewer {
		if o.Alerts, err = scanRecords(m, alerts, storerules.ScanContractAlert); err != nil {
			return nil, mapErr(err)
		}
		if o.Schedules, err = scanRecords(m, schedules, scanSchedule); err != nil {
			return nil, mapErr(err)
		}
	}
	return o, nil
}

// overview is overviewQuery's two statements.
var overview = statementsOf(overviewQuery)

// overviewQuery is the statement of FindTaskOverview ($1 the viewer, $2
// the task's id): the task and its shares (as taskByIDQuery), its active
// case count, its latest run with its totals as one row value (NULL when
// it has none) and, for a viewer, its contract alerts of active cases
// (storerules.ContractAlertsQuery's columns and order) and its schedules as lists of
// row values. The task's visibility is checked once, in the WHERE: the
// rest is read only for a task the viewer may see, and is that task's.
// One statement costs the server less than a batch of four: each
// statement is a plan to start and a transaction's bookkeeping.
func overviewQuery(viewer string) string {
	q := `SELECT ` + storerules.TaskColumns + `, ARRAY(SELECT user_id FROM task_shares s WHERE s.task_id = t.id ORDER BY user_id),
		(SELECT count(*) FROM cases c WHERE c.task_id = t.id AND c.status = 'active'),
		(SELECT ROW(` + runWithTotals + `) FROM runs r WHERE r.task_id = t.id ORDER BY r.id DESC LIMIT 1)`
	if viewer != "" {
		q += `,
		ARRAY(SELECT ROW(a.task_id, a.case_id, a.case_version, a.server_key, a.tool, a.broken, a.detail, a.detected_at)
			FROM contract_alerts a JOIN cases c ON c.id = a.case_id AND c.version = a.case_version AND c.status = 'active'
			WHERE a.task_id = t.id ORDER BY a.broken DESC, c.key, a.server_key, a.tool),
		ARRAY(SELECT ROW(` + scheduleColumns + `) FROM schedules s WHERE s.task_id = t.id ORDER BY s.name, s.owner)`
	}
	return q + `
		FROM tasks t WHERE t.id = $2` + visibility(viewer)
}

// overviewsQuery is the statement of overview reads together ($1 the viewers,
// $2 the tasks' ids, in pairs): for each pair the task may be seen in, its
// ordinal (from 1) and then overviewQuery's columns for that viewer and
// task. overviewQuery is its one source: its $1 and $2 stand for the pair.
var overviewsQuery = `SELECT q.ord, o.* FROM ` + readPairs + `
	CROSS JOIN LATERAL (` + pairParams.Replace(overviewQuery("viewer")) + `) o`

// FindTasks returns a page of visible tasks in creation order.
func (d *DB) FindTasks(ctx context.Context, f duet.TaskFilter) ([]*duet.Task, string, int, error) {
	after, err := storerules.DecodeCursor(f.Cursor)
	if err != nil {
		return nil, "", 0, err
	}
	limit := storerules.ClampLimit(f.Limit, 20, 100)
	a := args{f.Viewer}
	where := []string{`TRUE`}
	if f.Query != "" {
		p := a.add("%" + storerules.LikeEscape(f.Query) + "%")
		where = append(where, `(t.name ILIKE `+p+` ESCAPE '\' OR t.description ILIKE `+p+` ESCAPE '\')`)
	}
	if f.Owner != "" {
		where = append(where, `t.owner = `+a.add(f.Owner))
	}
	cond := strings.Join(where, " AND ")
	filterArgs := len(a)
	var total int
	afterParam := ""
	if after != "" {
		afterParam = a.add(after)
	}
	countQuery, pageQuery := taskListQueries(cond, len(where) > 1, afterParam, a.add(limit+1))
	// One statement: the page, each task's shares and the count (an
	// uncorrelated subquery, computed once, on the filter's own
	// placeholders). An empty page, which carries no count, counts apart.
	rows, err := d.pool.Query(ctx, `SELECT p.*, ARRAY(SELECT s.user_id FROM task_shares s WHERE s.task_id = p.id ORDER BY s.user_id), (`+countQuery+`)
		FROM (`+pageQuery+`) AS p ORDER BY p.id`, a...)
	if err != nil {
		return nil, "", 0, mapErr(err)
	}
	tasks, err := collect(rows, func(r rowScanner) (*duet.Task, error) {
		var shares []string
		t, err := storerules.ScanTask(tailRow{r, []any{&shares, &total}})
		if err == nil && len(shares) > 0 {
			t.SharedWith = shares
		}
		return t, err
	})
	if err != nil {
		return nil, "", 0, err
	}
	if len(tasks) == 0 {
		// The count takes the arguments of the filter alone.
		if err := d.pool.QueryRow(ctx, countQuery, a[:filterArgs]...).Scan(&total); err != nil {
			return nil, "", 0, mapErr(err)
		}
	}
	tasks, next := storerules.Page(tasks, limit, func(t *duet.Task) string { return t.ID })
	return tasks, next, total, nil
}

// taskListQueries returns list_test_tasks' count and page for viewer $1 and
// the condition cond on t (filtered: cond is more than "TRUE"), the page
// after the cursor in placeholder afterParam (none if "") and at most
// limitParam rows.
//
// Without a filter the count is that of the visible ids, each branch read
// from its index alone (index-only); with one, of the visible tasks that
// pass it. The page is the viewer's own tasks straight from tasks_owner_id —
// in id order, no second lookup of each by id, no sort of all of them —
// merged with the other visible tasks that the viewer does not own: two
// disjoint sets, so UNION ALL.
func taskListQueries(cond string, filtered bool, afterParam, limitParam string) (count, page string) {
	count = `SELECT count(*) FROM ` + visibleTaskIDs + ` AS v`
	if filtered {
		count = `SELECT count(*) FROM ` + visibleTaskIDs + ` AS v JOIN tasks t ON t.id = v.id WHERE ` + cond
	}
	if afterParam != "" {
		cond += ` AND t.id > ` + afterParam
	}
	page = `(SELECT ` + storerules.TaskColumns + ` FROM tasks t WHERE t.owner = $1 AND ` + cond + ` ORDER BY t.id LIMIT ` + limitParam + `)` +
		` UNION ALL (SELECT ` + storerules.TaskColumns + ` FROM (` + otherVisibleTaskIDs + `) AS v JOIN tasks t ON t.id = v.id WHERE t.owner <> $1 AND ` + cond + ` ORDER BY t.id LIMIT ` + limitParam + `)` +
		` ORDER BY 1 LIMIT ` + limitParam
	return count, page
}

// collect reads every row with scan and closes rows.
func collect[T any](rows pgx.Rows, scan func(rowScanner) (T, error)) ([]T, error) {
	defer rows.Close()
	out, err := storerules.Collect(rows, scan)
	return out, mapErr(err)
}

// all runs query on q and reads every row with scan.
func all[T any](ctx context.Context, q querier, scan func(rowScanner) (T, error), query string, args ...any) ([]T, error) {
	rows, err := q.Query(ctx, query, args...)
	if err == nil {
		return collect(rows, scan)
	}
	return nil, mapErr(err)
}

// ownsTask checks owner owns taskID and locks the task row for the rest of
// the transaction. Returns NOT_FOUND.
func ownsTask(ctx context.Context, q querier, owner, taskID string) error {
	var one int
	// A member of the team that owns the task acts as its owner.
	err := q.QueryRow(ctx, `SELECT 1 FROM tasks t WHERE t.id = $2 AND (t.owner = $1 OR t.owner IN `+teamsOf+`) FOR UPDATE OF t`, owner, taskID).Scan(&one)
	return found(err, "task", taskID)
}

// setShares makes the task's share list exactly users (each a user or a
// team that exists, bound to its id).
func setShares(ctx context.Context, tx pgx.Tx, taskID string, users []string, now time.Time) error {
	if _, err := tx.Exec(ctx, `DELETE FROM task_shares WHERE task_id = $1`, taskID); err != nil {
		return mapErr(err)
	}
	if len(users) == 0 {
		return nil
	}
	teams, err := shareTeamIDs(ctx, tx, users)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `INSERT INTO task_shares (task_id, user_id, team_id, created_at) SELECT $1, u, tid, $4 FROM unnest($2::text[], $3::text[]) AS x (u, tid) ON CONFLICT DO NOTHING`,
		taskID, users, teams, now)
	return mapErr(err)
}
