package storetest

import (
	"testing"
	"time"

	"github.com/duet-test/duet"
)

// testStopRequests: a stop request is stored pending (or decided, when
// the caller confirmed it in their client); its requester and the run's
// executor see it, nobody else; only the executor decides, once, before it
// expires; an expired request reads as expired and cannot be approved.
func testStopRequests(t *testing.T, s duet.Store) {
	run, _ := newRun(t, s, "alice")
	now := time.Now()
	pending := &duet.StopRequest{RunID: run.ID, TaskID: run.TaskID, Executor: "alice", RequestedBy: "bob", Reason: "stuck",
		TraceID: "t1", Status: duet.StopPending, ExpiresAt: now.Add(time.Hour)}
	if err := s.CreateStopRequest(ctx(t), pending); err != nil {
		t.Fatal(err)
	}
	if pending.ID == "" || pending.CreatedAt.IsZero() {
		t.Fatalf("created: got %+v, want an id and a time", pending)
	}
	for _, viewer := range []string{"bob", "alice", ""} {
		got, err := s.FindStopRequest(ctx(t), viewer, pending.ID)
		if err != nil || got.Status != duet.StopPending || got.RequestedBy != "bob" || got.Executor != "alice" || got.Reason != "stuck" || got.TraceID != "t1" ||
			!got.CreatedAt.Equal(pending.CreatedAt) || !got.ExpiresAt.Equal(pending.ExpiresAt) {
			t.Fatalf("FindStopRequest as %q: got %+v %v, want %+v", viewer, got, err, pending)
		}
	}
	_, err := s.FindStopRequest(ctx(t), "mallory", pending.ID)
	wantCode(t, err, duet.CodeNotFound)

	// Only the executor decides; others who cannot see it get NOT_FOUND.
	_, err = s.DecideStopRequest(ctx(t), pending.ID, "bob", duet.StopViaCLI, true)
	wantCode(t, err, duet.CodePermissionDenied)
	_, err = s.DecideStopRequest(ctx(t), pending.ID, "mallory", duet.StopViaCLI, true)
	wantCode(t, err, duet.CodeNotFound)
	decided, err := s.DecideStopRequest(ctx(t), pending.ID, "alice", duet.StopViaCLI, true)
	if err != nil || decided.Status != duet.StopApproved || decided.DecidedBy != "alice" || decided.Via != duet.StopViaCLI || decided.DecidedAt == nil {
		t.Fatalf("approve: got %+v %v", decided, err)
	}
	_, err = s.DecideStopRequest(ctx(t), pending.ID, "alice", duet.StopViaCLI, false)
	wantCode(t, err, duet.CodeConflict)
	got, _ := s.FindStopRequest(ctx(t), "bob", pending.ID)
	if got.Status != duet.StopApproved || got.DecidedBy != "alice" || got.DecidedAt == nil || !got.DecidedAt.Equal(*decided.DecidedAt) {
		t.Fatalf("stored decision: got %+v, want %+v", got, decided)
	}

	// Expired: reads as expired, cannot be decided.
	old := &duet.StopRequest{RunID: run.ID, TaskID: run.TaskID, Executor: "alice", RequestedBy: "bob", Status: duet.StopPending, ExpiresAt: now.Add(-time.Second)}
	if err := s.CreateStopRequest(ctx(t), old); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.FindStopRequest(ctx(t), "alice", old.ID); got.Status != duet.StopExpired {
		t.Fatalf("an expired request: got status %s, want expired", got.Status)
	}
	_, err = s.DecideStopRequest(ctx(t), old.ID, "alice", duet.StopViaCLI, true)
	wantCode(t, err, duet.CodeApprovalExpired)

	// Decided at once by elicitation.
	at := time.Now()
	confirmed := &duet.StopRequest{RunID: run.ID, TaskID: run.TaskID, Executor: "alice", RequestedBy: "carol", Status: duet.StopDenied,
		Via: duet.StopViaElicitation, DecidedBy: "carol", DecidedAt: &at, ExpiresAt: at}
	if err := s.CreateStopRequest(ctx(t), confirmed); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.FindStopRequest(ctx(t), "carol", confirmed.ID); got.Status != duet.StopDenied || got.Via != duet.StopViaElicitation || got.DecidedAt == nil {
		t.Fatalf("a request declined in the client: got %+v", got)
	}
	open := &duet.StopRequest{RunID: run.ID, TaskID: run.TaskID, Executor: "alice", RequestedBy: "carol", Status: duet.StopPending, ExpiresAt: now.Add(time.Hour)}
	if err := s.CreateStopRequest(ctx(t), open); err != nil {
		t.Fatal(err)
	}

	// Lists: the executor's and the requester's, newest first; pending only.
	ids := func(rs []*duet.StopRequest) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.ID)
		}
		return out
	}
	for _, c := range []struct {
		f    duet.StopRequestFilter
		want []string
	}{
		{duet.StopRequestFilter{User: "alice"}, []string{open.ID, confirmed.ID, old.ID, pending.ID}},
		{duet.StopRequestFilter{User: "bob"}, []string{old.ID, pending.ID}},
		{duet.StopRequestFilter{User: "carol", Pending: true}, []string{open.ID}},
		{duet.StopRequestFilter{User: "alice", Pending: true}, []string{open.ID}},
		{duet.StopRequestFilter{User: "alice", RunID: "run_none"}, nil},
		{duet.StopRequestFilter{User: "alice", Limit: 1}, []string{open.ID}},
		{duet.StopRequestFilter{User: "mallory"}, nil},
	} {
		got, err := s.FindStopRequests(ctx(t), c.f)
		if err != nil || len(got) != len(c.want) || len(c.want) > 0 && !equalStrings(ids(got), c.want) {
			t.Errorf("FindStopRequests(%+v): got %v %v, want %v", c.f, ids(got), err, c.want)
		}
	}
	if got, _ := s.FindStopRequests(ctx(t), duet.StopRequestFilter{User: "bob"}); len(got) == 2 && got[0].Status != duet.StopExpired {
		t.Errorf("the list reads the expired request as %s, want expired", got[0].Status)
	}

	// Refused input.
	for _, bad := range []*duet.StopRequest{
		{TaskID: run.TaskID, Executor: "alice", RequestedBy: "bob", Status: duet.StopPending, ExpiresAt: now},
		{RunID: run.ID, TaskID: run.TaskID, Executor: "alice", RequestedBy: "bob", Status: "stopped", ExpiresAt: now},
		{RunID: run.ID, TaskID: run.TaskID, Executor: "alice", RequestedBy: "bob", Status: duet.StopApproved, ExpiresAt: now},
	} {
		wantCode(t, s.CreateStopRequest(ctx(t), bad), duet.CodeInvalidArgument)
	}
	wantCode(t, s.CreateStopRequest(ctx(t), &duet.StopRequest{RunID: "run_none", TaskID: run.TaskID, Executor: "alice", RequestedBy: "bob",
		Status: duet.StopPending, ExpiresAt: now}), duet.CodeNotFound)
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// testPostRun: a suite's post-run actions are stored with the task and who
// wrote them; re-applying them unchanged changes nothing, changing them
// makes the applier their writer and needs a new approval; a run keeps the
// outcomes of its actions.
func testPostRun(t *testing.T, s duet.Store) {
	action := func(on duet.PostRunWhen) []*duet.PostRunAction {
		return []*duet.PostRunAction{{Name: "ticket", On: on, ServerKey: "mcp_tickets_0123abcd", ServerName: "tickets", ToolName: "file_ticket", Line: 7,
			InputBindings: map[string]duet.Binding{"title": {Source: duet.BindValue, Value: "${run.status}"}, "failed": {Source: duet.BindVar, Path: "run.failedCases"}}}}
	}
	su := suite("post", "a")
	su.Task.SharedWith = []string{"bob"}
	su.Task.PostRun = action(duet.PostRunOnFailure)
	res := mustApply(t, s, "alice", su)
	taskID := res.Task.ID
	got, err := s.FindTaskByID(ctx(t), "bob", taskID)
	if err != nil || len(got.PostRun) != 1 || got.PostRunBy != "alice" || duet.PostRunHash(got.PostRun) != duet.PostRunHash(su.Task.PostRun) ||
		got.PostRun[0].InputBindings["failed"].Path != "run.failedCases" || got.PostRun[0].Line != 7 {
		t.Fatalf("stored post-run actions: got %+v %v", got, err)
	}
	for _, find := range []func() (*duet.Task, error){
		func() (*duet.Task, error) { return s.FindTaskByName(ctx(t), "alice", "post") },
		func() (*duet.Task, error) {
			ts, _, _, err := s.FindTasks(ctx(t), duet.TaskFilter{Viewer: "alice", Query: "post"})
			if err != nil || len(ts) != 1 {
				return nil, err
			}
			return ts[0], nil
		},
	} {
		if got, err := find(); err != nil || got == nil || len(got.PostRun) != 1 || got.PostRunBy != "alice" {
			t.Fatalf("post-run actions in other reads: got %+v %v", got, err)
		}
	}
	hash := duet.PostRunHash(got.PostRun)
	if res := mustApply(t, s, "alice", su); res.TaskAction != duet.ApplyUnchanged {
		t.Fatalf("re-applying the same actions: task %s, want unchanged", res.TaskAction)
	}

	// Approvals are of one version.
	_, err = s.FindPostRunApproval(ctx(t), "bob", taskID, hash)
	wantCode(t, err, duet.CodeNotFound)
	_, err = s.ApprovePostRun(ctx(t), "mallory", taskID, hash)
	wantCode(t, err, duet.CodeNotFound)
	_, err = s.ApprovePostRun(ctx(t), "bob", taskID, "stale")
	wantCode(t, err, duet.CodeConflict)
	a, err := s.ApprovePostRun(ctx(t), "bob", taskID, hash)
	if err != nil || a.ApprovedAt.IsZero() || a.Hash != hash {
		t.Fatalf("approve: got %+v %v", a, err)
	}
	again, err := s.ApprovePostRun(ctx(t), "bob", taskID, hash)
	if err != nil || !again.ApprovedAt.Equal(a.ApprovedAt) {
		t.Fatalf("approving again: got %+v %v, want the first kept", again, err)
	}
	if f, err := s.FindPostRunApproval(ctx(t), "bob", taskID, hash); err != nil || !f.ApprovedAt.Equal(a.ApprovedAt) {
		t.Fatalf("FindPostRunApproval: got %+v %v", f, err)
	}

	// Changed by bob's own apply? bob cannot apply alice's task; a change
	// by alice makes a new version, not approved.
	su.Task.PostRun = action(duet.PostRunAlways)
	if res := mustApply(t, s, "alice", su); res.TaskAction != duet.ApplyUpdated {
		t.Fatalf("changing the actions: task %s, want updated", res.TaskAction)
	}
	got, _ = s.FindTaskByID(ctx(t), "", taskID)
	if got.PostRun[0].On != duet.PostRunAlways || duet.PostRunHash(got.PostRun) == hash {
		t.Fatalf("changed actions: got %+v", got.PostRun[0])
	}
	_, err = s.FindPostRunApproval(ctx(t), "bob", taskID, duet.PostRunHash(got.PostRun))
	wantCode(t, err, duet.CodeNotFound)
	su.Task.PostRun = nil
	mustApply(t, s, "alice", su)
	if got, _ := s.FindTaskByID(ctx(t), "", taskID); len(got.PostRun) != 0 || got.PostRunBy != "" {
		t.Fatalf("removed actions: got %+v by %q", got.PostRun, got.PostRunBy)
	}
	_, err = s.ApprovePostRun(ctx(t), "bob", taskID, "")
	wantCode(t, err, duet.CodeInvalidArgument)

	// A run keeps its post-run outcomes.
	run, _ := newRun(t, s, "alice")
	claimed, err := s.ClaimRunByID(ctx(t), run.ID, "w", time.Minute)
	if err != nil || claimed == nil {
		t.Fatal(err)
	}
	now := time.Now()
	run.Status, run.FinishedAt = duet.StatusError, &now
	run.PostRun = []*duet.PostRunResult{{Index: 0, Name: "ticket", ServerKey: "mcp_tickets_0123abcd", Tool: "file_ticket", Status: duet.StatusFailed,
		ErrorCode: duet.CodeMCPToolError, ErrorMessage: "refused", DurationMs: 12}}
	if err := s.FinishRun(ctx(t), duet.LeaseOf(claimed, "w"), run); err != nil {
		t.Fatal(err)
	}
	stored, err := s.FindRunByID(ctx(t), "alice", run.ID)
	if err != nil || len(stored.PostRun) != 1 || *stored.PostRun[0] != *run.PostRun[0] || stored.Status != duet.StatusError {
		t.Fatalf("stored run: got %+v %v, want its post-run results", stored, err)
	}
	if runs, _, err := s.FindRuns(ctx(t), duet.RunFilter{Viewer: "alice", TaskID: run.TaskID}); err != nil || len(runs) != 1 || len(runs[0].PostRun) != 1 {
		t.Fatalf("FindRuns: got %+v %v", runs, err)
	}
}
