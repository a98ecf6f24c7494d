package storerules

import (
	"time"

	"github.com/duet-test/duet"
)

// Stored is t as both engines keep a time: to the microsecond, in UTC.
func Stored(t time.Time) time.Time { return t.Truncate(time.Microsecond).UTC() }

// NewStopRequest checks r and readies it to be written at now: an id
// unless it has one, created now, its times as the store keeps them.
// Returns INVALID_ARGUMENT.
func NewStopRequest(r *duet.StopRequest, now time.Time) error {
	if err := duet.ValidateStopRequest(r); err != nil {
		return err
	}
	if r.ID == "" {
		r.ID = duet.NewID("stop")
	}
	r.CreatedAt, r.ExpiresAt = Stored(now), Stored(r.ExpiresAt)
	if r.DecidedAt != nil {
		t := Stored(*r.DecidedAt)
		r.DecidedAt = &t
	}
	return nil
}
