package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/duet-test/duet"
)

// ToolStopRun is the high-risk tool of the catalog: it stops a run. It is
// released gradually (StopToolOptions.Users) and every call needs a
// person's confirmation.
const ToolStopRun = "stop_test_run"

// ---- confirmations ----

// Confirmer asks the person behind the client to confirm an action. The
// MCP transport provides one over an elicitation when the client supports
// it; a transport that cannot ask (stateless HTTP, MCP-Lite, the CLI)
// provides none, and Env.Confirm answers ErrConfirmUnsupported.
type Confirmer interface {
	// Confirm shows prompt and reports whether the person accepted (false:
	// they declined or dismissed it). It returns ErrConfirmUnsupported when
	// this client cannot be asked after all; any other error ends the
	// call (a *duet.Error keeps its code, anything else is UNAVAILABLE).
	Confirm(ctx context.Context, prompt string) (bool, error)
}

// ErrConfirmUnsupported is the answer of a Confirmer (or of Env.Confirm
// without one) when the client cannot be asked: the tool falls back to an
// approval by other means.
var ErrConfirmUnsupported = errors.New("the client cannot be asked for a confirmation")

// ConfirmFunc adapts a function to Confirmer.
type ConfirmFunc func(ctx context.Context, prompt string) (bool, error)

// Confirm implements Confirmer.
func (f ConfirmFunc) Confirm(ctx context.Context, prompt string) (bool, error) { return f(ctx, prompt) }

// Confirm asks the person behind the client to confirm an action (see
// Confirmer). Without a Confirmer it returns ErrConfirmUnsupported.
func (e *Env) Confirm(ctx context.Context, prompt string) (bool, error) {
	if e.Confirmer == nil {
		return false, ErrConfirmUnsupported
	}
	return e.Confirmer.Confirm(ctx, prompt)
}

// confirming marks a tool that may ask its caller for a confirmation: a
// call of it with a Confirmer is bounded by Limits.ConfirmTimeout (a person
// answers) rather than the per-call timeout.
func (t *Tool) confirming() *Tool {
	t.asks = true
	return t
}

// ---- gray release ----

// StopToolOptions release stop_test_run gradually.
type StopToolOptions struct {
	// Users may see and call stop_test_run: user ids, "team:NAME" for the
	// members of a team (as they are at each call), "*" for everyone.
	// Empty (the default) releases it to nobody: the tool is hidden from
	// every tools/list and a call of it is PERMISSION_DENIED. A team
	// grants it only once BindStopRelease bound its name to the team of
	// that name that existed then (its id).
	Users []string
	// ApprovalTTL is how long a stop request waits for the approval of the
	// run's executor; 0 means 10m.
	ApprovalTTL time.Duration
}

// released makes t a tool only some callers may see and call.
func (t *Tool) released(fn func(ctx context.Context, c *Catalog, user string) (bool, error)) *Tool {
	t.release = fn
	return t
}

// Released reports whether user may see and call the tool name: a tool
// released gradually to some users only is hidden from the others' tools/list
// and refuses their calls with PERMISSION_DENIED. Unknown tools are not
// released. A store error counts as not released (and is returned).
func (c *Catalog) Released(ctx context.Context, user, name string) (bool, error) {
	t, ok := c.byName[name]
	if !ok {
		return false, nil
	}
	if t.release == nil {
		return true, nil
	}
	return t.release(ctx, c, user)
}

// Hidden returns the tools hidden from user's tools/list (nil when none):
// the transports remove them from the list they serve.
func (c *Catalog) Hidden(ctx context.Context, user string) map[string]bool {
	var hidden map[string]bool
	for _, t := range c.tools {
		if t.release == nil {
			continue
		}
		ok, err := t.release(ctx, c, user)
		if err != nil {
			c.log.WarnContext(ctx, "gray release: cannot tell whether a tool is released; hidden", "tool", t.Name, "err", err)
		}
		if !ok {
			if hidden == nil {
				hidden = map[string]bool{}
			}
			hidden[t.Name] = true
		}
	}
	return hidden
}

// BindStopRelease binds each team StopToolOptions.Users names to the team
// of that name that exists now, by its id, and returns those ids and the
// names of the teams that do not exist. Until it is called, and for a team
// that did not exist when it was, a team entry grants nothing: the release
// goes to the members of the team the configuration meant, never to a team
// someone creates (or deletes and re-creates) under that name afterwards.
// The app calls it when it starts; calling it again binds anew.
func (c *Catalog) BindStopRelease(ctx context.Context) (bound map[string]string, missing []string, err error) {
	var names []string
	for _, u := range c.opts.StopTool.Users {
		if team, ok := duet.TeamOf(u); ok {
			names = append(names, team)
		}
	}
	bound = map[string]string{}
	if len(names) > 0 {
		if bound, err = c.store.TeamIDs(ctx, names); err != nil {
			return nil, nil, err
		}
	}
	for _, n := range names {
		if _, ok := bound[n]; !ok {
			missing = append(missing, n)
		}
	}
	ids := map[string]bool{}
	for _, id := range bound {
		ids[id] = true
	}
	c.stopTeams.Store(&ids)
	return bound, missing, nil
}

// stopReleased reports whether StopToolOptions.Users names user, directly,
// as "*" or through a team of theirs that is the team the name was bound to
// (BindStopRelease).
func stopReleased(ctx context.Context, c *Catalog, user string) (bool, error) {
	users := c.opts.StopTool.Users
	if user == "" || len(users) == 0 {
		return false, nil
	}
	if slices.Contains(users, "*") || slices.Contains(users, user) {
		return true, nil
	}
	bound := c.stopTeams.Load()
	if bound == nil || len(*bound) == 0 {
		return false, nil
	}
	teams, err := c.store.FindTeams(ctx, user)
	if err != nil {
		return false, err
	}
	for _, t := range teams {
		if (*bound)[t.ID] && slices.Contains(users, duet.TeamPrincipal(t.Name)) {
			return true, nil
		}
	}
	return false, nil
}

// checkReleased refuses a call of a tool not released to its caller.
func (c *Catalog) checkReleased(ctx context.Context, t *Tool, user string) error {
	if t.release == nil {
		return nil
	}
	ok, err := t.release(ctx, c, user)
	if err != nil {
		return err
	}
	if !ok {
		return duet.Errorf(duet.CodePermissionDenied, "%s is not enabled for %s: it is being released gradually; ask your Duet administrator to enable it for you or your team", t.Name, user)
	}
	return nil
}

// ---- stop_test_run ----

func stopRunTool() *Tool {
	return Define(ToolStopRun, "Stop a test run",
		"Stop (cancel) a queued or running test run by runId: its remaining cases do not run and it ends with status cancelled. "+
			"High risk, so every call needs a person's confirmation. Your own run (or a run of a task you own): a client that supports "+
			"elicitation asks you to confirm at once. Someone else's run, or a client that cannot ask: the call creates a stop request "+
			"and answers APPROVAL_PENDING with its requestId, and the person who started the run approves it within a time limit "+
			"(duet run approve-stop REQUEST_ID); repeat this call with requestId to learn the outcome (stopped, APPROVAL_DENIED or "+
			"APPROVAL_EXPIRED). Nothing is stopped without that confirmation. A run that already ended is left as it is (stopped: false).",
		Annotations{Destructive: true, Idempotent: true}, bounded(func(in, out *jsonschema.Schema) {
			minLen(in, "runId", 1)
		}), stopRun).confirming().released(stopReleased)
}

// StopRunIn are the arguments of stop_test_run.
type StopRunIn struct {
	RunID     string `json:"runId" jsonschema:"the run to stop (from start_test_run or get_test_run)"`
	Reason    string `json:"reason,omitempty" jsonschema:"why it should stop, shown to the person who approves"`
	RequestID string `json:"requestId,omitempty" jsonschema:"the requestId of an earlier APPROVAL_PENDING answer for this run, to learn whether it was approved"`
}

// StopRunOut is the result of stop_test_run.
type StopRunOut struct {
	RunID      string         `json:"runId"`
	Status     duet.RunStatus `json:"status" jsonschema:"the run's status now: cancelled once stopped (a running run ends within a second), or the final status it had already"`
	Stopped    bool           `json:"stopped" jsonschema:"true when the run was asked to stop after a confirmation; false when it had ended already"`
	RequestID  string         `json:"requestId,omitempty" jsonschema:"the stop request that records who asked and who confirmed"`
	ApprovedBy string         `json:"approvedBy,omitempty" jsonschema:"who confirmed the stop"`
	Via        string         `json:"via,omitempty" jsonschema:"how it was confirmed: elicitation (you, in your client, for your own run or a run of your task) or cli (by the person who started the run)"`
}

// Text implements Texter.
func (o StopRunOut) Text() string {
	if !o.Stopped {
		return fmt.Sprintf("Run %s has ended already (%s); nothing to stop.", o.RunID, o.Status)
	}
	return fmt.Sprintf("Run %s was asked to stop (confirmed by %s via %s; stop request %s); it is %s now.", o.RunID, o.ApprovedBy, o.Via, o.RequestID, o.Status)
}

func stopRun(ctx context.Context, env *Env, in StopRunIn) (StopRunOut, error) {
	c, user := env.Catalog, env.Caller.UserID
	if in.RequestID != "" {
		r, err := env.Store.FindStopRequest(ctx, user, in.RequestID)
		if err != nil {
			return StopRunOut{}, err
		}
		if r.RunID != in.RunID {
			return StopRunOut{}, duet.Errorf(duet.CodeNotFound, "stop request %s is not a request to stop run %s", r.ID, in.RunID)
		}
		return c.stopAnswer(ctx, user, r)
	}
	run, err := env.Store.FindRunByID(ctx, user, in.RunID)
	if err != nil {
		return StopRunOut{}, err
	}
	if run.Status.Final() {
		return StopRunOut{RunID: run.ID, Status: run.Status}, nil
	}
	req := &duet.StopRequest{RunID: run.ID, TaskID: run.TaskID, Executor: run.TriggeredBy, RequestedBy: user,
		Reason: strings.TrimSpace(in.Reason), TraceID: env.Caller.TraceID}
	// Stopping someone else's run is for its executor to approve, never
	// for the person asking: no question in the asker's client (which it
	// could answer itself), the request waits for the executor. The
	// executor, or the owner of the run's task — who may cancel it without
	// asking anyone (CancelRun) — is only asked whether they are sure.
	own, err := c.mayCancel(ctx, user, run)
	if err != nil {
		return StopRunOut{}, err
	}
	if !own {
		return c.stopPending(ctx, req)
	}
	ok, err := confirmStop(ctx, env, run, req.Reason)
	var ask *inputRequired
	switch {
	case errors.As(err, &ask):
		return StopRunOut{}, err // this round asks; the answer comes in the next
	case errors.Is(err, ErrConfirmUnsupported):
		return c.stopPending(ctx, req)
	case err != nil:
		if ctx.Err() != nil {
			return StopRunOut{}, err // the pipeline names the timeout
		}
		var de *duet.Error
		if errors.As(err, &de) {
			return StopRunOut{}, err
		}
		return StopRunOut{}, duet.WrapError(duet.CodeUnavailable, err, "your client did not answer the confirmation; nothing was stopped")
	}
	// Confirmed or declined in the client, by the caller: recorded as a
	// decided request, for the audit trail.
	now := c.opts.Now()
	req.Status, req.Via, req.DecidedBy, req.DecidedAt, req.ExpiresAt = duet.StopDenied, duet.StopViaElicitation, user, &now, now
	if ok {
		req.Status = duet.StopApproved
	}
	if err := env.Store.CreateStopRequest(ctx, req); err != nil {
		return StopRunOut{}, err
	}
	if !ok {
		return StopRunOut{}, duet.Errorf(duet.CodeApprovalDenied, "you declined stopping run %s (stop request %s); nothing was stopped", run.ID, req.ID)
	}
	run, err = env.Store.RequestCancel(ctx, user, run.ID)
	if err != nil {
		return StopRunOut{}, err
	}
	return StopRunOut{RunID: run.ID, Status: run.Status, Stopped: true, RequestID: req.ID, ApprovedBy: user, Via: req.Via}, nil
}

// stopKey names the confirmation in a multi-round call's input requests.
const stopKey = "stop"

// stopState is what the first round of a multi-round confirmation hands the
// second, sealed (Env.Ask): the run asked about.
type stopState struct {
	Run string `json:"run"`
}

// confirmStop asks the caller — the run's executor or its task's owner —
// whether they are sure they want to stop run: through the transport's
// Confirmer (a server-to-client elicitation on a session), or as a
// multi-round request (an input-required result, then the client's answer
// in the next round) for a client that declared elicitation without a
// session. Only an accept whose confirm is explicitly true confirms. It
// returns ErrConfirmUnsupported when the client cannot be asked, or
// Env.Ask's error to end this round with the question.
func confirmStop(ctx context.Context, env *Env, run *duet.Run, reason string) (bool, error) {
	if env.Confirmer != nil || (!env.CanAsk(AskElicit) && env.State() == nil) {
		return env.Confirm(ctx, stopPrompt(run, reason))
	}
	if s := env.State(); s != nil {
		var asked stopState
		if err := json.Unmarshal(s, &asked); err != nil || asked.Run != run.ID {
			return false, duet.Errorf(duet.CodeInvalidArgument, "invalid requestState: not a confirmation of stopping run %s", run.ID)
		}
		var answer Elicitation
		if env.Answer(stopKey, &answer) {
			return accepted(answer, "confirm"), nil
		}
	}
	if !env.CanAsk(AskElicit) {
		return false, ErrConfirmUnsupported
	}
	b, err := json.Marshal(stopState{Run: run.ID})
	if err != nil {
		return false, err
	}
	return false, env.Ask(map[string]InputRequest{stopKey: {Method: AskElicit, Params: map[string]any{
		"message": stopPrompt(run, reason),
		"requestedSchema": map[string]any{
			"type": "object",
			"properties": map[string]any{"confirm": map[string]any{
				"type": "boolean", "title": "Stop this run",
				"description": "true: cancel the run now; its remaining cases will not run",
			}},
			"required": []string{"confirm"},
		},
	}}}, b)
}

// stopPrompt is what the person is asked: whether they are sure.
func stopPrompt(run *duet.Run, reason string) string {
	done := run.Totals.Passed + run.Totals.Failed + run.Totals.Error + run.Totals.Cancelled
	s := fmt.Sprintf("Are you sure you want to stop run %s of task %s, started by %s (%s, %d of %d cases done)? Its remaining cases will not run.",
		run.ID, run.TaskID, run.TriggeredBy, run.Status, done, run.Totals.Cases)
	if reason != "" {
		s += " Reason given: " + reason
	}
	return s
}

// stopPending answers a call nobody could confirm in the client (someone
// else's run, or a client that cannot ask): the caller's pending request
// for the run (a retry), or a new one, waits for the run's executor.
func (c *Catalog) stopPending(ctx context.Context, req *duet.StopRequest) (StopRunOut, error) {
	waiting, err := c.store.FindStopRequests(ctx, duet.StopRequestFilter{User: req.RequestedBy, RunID: req.RunID, Pending: true})
	if err != nil {
		return StopRunOut{}, err
	}
	for _, r := range waiting {
		if r.RequestedBy == req.RequestedBy {
			return StopRunOut{}, stopPendingError(r, c.opts.Now())
		}
	}
	ttl := c.opts.StopTool.ApprovalTTL
	if ttl <= 0 {
		ttl = 10 * time.Minute
	}
	req.Status, req.ExpiresAt = duet.StopPending, c.opts.Now().Add(ttl)
	if err := c.store.CreateStopRequest(ctx, req); err != nil {
		return StopRunOut{}, err
	}
	return StopRunOut{}, stopPendingError(req, c.opts.Now())
}

// stopPendingError is the APPROVAL_PENDING answer: the request, who
// approves it, how and until when.
func stopPendingError(r *duet.StopRequest, now time.Time) error {
	left := r.ExpiresAt.Sub(now).Round(time.Second)
	return duet.Errorf(duet.CodeApprovalPending,
		"stopping run %s needs the approval of %s, who started it: stop request %s waits until %s (%s from now). "+
			"%s approves it with `duet run approve-stop %s --as %s` (or declines with `duet run deny-stop %s`); nothing is stopped until then. "+
			"Repeat this call with requestId %s to learn the outcome.",
		r.RunID, r.Executor, r.ID, r.ExpiresAt.UTC().Format(time.RFC3339), left, r.Executor, r.ID, r.Executor, r.ID, r.ID)
}

// stopAnswer reports the outcome of an earlier stop request.
func (c *Catalog) stopAnswer(ctx context.Context, user string, r *duet.StopRequest) (StopRunOut, error) {
	switch r.Status {
	case duet.StopPending:
		return StopRunOut{}, stopPendingError(r, c.opts.Now())
	case duet.StopExpired:
		return StopRunOut{}, duet.StopRequestExpired(r)
	case duet.StopDenied:
		return StopRunOut{}, duet.Errorf(duet.CodeApprovalDenied, "%s declined stopping run %s (stop request %s); nothing was stopped", r.DecidedBy, r.RunID, r.ID)
	}
	run, err := c.store.FindRunByID(ctx, user, r.RunID)
	if err != nil {
		return StopRunOut{}, err
	}
	return StopRunOut{RunID: run.ID, Status: run.Status, Stopped: true, RequestID: r.ID, ApprovedBy: r.DecidedBy, Via: r.Via}, nil
}

// DecideStop records the decision of caller — the run's executor — on a
// pending stop request, and when it approves, stops the run through the
// run-cancel path (RunStore.RequestCancel). It is governed and audited like
// a call: method run.stop.approve or run.stop.deny, the request id as the
// record's name, caller and time. Returns NOT_FOUND, PERMISSION_DENIED (not
// the run's executor), APPROVAL_EXPIRED, CONFLICT (decided already).
func (c *Catalog) DecideStop(ctx context.Context, caller duet.Caller, requestID string, approve bool) (*duet.StopRequest, *duet.Run, error) {
	method := "run.stop.deny"
	if approve {
		method = "run.stop.approve"
	}
	var req *duet.StopRequest
	var run *duet.Run
	err := c.Govern(ctx, Op{Caller: caller, Method: method, Name: requestID}, func(ctx context.Context) (int, error) {
		var err error
		if req, err = c.store.DecideStopRequest(ctx, requestID, caller.UserID, string(caller.Source), approve); err != nil {
			return 0, err
		}
		if approve {
			run, err = c.store.RequestCancel(ctx, caller.UserID, req.RunID)
		} else {
			run, err = c.store.FindRunByID(ctx, caller.UserID, req.RunID)
		}
		return 0, err
	})
	if err != nil {
		return nil, nil, err
	}
	return req, run, nil
}

// mayCancel reports whether user may stop run without anyone's approval:
// they started it, or they own its task.
func (c *Catalog) mayCancel(ctx context.Context, user string, run *duet.Run) (bool, error) {
	if run.TriggeredBy == user {
		return true, nil
	}
	task, err := c.store.FindTaskByID(ctx, user, run.TaskID)
	if err != nil && duet.ErrorCode(err) != duet.CodeNotFound {
		return false, err
	}
	return task != nil && task.Owner == user, nil
}

// CancelRun cancels run runID for caller, through a door that asks no one
// (`duet run cancel`, the REST API, the console): the person who started
// the run, or the owner of its task, may. Anyone else the task is shared
// with is refused with PERMISSION_DENIED and pointed at stop_test_run,
// whose rules — released gradually, confirmed by a person — hold for
// stopping someone else's run. Returns NOT_FOUND, PERMISSION_DENIED.
func (c *Catalog) CancelRun(ctx context.Context, caller duet.Caller, runID string) (*duet.Run, error) {
	run, err := c.store.FindRunByID(ctx, caller.UserID, runID)
	if err != nil {
		return nil, err
	}
	own, err := c.mayCancel(ctx, caller.UserID, run)
	if err != nil {
		return nil, err
	}
	if !own {
		return nil, duet.Errorf(duet.CodePermissionDenied, "run %s was started by %s: only they or the task's owner may cancel it; ask them, or use stop_test_run, which leaves a stop request for %s to approve", run.ID, run.TriggeredBy, run.TriggeredBy)
	}
	return c.store.RequestCancel(ctx, caller.UserID, runID)
}
