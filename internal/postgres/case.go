package postgres

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/storerules"
)

const caseColumns = `c.id, c.task_id, c.key, c.title, c.source, c.source_hash, c.steps, c.timeout_ms, c.version, c.status, c.created_by, c.created_at, c.updated_at, c.row, c.retries, c.tags`

func scanCase(r pgx.Row) (*duet.Case, error) {
	var c duet.Case
	var steps, row, tags string
	if err := r.Scan(&c.ID, &c.TaskID, &c.Key, &c.Title, &c.Source, &c.SourceHash, &steps, &c.TimeoutMs, &c.Version, &c.Status, &c.CreatedBy, &c.CreatedAt, &c.UpdatedAt, &row, &c.Retries, &tags); err != nil {
		return nil, err
	}
	if err := storerules.DecodeCase(&c, steps, row, tags); err != nil {
		return nil, err
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
	return d.tx(ctx, withCaseVersion(ctx, c, duet.SavedAsDraft, func(tx pgx.Tx) error { // caseversion.go
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
				c.ID, c.TaskID, c.Key, c.Title, c.Source, c.SourceHash, string(steps), c.TimeoutMs, c.Version, c.Status, c.CreatedBy, now, now, "", c.Retries, storerules.EncodeTags(c.Tags))
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
				c.Title, c.Source, c.SourceHash, string(steps), c.TimeoutMs, c.Version, c.CreatedBy, now, c.ID, c.Retries, storerules.EncodeTags(c.Tags))
			return mapErr(err)
		}
	}))
}

// FindCaseByID returns the case if viewer may see its task. Returns NOT_FOUND.
func (d *DB) FindCaseByID(ctx context.Context, viewer, id string) (*duet.Case, error) {
	q := `SELECT ` + caseColumns + ` FROM cases c JOIN tasks t ON t.id = c.task_id WHERE c.id = $2` + visibility(viewer)
	c, err := scanCase(d.pool.QueryRow(ctx, q, viewer, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, storerules.NotFound("case", id)
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
	after, err := storerules.DecodeCursor(f.Cursor)
	if err != nil {
		return "", nil, 0, err
	}
	limit := storerules.ClampLimit(f.Limit, 50, 200)
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
		next = storerules.EncodeCursor(cases[limit-1].Key)
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
