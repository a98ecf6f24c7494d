package browser

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/duet-test/duet"
)

// errSessionClosed is the cause of a call on a closed Session.
var errSessionClosed = errors.New("session closed")

// opError returns a *duet.Error for the operation op of a Session.
func opError(code duet.Code, op string, err error, format string, args ...any) *duet.Error {
	return &duet.Error{Code: code, Message: fmt.Sprintf(format, args...), Op: "browser.Session." + op, Err: err}
}

// ctxCancelled returns CodeCancelled when the caller's ctx was canceled, and
// nil when it has not ended or ran out of time (the caller then reports the
// timeout in the words of the operation).
func ctxCancelled(ctx context.Context, op string, err error) error {
	if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return opError(duet.CodeCancelled, op, err, "%s: cancelled", op)
	}
	return nil
}

// timedOut reports whether the call ran out of time: the caller's ctx or the
// call's own deadline. A deadline that has passed counts even before cctx's
// timer fires: a context derived with the same deadline (a frame's target,
// bound to the call) may end first, and its error is the call's timeout.
func timedOut(ctx, cctx context.Context) bool {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(cctx.Err(), context.DeadlineExceeded) {
		return true
	}
	d, ok := cctx.Deadline()
	return ok && !time.Now().Before(d)
}

// poll calls check until it reports done or returns a *duet.Error, which ends
// the wait at once. Any other error of check is transient: the page may be
// navigating, so poll keeps it as the last error and tries again. poll returns
// ctx's error, wrapped with the last transient error, when ctx ends first.
func poll(ctx context.Context, check func(ctx context.Context) (bool, error)) error {
	const (
		first = 10 * time.Millisecond
		most  = 100 * time.Millisecond
	)
	var last error
	for delay := first; ; delay = min(2*delay, most) {
		done, err := check(ctx)
		if settled(done, err) {
			return err
		}
		last = cmp.Or(err, last) // a transient error, if any
		if err := sleep(ctx, delay); err != nil {
			return joinErr(err, last)
		}
	}
}

// settled reports whether a wait ends with what one check of it returned:
// done, or an error that is a *duet.Error (the wait's result is then err).
// Any other error is transient: the page may be navigating.
func settled(done bool, err error) bool {
	var de *duet.Error
	return errors.As(err, &de) || (err == nil && done)
}

// sleep waits for d or until ctx ends, and then returns ctx's error.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
	return ctx.Err()
}

// awaitPage calls check until it reports done or fails with a *duet.Error,
// within the call's deadline. check gets a slice: how long it may wait in
// the page for a change before it answers (0 the first time, so that even
// a loaded machine says early how things stand; then up to maxSlice, ending
// sliceMargin before the deadline). So a wait reacts to the page, not to a
// clock. An error that is not a *duet.Error — the page navigating to
// another document, whose scripts ended — makes it look again after a short
// pause that grows from 10 to 100 ms.
func (s *Session) awaitPage(c *call, check func(ctx context.Context, slice time.Duration) (bool, error)) error {
	var last error
	delay := 10 * time.Millisecond
	for first := true; ; first = false {
		if err := c.c.Err(); err != nil {
			return joinErr(err, last)
		}
		slice := maxSlice
		if dl, ok := c.c.Deadline(); ok {
			slice = max(0, min(slice, time.Until(dl)-sliceMargin))
		}
		if first {
			slice = 0
		}
		done, err := check(c.c, slice)
		if settled(done, err) {
			return err
		}
		if err != nil {
			last = err
			if err := sleep(c.c, delay); err != nil {
				return joinErr(err, last)
			}
			delay = min(2*delay, 100*time.Millisecond)
			continue
		}
		delay = 10 * time.Millisecond
		if slice == 0 && !first {
			// Too close to the deadline for the page to wait.
			if err := sleep(c.c, 10*time.Millisecond); err != nil {
				return joinErr(err, last)
			}
		}
	}
}
