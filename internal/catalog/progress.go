package catalog

import (
	"context"
	"fmt"
	"time"

	"github.com/duet-test/duet"
)

// progressPoll is how often a streaming start_test_run reads the run.
const progressPoll = 200 * time.Millisecond

// followRun reports the progress of run runID through env.Progress — cases
// done of the total, and the case and step running now — until the run is
// final, and returns its final state. When ctx ends first (the client went
// away, or Limits.StreamTimeout passed) it returns the state it last read:
// the run goes on, and get_test_run follows it.
func followRun(ctx context.Context, env *Env, runID string) (*GetRunOut, error) {
	last := ""
	t := time.NewTicker(progressPoll)
	defer t.Stop()
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
		done, total := 0, len(execs)
		current := ""
		for _, x := range execs {
			switch {
			case x.Status.Final():
				done++
			case x.Status == duet.StatusRunning && current == "":
				current = fmt.Sprintf("case %d/%d %q", x.Ordinal+1, total, x.CaseTitle)
				if n := len(x.Results); n > 0 {
					s := x.Results[n-1]
					current += fmt.Sprintf(", step %d/%d %s", s.Index+1, len(x.Steps), s.Name)
				}
			}
		}
		msg := fmt.Sprintf("run %s %s: %d of %d cases done", r.ID, r.Status, done, total)
		if current != "" {
			msg += "; running " + current
		}
		if msg != last {
			env.Progress(float64(done), float64(total), msg)
			last = msg
		}
		if r.Status.Final() {
			out := GetRunOut{Run: runView(r), Executions: []ExecutionSummary{}}
			for _, x := range execs {
				out.Executions = append(out.Executions, executionSummary(x))
			}
			return &out, nil
		}
		select {
		case <-ctx.Done():
			return nil, nil
		case <-t.C:
		}
	}
}
