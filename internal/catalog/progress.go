package catalog

import (
	"context"
	"fmt"
	"time"

	"github.com/duet-test/duet"
)

// progressPoll is how often a streaming start_test_run reads the run (or
// Limits.ProgressInterval, when shorter).
const progressPoll = 200 * time.Millisecond

// stepHalf is how long a running step takes to be reported half done: the
// part of a step that has run is not known, so progress within it is an
// estimate that grows with its time and never reaches the step's end.
const stepHalf = 10 * time.Second

// followRun reports the progress of run runID through env.Progress until
// the run is final, and returns its final state. A notification goes out
// when the run's state changes — its status, the cases done, the case and
// step running — and, while nothing changes (the run waits for a worker, a
// step runs long), at least every Limits.ProgressInterval, saying for how
// long: a client whose request timeout restarts on progress keeps waiting
// for a healthy run. The progress value counts cases done, plus the steps
// of a running case done and an estimate of the running step; it only ever
// grows while the run goes forward (the protocol wants each value above the
// last). When ctx ends first (the client went away, or
// Limits.StreamTimeout passed) it returns the state it last read: the run
// goes on, and get_test_run follows it.
func followRun(ctx context.Context, env *Env, runID string) (*GetRunOut, error) {
	every := env.Catalog.Limits().ProgressInterval
	t := time.NewTicker(min(progressPoll, every))
	defer t.Stop()
	lastKey, lastProgress := "", -1.0
	var lastSent, changed time.Time
	for {
		r, err := env.Store.FindRunByID(ctx, env.Caller.UserID, runID)
		if err != nil {
			if ctx.Err() != nil {
				return nil, nil
			}
			return nil, err
		}
		execs, err := env.Store.FindExecutions(ctx, r.ID)
		if err != nil {
			if ctx.Err() != nil {
				return nil, nil
			}
			return nil, err
		}
		now := time.Now()
		st := runState(r, execs, now)
		if st.key != lastKey {
			changed = now
		}
		if st.key != lastKey || now.Sub(lastSent) >= every {
			msg := st.key
			switch {
			case st.stepFor >= time.Second:
				msg += fmt.Sprintf(", running for %s", st.stepFor.Round(time.Second))
			case now.Sub(changed) >= time.Second:
				msg += fmt.Sprintf(" (unchanged for %s)", now.Sub(changed).Round(time.Second))
			}
			lastProgress = max(st.progress, lastProgress)
			env.Progress(lastProgress, float64(len(execs)), msg)
			lastKey, lastSent = st.key, now
		}
		if r.Status.Final() {
			return &GetRunOut{Run: runView(r), Executions: Views(execs, executionSummary)}, nil
		}
		select {
		case <-ctx.Done():
			return nil, nil
		case <-t.C:
		}
	}
}

// runProgress is what followRun reports of a run at one reading.
type runProgress struct {
	key      string        // the state, in words: a notification goes out when it changes
	progress float64       // cases done, plus the part of the running ones
	stepFor  time.Duration // how long the step named in key has run; 0 if none is
}

// runState reads a run and its executions at now.
func runState(r *duet.Run, execs []*duet.Execution, now time.Time) runProgress {
	var p runProgress
	done, total := 0, len(execs)
	current := ""
	for _, x := range execs {
		if x.Status.Final() {
			done++
			continue
		}
		if x.Status != duet.StatusRunning || len(x.Steps) == 0 {
			continue
		}
		// Results are the steps that have ended; the next one runs, since
		// the previous ended (or the case started).
		n := min(len(x.Results), len(x.Steps))
		var since *time.Time
		if n > 0 {
			since = x.Results[n-1].FinishedAt
		} else {
			since = x.StartedAt
		}
		var ran time.Duration
		if since != nil && n < len(x.Steps) {
			ran = max(now.Sub(*since), 0)
		}
		// A running case's share is its steps and its end (the verdict
		// written with every result): once each step has a result and the
		// case is not final yet, it has not reached its whole share.
		steps := float64(len(x.Steps) + 1)
		p.progress += (float64(n) + float64(ran)/float64(ran+stepHalf)) / steps
		if current == "" {
			current = fmt.Sprintf("case %d/%d %q", x.Ordinal+1, total, x.CaseTitle)
			if n < len(x.Steps) {
				s := x.Steps[n]
				current += fmt.Sprintf(", step %d/%d %s", n+1, len(x.Steps), s.Name)
				p.stepFor = ran
			}
		}
	}
	p.progress += float64(done)
	p.key = fmt.Sprintf("run %s %s: %d of %d cases done", r.ID, r.Status, done, total)
	if current != "" {
		p.key += "; running " + current
	}
	return p
}
