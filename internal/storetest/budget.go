package storetest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/duet-test/duet"
)

// ClockOpener returns a new, empty store whose clock the returned function
// moves forward.
type ClockOpener func(t *testing.T) (duet.Store, func(time.Duration))

// RunRunBudget checks StartRunParams.MaxPerMinute over time: the budget is
// of the last minute, so a user refused now may start again once the
// first of the counted runs is a minute old, and the refusal says when.
func RunRunBudget(t *testing.T, open ClockOpener) {
	t.Parallel()
	s, advance := open(t)
	res := mustApply(t, s, "alice", suite("budget-window", "a"))
	cases, _, _, _ := s.FindCases(ctx(t), duet.CaseFilter{TaskID: res.Task.ID})
	start := func(key string) error {
		p := idemParams(t, s, res.Task.ID, cases, key, "h-"+key)
		p.MaxPerMinute = 3
		p.Idempotency.ExpiresAt = time.Now().Add(24 * time.Hour)
		_, _, err := s.CreateRun(ctx(t), p)
		return err
	}
	for i := range 3 {
		if err := start(fmt.Sprintf("a%d", i)); err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		advance(10 * time.Second)
	}
	// 30 s after the first run: the budget is spent for another 30 s.
	err := start("b")
	wantCode(t, err, duet.CodeRateLimited)
	if msg := duet.ErrorMessage(err); !strings.Contains(msg, "3 runs in the last minute") || !strings.Contains(msg, "in 30s") {
		t.Fatalf("refusal: %q, want how many and when the next may start (in 30s)", msg)
	}
	advance(29 * time.Second)
	wantCode(t, start("c"), duet.CodeRateLimited)
	advance(2 * time.Second) // the first run is over a minute old
	if err := start("d"); err != nil {
		t.Fatalf("a minute after the first run: %v", err)
	}
	wantCode(t, start("e"), duet.CodeRateLimited)
}
