package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/duet-test/duet"
)

// ErrShutdown is the cancellation cause a worker uses when it stops: the run
// is released for another worker instead of being finished.
var ErrShutdown = errors.New("worker shutting down")

// ErrCancelRequested is the cancellation cause when a user cancelled the run.
var ErrCancelRequested = errors.New("run cancelled")

// ErrLeaseLost is the cancellation cause when the worker no longer holds the
// run — a write or a renewal was refused with LEASE_LOST (another worker
// took the run over), or its lease ran out before it could renew it (the
// database was away): the run stops at once, no step starts after it, and
// nothing more of it is written.
var ErrLeaseLost = errors.New("the worker no longer holds the run")

// ErrStoreUnavailable is the cancellation cause when a write of the run
// waited Options.WriteWait for the database in vain: the run stops at once
// and is given back to the queue (never judged over results that were not
// written).
var ErrStoreUnavailable = errors.New("the database stayed unavailable for the run's writes")

// writeFailed is the cancellation cause when a write of the run was refused
// for good (neither an outage nor a lost lease): the run ends in error,
// with the reason.
type writeFailed struct{ err error }

func (w *writeFailed) Error() string {
	return "a result of the run could not be stored: " + duet.ErrorMessage(w.err)
}

func (w *writeFailed) Unwrap() error { return w.err }

// handedBack reports whether ctx ended with a cause that leaves the run
// without a verdict: shut down, lost lease, database away, a write refused.
func handedBack(ctx context.Context) bool {
	if ctx.Err() == nil {
		return false
	}
	c := context.Cause(ctx)
	var wf *writeFailed
	return errors.Is(c, ErrShutdown) || errors.Is(c, ErrLeaseLost) || errors.Is(c, ErrStoreUnavailable) || errors.As(c, &wf)
}

// runWrites is where every write of one run goes: fenced by the worker's
// lease (the store refuses a write of a worker that no longer holds the
// run), waiting up to Options.WriteWait for a database that is away. A
// write that still fails stops the run at once, with the cause: no step
// starts after it.
type runWrites struct {
	store duet.Store
	lease duet.Lease
	wait  time.Duration // Options.WriteWait
	stop  context.CancelCauseFunc
}

// do runs a write of the run under its lease. It returns nil, or the cause
// the run was stopped with (wrapping the store's error).
func (w *runWrites) do(ctx context.Context, fn func(ctx context.Context, l duet.Lease) error) error {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.wait)
	defer cancel()
	err := retryUnavailable(wctx, func(ctx context.Context) error { return fn(ctx, w.lease) })
	if err == nil {
		return nil
	}
	var cause error
	switch duet.ErrorCode(err) {
	case duet.CodeLeaseLost:
		cause = fmt.Errorf("%w: %w", ErrLeaseLost, err)
	case duet.CodeUnavailable, duet.CodeTimeout:
		cause = fmt.Errorf("%w: %w", ErrStoreUnavailable, err)
	default:
		cause = &writeFailed{err}
	}
	w.stop(cause)
	return cause
}

// read runs a read the run needs, waiting up to Options.WriteWait for a
// database that is away; if it stays away, the run stops (given back) and
// the cause is returned. Other errors are returned as they are.
func (w *runWrites) read(ctx context.Context, fn func(ctx context.Context) error) error {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.wait)
	defer cancel()
	err := retryUnavailable(rctx, fn)
	switch duet.ErrorCode(err) {
	case duet.CodeUnavailable, duet.CodeTimeout:
		cause := fmt.Errorf("%w: %w", ErrStoreUnavailable, err)
		w.stop(cause)
		return cause
	}
	return err
}
