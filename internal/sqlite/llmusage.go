package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/storerules"
)

var _ duet.LLMUsageStore = (*DB)(nil)

// ChargeLLMUsage adds c to the user's day (storerules.ChargeLLMUsage).
func (d *DB) ChargeLLMUsage(ctx context.Context, c duet.LLMCharge) (duet.LLMUsage, bool, error) {
	return storerules.ChargeLLMUsage(ctx, c, d.addLLMUsage, d.FindLLMUsage)
}

// addLLMUsage is one conditional upsert: the row is locked by the write,
// so concurrent charges are counted one after the other, and one that
// would pass c.Limit changes nothing.
func (d *DB) addLLMUsage(ctx context.Context, c duet.LLMCharge) (duet.LLMUsage, bool, error) {
	u := duet.LLMUsage{UserID: c.UserID, Day: c.Day}
	err := d.tx(ctx, func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, `INSERT INTO llm_usage (user_id, day, tokens, calls, updated_at) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (user_id, day) DO UPDATE SET
				tokens = MAX(0, llm_usage.tokens + ?), calls = llm_usage.calls + excluded.calls, updated_at = excluded.updated_at
			WHERE ? = 0 OR llm_usage.tokens + ? <= ?
			RETURNING tokens, calls`,
			c.UserID, c.Day, max(c.Tokens, 0), c.Calls, micros(d.now()), c.Tokens, c.Limit, c.Tokens, c.Limit).Scan(&u.Tokens, &u.Calls)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return u, false, nil
	}
	return u, err == nil, mapErr(err)
}

// FindLLMUsage returns the usage of user on day.
func (d *DB) FindLLMUsage(ctx context.Context, userID, day string) (duet.LLMUsage, error) {
	u := duet.LLMUsage{UserID: userID, Day: day}
	err := d.q.QueryRowContext(ctx, `SELECT tokens, calls FROM llm_usage WHERE user_id = ? AND day = ?`, userID, day).Scan(&u.Tokens, &u.Calls)
	if errors.Is(err, sql.ErrNoRows) {
		return u, nil
	}
	return u, mapErr(err)
}
