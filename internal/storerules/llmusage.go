package storerules

import (
	"context"
	"database/sql"
	"errors"

	"github.com/duet-test/duet"
)

// RowFunc runs one statement of the SQL texts below and scans its one row
// into dest, its errors mapped by the engine. A missing row is an error
// that errors.Is sql.ErrNoRows (pgx's ErrNoRows is one too). The texts use
// $n parameters, which PostgreSQL and SQLite (modernc's driver binds $n to
// the n-th argument) both read.
type RowFunc func(ctx context.Context, dest []any, sql string, args ...any) error

// addLLMUsageSQL is one conditional upsert: the conflicting row is locked
// by the write and its condition judged on its latest version, so
// concurrent charges are counted one after the other, and one that would
// pass the limit ($7) changes nothing. The CASTs give PostgreSQL the
// parameters' types.
const addLLMUsageSQL = `INSERT INTO llm_usage (user_id, day, tokens, calls, updated_at) VALUES ($1, $2, $3, $4, $5)
	ON CONFLICT (user_id, day) DO UPDATE SET
		tokens = CASE WHEN llm_usage.tokens + CAST($6 AS BIGINT) < 0 THEN 0 ELSE llm_usage.tokens + CAST($6 AS BIGINT) END,
		calls = llm_usage.calls + excluded.calls, updated_at = excluded.updated_at
	WHERE CAST($7 AS BIGINT) = 0 OR llm_usage.tokens + CAST($6 AS BIGINT) <= CAST($7 AS BIGINT)
	RETURNING tokens, calls`

// ChargeLLMUsage charges c, checked, for duet.LLMUsageStore, now being the
// current time as the engine stores it: a charge over the limit by itself
// is refused without a write; write runs the conditional upsert, which adds
// c to the user's day and returns the day's usage after it, or no row,
// changing nothing, when c would pass c.Limit; a refused charge returns the
// day's usage as read (FindLLMUsage) reads it.
func ChargeLLMUsage(ctx context.Context, c duet.LLMCharge, now any, write, read RowFunc) (duet.LLMUsage, bool, error) {
	if err := duet.CheckLLMCharge(c); err != nil {
		return duet.LLMUsage{}, false, err
	}
	if c.Limit <= 0 || c.Tokens <= c.Limit {
		u := duet.LLMUsage{UserID: c.UserID, Day: c.Day}
		err := write(ctx, []any{&u.Tokens, &u.Calls}, addLLMUsageSQL,
			c.UserID, c.Day, max(c.Tokens, 0), c.Calls, now, c.Tokens, c.Limit)
		if err == nil {
			return u, true, nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return duet.LLMUsage{}, false, err
		}
	}
	u, err := FindLLMUsage(ctx, c.UserID, c.Day, read)
	return u, false, err
}

// FindLLMUsage returns the usage of user on day (none if none).
func FindLLMUsage(ctx context.Context, userID, day string, read RowFunc) (duet.LLMUsage, error) {
	u := duet.LLMUsage{UserID: userID, Day: day}
	err := read(ctx, []any{&u.Tokens, &u.Calls}, `SELECT tokens, calls FROM llm_usage WHERE user_id = $1 AND day = $2`, userID, day)
	if errors.Is(err, sql.ErrNoRows) {
		return u, nil
	}
	return u, err
}
