package storerules

import (
	"context"

	"github.com/duet-test/duet"
)

// LLMUsageTx is what ChargeLLMUsage asks of an engine.
type LLMUsageTx interface {
	// AddLLMUsage adds c to the user's day in one conditional upsert and
	// returns the day's usage after it; false, changing nothing, when it
	// would pass c.Limit (concurrent charges must be judged one after the
	// other).
	AddLLMUsage(ctx context.Context, c duet.LLMCharge) (duet.LLMUsage, bool, error)
	// FindLLMUsage reads the user's usage of the day.
	FindLLMUsage(ctx context.Context, userID, day string) (duet.LLMUsage, error)
}

// ChargeLLMUsage charges c, checked, through tx (duet.LLMUsageStore): a
// charge over the limit by itself is refused without a write; a refused
// charge returns the day's usage as it stands.
func ChargeLLMUsage(ctx context.Context, tx LLMUsageTx, c duet.LLMCharge) (duet.LLMUsage, bool, error) {
	if err := duet.CheckLLMCharge(c); err != nil {
		return duet.LLMUsage{}, false, err
	}
	if c.Limit <= 0 || c.Tokens <= c.Limit {
		u, charged, err := tx.AddLLMUsage(ctx, c)
		if err != nil {
			return duet.LLMUsage{}, false, err
		}
		if charged {
			return u, true, nil
		}
	}
	u, err := tx.FindLLMUsage(ctx, c.UserID, c.Day)
	return u, false, err
}
