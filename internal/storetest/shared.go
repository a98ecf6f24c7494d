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
		{"CancelRacesClaim", testCancelRacesClaim},
		{"FinishRacesCancel", testFinishRacesCancel},
		{"RefusedValues", testRefusedValues},
		{"FreshAcrossHandles", testFreshAcrossHandles},
		{"RegistryFreshAcrossHandles", testRegistryFreshAcrossHandles},
		{"RunsPerMinuteAcrossHandles", testRunsPerMinuteAcrossHandles},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			first, another := open(t)
			tt.fn(t, first, another)
		})
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
				r, err := s.ClaimRun(ctx(t), worker, time.Minute)
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
			rec, _, err := s.CreateRun(ctx(t), idemParams(t, s, res.Task.ID, cases, "same", "h"))
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
	if c, err := a.ClaimRun(ctx(t), "dead", time.Minute); err != nil || c == nil || c.ID != run.ID {
		t.Fatalf("first claim: %+v %v", c, err)
	}
	if c, err := b.ClaimRun(ctx(t), "alive", time.Minute); err != nil || c != nil {
		t.Fatalf("claim while the lease holds: got %+v %v, want none", c, err)
	}
	// The worker dies: its lease runs out.
	if _, err := a.RenewLease(ctx(t), run.ID, "dead", -time.Second); err != nil {
		t.Fatalf("the lease running out: %v", err)
	}
	c, err := b.ClaimRun(ctx(t), "alive", time.Minute)
	if err != nil || c == nil || c.ID != run.ID || c.Attempt != 2 || c.Status != duet.StatusRunning {
		t.Fatalf("take-over after the lease ran out: got %+v %v", c, err)
	}
	if _, err := a.RenewLease(ctx(t), run.ID, "dead", time.Minute); duet.ErrorCode(err) != duet.CodeConflict {
		t.Fatalf("renewal by the dead worker: got %v, want CONFLICT", err)
	}
	if err := a.ReleaseRun(ctx(t), run.ID, "dead"); err != nil {
		t.Fatal(err)
	}
	if cur, err := b.RenewLease(ctx(t), run.ID, "alive", time.Minute); err != nil || cur.Status != duet.StatusRunning {
		t.Fatalf("the new holder's lease after the dead worker's release: got %+v %v", cur, err)
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
		wg.Go(func() { claimed, claimErr = a.ClaimRunByID(ctx(t), run.ID, "w", time.Minute) })
		wg.Go(func() { _, cancelErr = b.RequestCancel(ctx(t), "alice", run.ID) })
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
			renewed, err := a.RenewLease(ctx(t), run.ID, "w", time.Minute)
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
		now := time.Now()
		c.Status, c.FinishedAt = duet.StatusPassed, &now
		var finishErr, cancelErr error
		var wg sync.WaitGroup
		wg.Go(func() { finishErr = a.FinishRun(ctx(t), c) })
		wg.Go(func() { _, cancelErr = b.RequestCancel(ctx(t), "alice", run.ID) })
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
			_, _, errs[i] = s.CreateRun(ctx(t), params(s, "alice", fmt.Sprintf("k%d", i)))
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
