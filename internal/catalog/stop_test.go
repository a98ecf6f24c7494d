package catalog_test

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/catalog"
)

// stopCall calls stop_test_run as user with confirmer (nil: the client
// cannot confirm), checking the result against the output schema.
func stopCall(t *testing.T, c *catalog.Catalog, user string, confirmer catalog.Confirmer, args map[string]any) *catalog.Result {
	t.Helper()
	b, _ := json.Marshal(args)
	res, err := c.Call(t.Context(), catalog.Request{Caller: duet.Caller{UserID: user, Source: duet.SourceMCP}, Tool: catalog.ToolStopRun, Args: b, Confirmer: confirmer})
	if err != nil {
		t.Fatal(err)
	}
	tl, _ := c.Tool(catalog.ToolStopRun)
	rs, _ := tl.OutputSchema.Resolve(nil)
	var v any
	json.Unmarshal(res.Structured, &v)
	if err := rs.Validate(v); err != nil {
		t.Fatalf("structuredContent does not match the output schema: %v\n%s", err, res.Structured)
	}
	return res
}

func startQueued(t *testing.T, c *catalog.Catalog, user, taskID string) string {
	t.Helper()
	return decode[catalog.StartRunOut](t, call(t, c, user, catalog.ToolStartRun, map[string]any{"taskId": taskID, "idempotencyKey": duet.NewID("k")})).RunID
}

var requestIDRe = regexp.MustCompile(`stop_[0-9a-z]{26}`)

// TestStopToolRelease: stop_test_run is hidden from and refused to callers
// it is not released to; released to a user, a team's members (as they are
// at each call) or everyone.
func TestStopToolRelease(t *testing.T) {
	t.Parallel()
	c, db, task, log := setup(t, catalog.Options{StopTool: catalog.StopToolOptions{Users: []string{"bob", "team:qa"}}})
	run := startQueued(t, c, "alice", task.ID)
	for user, want := range map[string]bool{"bob": true, "alice": false, "carol": false} {
		if got, err := c.Released(t.Context(), user, catalog.ToolStopRun); got != want || err != nil {
			t.Errorf("Released(%s): got %v %v, want %v", user, got, err, want)
		}
		if hidden := c.Hidden(t.Context(), user); hidden[catalog.ToolStopRun] == want || len(hidden) > 1 {
			t.Errorf("Hidden(%s): got %v", user, hidden)
		}
	}
	res := stopCall(t, c, "alice", nil, map[string]any{"runId": run})
	if !res.IsError || res.Code != duet.CodePermissionDenied || !strings.Contains(res.Text, "released gradually") {
		t.Fatalf("alice (not released): got %s", res.Text)
	}
	if recs := log.all(); recs[len(recs)-1].Tool != catalog.ToolStopRun || recs[len(recs)-1].Outcome != duet.CodePermissionDenied {
		t.Fatalf("the refusal's audit record: got %+v", recs[len(recs)-1])
	}
	if r, _ := db.FindRunByID(t.Context(), "", run); r.Status != duet.StatusQueued {
		t.Fatalf("a refused call changed the run: %s", r.Status)
	}
	// A team is bound to the release when Duet starts (BindStopRelease):
	// qa does not exist then, so a qa that someone creates afterwards
	// grants nothing — whoever created it.
	ctx := t.Context()
	released := func(user string) bool {
		t.Helper()
		ok, err := c.Released(ctx, user, catalog.ToolStopRun)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if _, missing, err := c.BindStopRelease(ctx); err != nil || len(missing) != 1 || missing[0] != "qa" {
		t.Fatalf("binding before qa exists: missing %v %v", missing, err)
	}
	if _, err := db.CreateTeam(ctx, "mallory", "qa"); err != nil {
		t.Fatal(err)
	}
	if released("mallory") || !c.Hidden(ctx, "mallory")[catalog.ToolStopRun] {
		t.Fatal("mallory created team qa after the release was bound: released to her")
	}
	// Bound while qa exists (a restart): its members as they are at each
	// call — joining releases it at once, leaving withdraws it.
	if err := db.DeleteTeam(ctx, "mallory", "qa"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateTeam(ctx, "carol", "qa"); err != nil {
		t.Fatal(err)
	}
	if bound, missing, err := c.BindStopRelease(ctx); err != nil || len(missing) != 0 || bound["qa"] == "" {
		t.Fatalf("binding with qa: %v %v %v", bound, missing, err)
	}
	if !released("carol") || released("alice") {
		t.Fatal("team qa bound: want carol (member) released and alice not")
	}
	if err := db.AddTeamMember(ctx, "carol", "qa", "alice"); err != nil {
		t.Fatal(err)
	}
	if !released("alice") {
		t.Fatal("alice, member of team qa: not released")
	}
	if err := db.RemoveTeamMember(ctx, "carol", "qa", "alice"); err != nil {
		t.Fatal(err)
	}
	if released("alice") {
		t.Fatal("alice left team qa: still released")
	}
	// qa deleted and re-created under its name by someone else: the new qa
	// is another team and grants nothing.
	if err := db.DeleteTeam(ctx, "carol", "qa"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateTeam(ctx, "mallory", "qa"); err != nil {
		t.Fatal(err)
	}
	if released("mallory") {
		t.Fatal("mallory re-created team qa: released to her")
	}
	everyone, _, _, _ := setup(t, catalog.Options{StopTool: catalog.StopToolOptions{Users: []string{"*"}}})
	if ok, _ := everyone.Released(t.Context(), "zed", catalog.ToolStopRun); !ok {
		t.Fatal("*: not released to zed")
	}
	nobody, _, _, _ := setup(t, catalog.Options{})
	if hidden := nobody.Hidden(t.Context(), "alice"); !hidden[catalog.ToolStopRun] {
		t.Fatal("the default releases stop_test_run to someone")
	}
	if ok, _ := c.Released(t.Context(), "bob", catalog.ToolListTasks); !ok {
		t.Fatal("a tool without a gray release is hidden")
	}
}

// TestStopConfirmedInTheClient: a client that can confirm asks its person
// whether they are sure — only for their own run, or a run of a task they
// own: accepted, the run stops (the request records who confirmed, how);
// declined or dismissed, nothing happens and the answer is
// APPROVAL_DENIED. Someone else's run is never confirmed in the asker's
// client: bob's client, however willing, is not asked, and his call leaves
// a request that waits for alice, who started the run.
func TestStopConfirmedInTheClient(t *testing.T) {
	t.Parallel()
	c, db, task, _ := setup(t, catalog.Options{StopTool: catalog.StopToolOptions{Users: []string{"*"}}})
	var prompts []string
	answer := func(ok bool, err error) catalog.Confirmer {
		return catalog.ConfirmFunc(func(_ context.Context, prompt string) (bool, error) {
			prompts = append(prompts, prompt)
			return ok, err
		})
	}
	status := func(run string) duet.RunStatus {
		r, _ := db.FindRunByID(t.Context(), "", run)
		return r.Status
	}

	// bob asks to stop alice's run with a client that would say yes.
	run := startQueued(t, c, "alice", task.ID)
	res := stopCall(t, c, "bob", answer(true, nil), map[string]any{"runId": run, "reason": "wrong build"})
	if !res.IsError || res.Code != duet.CodeApprovalPending || len(prompts) != 0 || status(run) != duet.StatusQueued {
		t.Fatalf("bob stopping alice's run: got %s, asked %q, run %s; want APPROVAL_PENDING, nobody asked in bob's client", res.Text, prompts, status(run))
	}
	pending, _ := db.FindStopRequests(t.Context(), duet.StopRequestFilter{User: "alice", Pending: true})
	if len(pending) != 1 || pending[0].RequestedBy != "bob" || pending[0].Executor != "alice" || pending[0].Reason != "wrong build" {
		t.Fatalf("the request waiting for alice: %+v", pending)
	}

	// alice, who started it, is asked whether she is sure.
	res = stopCall(t, c, "alice", answer(false, nil), map[string]any{"runId": run, "reason": "wrong build"})
	if !res.IsError || res.Code != duet.CodeApprovalDenied {
		t.Fatalf("declined: got %s", res.Text)
	}
	if len(prompts) != 1 || !strings.Contains(prompts[0], "Are you sure") || !strings.Contains(prompts[0], run) || !strings.Contains(prompts[0], "started by alice") ||
		!strings.Contains(prompts[0], "wrong build") {
		t.Fatalf("the prompt: got %q", prompts)
	}
	if status(run) != duet.StatusQueued {
		t.Fatalf("declined, yet the run is %s", status(run))
	}
	res = stopCall(t, c, "alice", answer(false, errors.New("the client went away")), map[string]any{"runId": run})
	if res.Code != duet.CodeUnavailable {
		t.Fatalf("a client that fails to answer: got %s", res.Text)
	}
	res = stopCall(t, c, "alice", answer(true, nil), map[string]any{"runId": run})
	out := decode[catalog.StopRunOut](t, res)
	if !out.Stopped || out.Status != duet.StatusCancelled || out.ApprovedBy != "alice" || out.Via != duet.StopViaElicitation || out.RequestID == "" {
		t.Fatalf("confirmed: got %+v", out)
	}
	if r, _ := db.FindRunByID(t.Context(), "", run); r.Status != duet.StatusCancelled || !r.CancelRequested {
		t.Fatalf("confirmed, yet the run is %s", r.Status)
	}
	decided, _ := db.FindStopRequests(t.Context(), duet.StopRequestFilter{User: "alice", RunID: run})
	var approved, denied int
	for _, r := range decided {
		switch {
		case r.Status == duet.StopApproved && r.DecidedBy == "alice" && r.RequestedBy == "alice":
			approved++
		case r.Status == duet.StopDenied && r.DecidedBy == "alice":
			denied++
		}
	}
	if approved != 1 || denied != 1 {
		t.Fatalf("the requests alice sees: %+v", decided)
	}
	// Ended already: nothing to stop, nothing asked.
	prompts = nil
	out = decode[catalog.StopRunOut](t, stopCall(t, c, "alice", answer(true, nil), map[string]any{"runId": run}))
	if out.Stopped || out.Status != duet.StatusCancelled || len(prompts) != 0 {
		t.Fatalf("a finished run: got %+v, asked %q", out, prompts)
	}
	// Someone who cannot see the run.
	if res := stopCall(t, c, "mallory", answer(true, nil), map[string]any{"runId": run}); res.Code != duet.CodeNotFound {
		t.Fatalf("mallory: got %s", res.Text)
	}

	// bob's run of alice's task: bob is asked; alice, who owns the task,
	// is asked too (she may cancel it without asking anyone); carol, with
	// whom the task is shared, is not.
	if err := db.ShareTask(t.Context(), "alice", task.ID, "carol"); err != nil {
		t.Fatal(err)
	}
	bobs := startQueued(t, c, "bob", task.ID)
	prompts = nil
	if res := stopCall(t, c, "carol", answer(true, nil), map[string]any{"runId": bobs}); res.Code != duet.CodeApprovalPending || len(prompts) != 0 || status(bobs) != duet.StatusQueued {
		t.Fatalf("carol stopping bob's run: got %s, asked %q", res.Text, prompts)
	}
	out = decode[catalog.StopRunOut](t, stopCall(t, c, "alice", answer(true, nil), map[string]any{"runId": bobs}))
	if !out.Stopped || out.ApprovedBy != "alice" || len(prompts) != 1 || status(bobs) != duet.StatusCancelled {
		t.Fatalf("alice, the task's owner, stopping bob's run: got %+v, asked %q", out, prompts)
	}
}

// TestStopApprovedByTheRunsOwner: without a way to confirm in the client,
// the call leaves a pending request and answers APPROVAL_PENDING with its
// id and how to approve; nothing is stopped until the run's executor
// approves (anyone else is refused); then the run is cancelled and the
// request's id reports it. The audit trail has who asked and who approved.
func TestStopApprovedByTheRunsOwner(t *testing.T) {
	t.Parallel()
	c, db, task, log := setup(t, catalog.Options{StopTool: catalog.StopToolOptions{Users: []string{"*"}}})
	run := startQueued(t, c, "alice", task.ID)
	res := stopCall(t, c, "bob", nil, map[string]any{"runId": run})
	if !res.IsError || res.Code != duet.CodeApprovalPending {
		t.Fatalf("no confirmation possible: got %s", res.Text)
	}
	id := requestIDRe.FindString(res.Text)
	for _, want := range []string{"duet run approve-stop " + id + " --as alice", "requestId " + id, "nothing is stopped"} {
		if id == "" || !strings.Contains(res.Text, want) {
			t.Errorf("APPROVAL_PENDING text %q lacks %q", res.Text, want)
		}
	}
	if again := stopCall(t, c, "bob", nil, map[string]any{"runId": run}); requestIDRe.FindString(again.Text) != id {
		t.Fatalf("a retry made another request: %s", again.Text)
	}
	if r, _ := db.FindRunByID(t.Context(), "", run); r.Status != duet.StatusQueued {
		t.Fatalf("pending, yet the run is %s", r.Status)
	}
	if res := stopCall(t, c, "bob", nil, map[string]any{"runId": run, "requestId": id}); res.Code != duet.CodeApprovalPending {
		t.Fatalf("asking about the pending request: got %s", res.Text)
	}

	cli := func(user string) duet.Caller { return duet.Caller{UserID: user, Source: duet.SourceCLI} }
	if _, _, err := c.DecideStop(t.Context(), cli("bob"), id, true); duet.ErrorCode(err) != duet.CodePermissionDenied {
		t.Fatalf("bob approves his own request: got %v, want PERMISSION_DENIED", err)
	}
	if _, _, err := c.DecideStop(t.Context(), cli("mallory"), id, true); duet.ErrorCode(err) != duet.CodeNotFound {
		t.Fatalf("mallory approves: got %v, want NOT_FOUND", err)
	}
	req, stopped, err := c.DecideStop(t.Context(), cli("alice"), id, true)
	if err != nil || req.Status != duet.StopApproved || req.DecidedBy != "alice" || req.Via != "cli" || stopped.Status != duet.StatusCancelled {
		t.Fatalf("alice approves: got %+v %+v %v", req, stopped, err)
	}
	if _, _, err := c.DecideStop(t.Context(), cli("alice"), id, false); duet.ErrorCode(err) != duet.CodeConflict {
		t.Fatalf("deciding twice: got %v", err)
	}
	out := decode[catalog.StopRunOut](t, stopCall(t, c, "bob", nil, map[string]any{"runId": run, "requestId": id}))
	if !out.Stopped || out.ApprovedBy != "alice" || out.Via != "cli" || out.Status != duet.StatusCancelled {
		t.Fatalf("the outcome, asked by id: got %+v", out)
	}
	if res := stopCall(t, c, "bob", nil, map[string]any{"runId": startQueued(t, c, "alice", task.ID), "requestId": id}); res.Code != duet.CodeNotFound {
		t.Fatalf("the request's id with another run: got %s", res.Text)
	}

	var asked, approved *duet.AuditRecord
	for _, r := range log.all() {
		switch {
		case r.Tool == catalog.ToolStopRun && r.Outcome == duet.CodeApprovalPending && asked == nil:
			asked = r
		case r.Method == "run.stop.approve" && r.Outcome == duet.OutcomeOK:
			approved = r
		}
	}
	if asked == nil || asked.Caller != "bob" || asked.CallSource != duet.SourceMCP || approved == nil || approved.Caller != "alice" ||
		approved.Tool != id || approved.CallSource != duet.SourceCLI || approved.Time.Before(asked.Time) {
		t.Fatalf("audit: asked %+v, approved %+v", asked, approved)
	}
	stored, _ := db.FindStopRequest(t.Context(), "", id)
	if stored.TraceID != asked.TraceID || !stored.CreatedAt.Before(*stored.DecidedAt) && !stored.CreatedAt.Equal(*stored.DecidedAt) {
		t.Fatalf("the request ties to the call's audit record by trace id: %+v vs %s", stored, asked.TraceID)
	}

	// Declined by the owner.
	run2 := startQueued(t, c, "alice", task.ID)
	id2 := requestIDRe.FindString(stopCall(t, c, "bob", nil, map[string]any{"runId": run2}).Text)
	if _, r, err := c.DecideStop(t.Context(), cli("alice"), id2, false); err != nil || r.Status != duet.StatusQueued {
		t.Fatalf("alice declines: got %+v %v", r, err)
	}
	if res := stopCall(t, c, "bob", nil, map[string]any{"runId": run2, "requestId": id2}); res.Code != duet.CodeApprovalDenied || !strings.Contains(res.Text, "alice declined") {
		t.Fatalf("after alice declined: got %s", res.Text)
	}
}

// TestStopRequestExpires: a request nobody approved within the time limit
// is expired: approving it is APPROVAL_EXPIRED, asking about it too, and
// the run goes on; a new call asks anew.
func TestStopRequestExpires(t *testing.T) {
	t.Parallel()
	c, db, task, _ := setup(t, catalog.Options{StopTool: catalog.StopToolOptions{Users: []string{"*"}, ApprovalTTL: 100 * time.Millisecond}})
	run := startQueued(t, c, "alice", task.ID)
	id := requestIDRe.FindString(stopCall(t, c, "bob", nil, map[string]any{"runId": run}).Text)
	time.Sleep(300 * time.Millisecond)
	if _, _, err := c.DecideStop(t.Context(), duet.Caller{UserID: "alice", Source: duet.SourceCLI}, id, true); duet.ErrorCode(err) != duet.CodeApprovalExpired {
		t.Fatalf("approving late: got %v, want APPROVAL_EXPIRED", err)
	}
	if res := stopCall(t, c, "bob", nil, map[string]any{"runId": run, "requestId": id}); res.Code != duet.CodeApprovalExpired || !strings.Contains(res.Text, "nothing was stopped") {
		t.Fatalf("asking late: got %s", res.Text)
	}
	if r, _ := db.FindRunByID(t.Context(), "", run); r.Status != duet.StatusQueued {
		t.Fatalf("expired, yet the run is %s", r.Status)
	}
	res := stopCall(t, c, "bob", nil, map[string]any{"runId": run})
	if res.Code != duet.CodeApprovalPending || requestIDRe.FindString(res.Text) == id {
		t.Fatalf("a new call after expiry: got %s, want a new pending request", res.Text)
	}
}

// TestStopConfirmedOverMultiRound: a 2026-07-28 client (no session, no
// Confirmer) that declared elicitation is asked in an input-required result
// whether its person is sure they want to stop their own run; its answer in
// the next round, with the sealed state, decides — only confirm: true does
// (an empty or otherwise defaulted accept stops nothing). A state about
// another run, or a client that cannot be asked, leaves nothing stopped.
// Someone else's run is never asked about in the asker's client: bob gets
// APPROVAL_PENDING, whatever answers he sends.
func TestStopConfirmedOverMultiRound(t *testing.T) {
	t.Parallel()
	c, db, task, _ := setup(t, catalog.Options{StopTool: catalog.StopToolOptions{Users: []string{"*"}}})
	elicit := func(m string) bool { return m == catalog.AskElicit }
	stopAs := func(user, run string, in *catalog.Input) *catalog.Result {
		t.Helper()
		b, _ := json.Marshal(map[string]any{"runId": run, "reason": "wrong build"})
		res, err := c.Call(t.Context(), catalog.Request{Caller: duet.Caller{UserID: user, Source: duet.SourceMCP}, Tool: catalog.ToolStopRun, Args: b, Input: in})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	stop := func(run string, in *catalog.Input) *catalog.Result { t.Helper(); return stopAs("alice", run, in) }
	raw := func(action, content string) map[string]json.RawMessage {
		return map[string]json.RawMessage{"stop": json.RawMessage(`{"action":"` + action + `","content":` + content + `}`)}
	}
	answer := func(action string, confirm bool) map[string]json.RawMessage {
		b, _ := json.Marshal(map[string]any{"confirm": confirm})
		return raw(action, string(b))
	}
	status := func(run string) duet.RunStatus {
		r, err := db.FindRunByID(t.Context(), "", run)
		if err != nil {
			t.Fatal(err)
		}
		return r.Status
	}

	run := startQueued(t, c, "alice", task.ID)
	// bob, with a client that can answer, is not asked about alice's run.
	if res := stopAs("bob", run, &catalog.Input{Can: elicit, Responses: answer("accept", true)}); res.Code != duet.CodeApprovalPending || len(res.InputRequests) != 0 || status(run) != duet.StatusQueued {
		t.Fatalf("bob stopping alice's run: got %+v, run %s", res, status(run))
	}

	q := stop(run, &catalog.Input{Can: elicit})
	ir, ok := q.InputRequests["stop"]
	if !ok || ir.Method != catalog.AskElicit || q.RequestState == "" || q.IsError {
		t.Fatalf("alice was not asked: %+v", q)
	}
	params := ir.Params.(map[string]any)
	if msg := params["message"].(string); !strings.Contains(msg, run) || !strings.Contains(msg, "wrong build") || !strings.Contains(msg, "Are you sure") {
		t.Fatalf("the question: %q", msg)
	}
	if b, _ := json.Marshal(params["requestedSchema"]); strings.Contains(string(b), `"default"`) {
		t.Fatalf("the form has a default, which an empty answer would take: %s", b)
	}
	if status(run) != duet.StatusQueued {
		t.Fatal("the run changed before alice answered")
	}
	no := stop(run, &catalog.Input{Can: elicit, Responses: answer("decline", false), State: q.RequestState})
	if no.Code != duet.CodeApprovalDenied || status(run) != duet.StatusQueued {
		t.Fatalf("declined: got %s, run %s", no.Text, status(run))
	}
	// An accept that does not say confirm: true is no confirmation.
	for _, content := range []string{`{}`, `null`, `{"confirm":false}`, `{"confirm":"true"}`, `{"Confirm":true}`} {
		res := stop(run, &catalog.Input{Can: elicit, Responses: raw("accept", content), State: q.RequestState})
		if res.Code != duet.CodeApprovalDenied || status(run) != duet.StatusQueued {
			t.Fatalf("accept with content %s: got %s, run %s", content, res.Text, status(run))
		}
	}
	// The state of one run's question does not stop another run: the seal
	// binds it to the arguments (a protocol error, the tool does not run).
	other := startQueued(t, c, "alice", task.ID)
	b, _ := json.Marshal(map[string]any{"runId": other, "reason": "wrong build"})
	_, err := c.Call(t.Context(), catalog.Request{Caller: duet.Caller{UserID: "alice", Source: duet.SourceMCP}, Tool: catalog.ToolStopRun, Args: b,
		Input: &catalog.Input{Can: elicit, Responses: answer("accept", true), State: q.RequestState}})
	if !errors.Is(err, catalog.ErrBadState) || status(other) != duet.StatusQueued {
		t.Fatalf("another run's state: got %v, run %s", err, status(other))
	}
	yes := stop(run, &catalog.Input{Can: elicit, Responses: answer("accept", true), State: q.RequestState})
	out := decode[catalog.StopRunOut](t, yes)
	if !out.Stopped || out.Via != duet.StopViaElicitation || out.ApprovedBy != "alice" || status(run) != duet.StatusCancelled {
		t.Fatalf("confirmed: got %+v, run %s", out, status(run))
	}
	// A client without elicitation: a request for the executor, as before.
	third := startQueued(t, c, "alice", task.ID)
	if res := stop(third, &catalog.Input{Can: func(string) bool { return false }}); res.Code != duet.CodeApprovalPending || status(third) != duet.StatusQueued {
		t.Fatalf("no elicitation: got %s", res.Text)
	}
}

// TestCancelRunIsTheExecutorsOrTheOwners: the doors that cancel without
// asking anyone (duet run cancel, REST, console) let the person who
// started a run, or the task's owner, cancel it; another person the task
// is shared with is refused and pointed at stop_test_run, and the run goes
// on; someone who cannot see the run gets NOT_FOUND.
func TestCancelRunIsTheExecutorsOrTheOwners(t *testing.T) {
	t.Parallel()
	c, db, task, _ := setup(t, catalog.Options{})
	if err := db.ShareTask(t.Context(), "alice", task.ID, "carol"); err != nil {
		t.Fatal(err)
	}
	as := func(u string) duet.Caller { return duet.Caller{UserID: u, Source: duet.SourceCLI} }
	bobs := startQueued(t, c, "bob", task.ID)
	if _, err := c.CancelRun(t.Context(), as("carol"), bobs); duet.ErrorCode(err) != duet.CodePermissionDenied || !strings.Contains(err.Error(), "stop_test_run") {
		t.Fatalf("carol cancels bob's run: %v, want PERMISSION_DENIED naming stop_test_run", err)
	}
	if r, _ := db.FindRunByID(t.Context(), "", bobs); r.Status != duet.StatusQueued {
		t.Fatalf("a refused cancel changed the run: %s", r.Status)
	}
	if _, err := c.CancelRun(t.Context(), as("zed"), bobs); duet.ErrorCode(err) != duet.CodeNotFound {
		t.Fatalf("zed, who cannot see it: %v, want NOT_FOUND", err)
	}
	if r, err := c.CancelRun(t.Context(), as("alice"), bobs); err != nil || r.Status != duet.StatusCancelled {
		t.Fatalf("alice, the task's owner: %+v %v", r, err)
	}
	own := startQueued(t, c, "bob", task.ID)
	if r, err := c.CancelRun(t.Context(), as("bob"), own); err != nil || r.Status != duet.StatusCancelled {
		t.Fatalf("bob, who started it: %+v %v", r, err)
	}
}
