package storetest

import (
	"testing"
	"time"

	"github.com/duet-test/duet"
)

// testTraceModes: a task's trace mode is kept and changed by applying its
// suite (an update of the task), and a run's choice is kept with the run.
func testTraceModes(t *testing.T, s duet.Store) {
	su := suite("traced", "a")
	su.Task.Trace = "on"
	res := mustApply(t, s, "alice", su)
	task, err := s.FindTaskByID(ctx(t), "alice", res.Task.ID)
	if err != nil || task.Trace != "on" {
		t.Fatalf("task trace: got %+v %v, want on", task, err)
	}
	su.Task.Trace = "off"
	again := mustApply(t, s, "alice", su)
	if again.TaskAction != duet.ApplyUpdated {
		t.Errorf("changing the trace mode: task %s, want updated", again.TaskAction)
	}
	if task, err = s.FindTaskByID(ctx(t), "", res.Task.ID); err != nil || task.Trace != "off" {
		t.Fatalf("task trace after the change: got %+v %v, want off", task, err)
	}
	run := &duet.Run{TaskID: task.ID, TriggeredBy: "alice", CallSource: duet.SourceCLI, Trace: "on-first-retry"}
	x := &duet.Execution{CaseID: res.Cases[0].ID, CaseKey: "a", CaseTitle: "a", CaseVersion: 1, Steps: []duet.Step{step(0, "true")}}
	if _, _, err := s.CreateRun(ctx(t), duet.StartRunParams{Run: run, Executions: []*duet.Execution{x}}); err != nil {
		t.Fatal(err)
	}
	got, err := s.FindRunByID(ctx(t), "alice", run.ID)
	if err != nil || got.Trace != "on-first-retry" {
		t.Fatalf("run trace: got %+v %v", got, err)
	}
	claimed, err := s.ClaimRun(ctx(t), "w1", 30e9)
	if err != nil || claimed == nil || claimed.Trace != "on-first-retry" {
		t.Fatalf("claimed run trace: got %+v %v", claimed, err)
	}
}

// testBaselines: baselines are versioned per key; the current one is the
// newest approved, else the newest pending, at the same fingerprint; only
// their owner finds, lists and decides them, once.
func testBaselines(t *testing.T, s duet.Store) {
	res := mustApply(t, s, "alice", suite("visual", "a"))
	l, x := heldExecution(t, s, res, "w1")
	key := duet.BaselineKey{TaskID: res.Task.ID, CaseID: res.Cases[0].ID, Name: "home", Device: "desktop", Environment: "http://127.0.0.1:1", Owner: "alice"}
	mk := func(img string) *duet.Baseline {
		b := &duet.Baseline{BaselineKey: key, CaseKey: "a", CaseVersion: 1, Fingerprint: "f1", SHA256: img, Width: 2, Height: 1,
			RunID: l.RunID, ExecutionID: x.ID, StepIndex: 3, Image: []byte(img)}
		if err := s.CreateBaseline(ctx(t), l, b); err != nil {
			t.Fatal(err)
		}
		return b
	}
	if _, err := s.FindCurrentBaseline(ctx(t), key, "f1"); duet.ErrorCode(err) != duet.CodeNotFound {
		t.Fatalf("no baseline yet: got %v", err)
	}
	b1 := mk("one")
	if b1.Version != 1 || b1.Status != duet.BaselinePending || b1.ID == "" {
		t.Fatalf("first: %+v", b1)
	}
	cur, err := s.FindCurrentBaseline(ctx(t), key, "f1")
	if err != nil || cur.ID != b1.ID || string(cur.Image) != "one" || cur.DiffRatio != nil {
		t.Fatalf("current (pending): %+v %v", cur, err)
	}
	if _, err := s.FindCurrentBaseline(ctx(t), key, "f2"); duet.ErrorCode(err) != duet.CodeNotFound {
		t.Fatalf("another fingerprint: %v", err)
	}
	other := key
	other.Owner = "bob"
	if _, err := s.FindCurrentBaseline(ctx(t), other, "f1"); duet.ErrorCode(err) != duet.CodeNotFound {
		t.Fatalf("bob's key: %v", err)
	}
	if _, err := s.DecideBaseline(ctx(t), "bob", b1.ID, duet.BaselineApproved); duet.ErrorCode(err) != duet.CodeNotFound {
		t.Fatalf("bob deciding alice's: %v", err)
	}
	if _, err := s.FindBaseline(ctx(t), "bob", b1.ID); duet.ErrorCode(err) != duet.CodeNotFound {
		t.Fatalf("bob finding alice's: %v", err)
	}
	got, err := s.DecideBaseline(ctx(t), "alice", b1.ID, duet.BaselineApproved)
	if err != nil || got.Status != duet.BaselineApproved || got.DecidedBy != "alice" || got.DecidedAt == nil {
		t.Fatalf("approve: %+v %v", got, err)
	}
	if _, err := s.DecideBaseline(ctx(t), "alice", b1.ID, duet.BaselineRejected); duet.ErrorCode(err) != duet.CodeConflict {
		t.Fatalf("deciding twice: %v", err)
	}
	if _, err := s.DecideBaseline(ctx(t), "alice", b1.ID, duet.BaselinePending); duet.ErrorCode(err) != duet.CodeInvalidArgument {
		t.Fatalf("deciding pending: %v", err)
	}
	ratio := 0.25
	b2 := mk("two")
	b2b := &duet.Baseline{BaselineKey: key, CaseKey: "a", Fingerprint: "f1", SHA256: "three", Image: []byte("three"), DiffRatio: &ratio, RunID: l.RunID, ExecutionID: x.ID}
	if err := s.CreateBaseline(ctx(t), l, b2b); err != nil {
		t.Fatal(err)
	}
	if b2.Version != 2 || b2b.Version != 3 {
		t.Fatalf("versions: %d %d", b2.Version, b2b.Version)
	}
	// A candidate recorded because a screenshot differed is not compared
	// against before it is approved, even with nothing approved.
	other2 := key
	other2.Name = "cart"
	c1 := &duet.Baseline{BaselineKey: other2, CaseKey: "a", Fingerprint: "f1", SHA256: "c1", Image: []byte("c1"), RunID: l.RunID, ExecutionID: x.ID}
	c2 := &duet.Baseline{BaselineKey: other2, CaseKey: "a", Fingerprint: "f1", SHA256: "c2", Image: []byte("c2"), DiffRatio: &ratio, RunID: l.RunID, ExecutionID: x.ID}
	for _, b := range []*duet.Baseline{c1, c2} {
		if err := s.CreateBaseline(ctx(t), l, b); err != nil {
			t.Fatal(err)
		}
	}
	if cur, err := s.FindCurrentBaseline(ctx(t), other2, "f1"); err != nil || cur.ID != c1.ID {
		t.Fatalf("current with a pending candidate: %+v %v, want the first recording", cur, err)
	}
	// The approved one stays current while newer ones wait.
	if cur, err := s.FindCurrentBaseline(ctx(t), key, "f1"); err != nil || cur.ID != b1.ID {
		t.Fatalf("current with pending candidates: %+v %v", cur, err)
	}
	if _, err := s.DecideBaseline(ctx(t), "alice", b2.ID, duet.BaselineRejected); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DecideBaseline(ctx(t), "alice", b2b.ID, duet.BaselineApproved); err != nil {
		t.Fatal(err)
	}
	if cur, err := s.FindCurrentBaseline(ctx(t), key, "f1"); err != nil || cur.ID != b2b.ID || cur.DiffRatio == nil || *cur.DiffRatio != 0.25 {
		t.Fatalf("current after approving v3: %+v %v", cur, err)
	}
	list, err := s.FindBaselines(ctx(t), duet.BaselineFilter{Owner: "alice", TaskID: res.Task.ID})
	if err != nil || len(list) != 5 || list[0].Image != nil {
		t.Fatalf("list: %d %v", len(list), err)
	}
	if l, _ := s.FindBaselines(ctx(t), duet.BaselineFilter{Owner: "alice", Status: duet.BaselineRejected}); len(l) != 1 || l[0].ID != b2.ID {
		t.Fatalf("rejected: %+v", l)
	}
	if l, _ := s.FindBaselines(ctx(t), duet.BaselineFilter{Owner: "bob"}); len(l) != 0 {
		t.Fatalf("bob's list: %+v", l)
	}
	if err := s.CreateBaseline(ctx(t), l, &duet.Baseline{BaselineKey: key, RunID: l.RunID, ExecutionID: x.ID}); duet.ErrorCode(err) != duet.CodeInvalidArgument {
		t.Fatalf("no image: %v", err)
	}
}

// heldExecution queues a run of the applied task's first case and claims
// it as worker, returning the worker's lease and the started execution.
func heldExecution(t *testing.T, s duet.Store, res *duet.ApplyResult, worker string) (duet.Lease, *duet.Execution) {
	t.Helper()
	run := &duet.Run{TaskID: res.Task.ID, TriggeredBy: res.Task.Owner, CallSource: duet.SourceCLI}
	x := &duet.Execution{CaseID: res.Cases[0].ID, CaseKey: res.Cases[0].Key, CaseTitle: res.Cases[0].Key, CaseVersion: res.Cases[0].Version, Steps: []duet.Step{step(0, "true")}}
	if _, _, err := s.CreateRun(ctx(t), duet.StartRunParams{Run: run, Executions: []*duet.Execution{x}}); err != nil {
		t.Fatal(err)
	}
	c, err := s.ClaimRunByID(ctx(t), run.ID, worker, time.Minute)
	if err != nil || c == nil {
		t.Fatalf("claim: %v %v", c, err)
	}
	l := duet.LeaseOf(c, worker)
	if err := s.StartExecution(ctx(t), l, x); err != nil {
		t.Fatal(err)
	}
	return l, x
}

// testBaselineFence: a baseline is a write of the run that recorded it,
// fenced like its results: once the worker no longer holds the run (it
// handed it back, another worker claimed it, the run ended), or for
// another run's execution, the write is refused with LEASE_LOST and
// nothing is stored — no pending baseline from a worker that lost its run.
func testBaselineFence(t *testing.T, s duet.Store) {
	res := mustApply(t, s, "alice", suite("fenced", "a"))
	l1, x := heldExecution(t, s, res, "w1")
	key := duet.BaselineKey{TaskID: res.Task.ID, CaseID: res.Cases[0].ID, Name: "home", Device: "desktop", Environment: "http://127.0.0.1:1", Owner: "alice"}
	mk := func(runID, execID string) *duet.Baseline {
		return &duet.Baseline{BaselineKey: key, CaseKey: "a", CaseVersion: 1, Fingerprint: "f1", SHA256: "s", Width: 1, Height: 1,
			RunID: runID, ExecutionID: execID, Image: []byte("png")}
	}
	count := func() int {
		t.Helper()
		list, err := s.FindBaselines(ctx(t), duet.BaselineFilter{Owner: "alice", TaskID: res.Task.ID})
		if err != nil {
			t.Fatal(err)
		}
		return len(list)
	}
	if err := s.CreateBaseline(ctx(t), l1, mk(l1.RunID, x.ID)); err != nil {
		t.Fatalf("under the lease: %v", err)
	}
	refused := func(what string, l duet.Lease, b *duet.Baseline) {
		t.Helper()
		if err := s.CreateBaseline(ctx(t), l, b); duet.ErrorCode(err) != duet.CodeLeaseLost {
			t.Errorf("%s: got %v, want LEASE_LOST", what, err)
		}
	}
	// Another run's execution, or a baseline naming another run, under l1.
	l9, x9 := heldExecution(t, s, mustApply(t, s, "alice", suite("other", "a")), "w1")
	refused("another run's execution", l1, mk(l1.RunID, x9.ID))
	refused("a baseline of another run", l1, mk(l9.RunID, x9.ID))
	stale := l1
	stale.Token++
	refused("another claim's token", stale, mk(l1.RunID, x.ID))
	// Handed back, then taken over by w2: w1's lease is lost for good.
	if err := s.ReleaseRun(ctx(t), l1); err != nil {
		t.Fatal(err)
	}
	refused("a run handed back", l1, mk(l1.RunID, x.ID))
	c, err := s.ClaimRunByID(ctx(t), l1.RunID, "w2", time.Minute)
	if err != nil || c == nil {
		t.Fatalf("w2's claim: %v %v", c, err)
	}
	l2 := duet.LeaseOf(c, "w2")
	refused("a run another worker took over", l1, mk(l1.RunID, x.ID))
	if count() != 1 {
		t.Fatalf("refused writes stored baselines: %d, want 1", count())
	}
	if err := s.CreateBaseline(ctx(t), l2, mk(l2.RunID, x.ID)); err != nil {
		t.Fatalf("under w2's lease: %v", err)
	}
	// Ended: no baseline after the run's verdict.
	if err := s.FinishRun(ctx(t), l2, &duet.Run{ID: l2.RunID, Status: duet.StatusCancelled}); err != nil {
		t.Fatal(err)
	}
	refused("an ended run", l2, mk(l2.RunID, x.ID))
	if count() != 2 {
		t.Fatalf("baselines: %d, want 2", count())
	}
}

// testMetrics: page-speed values are kept per run, a value measured again
// replaces the first.
func testMetrics(t *testing.T, s duet.Store) {
	res := mustApply(t, s, "alice", suite("speed", "a"))
	run := &duet.Run{TaskID: res.Task.ID, TriggeredBy: "alice", CallSource: duet.SourceCLI}
	x := &duet.Execution{CaseID: res.Cases[0].ID, CaseKey: "a", CaseTitle: "a", CaseVersion: 1, Steps: []duet.Step{step(0, "true")}}
	if _, _, err := s.CreateRun(ctx(t), duet.StartRunParams{Run: run, Executions: []*duet.Execution{x}}); err != nil {
		t.Fatal(err)
	}
	m := func(name string, v float64) *duet.Metric {
		return &duet.Metric{RunID: run.ID, ExecutionID: x.ID, TaskID: res.Task.ID, CaseKey: "a", StepIndex: 1, Name: name, Value: v}
	}
	c, err := s.ClaimRunByID(ctx(t), run.ID, "w", time.Minute)
	if err != nil || c == nil {
		t.Fatalf("claim: %v %v", c, err)
	}
	l := duet.LeaseOf(c, "w")
	if err := s.StartExecution(ctx(t), l, x); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveMetrics(ctx(t), l, []*duet.Metric{m("lcp", 1200), m("cls", 0.05)}); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveMetrics(ctx(t), l, []*duet.Metric{m("lcp", 1300)}); err != nil {
		t.Fatal(err)
	}
	// Fenced: another claim's token, or another run's values, are refused.
	stale := l
	stale.Token++
	if err := s.SaveMetrics(ctx(t), stale, []*duet.Metric{m("lcp", 9999)}); duet.ErrorCode(err) != duet.CodeLeaseLost {
		t.Fatalf("a lost lease's metrics: %v", err)
	}
	other := m("lcp", 9999)
	other.RunID = "run_other"
	if err := s.SaveMetrics(ctx(t), l, []*duet.Metric{other}); duet.ErrorCode(err) != duet.CodeLeaseLost {
		t.Fatalf("another run's metrics: %v", err)
	}
	got, err := s.FindMetrics(ctx(t), []string{run.ID, "run_none"})
	if err != nil || len(got) != 2 {
		t.Fatalf("metrics: %+v %v", got, err)
	}
	vals := map[string]float64{}
	for _, g := range got {
		vals[g.Name] = g.Value
	}
	if vals["lcp"] != 1300 || vals["cls"] != 0.05 {
		t.Fatalf("values: %v", vals)
	}
	if none, err := s.FindMetrics(ctx(t), nil); err != nil || len(none) != 0 {
		t.Fatalf("no runs: %v %v", none, err)
	}
}
