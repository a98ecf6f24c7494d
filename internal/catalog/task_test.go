package catalog_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/catalog"
)

func callAs(t *testing.T, c *catalog.Catalog, user, tool string, args any, ext ...string) *catalog.Result {
	t.Helper()
	b, _ := json.Marshal(args)
	res, err := c.Call(t.Context(), catalog.Request{Caller: duet.Caller{UserID: user, Source: duet.SourceMCP}, Tool: tool, Args: b,
		Extensions: ext, Input: &catalog.Input{Can: func(string) bool { return true }}})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return res
}

// TestRunIsATask: start_test_run from a client with the Tasks extension
// answers with the run as a task — id the run id, durable in the store,
// bound to its executor — that tasks/get follows to its end, with the
// result inlined, and that tasks/cancel cancels; a client without the
// extension gets the plain result.
func TestRunIsATask(t *testing.T) {
	t.Parallel()
	c, db, task, log := setup(t, catalog.Options{})
	alice := duet.Caller{UserID: "alice", Source: duet.SourceMCP}
	plain := callAs(t, c, "alice", catalog.ToolStartRun, map[string]any{"taskId": task.ID, "idempotencyKey": "plain"})
	if plain.Task != nil || plain.IsError {
		t.Fatalf("without the extension: %+v", plain)
	}
	res := callAs(t, c, "alice", catalog.ToolStartRun, map[string]any{"taskId": task.ID, "idempotencyKey": "k1"}, catalog.TasksExtension)
	if res.Task == nil || !strings.HasPrefix(res.Task.ID, "run_") || res.Task.Status != catalog.TaskWorking || res.Task.TTL != 24*time.Hour {
		t.Fatalf("with the extension: %+v", res)
	}
	id := res.Task.ID
	if v, err := c.GetTask(t.Context(), alice, id); err != nil || v.Status != catalog.TaskWorking || v.Result != nil {
		t.Fatalf("tasks/get of a queued run: %+v, %v", v, err)
	}
	// bob may see the run (the task is shared with him) but not the task.
	bob := duet.Caller{UserID: "bob", Source: duet.SourceMCP}
	if _, err := c.GetTask(t.Context(), bob, id); duet.ErrorCode(err) != duet.CodeNotFound {
		t.Errorf("bob's tasks/get: %v, want NOT_FOUND", err)
	}
	if err := c.CancelTask(t.Context(), bob, id); duet.ErrorCode(err) != duet.CodeNotFound {
		t.Errorf("bob's tasks/cancel: %v, want NOT_FOUND", err)
	}
	if err := c.UpdateTask(t.Context(), alice, id, nil); duet.ErrorCode(err) != duet.CodeInvalidArgument {
		t.Errorf("tasks/update of a run: %v, want INVALID_ARGUMENT", err)
	}

	// The run ends: the task is completed with the run's result inlined.
	r, err := db.ClaimRunByID(t.Context(), id, "w1", time.Minute)
	if err != nil || r == nil {
		t.Fatalf("claim: %v, %v", r, err)
	}
	execs, _, _ := db.FindExecutionPage(t.Context(), duet.ExecutionFilter{RunID: id, Limit: 10})
	now := time.Now()
	l := duet.LeaseOf(r, "w1")
	full, _ := db.FindExecutions(t.Context(), id)
	for _, x := range full {
		for _, st := range x.Steps {
			if err := db.SaveStepResult(t.Context(), l, x.ID, &duet.StepResult{Index: st.Index, Kind: st.Kind, Name: st.Name, Status: duet.StatusPassed}, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, x := range execs {
		x.Status, x.StartedAt, x.FinishedAt = duet.StatusPassed, &now, &now
		if err := db.FinishExecution(t.Context(), l, x); err != nil {
			t.Fatal(err)
		}
	}
	r.Status, r.FinishedAt = duet.StatusPassed, &now
	if err := db.FinishRun(t.Context(), l, r); err != nil {
		t.Fatal(err)
	}
	v, err := c.GetTask(t.Context(), alice, id)
	if err != nil || v.Status != catalog.TaskCompleted || v.Result == nil || v.Result.IsError {
		t.Fatalf("tasks/get of a passed run: %+v, %v", v, err)
	}
	var out catalog.StartRunOut
	json.Unmarshal(v.Result.Structured, &out)
	if out.Result == nil || !out.Result.Run.Done || len(out.Result.Executions) != 2 || out.RunID != id {
		t.Fatalf("inlined result: %s", v.Result.Structured)
	}
	if err := c.CancelTask(t.Context(), alice, id); err != nil {
		t.Fatalf("cancelling a finished task: %v", err)
	}

	// tasks/cancel of a queued run cancels it.
	q := callAs(t, c, "alice", catalog.ToolStartRun, map[string]any{"taskId": task.ID, "idempotencyKey": "k2"}, catalog.TasksExtension)
	if err := c.CancelTask(t.Context(), alice, q.Task.ID); err != nil {
		t.Fatal(err)
	}
	if v, err := c.GetTask(t.Context(), alice, q.Task.ID); err != nil || v.Status != catalog.TaskCancelled {
		t.Fatalf("after tasks/cancel: %+v, %v", v, err)
	}
	if run, _ := db.FindRunByID(t.Context(), "alice", q.Task.ID); run.Status != duet.StatusCancelled {
		t.Fatalf("the run is %s after tasks/cancel", run.Status)
	}
	n := 0
	for _, rec := range log.all() {
		if strings.HasPrefix(rec.Method, "tasks/") {
			n++
		}
	}
	if n < 8 {
		t.Errorf("%d tasks/* audit records, want one per call", n)
	}
}

type doneOut struct {
	Said string `json:"said"`
}

func (o doneOut) Text() string { return o.Said }

// TestAsyncTask: a tool that goes async becomes a task for a client with
// the extension — the work waits in input_required until every question is
// answered (answers may come one at a time), then completes; a tool error
// completes the task with an error result, a panic fails it, a cancel
// cancels it — and runs in the call for a client without the extension. A
// tool that runs only as a task refuses that client with
// CAPABILITY_REQUIRED.
func TestAsyncTask(t *testing.T) {
	t.Parallel()
	ask := catalog.Define("two_questions", "", "asks two", catalog.Annotations{}, nil,
		func(ctx context.Context, env *catalog.Env, in struct {
			Mode string `json:"mode,omitempty"`
		}) (doneOut, error) {
			return doneOut{}, env.Async(func(ctx context.Context, env *catalog.Env) (catalog.Texter, error) {
				switch in.Mode {
				case "fail":
					return nil, duet.Errorf(duet.CodeInvalidArgument, "no")
				case "panic":
					panic("boom")
				case "wait":
					<-ctx.Done()
					return nil, ctx.Err()
				case "now":
					return doneOut{Said: "at once"}, nil
				}
				var a, b catalog.Elicitation
				if !env.Answer("a", &a) || !env.Answer("b", &b) {
					q := catalog.InputRequest{Method: catalog.AskElicit, Params: map[string]any{"message": "?"}}
					return nil, env.Ask(map[string]catalog.InputRequest{"a": q, "b": q}, nil)
				}
				return doneOut{Said: a.Action + "+" + b.Action}, nil
			})
		}).WithTasks(catalog.TaskOptional).WithInput()
	only := catalog.Define("task_only", "", "task only", catalog.Annotations{}, nil,
		func(ctx context.Context, env *catalog.Env, _ struct{}) (doneOut, error) {
			return doneOut{Said: "ran"}, nil
		}).WithTasks(catalog.TaskRequired)
	c, _, _, _ := setup(t, catalog.Options{Extra: []*catalog.Tool{ask, only}})
	alice := duet.Caller{UserID: "alice", Source: duet.SourceMCP}
	wait := func(id string, until func(*catalog.MCPTask) bool) *catalog.MCPTask {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			v, err := c.GetTask(t.Context(), alice, id)
			if err != nil {
				t.Fatal(err)
			}
			if until(v) {
				return v
			}
			if time.Now().After(deadline) {
				t.Fatalf("task %s stuck: %+v", id, v)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	res := callAs(t, c, "alice", "two_questions", map[string]any{}, catalog.TasksExtension)
	if res.Task == nil {
		t.Fatalf("no task: %+v", res)
	}
	id := res.Task.ID
	v := wait(id, func(v *catalog.MCPTask) bool { return v.Status == catalog.TaskInputRequired })
	if len(v.InputRequests) != 2 {
		t.Fatalf("input_required: %+v", v)
	}
	if _, err := c.GetTask(t.Context(), duet.Caller{UserID: "bob"}, id); duet.ErrorCode(err) != duet.CodeNotFound {
		t.Errorf("bob reads alice's task: %v", err)
	}
	accept := json.RawMessage(`{"action":"accept"}`)
	if err := c.UpdateTask(t.Context(), alice, id, map[string]json.RawMessage{"a": accept, "zzz": accept}); err != nil {
		t.Fatal(err)
	}
	if v, _ := c.GetTask(t.Context(), alice, id); v.Status != catalog.TaskInputRequired || len(v.InputRequests) != 1 || v.InputRequests["b"].Method == "" {
		t.Fatalf("after a partial answer: %+v", v)
	}
	if err := c.UpdateTask(t.Context(), alice, id, map[string]json.RawMessage{"b": json.RawMessage(`{"action":"decline"}`)}); err != nil {
		t.Fatal(err)
	}
	v = wait(id, func(v *catalog.MCPTask) bool { return v.Status == catalog.TaskCompleted })
	if v.Result == nil || v.Result.Text != "accept+decline" {
		t.Fatalf("completed: %+v", v.Result)
	}

	fail := callAs(t, c, "alice", "two_questions", map[string]any{"mode": "fail"}, catalog.TasksExtension)
	if v := wait(fail.Task.ID, func(v *catalog.MCPTask) bool { return v.Status != catalog.TaskWorking }); v.Status != catalog.TaskCompleted || !v.Result.IsError {
		t.Errorf("a tool error: %+v", v)
	}
	boom := callAs(t, c, "alice", "two_questions", map[string]any{"mode": "panic"}, catalog.TasksExtension)
	if v := wait(boom.Task.ID, func(v *catalog.MCPTask) bool { return v.Status != catalog.TaskWorking }); v.Status != catalog.TaskFailed || v.Error == nil || v.Result != nil {
		t.Errorf("a panic: %+v", v)
	}
	long := callAs(t, c, "alice", "two_questions", map[string]any{"mode": "wait"}, catalog.TasksExtension)
	if err := c.CancelTask(t.Context(), alice, long.Task.ID); err != nil {
		t.Fatal(err)
	}
	if v := wait(long.Task.ID, func(v *catalog.MCPTask) bool { return v.Status != catalog.TaskWorking }); v.Status != catalog.TaskCancelled {
		t.Errorf("cancelled: %+v", v)
	}

	if now := callAs(t, c, "alice", "two_questions", map[string]any{"mode": "now"}); now.Task != nil || now.Text != "at once" {
		t.Errorf("without the extension: %+v", now)
	}
	_, err := c.Call(t.Context(), catalog.Request{Caller: alice, Tool: "task_only", Args: json.RawMessage(`{}`)})
	var capErr *catalog.CapabilityError
	if duet.ErrorCode(err) != duet.CodeCapabilityRequired || !asCap(err, &capErr) || capErr.Required["extensions"] == nil {
		t.Errorf("a task-only tool without the extension: %v", err)
	}
}

func asCap(err error, target **catalog.CapabilityError) bool {
	c, ok := err.(*catalog.CapabilityError)
	*target = c
	return ok
}
