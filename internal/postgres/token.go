package postgres

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/storerules"
)

// CreateToken stores a personal access token (its hash only). Returns
// INVALID_ARGUMENT.
func (d *DB) CreateToken(ctx context.Context, t *duet.Token) error {
	if err := storerules.NewToken(t, d.now()); err != nil {
		return err
	}
	if t.ParentID == "" {
		_, err := d.pool.Exec(ctx, `INSERT INTO tokens (id, user_id, name, hash, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6)`,
			t.ID, t.UserID, t.Name, t.Hash, t.CreatedAt, nullTime(t.ExpiresAt))
		return mapErr(err)
	}
	// A child: its parent is checked, and held (FOR KEY SHARE: a revocation
	// of it waits) until the child is stored, in one transaction.
	return d.tx(ctx, func(tx pgx.Tx) error {
		var user string
		var expires *time.Time
		err := tx.QueryRow(ctx, `SELECT user_id, expires_at FROM tokens WHERE id = $1 AND (expires_at IS NULL OR expires_at > $2) FOR KEY SHARE`,
			t.ParentID, ts(d.now())).Scan(&user, &expires)
		if errors.Is(err, pgx.ErrNoRows) {
			return duet.ParentTokenGone(t.ParentID)
		} else if err != nil {
			return mapErr(err)
		}
		if err := duet.CheckChildToken(t, user, utcPtr(expires)); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO tokens (id, user_id, name, parent_id, hash, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
			t.ID, t.UserID, t.Name, t.ParentID, t.Hash, t.CreatedAt, nullTime(t.ExpiresAt))
		return mapErr(err)
	})
}

// FindTokenByHash returns the unexpired token with that hash. Returns
// UNAUTHENTICATED.
//
// Every authenticated request makes this read: lookups that arrive while
// others are in flight are read together, in one statement of
// tokensTogetherQuery (d.tokens, coalescer), as a task's overview is.
func (d *DB) FindTokenByHash(ctx context.Context, hash string) (*duet.Token, error) {
	if d.tokens == nil {
		return d.findTokenByHash(ctx, hash)
	}
	return d.tokens.get(ctx, hash)
}

// findTokenByHash is FindTokenByHash's read alone.
func (d *DB) findTokenByHash(ctx context.Context, hash string) (*duet.Token, error) {
	t, err := storerules.ScanToken(d.pool.QueryRow(ctx, `SELECT `+storerules.TokenColumns+` FROM tokens WHERE hash = $1 AND (expires_at IS NULL OR expires_at > $2)`, hash, ts(d.now())))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errInvalidToken()
	}
	return t, mapErr(err)
}

func errInvalidToken() error {
	return duet.Errorf(duet.CodeUnauthenticated, "invalid or expired token")
}

// tokensTogetherQuery reads tokens by hash together ($2, readPairs' ids;
// $1 unused), each unexpired at $3: findTokenByHash's statement for each.
const tokensTogetherQuery = `SELECT q.ord, o.* FROM ` + readPairs + `
	CROSS JOIN LATERAL (SELECT ` + storerules.TokenColumns + ` FROM tokens WHERE hash = q.id AND (expires_at IS NULL OR expires_at > $3)) o`

// newTokenReads is the coalescer of FindTokenByHash. A token not found
// (or expired) is UNAUTHENTICATED, as alone, and its hash is in no message.
func newTokenReads(d *DB, lanes int) *coalescer[string, *duet.Token] {
	return &coalescer[string, *duet.Token]{
		lanes: lanes, max: maxReadsTogether,
		one: d.findTokenByHash,
		many: func(ctx context.Context, hashes []string) ([]*duet.Token, []error, error) {
			keys := make([]readKey, len(hashes))
			for i, h := range hashes {
				keys[i] = readKey{id: h}
			}
			toks, errs, err := readTogether(ctx, d, tokensTogetherQuery, "token", keys, func(r pgx.Rows) (*duet.Token, error) { return storerules.ScanToken(r) }, ts(d.now()))
			for i, e := range errs {
				if e != nil {
					errs[i] = errInvalidToken()
				}
			}
			return toks, errs, err
		},
	}
}

// FindTokens lists a user's tokens, newest first.
func (d *DB) FindTokens(ctx context.Context, userID string) ([]*duet.Token, error) {
	return all(ctx, d.pool, storerules.ScanToken, `SELECT `+storerules.TokenColumns+` FROM tokens WHERE user_id = $1 ORDER BY id DESC`, userID)
}

// tokenTree selects the ids of token $1 of user $2 and of every token it
// created, transitively.
const tokenTree = `WITH RECURSIVE tree (id) AS (SELECT id FROM tokens WHERE id = $1 AND user_id = $2
	UNION SELECT c.id FROM tokens c JOIN tree ON c.parent_id = tree.id) SELECT id FROM tree`

// DeleteToken revokes one of the user's tokens, every token it created
// (transitively) and the console sessions started with any of them, in one
// transaction. Returns NOT_FOUND.
func (d *DB) DeleteToken(ctx context.Context, userID, id string) error {
	return d.tx(ctx, func(tx pgx.Tx) error {
		// The token's row first: a child being created now holds it FOR
		// KEY SHARE, so this waits for that child and then finds it.
		tag, err := tx.Exec(ctx, `SELECT 1 FROM tokens WHERE id = $1 AND user_id = $2 FOR UPDATE`, id, userID)
		if err != nil {
			return mapErr(err)
		}
		if tag.RowsAffected() == 0 {
			return storerules.NotFound("token", id)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM console_sessions WHERE token_id IN (`+tokenTree+`)`, id, userID); err != nil {
			return mapErr(err)
		}
		_, err = tx.Exec(ctx, `DELETE FROM tokens WHERE id IN (`+tokenTree+`)`, id, userID)
		return mapErr(err)
	})
}

// AppendAudit stores audit records in one statement (one round trip for
// the whole batch the audit writer hands over).
func (d *DB) AppendAudit(ctx context.Context, recs []*duet.AuditRecord) error {
	return appendLog(ctx, d, auditLog, recs, func(r *duet.AuditRecord) logRow {
		return logRow{r.Time, r.TraceID, [5]string{string(r.CallSource), r.Caller, r.Method, r.Tool, string(r.Outcome)}, r.DurationUs, r.ArgBytes, r.ResultBytes}
	}, func(r *duet.AuditRecord, id int64) { r.ID = id })
}

// insertAudit writes one audit record in tx (the record of a governed
// call, with the call's change) and sets its id.
func insertAudit(ctx context.Context, tx pgx.Tx, r *duet.AuditRecord) error {
	return mapErr(tx.QueryRow(ctx, `INSERT INTO audit (time, trace_id, call_source, caller, method, tool, outcome, duration_us, arg_bytes, result_bytes)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING id`,
		ts(r.Time), r.TraceID, string(r.CallSource), r.Caller, r.Method, r.Tool, string(r.Outcome), r.DurationUs, int32(r.ArgBytes), int32(r.ResultBytes)).Scan(&r.ID))
}

// CompleteAudit stores the final state of records written with a change,
// in one statement.
func (d *DB) CompleteAudit(ctx context.Context, recs []*duet.AuditRecord) error {
	if len(recs) == 0 {
		return nil
	}
	n := len(recs)
	ids, dur := make([]int64, n), make([]int64, n)
	caller, method, tool, outcome := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	argB, resB := make([]int32, n), make([]int32, n)
	for i, r := range recs {
		ids[i], caller[i], method[i], tool[i], outcome[i] = r.ID, r.Caller, r.Method, r.Tool, string(r.Outcome)
		dur[i], argB[i], resB[i] = r.DurationUs, int32(r.ArgBytes), int32(r.ResultBytes)
	}
	_, err := d.pool.Pool.Exec(ctx, `UPDATE audit a SET caller = x.caller, method = x.method, tool = x.tool, outcome = x.outcome,
			duration_us = x.duration_us, arg_bytes = x.arg_bytes, result_bytes = x.result_bytes
		FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bigint[], $7::int[], $8::int[])
			AS x (id, caller, method, tool, outcome, duration_us, arg_bytes, result_bytes)
		WHERE a.id = x.id`, ids, caller, method, tool, outcome, dur, argB, resB)
	return mapErr(err)
}

// assignIDs reads the n identity values an INSERT ... ORDER BY ... RETURNING
// produced, in insertion order.
func assignIDs(rows pgx.Rows, n int, set func(int, int64)) error {
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return mapErr(err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return mapErr(err)
	}
	if len(ids) == n {
		// Identity values are drawn in insertion order, so sorting them
		// restores it whatever order RETURNING lists them in.
		slices.Sort(ids)
		for i, id := range ids {
			set(i, id)
		}
	}
	return nil
}

// FindAudit returns audit records matching f, newest first.
func (d *DB) FindAudit(ctx context.Context, f duet.AuditFilter) ([]*duet.AuditRecord, error) {
	q, args := storerules.AuditSearch(f, stored)
	return all(ctx, d.pool, storerules.ScanAudit, q, args...)
}
