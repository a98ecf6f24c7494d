package engine_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/engine"
)

const postRunYAML = `
task:
  name: post-run
  sharedWith: [bob]
  postRun:
    - name: file a ticket
      on: failure
      serverKey: mcp_tickets_0badcafe
      tool: file_ticket
      input:
        title: "${task.name}: run ${run.id} ${run.status}"
        failed: {var: run.failedCases}
        counts: "${run.passed} passed, ${run.failed} failed of ${run.cases}"
        report: "${run.reportUrl}"
    - name: cheer
      on: success
      serverKey: mcp_tickets_0badcafe
      tool: post_message
      input: {text: "${run.id} passed"}
    - name: always log
      on: always
      serverKey: mcp_tickets_0badcafe
      tool: broken_tool
      input: {status: "${run.status}"}
cases:
  - key: ok
    title: passes
    steps: [{assert: "true"}]
  - key: bad
    title: fails
    steps: [{assert: "1 == 2"}]
`

// TestPostRunActions: when a run ends, the actions whose "on" matches are
// called as the run's executor through the Invoker with call source
// post-run and inputs bound from the run's summary; a failed action is a
// note on the run that leaves the verdict alone; a run that passes calls
// the success action instead.
func TestPostRunActions(t *testing.T) {
	t.Parallel()
	db := openStore(t)
	const key = "mcp_tickets_0badcafe"
	register(t, db, "alice", key, map[string]bool{"file_ticket": false, "post_message": false, "broken_tool": true})
	reg := &registry{db: db}
	w, _, _ := worker(t, db, engine.Options{Invoker: reg}, engine.WorkerOptions{})
	res := apply(t, db, "alice", postRunYAML)

	run, _ := runAs(t, db, w, res.Task, "alice")
	if run.Status != duet.StatusFailed || run.ErrorCode != duet.CodeAssertionFailed {
		t.Fatalf("the run: got %s %s, want failed by its case (post-run actions never change it)", run.Status, run.ErrorCode)
	}
	if len(run.PostRun) != 2 {
		t.Fatalf("post-run results: got %+v, want the failure action and the always action", run.PostRun)
	}
	ticket, log := run.PostRun[0], run.PostRun[1]
	if ticket.Name != "file a ticket" || ticket.Index != 0 || ticket.Status != duet.StatusPassed || ticket.Tool != "file_ticket" {
		t.Errorf("the ticket action: got %+v", ticket)
	}
	if log.Index != 2 || log.Status != duet.StatusFailed || log.ErrorCode != duet.CodeMCPToolError || !strings.Contains(log.ErrorMessage, "down") {
		t.Errorf("the failing action: got %+v, want a failed note with MCP_TOOL_ERROR", log)
	}
	reg.mu.Lock()
	calls := append([]duet.InvokeRequest(nil), reg.calls...)
	reg.mu.Unlock()
	if len(calls) != 2 {
		t.Fatalf("calls: got %+v, want file_ticket and broken_tool", calls)
	}
	c := calls[0]
	if c.Tool != "file_ticket" || c.Executor != "alice" || c.Source != duet.SourcePostRun || c.ServerKey != key {
		t.Fatalf("the ticket call: got %+v, want alice's, from post-run", c)
	}
	if want := "post-run: run " + run.ID + " failed"; c.Arguments["title"] != want {
		t.Errorf("title: got %v, want %q", c.Arguments["title"], want)
	}
	if c.Arguments["counts"] != "1 passed, 1 failed of 2" || c.Arguments["report"] != "duet://runs/"+run.ID+"/report.html" {
		t.Errorf("counts and report: got %v, %v", c.Arguments["counts"], c.Arguments["report"])
	}
	failed, _ := c.Arguments["failed"].([]any)
	if len(failed) != 1 {
		t.Fatalf("failed cases: got %#v", c.Arguments["failed"])
	}
	if f := failed[0].(map[string]any); f["key"] != "bad" || f["errorCode"] != string(duet.CodeAssertionFailed) || f["title"] != "fails" {
		t.Errorf("the failed case: got %v", f)
	}
	if calls[1].Tool != "broken_tool" || calls[1].Arguments["status"] != "failed" {
		t.Errorf("the always action: got %+v", calls[1])
	}

	// A run that passes: the success action, and always.
	apply(t, db, "alice", strings.Replace(postRunYAML, `steps: [{assert: "1 == 2"}]`, `steps: [{assert: "2 == 2"}]`, 1))
	run, _ = runAs(t, db, w, res.Task, "alice")
	if run.Status != duet.StatusPassed || len(run.PostRun) != 2 || run.PostRun[0].Tool != "post_message" || run.PostRun[1].Tool != "broken_tool" {
		t.Fatalf("a passing run: got %s with %+v, want passed with post_message and broken_tool", run.Status, run.PostRun)
	}
	if run.PostRun[1].Status != duet.StatusFailed {
		t.Fatalf("a failing always action: got %+v", run.PostRun[1])
	}
}

// TestPostRunNeedsApproval: bob runs alice's shared task; its post-run
// actions call tools of a server he registered, so none is called with his
// credentials until he approves that version of the actions — a read-only
// one neither (it is sent the run's summary all the same); the run's
// verdict is the same either way.
func TestPostRunNeedsApproval(t *testing.T) {
	t.Parallel()
	db := openStore(t)
	const key = "mcp_tickets_0badcafe"
	ro := map[string]bool{"file_ticket": false, "post_message": false, "broken_tool": true}
	register(t, db, "alice", key, ro)
	register(t, db, "bob", key, ro)
	reg := &registry{db: db}
	w, _, _ := worker(t, db, engine.Options{Invoker: reg}, engine.WorkerOptions{})
	res := apply(t, db, "alice", postRunYAML)

	run, _ := runAs(t, db, w, res.Task, "bob")
	if run.Status != duet.StatusFailed || len(run.PostRun) != 2 {
		t.Fatalf("bob's run: got %s %+v", run.Status, run.PostRun)
	}
	ticket := run.PostRun[0]
	if ticket.Status != duet.StatusFailed || ticket.ErrorCode != duet.CodeApprovalRequired {
		t.Fatalf("the unapproved action: got %+v, want APPROVAL_REQUIRED", ticket)
	}
	for _, want := range []string{"alice", "file_ticket", "duet task approve-post-run " + res.Task.ID + " --as bob"} {
		if !strings.Contains(ticket.ErrorMessage, want) {
			t.Errorf("APPROVAL_REQUIRED message %q does not say %q", ticket.ErrorMessage, want)
		}
	}
	if always := run.PostRun[1]; always.Tool != "broken_tool" || always.ErrorCode != duet.CodeApprovalRequired {
		t.Fatalf("the unapproved read-only action: got %+v, want APPROVAL_REQUIRED", always)
	}
	if reg.called("bob", "file_ticket") != 0 || reg.called("bob", "broken_tool") != 0 {
		t.Fatalf("calls as bob: %+v, want none", reg.calls)
	}

	task, _ := db.FindTaskByID(t.Context(), "bob", res.Task.ID)
	if _, err := db.ApprovePostRun(t.Context(), "bob", task.ID, duet.PostRunHash(task.PostRun)); err != nil {
		t.Fatal(err)
	}
	run, _ = runAs(t, db, w, res.Task, "bob")
	if run.PostRun[0].Status != duet.StatusPassed || reg.called("bob", "file_ticket") != 1 || reg.called("bob", "broken_tool") != 1 {
		t.Fatalf("after bob's approval: got %+v, calls %+v", run.PostRun[0], reg.calls)
	}
}

// TestPostRunAfterCancel: a run cancelled while it runs makes its "always"
// actions (with status cancelled), not its failure ones.
func TestPostRunAfterCancel(t *testing.T) {
	t.Parallel()
	db := openStore(t)
	srv := api(t)
	const key = "mcp_tickets_0badcafe"
	register(t, db, "alice", key, map[string]bool{"file_ticket": true, "post_message": true})
	reg := &registry{db: db}
	w, _, _ := worker(t, db, engine.Options{Invoker: reg}, engine.WorkerOptions{CancelCheck: 50 * time.Millisecond})
	res := apply(t, db, "alice", `
task:
  name: slow
  baseURL: `+srv.URL+`
  postRun:
    - {on: failure, serverKey: `+key+`, tool: file_ticket, input: {s: "${run.status}"}}
    - {on: always, serverKey: `+key+`, tool: post_message, input: {s: "${run.status}", cancelled: "${run.cancelled}"}}
cases:
  - key: slow
    title: waits
    steps: [{http: /slow}]
`)
	run := startRun(t, db, res.Task, "alice")
	w.Notify()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r, _ := db.FindRunByID(t.Context(), "", run.ID)
		if r.Status == duet.StatusRunning {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the run did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	if _, err := db.RequestCancel(t.Context(), "alice", run.ID); err != nil {
		t.Fatal(err)
	}
	final := waitFinal(t, db, run.ID)
	if final.Status != duet.StatusCancelled || len(final.PostRun) != 1 || final.PostRun[0].Tool != "post_message" || final.PostRun[0].Status != duet.StatusPassed {
		t.Fatalf("a cancelled run: got %s %+v, want cancelled with the always action (run %+v)", final.Status, final.PostRun, final)
	}
	if reg.called("alice", "file_ticket") != 0 || reg.called("alice", "post_message") != 1 {
		t.Fatalf("calls: %+v", reg.calls)
	}
	reg.mu.Lock()
	args := reg.calls[0].Arguments
	reg.mu.Unlock()
	if args["s"] != "cancelled" || fmt.Sprint(args["cancelled"]) != "1" {
		t.Fatalf("summary of a cancelled run: got %v", args)
	}
}

// TestCancelledBeforeItsFirstRead: a cancellation that arrives before the
// run has read its task and cases (a cancel just after the claim) ends the
// run cancelled with its "always" post-run actions — it ended in error
// ("task not available: context canceled") or stayed running.
func TestCancelledBeforeItsFirstRead(t *testing.T) {
	t.Parallel()
	db := openStore(t)
	srv := api(t)
	const key = "mcp_tickets_0badcafe"
	register(t, db, "alice", key, map[string]bool{"post_message": true})
	reg := &registry{db: db}
	res := apply(t, db, "alice", `
task:
  name: early
  baseURL: `+srv.URL+`
  postRun:
    - {on: always, serverKey: `+key+`, tool: post_message, input: {s: "${run.status}"}}
cases:
  - key: one
    title: one
    steps: [{http: /orders/A1}]
`)
	startRun(t, db, res.Task, "alice")
	claimed, err := db.ClaimRun(t.Context(), "w1", time.Minute)
	if err != nil || claimed == nil {
		t.Fatalf("claim: %v %v", claimed, err)
	}
	ctx, cancel := context.WithCancelCause(t.Context())
	cancel(engine.ErrCancelRequested)
	if err := engine.New(db, engine.Options{Invoker: reg}).Execute(ctx, duet.LeaseOf(claimed, "w1"), claimed, nil); err != nil {
		t.Fatalf("Execute: %v", err)
	}
	final, err := db.FindRunByID(t.Context(), "", claimed.ID)
	if err != nil {
		t.Fatal(err)
	}
	if final.Status != duet.StatusCancelled || len(final.PostRun) != 1 || final.PostRun[0].Status != duet.StatusPassed {
		t.Fatalf("got %s %q %+v, want cancelled with the always action", final.Status, final.ErrorMessage, final.PostRun)
	}
}

// TestPostRunVarOfNothing: a post-run input bound to a var path that is
// null (run.nosuch) fails the action with BINDING_FAILED, as it fails a
// step's mcpCall, instead of calling the tool with null.
func TestPostRunVarOfNothing(t *testing.T) {
	t.Parallel()
	db := openStore(t)
	const key = "mcp_tickets_0badcafe"
	register(t, db, "alice", key, map[string]bool{"file_ticket": false})
	reg := &registry{db: db}
	w, _, _ := worker(t, db, engine.Options{Invoker: reg}, engine.WorkerOptions{})
	res := apply(t, db, "alice", `
task:
  name: post-run of nothing
  postRun:
    - name: file a ticket
      on: always
      serverKey: mcp_tickets_0badcafe
      tool: file_ticket
      input: {title: "${run.id}", missing: {var: run.nosuch}}
cases:
  - key: ok
    title: passes
    steps: [{assert: "true"}]
`)
	run, _ := runAs(t, db, w, res.Task, "alice")
	if run.Status != duet.StatusPassed || len(run.PostRun) != 1 {
		t.Fatalf("the run: got %s with %+v, want passed with one post-run result", run.Status, run.PostRun)
	}
	if r := run.PostRun[0]; r.Status != duet.StatusFailed || r.ErrorCode != duet.CodeBindingFailed || !strings.Contains(r.ErrorMessage, "run.nosuch") {
		t.Errorf("the action: got %+v, want failed with BINDING_FAILED naming run.nosuch", r)
	}
	reg.mu.Lock()
	defer reg.mu.Unlock()
	if len(reg.calls) != 0 {
		t.Errorf("calls: got %+v, want none", reg.calls)
	}
}
