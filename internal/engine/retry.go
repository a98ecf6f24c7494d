package engine

import (
	"context"
	"time"

	"github.com/duet-test/duet"
)

// storeWriteTimeout is the default of Options.WriteWait: how long a run's
// bookkeeping (a step result, an execution's or the run's final state)
// waits for an unavailable database. A restart or a failover shorter than
// this pauses the run's writes instead of losing them; a longer outage
// stops the run, which is given back to the queue.
const storeWriteTimeout = 30 * time.Second

// retryUnavailable runs fn until it succeeds, fails with anything but
// UNAVAILABLE, or ctx ends, waiting 100 ms to 2 s between attempts.
func retryUnavailable(ctx context.Context, fn func(context.Context) error) error {
	delay := 100 * time.Millisecond
	for {
		err := fn(ctx)
		if duet.ErrorCode(err) != duet.CodeUnavailable {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(delay):
		}
		delay = min(2*delay, 2*time.Second)
	}
}
