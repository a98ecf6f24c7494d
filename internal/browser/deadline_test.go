package browser

import (
	"context"
	"testing"
	"time"

	"github.com/duet-test/duet"
)

// lateCtx is a context whose deadline has passed but whose timer has not
// fired yet, as a loaded machine has it for a moment: Err is still nil.
type lateCtx struct{ context.Context }

func (lateCtx) Deadline() (time.Time, bool) { return time.Now().Add(-time.Millisecond), true }
func (lateCtx) Done() <-chan struct{}       { return nil }
func (lateCtx) Err() error                  { return nil }

// TestTimedOutAtThePassedDeadline: a call whose deadline has passed ran out
// of time even before its context's timer fires; a context derived with the
// same deadline (a frame's, bound to the call) may end first, and its error
// is the step's timeout, not a browser error (evaluate of an endless loop
// failed BROWSER_ERROR "context deadline exceeded" at load 37).
func TestTimedOutAtThePassedDeadline(t *testing.T) {
	if !timedOut(context.Background(), lateCtx{context.Background()}) {
		t.Error("a passed deadline is not a timeout")
	}
	if timedOut(context.Background(), context.Background()) {
		t.Error("no deadline is a timeout")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	if timedOut(context.Background(), ctx) {
		t.Error("a deadline to come is a timeout")
	}
}

// TestSwitchTabOutOfTimeWhileListing: a switchTo whose time runs out while
// it lists the tabs reports the tab that did not come (NOT_FOUND), not a
// bare timeout (seen at load 37: "switchTo: timed out after 313ms").
func TestSwitchTabOutOfTimeWhileListing(t *testing.T) {
	t.Parallel()
	s := newSession(t, sharedPool(t), "desktop")
	_, err := s.SwitchTab(lateCtx{testCtx(t, time.Minute)}, 7, "")
	wantCode(t, err, duet.CodeNotFound, "no tab 7")
}
