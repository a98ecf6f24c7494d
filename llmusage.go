package duet

import (
	"context"
	"time"
)

// LLMUsage is what one user's AI steps spent on one day (UTC), over every
// worker and instance: the day's tokens (estimates while a call is in
// flight, then what the endpoint reported) and model calls.
type LLMUsage struct {
	UserID string `json:"userId"`
	// Day is the UTC day, as 2006-01-02 (LLMDay).
	Day    string `json:"day"`
	Tokens int64  `json:"tokens"`
	Calls  int64  `json:"calls"`
}

// LLMCharge is one change of a user's day: the tokens a model call is
// about to spend (reserved before the call), or the difference between
// that reservation and what the call spent (negative gives some back).
type LLMCharge struct {
	UserID string
	Day    string // LLMDay
	Tokens int64
	Calls  int64
	// Limit is the day's budget: the charge is made only when the day's
	// tokens stay within it after. 0 means none (an adjustment after a
	// call, which spent what it spent).
	Limit int64
}

// LLMDay is the UTC day of t, as the usage of AI steps is counted.
func LLMDay(t time.Time) string { return t.UTC().Format(time.DateOnly) }

// LLMUsageStore counts the tokens of each user's AI steps per UTC day,
// shared by every worker and instance on the database
// (DUET_LLM_USER_DAY_TOKENS).
type LLMUsageStore interface {
	// ChargeLLMUsage adds c to the user's day in one atomic statement (an
	// upsert increment), only when the day's tokens stay within c.Limit:
	// two workers charging at once cannot both pass it. It returns the
	// day's usage after the charge and true, or the usage as it is and
	// false when the charge would pass the limit (nothing is written).
	// The tokens never fall below zero. Returns INVALID_ARGUMENT.
	ChargeLLMUsage(ctx context.Context, c LLMCharge) (LLMUsage, bool, error)
	// FindLLMUsage returns the usage of user on day (zero counts when
	// nothing was spent).
	FindLLMUsage(ctx context.Context, userID, day string) (LLMUsage, error)
}

// CheckLLMCharge is what a charge must hold to be stored.
func CheckLLMCharge(c LLMCharge) error {
	if c.UserID == "" || len(c.UserID) > 256 {
		return Errorf(CodeInvalidArgument, "a charge of AI tokens needs a user")
	}
	if _, err := time.Parse(time.DateOnly, c.Day); err != nil {
		return Errorf(CodeInvalidArgument, "a charge of AI tokens needs a day as 2006-01-02, not %q", c.Day)
	}
	if c.Limit < 0 || c.Calls < 0 {
		return Errorf(CodeInvalidArgument, "a charge of AI tokens has a negative limit or count of calls")
	}
	return nil
}
