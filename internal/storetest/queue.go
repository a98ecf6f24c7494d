package storetest

import (
	"strings"
	"testing"
	"time"

	"github.com/duet-test/duet"
)

// queueRuns creates n runs of one task for owner, one at a time (so they are
// queued in order), and returns their ids.
func queueRuns(t *testing.T, s duet.Store, owner string, n int) []string {
	t.Helper()
	res := mustApply(t, s, owner, suite("q-"+duet.NewID("x"), "a"))
	cases, _, _, err := s.FindCases(ctx(t), duet.CaseFilter{TaskID: res.Task.ID})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for range n {
		run := &duet.Run{TaskID: res.Task.ID, TriggeredBy: owner, CallSource: duet.SourceMCP}
		execs := []*duet.Execution{{CaseID: cases[0].ID, CaseKey: cases[0].Key, CaseTitle: cases[0].Title, CaseVersion: cases[0].Version, Steps: cases[0].Steps}}
		if _, _, err := s.CreateRun(ctx(t), duet.StartRunParams{Run: run, Executions: execs}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, run.ID)
	}
	return ids
}

func claim(t *testing.T, s duet.Store, worker string) *duet.Run {
	t.Helper()
	r, err := s.ClaimRun(ctx(t), worker, time.Minute)
	if err != nil || r == nil {
		t.Fatalf("ClaimRun: got %+v %v, want a run", r, err)
	}
	return r
}

// testQueueFairWhileRunning: user A queues 12 runs, then user B one; with
// A's first run still running, B's run is the second one claimed.
func testQueueFairWhileRunning(t *testing.T, s duet.Store) {
	a := queueRuns(t, s, "alice", 12)
	b := queueRuns(t, s, "bob", 1)
	if first := claim(t, s, "w1"); first.ID != a[0] {
		t.Fatalf("first claim: got %s of %s, want alice's first run", first.ID, first.TriggeredBy)
	}
	if second := claim(t, s, "w2"); second.ID != b[0] {
		t.Fatalf("second claim: got %s of %s, want bob's run (alice has one running)", second.ID, second.TriggeredBy)
	}
	// Then alice's runs, in the order she queued them.
	for i := 1; i <= 3; i++ {
		if r := claim(t, s, "w"); r.ID != a[i] {
			t.Fatalf("claim %d: got %s of %s, want alice's run %d", i+2, r.ID, r.TriggeredBy, i)
		}
	}
}

// testQueueFairOneAtATime: with one worker that finishes each run before
// claiming the next, the executors still take turns (round-robin by who was
// served least recently), each in FIFO order.
func testQueueFairOneAtATime(t *testing.T, s duet.Store) {
	a := queueRuns(t, s, "alice", 12)
	b := queueRuns(t, s, "bob", 2)
	var got []string
	for range 6 {
		r := claim(t, s, "w1")
		got = append(got, r.ID)
		passRun(t, s, duet.LeaseOf(r, "w1"), r)
	}
	want := []string{a[0], b[0], a[1], b[1], a[2], a[3]}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("claim order: got %v, want %v (alice %v, bob %v)", got, want, a[:4], b)
		}
	}
}

// testQueueCap: MaxQueued refuses a user's next run with RATE_LIMITED, not
// another user's, and not a replay of an idempotent call.
func testQueueCap(t *testing.T, s duet.Store) {
	res := mustApply(t, s, "alice", suite("capped", "a"))
	cases, _, _, err := s.FindCases(ctx(t), duet.CaseFilter{TaskID: res.Task.ID})
	if err != nil {
		t.Fatal(err)
	}
	params := func(owner, key string) duet.StartRunParams {
		p := idemParams(t, s, res.Task.ID, cases, key, "h-"+key)
		p.Run.TriggeredBy, p.Idempotency.Caller = owner, owner
		p.MaxQueued = 3
		return p
	}
	for i := range 3 {
		if _, _, err := s.CreateRun(ctx(t), params("alice", string(rune('a'+i)))); err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
	}
	_, _, err = s.CreateRun(ctx(t), params("alice", "d"))
	wantCode(t, err, duet.CodeRateLimited)
	if msg := duet.ErrorMessage(err); !strings.Contains(msg, "3 runs queued") {
		t.Fatalf("message: got %q, want it to say how many runs are queued", msg)
	}
	if _, replayed, err := s.CreateRun(ctx(t), params("alice", "a")); err != nil || !replayed {
		t.Fatalf("replay at the cap: got replayed=%v %v, want the first result", replayed, err)
	}
	if _, _, err := s.CreateRun(ctx(t), params("bob", "a")); err != nil {
		t.Fatalf("another user at alice's cap: %v", err)
	}
	// A run that started no longer counts.
	claim(t, s, "w1")
	if _, _, err := s.CreateRun(ctx(t), params("alice", "d")); err != nil {
		t.Fatalf("after a claim: %v", err)
	}
}

// testLostWorker: a run whose lease expired while running counts a lost
// worker when it is claimed again; a graceful release does not.
func testLostWorker(t *testing.T, s duet.Store) {
	run, _ := newRun(t, s, "alice")
	c, err := s.ClaimRun(ctx(t), "w1", time.Minute)
	if err != nil || c.ID != run.ID || c.Lost != 0 {
		t.Fatalf("claim: got %+v %v", c, err)
	}
	if err := s.ReleaseRun(ctx(t), duet.LeaseOf(c, "w1")); err != nil {
		t.Fatal(err)
	}
	if c, err := s.ClaimRun(ctx(t), "crashes", -time.Second); err != nil || c.ID != run.ID || c.Lost != 0 {
		t.Fatalf("claim after a release: got %+v %v, want lost 0", c, err)
	}
	c, err = s.ClaimRun(ctx(t), "crashes too", -time.Second)
	if err != nil || c == nil || c.Lost != 1 || c.Attempt != 3 {
		t.Fatalf("claim after an expired lease: got %+v %v, want lost 1, attempt 3", c, err)
	}
	c, err = s.ClaimRun(ctx(t), "w3", time.Minute)
	if err != nil || c == nil || c.Lost != 2 {
		t.Fatalf("claim after a second expired lease: got %+v %v, want lost 2", c, err)
	}
	if got, _ := s.FindRunByID(ctx(t), "", run.ID); got.Lost != 2 {
		t.Fatalf("FindRunByID: lost %d, want 2", got.Lost)
	}
}

// passRun runs every execution of r, which l holds, to a passed end with a
// result per step, and finishes r passed.
func passRun(t *testing.T, s duet.Store, l duet.Lease, r *duet.Run) {
	t.Helper()
	if err := passRunErr(t, s, l, r); err != nil {
		t.Fatal(err)
	}
}

// passRunErr is passRun returning the first error.
func passRunErr(t *testing.T, s duet.Store, l duet.Lease, r *duet.Run) error {
	execs, err := s.FindExecutions(ctx(t), r.ID)
	if err != nil {
		return err
	}
	now := time.Now()
	for _, x := range execs {
		x.StartedAt = &now
		if err := s.StartExecution(ctx(t), l, x); err != nil {
			return err
		}
		for _, st := range x.Steps {
			if err := s.SaveStepResult(ctx(t), l, x.ID, &duet.StepResult{Index: st.Index, Kind: st.Kind, Name: st.Name, Status: duet.StatusPassed}, nil); err != nil {
				return err
			}
		}
		x.Status, x.FinishedAt = duet.StatusPassed, &now
		if err := s.FinishExecution(ctx(t), l, x); err != nil {
			return err
		}
	}
	r.Status, r.FinishedAt = duet.StatusPassed, &now
	return s.FinishRun(ctx(t), l, r)
}
