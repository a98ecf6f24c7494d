package storetest

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/duet-test/duet"
)

// SharedOpener returns a new, empty store and a function that opens another
// handle on the same database, as a second process would (its own
// connections, nothing in memory shared). Both register their own cleanup.
type SharedOpener func(t *testing.T) (first duet.Store, another func() duet.Store)

// RunAll runs every suite of the package: Run, RunAssets, RunMCPClient and
// RunShared.
func RunAll(t *testing.T, open SharedOpener) {
	single := func(t *testing.T) duet.Store { s, _ := open(t); return s }
	t.Run("Store", func(t *testing.T) { Run(t, single) })
	t.Run("Assets", func(t *testing.T) { RunAssets(t, func(t *testing.T) AssetStore { return single(t) }) })
	t.Run("MCPClient", func(t *testing.T) { RunMCPClient(t, func(t *testing.T) duet.MCPClientStore { return single(t) }) })
	t.Run("Approvals", func(t *testing.T) { RunApprovals(t, func(t *testing.T) ApprovalStore { return single(t) }) })
	t.Run("Shared", func(t *testing.T) { RunShared(t, open) })
}

// RunShared runs the cases that several processes on one database depend
// on: every run claimed exactly once by concurrent workers of several
// handles, idempotency across handles, a dead worker's lease taken over,
// cancellation seen by the holder, and outside input that the database
// refuses coming back as INVALID_ARGUMENT, never INTERNAL.
func RunShared(t *testing.T, open SharedOpener) {
	tests := []struct {
		name string
		fn   func(*testing.T, duet.Store, func() duet.Store)
	}{
		{"ClaimExactlyOnce", testClaimExactlyOnce},
		{"IdempotencyAcrossHandles", testIdempotencyAcrossHandles},
		{"LeaseTakenOver", testLeaseTakenOver},
		{"VerdictNeedsEveryResult", testVerdictNeedsEveryResult},
		{"SuspendAndResume", testSuspendAndResume},
		{"CancelRacesClaim", testCancelRacesClaim},
		{"FinishRacesCancel", testFinishRacesCancel},
		{"RefusedValues", testRefusedValues},
		{"FreshAcrossHandles", testFreshAcrossHandles},
		{"RegistryFreshAcrossHandles", testRegistryFreshAcrossHandles},
		{"RunsPerMinuteAcrossHandles", testRunsPerMinuteAcrossHandles},
		{"DeliveryClaimExactlyOnce", testDeliveryClaimExactlyOnce},
		{"LLMUsageAcrossHandles", testLLMUsageAcrossHandles},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			first, another := open(t)
			tt.fn(t, first, another)
		})
	}
}

// retryBusy calls fn again while it fails UNAVAILABLE, for at most two
// minutes. SQLite answers "database busy" (SQLITE_BUSY) when a write waited
// past its busy timeout for the writers of the other handle: on a loaded
// machine, eight claimers on one file's write lock starve one of them, and
// the busy handler polls rather than queues. A worker then tries again on
// its next poll, as this does. A busy write changed nothing (its
// transaction takes the write lock first: BEGIN IMMEDIATE), so what the
// test checks of the outcome still holds: a claim that was made but
// reported as busy would show as a run nobody claimed.
func retryBusy[T any](t *testing.T, fn func() (T, error)) (T, error) {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		v, err := fn()
		if duet.ErrorCode(err) != duet.CodeUnavailable || time.Now().After(deadline) || ctx(t).Err() != nil {
			return v, err
		}
		time.Sleep(time.Millisecond)
	}
}

// testClaimExactlyOnce: 60 queued runs, 8 workers on two handles claiming
// at once until the queue is empty: each run is claimed by exactly one.
func testClaimExactlyOnce(t *testing.T, a duet.Store, another func() duet.Store) {
	b := another()
	const runs = 60
	want := map[string]bool{}
	for range runs {
		r, _ := newRun(t, a, "alice")
		want[r.ID] = true
	}
	var mu sync.Mutex
	claimedBy := map[string][]string{}
	var wg sync.WaitGroup
	for w := range 8 {
		s := a
		if w%2 == 1 {
			s = b
		}
		worker := fmt.Sprintf("w%d", w)
		wg.Go(func() {
			for {
				r, err := retryBusy(t, func() (*duet.Run, error) { return s.ClaimRun(ctx(t), worker, time.Minute) })
				if err != nil {
					t.Errorf("%s: claim: %v", worker, err)
					return
				}
				if r == nil {
					return
				}
				mu.Lock()
				claimedBy[r.ID] = append(claimedBy[r.ID], worker)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(claimedBy) != runs {
		t.Fatalf("claimed %d distinct runs, want %d", len(claimedBy), runs)
	}
	for id, ws := range claimedBy {
		if !want[id] || len(ws) != 1 {
			t.Errorf("run %s claimed by %v, want exactly one worker", id, ws)
		}
	}
}

// testIdempotencyAcrossHandles: 60 identical start calls spread over two
// handles create one run and all get its result.
func testIdempotencyAcrossHandles(t *testing.T, a duet.Store, another func() duet.Store) {
	b := another()
	res := mustApply(t, a, "alice", suite("idem-shared", "a"))
	cases, _, _, _ := a.FindCases(ctx(t), duet.CaseFilter{TaskID: res.Task.ID})
	const n = 60
	results := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		s := a
		if i%2 == 1 {
			s = b
		}
		wg.Go(func() {
			rec, err := retryBusy(t, func() (*duet.IdempotencyRecord, error) {
				rec, _, err := s.CreateRun(ctx(t), idemParams(t, s, res.Task.ID, cases, "same", "h"))
				return rec, err
			})
			errs[i] = err
			if rec != nil {
				results[i] = string(rec.Result)
			}
		})
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil || results[i] != results[0] {
			t.Fatalf("call %d: got %s %v, want %s", i, results[i], errs[i], results[0])
		}
	}
	runs, _, _ := b.FindRuns(ctx(t), duet.RunFilter{TaskID: res.Task.ID})
	if len(runs) != 1 {
		t.Fatalf("runs created by %d identical calls over two handles: got %d, want 1", n, len(runs))
	}
}

// testLeaseTakenOver: a worker on one handle dies holding a run (its lease
// runs out); a worker on the other takes it over, and the dead one, were it
// to wake, can neither renew nor release it. The lease is long enough for
// a loaded machine and runs out explicitly (its last renewal ends in the
// past), never by waiting for the clock.
func testLeaseTakenOver(t *testing.T, a duet.Store, another func() duet.Store) {
	b := another()
	run, _ := newRun(t, a, "alice")
	first, err := a.ClaimRun(ctx(t), "dead", time.Minute)
	if err != nil || first == nil || first.ID != run.ID {
		t.Fatalf("first claim: %+v %v", first, err)
	}
	dead := duet.LeaseOf(first, "dead")
	if c, err := b.ClaimRun(ctx(t), "alive", time.Minute); err != nil || c != nil {
		t.Fatalf("claim while the lease holds: got %+v %v, want none", c, err)
	}
	// The worker stops answering (a database outage, a long pause): its
	// lease runs out while it still holds the run in memory.
	execs, err := a.FindExecutions(ctx(t), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	execs[0].StartedAt = &now
	if err := a.StartExecution(ctx(t), dead, execs[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := a.RenewLease(ctx(t), dead, -time.Second); err != nil {
		t.Fatalf("the lease running out: %v", err)
	}
	c, err := b.ClaimRun(ctx(t), "alive", time.Minute)
	if err != nil || c == nil || c.ID != run.ID || c.Attempt != 2 || c.Status != duet.StatusRunning {
		t.Fatalf("take-over after the lease ran out: got %+v %v", c, err)
	}
	alive := duet.LeaseOf(c, "alive")
	// The old holder comes back: every write of the run it makes is
	// refused with LEASE_LOST and changes nothing.
	res := &duet.StepResult{Index: 0, Kind: duet.StepAssert, Name: "stale", Status: duet.StatusPassed}
	x := *execs[0]
	x.Status, x.FinishedAt = duet.StatusPassed, &now
	verdict := *first
	verdict.Status, verdict.FinishedAt = duet.StatusPassed, &now
	for name, write := range map[string]func(duet.Lease) error{
		"StartExecution": func(l duet.Lease) error { y := *execs[1]; y.StartedAt = &now; return a.StartExecution(ctx(t), l, &y) },
		"SaveStepResult": func(l duet.Lease) error {
			return a.SaveStepResult(ctx(t), l, execs[0].ID, res, map[string]any{"stale": true})
		},
		"FinishExecution": func(l duet.Lease) error { return a.FinishExecution(ctx(t), l, &x) },
		"FinishRun":       func(l duet.Lease) error { return a.FinishRun(ctx(t), l, &verdict) },
		"ReleaseRun":      func(l duet.Lease) error { return a.ReleaseRun(ctx(t), l) },
		"RenewLease":      func(l duet.Lease) error { _, err := a.RenewLease(ctx(t), l, time.Minute); return err },
		// The same worker's lease of an earlier claim is no lease either.
		"StaleToken": func(duet.Lease) error {
			_, err := a.RenewLease(ctx(t), duet.Lease{RunID: run.ID, Worker: "alive", Token: 1}, time.Minute)
			return err
		},
	} {
		if err := write(dead); duet.ErrorCode(err) != duet.CodeLeaseLost {
			t.Errorf("%s by the worker that lost the lease: got %v, want LEASE_LOST", name, err)
		}
	}
	cur, err := b.FindRunByID(ctx(t), "", run.ID)
	if err != nil || cur.Status != duet.StatusRunning || cur.Attempt != 2 {
		t.Fatalf("the run after the refused writes: %+v %v", cur, err)
	}
	got, err := b.FindExecutions(ctx(t), run.ID)
	if err != nil || len(got[0].Results) != 0 || got[0].Status != duet.StatusRunning || got[1].Status != duet.StatusPending || len(got[0].Vars) != 0 {
		t.Fatalf("the executions after the refused writes: %+v %v", got, err)
	}
	// The new holder writes and ends the run.
	if cur, err := b.RenewLease(ctx(t), alive, time.Minute); err != nil || cur.Status != duet.StatusRunning {
		t.Fatalf("the new holder's renewal: got %+v %v", cur, err)
	}
	passRun(t, b, alive, c)
	// An execution of another run is not under this lease.
	other, _ := newRun(t, a, "alice")
	oc, err := a.ClaimRunByID(ctx(t), other.ID, "w", time.Minute)
	if err != nil || oc == nil {
		t.Fatalf("claim: %+v %v", oc, err)
	}
	if err := a.SaveStepResult(ctx(t), duet.LeaseOf(oc, "w"), execs[0].ID, res, nil); duet.ErrorCode(err) != duet.CodeLeaseLost {
		t.Fatalf("a step result of another run's execution: got %v, want LEASE_LOST", err)
	}
}

// testVerdictNeedsEveryResult: a verdict (passed, failed) is refused while
// an execution is unfinished or lacks a step result — a run never reads
// "passed" over cases that were not run or results that were not written —
// while an error or a cancellation ends what is left with the run.
func testVerdictNeedsEveryResult(t *testing.T, s duet.Store, _ func() duet.Store) {
	run, _ := newRun(t, s, "alice")
	c, err := s.ClaimRunByID(ctx(t), run.ID, "w", time.Minute)
	if err != nil || c == nil {
		t.Fatalf("claim: %+v %v", c, err)
	}
	l := duet.LeaseOf(c, "w")
	now := time.Now()
	judge := func(status duet.RunStatus) error {
		r := *c
		r.Status, r.FinishedAt = status, &now
		return s.FinishRun(ctx(t), l, &r)
	}
	wantCode(t, judge(duet.StatusPassed), duet.CodeConflict) // both cases pending
	execs, err := s.FindExecutions(ctx(t), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range execs {
		x.StartedAt = &now
		if err := s.StartExecution(ctx(t), l, x); err != nil {
			t.Fatal(err)
		}
		x.Status, x.FinishedAt = duet.StatusPassed, &now
		if err := s.FinishExecution(ctx(t), l, x); err != nil {
			t.Fatal(err)
		}
	}
	// Both cases "passed", but no step result was written.
	for _, st := range []duet.RunStatus{duet.StatusPassed, duet.StatusFailed} {
		err := judge(st)
		wantCode(t, err, duet.CodeConflict)
		if !strings.Contains(duet.ErrorMessage(err), "0 of its 1 step results") {
			t.Fatalf("the refusal does not say what is missing: %v", err)
		}
	}
	for _, x := range execs {
		if err := s.SaveStepResult(ctx(t), l, x.ID, &duet.StepResult{Index: 0, Kind: duet.StepAssert, Status: duet.StatusPassed}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := judge(duet.StatusPassed); err != nil {
		t.Fatalf("the verdict over every result: %v", err)
	}
	// An error ends a run whatever is left of it.
	other, _ := newRun(t, s, "alice")
	oc, err := s.ClaimRunByID(ctx(t), other.ID, "w", time.Minute)
	if err != nil || oc == nil {
		t.Fatalf("claim: %+v %v", oc, err)
	}
	oc.Status, oc.FinishedAt, oc.ErrorCode = duet.StatusError, &now, duet.CodeInternal
	if err := s.FinishRun(ctx(t), duet.LeaseOf(oc, "w"), oc); err != nil || oc.Totals.Cancelled != 2 {
		t.Fatalf("an error over unfinished cases: %+v %v", oc.Totals, err)
	}
}

// testSuspendAndResume: a worker stopping records where an execution may
// resume; the next holder (another handle) resumes it there, keeping the
// results and variables before that step and forgetting the later ones; a
// worker that no longer holds the run cannot record a resume point.
func testSuspendAndResume(t *testing.T, a duet.Store, another func() duet.Store) {
	b := another()
	su := suite("resume-"+duet.NewID("x"), "k")
	su.Cases[0].Steps = []duet.Step{step(0, "true"), step(1, "true"), step(2, "true")}
	res := mustApply(t, a, "alice", su)
	cases, _, _, err := a.FindCases(ctx(t), duet.CaseFilter{TaskID: res.Task.ID})
	if err != nil {
		t.Fatal(err)
	}
	run := &duet.Run{TaskID: res.Task.ID, TriggeredBy: "alice", CallSource: duet.SourceCLI}
	c := cases[0]
	if _, _, err := a.CreateRun(ctx(t), duet.StartRunParams{Run: run, Executions: []*duet.Execution{{CaseID: c.ID, CaseKey: c.Key, CaseTitle: c.Title, CaseVersion: c.Version, Steps: c.Steps}}}); err != nil {
		t.Fatal(err)
	}
	first, err := a.ClaimRun(ctx(t), "w1", time.Minute)
	if err != nil || first == nil {
		t.Fatalf("claim: %+v %v", first, err)
	}
	l1 := duet.LeaseOf(first, "w1")
	execs, _ := a.FindExecutions(ctx(t), run.ID)
	x := execs[0]
	started := time.Now().Add(-time.Minute).UTC().Truncate(time.Millisecond)
	x.StartedAt = &started
	if err := a.StartExecution(ctx(t), l1, x); err != nil {
		t.Fatal(err)
	}
	for i := range 3 { // the third result is the step the stop interrupted: not whole
		if err := a.SaveStepResult(ctx(t), l1, x.ID, &duet.StepResult{Index: i, Kind: duet.StepAssert, Status: duet.StatusPassed}, map[string]any{"n": float64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.SuspendExecution(ctx(t), l1, x.ID, 2); err != nil {
		t.Fatal(err)
	}
	if err := a.ReleaseRun(ctx(t), l1); err != nil {
		t.Fatal(err)
	}
	wantCode(t, a.SuspendExecution(ctx(t), l1, x.ID, 1), duet.CodeLeaseLost)
	second, err := b.ClaimRun(ctx(t), "w2", time.Minute)
	if err != nil || second == nil {
		t.Fatalf("claim: %+v %v", second, err)
	}
	l2 := duet.LeaseOf(second, "w2")
	execs, _ = b.FindExecutions(ctx(t), run.ID)
	y := execs[0]
	if y.ResumeFrom != 2 || len(y.Results) != 3 || y.Status != duet.StatusRunning {
		t.Fatalf("the suspended execution: resume at %d with %d results (%s), want 2 with 3", y.ResumeFrom, len(y.Results), y.Status)
	}
	now := time.Now()
	y.StartedAt = &now
	if err := b.StartExecution(ctx(t), l2, y); err != nil {
		t.Fatal(err)
	}
	if len(y.Results) != 2 || y.ResumeFrom != 0 {
		t.Fatalf("resumed in memory: %d results, resume at %d; want the 2 whole ones, 0", len(y.Results), y.ResumeFrom)
	}
	execs, _ = b.FindExecutions(ctx(t), run.ID)
	z := execs[0]
	if z.ResumeFrom != 0 || len(z.Results) != 2 || z.Results[1].Index != 1 || z.Vars["n"] != 2.0 || z.StartedAt == nil || !z.StartedAt.Equal(started) {
		t.Fatalf("resumed: resume at %d, %d results, vars %v, started %v; want 0, steps 0 and 1, the variables kept, the first start", z.ResumeFrom, len(z.Results), z.Vars, z.StartedAt)
	}
	// Started afresh (resume point 0), it forgets every result.
	if err := b.StartExecution(ctx(t), l2, z); err != nil {
		t.Fatal(err)
	}
	if execs, _ = b.FindExecutions(ctx(t), run.ID); len(execs[0].Results) != 0 || len(execs[0].Vars) != 0 {
		t.Fatalf("restarted: %d results, vars %v", len(execs[0].Results), execs[0].Vars)
	}
}

// testCancelRacesClaim: a cancellation and a claim of a queued run at the
// same instant, on two handles, end in one of the two consistent states:
// cancelled before the claim (nobody holds it) or claimed with the request
// recorded (the holder sees it on its next renewal).
func testCancelRacesClaim(t *testing.T, a duet.Store, another func() duet.Store) {
	b := another()
	for i := range 20 {
		run, _ := newRun(t, a, "alice")
		var claimed *duet.Run
		var claimErr, cancelErr error
		var wg sync.WaitGroup
		wg.Go(func() {
			claimed, claimErr = retryBusy(t, func() (*duet.Run, error) { return a.ClaimRunByID(ctx(t), run.ID, "w", time.Minute) })
		})
		wg.Go(func() {
			_, cancelErr = retryBusy(t, func() (*duet.Run, error) { return b.RequestCancel(ctx(t), "alice", run.ID) })
		})
		wg.Wait()
		if claimErr != nil || cancelErr != nil {
			t.Fatalf("round %d: claim %v, cancel %v", i, claimErr, cancelErr)
		}
		cur, err := b.FindRunByID(ctx(t), "", run.ID)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case claimed == nil && cur.Status == duet.StatusCancelled:
		case claimed != nil && cur.Status == duet.StatusRunning && cur.CancelRequested:
			renewed, err := a.RenewLease(ctx(t), duet.LeaseOf(claimed, "w"), time.Minute)
			if err != nil || !renewed.CancelRequested {
				t.Fatalf("round %d: the holder's renewal: got %+v %v, want the cancellation request", i, renewed, err)
			}
		default:
			t.Fatalf("round %d: claimed=%v, run %s cancelRequested=%v: inconsistent", i, claimed != nil, cur.Status, cur.CancelRequested)
		}
	}
}

// testFinishRacesCancel: a worker finishing a run while its user cancels it
// neither deadlocks nor loses the final state.
func testFinishRacesCancel(t *testing.T, a duet.Store, another func() duet.Store) {
	b := another()
	for i := range 20 {
		run, _ := newRun(t, a, "alice")
		c, err := a.ClaimRunByID(ctx(t), run.ID, "w", time.Minute)
		if err != nil || c == nil {
			t.Fatalf("claim: %+v %v", c, err)
		}
		var finishErr, cancelErr error
		var wg sync.WaitGroup
		wg.Go(func() { finishErr = passRunErr(t, a, duet.LeaseOf(c, "w"), c) })
		wg.Go(func() {
			_, cancelErr = retryBusy(t, func() (*duet.Run, error) { return b.RequestCancel(ctx(t), "alice", run.ID) })
		})
		wg.Wait()
		if finishErr != nil || cancelErr != nil {
			t.Fatalf("round %d: finish %v, cancel %v", i, finishErr, cancelErr)
		}
		cur, _ := b.FindRunByID(ctx(t), "", run.ID)
		if cur.Status != duet.StatusPassed || cur.Totals.Pending != 0 || cur.Totals.Running != 0 {
			t.Fatalf("round %d: got %s %+v, want passed with no execution left open", i, cur.Status, cur.Totals)
		}
	}
}

// testRefusedValues: text a database cannot keep (a NUL byte, invalid
// UTF-8) is either stored or refused as INVALID_ARGUMENT, never an
// INTERNAL error.
func testRefusedValues(t *testing.T, s duet.Store, _ func() duet.Store) {
	for _, name := range []string{"nul\x00name", "bad\xffutf8"} {
		_, err := s.ApplySuite(ctx(t), "alice", suite(name, "a"))
		if err != nil && duet.ErrorCode(err) != duet.CodeInvalidArgument {
			t.Errorf("task name %q: got %v, want success or INVALID_ARGUMENT", name, err)
		}
		_, _, _, err = s.FindTasks(ctx(t), duet.TaskFilter{Viewer: "alice", Query: name})
		if err != nil && duet.ErrorCode(err) != duet.CodeInvalidArgument {
			t.Errorf("query %q: got %v, want success or INVALID_ARGUMENT", name, err)
		}
		_, err = s.FindTaskByID(ctx(t), name, "task_x")
		if c := duet.ErrorCode(err); c != duet.CodeNotFound && c != duet.CodeInvalidArgument {
			t.Errorf("viewer %q: got %v, want NOT_FOUND or INVALID_ARGUMENT", name, err)
		}
	}
}

// testRunsPerMinuteAcrossHandles: with MaxPerMinute 5, twenty concurrent
// starts by one user over two handles (two instances) create exactly five
// runs, the others RATE_LIMITED; a replay of a created run is not refused;
// another user has a budget of their own; a run keeps its call depth.
func testRunsPerMinuteAcrossHandles(t *testing.T, a duet.Store, another func() duet.Store) {
	b := another()
	res := mustApply(t, a, "alice", suite("budget", "a"))
	cases, _, _, _ := a.FindCases(ctx(t), duet.CaseFilter{TaskID: res.Task.ID})
	params := func(s duet.Store, user, key string) duet.StartRunParams {
		p := idemParams(t, s, res.Task.ID, cases, key, "h-"+key)
		p.Run.TriggeredBy, p.Idempotency.Caller = user, user
		p.Run.CallDepth = 3
		p.MaxPerMinute = 5
		return p
	}
	const n = 20
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		s := a
		if i%2 == 1 {
			s = b
		}
		wg.Go(func() {
			_, errs[i] = retryBusy(t, func() (*duet.IdempotencyRecord, error) {
				rec, _, err := s.CreateRun(ctx(t), params(s, "alice", fmt.Sprintf("k%d", i)))
				return rec, err
			})
		})
	}
	wg.Wait()
	created, first := 0, -1
	for i, err := range errs {
		switch {
		case err == nil:
			created++
			if first < 0 {
				first = i
			}
		case duet.ErrorCode(err) == duet.CodeRateLimited:
			if !strings.Contains(duet.ErrorMessage(err), "5 runs in the last minute") {
				t.Errorf("refusal %d: %q, want it to say how many runs were started", i, duet.ErrorMessage(err))
			}
		default:
			t.Fatalf("start %d: %v", i, err)
		}
	}
	if created != 5 {
		t.Fatalf("%d concurrent starts over two handles with a budget of 5 a minute created %d runs, want 5", n, created)
	}
	if _, replayed, err := b.CreateRun(ctx(t), params(b, "alice", fmt.Sprintf("k%d", first))); err != nil || !replayed {
		t.Fatalf("a replay beyond the budget: got replayed=%v %v, want the first result", replayed, err)
	}
	if _, _, err := a.CreateRun(ctx(t), params(a, "bob", "k0")); err != nil {
		t.Fatalf("bob while alice is at her budget: %v", err)
	}
	runs, _, err := b.FindRuns(ctx(t), duet.RunFilter{TaskID: res.Task.ID, Limit: 100})
	if err != nil || len(runs) != 6 {
		t.Fatalf("runs: got %d %v, want 6", len(runs), err)
	}
	for _, r := range runs {
		if r.CallDepth != 3 {
			t.Errorf("run %s: call depth %d, want 3", r.ID, r.CallDepth)
		}
	}
}
