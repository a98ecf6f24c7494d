package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"strings"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/storerules"
)

// CreateToken stores a personal access token (its hash only).
func (d *DB) CreateToken(ctx context.Context, t *duet.Token) error {
	if err := storerules.NewToken(t, d.now()); err != nil {
		return err
	}
	if t.ParentID == "" {
		_, err := d.q.ExecContext(ctx, `INSERT INTO tokens (id, user_id, name, hash, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)`,
			t.ID, t.UserID, t.Name, t.Hash, micros(t.CreatedAt), nullMicros(t.ExpiresAt))
		return mapErr(err)
	}
	// A child: its parent is checked and the child stored in one
	// transaction, so a parent revoked meanwhile leaves no child behind.
	return d.tx(ctx, func(tx *cachedTx) error {
		var user string
		var expires sql.NullInt64
		err := tx.QueryRowContext(ctx, `SELECT user_id, expires_at FROM tokens WHERE id = ? AND (expires_at IS NULL OR expires_at > ?)`,
			t.ParentID, micros(d.now())).Scan(&user, &expires)
		if errors.Is(err, sql.ErrNoRows) {
			return duet.ParentTokenGone(t.ParentID)
		} else if err != nil {
			return mapErr(err)
		}
		if err := duet.CheckChildToken(t, user, ptrTime(expires)); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO tokens (id, user_id, name, parent_id, hash, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			t.ID, t.UserID, t.Name, t.ParentID, t.Hash, micros(t.CreatedAt), nullMicros(t.ExpiresAt))
		return mapErr(err)
	})
}

// FindTokenByHash returns the unexpired token with that hash. Returns UNAUTHENTICATED.
// The token is cached until any token changes (cache.go); its expiry is
// checked on every call.
func (d *DB) FindTokenByHash(ctx context.Context, hash string) (*duet.Token, error) {
	t, err := cached(ctx, d, "token\x00"+hash, func() (*duet.Token, error) { return d.readTokenByHash(ctx, hash) }, cloneToken)
	if err == nil && t.ExpiresAt != nil && !t.ExpiresAt.After(d.now()) {
		return nil, duet.Errorf(duet.CodeUnauthenticated, "invalid or expired token")
	}
	return t, err
}

func (d *DB) readTokenByHash(ctx context.Context, hash string) (*duet.Token, error) {
	t, err := storerules.ScanToken(d.q.QueryRowContext(ctx, `SELECT `+storerules.TokenColumns+` FROM tokens WHERE hash = ? AND (expires_at IS NULL OR expires_at > ?)`, hash, micros(d.now())))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, duet.Errorf(duet.CodeUnauthenticated, "invalid or expired token")
	}
	return t, mapErr(err)
}

// FindTokens lists a user's tokens, newest first.
func (d *DB) FindTokens(ctx context.Context, userID string) ([]*duet.Token, error) {
	return all(ctx, d.q, storerules.ScanToken, `SELECT `+storerules.TokenColumns+` FROM tokens WHERE user_id = ? ORDER BY id DESC`, userID)
}

// tokenTree selects the ids of token ?1 of user ?2 and of every token it
// created, transitively.
const tokenTree = `WITH RECURSIVE tree (id) AS (SELECT id FROM tokens WHERE id = ?1 AND user_id = ?2
	UNION SELECT c.id FROM tokens c JOIN tree ON c.parent_id = tree.id) SELECT id FROM tree`

// DeleteToken revokes one of the user's tokens, every token it created
// (transitively) and the console sessions started with any of them, in one
// transaction. Returns NOT_FOUND.
func (d *DB) DeleteToken(ctx context.Context, userID, id string) error {
	return d.tx(ctx, func(tx *cachedTx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM console_sessions WHERE token_id IN (`+tokenTree+`)`, id, userID); err != nil {
			return mapErr(err)
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM tokens WHERE id IN (`+tokenTree+`)`, id, userID)
		return changed(res, err, storerules.NotFound("token", id))
	})
}

// AppendAudit stores audit records in one transaction, up to auditChunk
// rows per INSERT statement (one statement per record cost most of the
// audit writer's CPU under load; see docs/performance.md). The rows of one
// statement get consecutive ids in order (AUTOINCREMENT, one writer), so
// each record's id follows from the statement's last one.
func (d *DB) AppendAudit(ctx context.Context, recs []*duet.AuditRecord) error {
	return appendLog(ctx, d, recs, auditChunk, auditInto, func(r *duet.AuditRecord) []any {
		return []any{micros(r.Time), r.TraceID, r.CallSource, r.Caller, r.Method, r.Tool, r.Outcome, r.DurationUs, r.ArgBytes, r.ResultBytes}
	}, func(r *duet.AuditRecord, id int64) { r.ID = id })
}

// appendLog stores recs in one transaction, up to chunk rows (their
// columns as row lists them) per INSERT into the table and columns of into
// (logInsert); setID gives each record its id, which follows from the last one of its
// statement. The statements are prepared before the transaction:
// preparing one takes a connection from the pool, and taking one while
// holding the write lock can wait on connections that wait for that lock
// (until busy_timeout: runs stalled 10 s when it did).
func appendLog[T any](ctx context.Context, d *DB, recs []T, chunk int, into string, row func(T) []any, setID func(T, int64)) error {
	if len(recs) == 0 {
		return nil
	}
	stmts := map[int]*sql.Stmt{}
	for rest := len(recs); rest > 0; rest -= min(rest, chunk) {
		n := min(rest, chunk)
		if stmts[n] == nil {
			s, err := d.q.stmt(ctx, logInsert(into, n))
			if err != nil {
				return mapErr(err)
			}
			stmts[n] = s
		}
	}
	return d.tx(ctx, func(tx *cachedTx) error {
		for len(recs) > 0 {
			part := recs[:min(len(recs), chunk)]
			recs = recs[len(part):]
			args := make([]any, 0, 10*len(part))
			for _, r := range part {
				args = append(args, row(r)...)
			}
			res, err := tx.StmtContext(ctx, stmts[len(part)]).ExecContext(ctx, args...)
			if err != nil {
				return mapErr(err)
			}
			last, err := res.LastInsertId()
			if err != nil {
				return mapErr(err)
			}
			for i, r := range part {
				setID(r, last-int64(len(part)-1-i))
			}
		}
		return nil
	})
}

// insertAudit writes one audit record with ins (logInsert(auditInto, 1) in the
// transaction of a governed call's change) and sets its id.
func insertAudit(ctx context.Context, ins *sql.Stmt, r *duet.AuditRecord) error {
	res, err := ins.ExecContext(ctx, micros(r.Time), r.TraceID, r.CallSource, r.Caller, r.Method, r.Tool, r.Outcome, r.DurationUs, r.ArgBytes, r.ResultBytes)
	if err != nil {
		return mapErr(err)
	}
	r.ID, err = res.LastInsertId()
	return mapErr(err)
}

// CompleteAudit stores the final state of records written with a change,
// in one transaction.
func (d *DB) CompleteAudit(ctx context.Context, recs []*duet.AuditRecord) error {
	if len(recs) == 0 {
		return nil
	}
	s, err := d.q.stmt(ctx, `UPDATE audit SET caller = ?, method = ?, tool = ?, outcome = ?, duration_us = ?, arg_bytes = ?, result_bytes = ? WHERE id = ?`)
	if err != nil {
		return mapErr(err)
	}
	return d.tx(ctx, func(tx *cachedTx) error {
		st := tx.StmtContext(ctx, s)
		for _, r := range recs {
			if _, err := st.ExecContext(ctx, r.Caller, r.Method, r.Tool, r.Outcome, r.DurationUs, r.ArgBytes, r.ResultBytes, r.ID); err != nil {
				return mapErr(err)
			}
		}
		return nil
	})
}

// auditChunk is the most rows one INSERT of AppendAudit carries (10
// parameters each, well under SQLite's limit of 32766).
const auditChunk = 64

// auditInto is the table and columns of the audit INSERT.
const auditInto = `audit (time, trace_id, call_source, caller, method, tool, outcome, duration_us, arg_bytes, result_bytes)`

// logInsert is the INSERT of n rows of 10 parameters into the table and
// columns of into. It is OR FAIL: an INSERT of several rows that may abort
// halfway (SQLite's default for a constraint) undoes just itself, so inside
// a transaction SQLite first copies every page it touches to a statement
// journal — a tenth of the audit writer's CPU, a third of the invocation
// recorder's. OR FAIL keeps the rows stored before a failure, and the
// batch's transaction (appendLog) undoes them all: a batch is stored whole
// or not at all either way (TestLogInsertsNeedNoStatementJournal).
func logInsert(into string, n int) string {
	return `INSERT OR FAIL INTO ` + into + ` VALUES ` + rows10(n)
}

// rows10 is the VALUES of n rows of 10 parameters.
func rows10(n int) string {
	const row = `(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	return strings.TrimSuffix(strings.Repeat(row+`, `, n), `, `)
}

// FindAudit returns audit records matching f, newest first.
func (d *DB) FindAudit(ctx context.Context, f duet.AuditFilter) ([]*duet.AuditRecord, error) {
	q, args := storerules.AuditSearch(f, stored)
	return all(ctx, d.q, storerules.ScanAudit, q, args...)
}
