package storerules

import (
	"context"

	"github.com/duet-test/duet"
)

// ChargeLLMUsage charges c, checked, for duet.LLMUsageStore: a charge over
// the limit by itself is refused without a write; add is the engine's one
// conditional upsert, which adds c to the user's day and returns the day's
// usage after it, or false, changing nothing, when c would pass c.Limit
// (concurrent charges must be judged one after the other); a refused
// charge returns the day's usage as find reads it.
func ChargeLLMUsage(ctx context.Context, c duet.LLMCharge,
	add func(context.Context, duet.LLMCharge) (duet.LLMUsage, bool, error),
	find func(ctx context.Context, userID, day string) (duet.LLMUsage, error)) (duet.LLMUsage, bool, error) {
	if err := duet.CheckLLMCharge(c); err != nil {
		return duet.LLMUsage{}, false, err
	}
	if c.Limit <= 0 || c.Tokens <= c.Limit {
		u, charged, err := add(ctx, c)
		if err != nil {
			return duet.LLMUsage{}, false, err
		}
		if charged {
			return u, true, nil
		}
	}
	u, err := find(ctx, c.UserID, c.Day)
	return u, false, err
}
