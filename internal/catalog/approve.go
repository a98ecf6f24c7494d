package catalog

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/duet-test/duet"
)

// Approvals over MCP. A shared task runs its author's steps with the
// executor's credentials; a step that would call a tool the executor's
// catalog does not mark read-only needs the executor's approval of that case
// version (duet.CaseApproval). start_test_run asks for it before it starts
// the run when the client can be asked (an in-band elicitation of the
// 2026-07-28 revision, or one over a handshake-era session): the executor
// approves, the approvals are recorded as `duet case approve` records them,
// and the run starts. A client that cannot be asked gets the run as before:
// such steps fail with APPROVAL_REQUIRED until the executor approves with
// the CLI.

// PendingCall is a step of a case that needs its executor's approval before
// it calls, with the executor's credentials, a tool that is not read-only.
type PendingCall struct {
	Step       int // from 1
	Name       string
	ServerKey  string
	ServerName string
	Tool       string
}

// approvalKey is the key of the approval question in an input-required result.
const approvalKey = "approve_shared_cases"

// approvalState is what start_test_run keeps between the rounds: the case
// versions it asked about. The seal binds it to the caller and the
// arguments; the versions are checked again when the answer comes.
type approvalState struct {
	Cases []approvalCase `json:"cases"`
}

type approvalCase struct {
	ID      string `json:"id"`
	Version int    `json:"version"`
}

// pendingApprovals returns the cases (of cases) that need env's caller's
// approval and do not have it, with the calls that need it.
func pendingApprovals(ctx context.Context, env *Env, cases []*duet.Case) ([]*duet.Case, map[string][]PendingCall, error) {
	find := env.Catalog.opts.PendingCalls
	if find == nil {
		return nil, nil, nil
	}
	var out []*duet.Case
	calls := map[string][]PendingCall{}
	for _, c := range cases {
		if c.CreatedBy == env.Caller.UserID {
			continue
		}
		pc, err := find(ctx, env.Caller.UserID, c)
		if err != nil {
			return nil, nil, err
		}
		if len(pc) == 0 {
			continue
		}
		_, err = env.Store.FindCaseApproval(ctx, env.Caller.UserID, c.ID, c.Version)
		switch {
		case err == nil:
			continue
		case duet.ErrorCode(err) != duet.CodeNotFound:
			return nil, nil, err
		}
		out = append(out, c)
		calls[c.ID] = pc
	}
	return out, calls, nil
}

// approveShared asks the caller to approve the cases that need it, when the
// client can be asked, and records the approval. It returns nil to go on
// (nothing to approve, approved now, or a client that cannot be asked: the
// steps then fail with APPROVAL_REQUIRED as before), Env.Ask's error to ask,
// or APPROVAL_REQUIRED when the caller declined.
func approveShared(ctx context.Context, env *Env, cases []*duet.Case) error {
	if !env.CanAsk(AskElicit) && env.State() == nil {
		return nil
	}
	pending, calls, err := pendingApprovals(ctx, env, cases)
	if err != nil || len(pending) == 0 {
		return err
	}
	var asked approvalState
	if s := env.State(); s != nil {
		if err := json.Unmarshal(s, &asked); err != nil {
			return duet.Errorf(duet.CodeInvalidArgument, "invalid requestState: not an approval")
		}
	}
	var answer Elicitation
	if env.Answer(approvalKey, &answer) && sameCases(asked.Cases, pending) {
		approve, _ := answer.Content["approve"].(bool)
		if answer.Action != "accept" || !approve {
			return duet.Errorf(duet.CodeApprovalRequired,
				"you did not approve the calls of %s, so the run was not started: call again to be asked again, or approve with `duet case approve CASE_ID`",
				caseList(pending))
		}
		for _, c := range pending {
			if err := recordApproval(ctx, env, c); err != nil {
				return err
			}
		}
		return nil
	}
	if !env.CanAsk(AskElicit) {
		return nil
	}
	st := approvalState{}
	for _, c := range pending {
		st.Cases = append(st.Cases, approvalCase{ID: c.ID, Version: c.Version})
	}
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	return env.Ask(map[string]InputRequest{approvalKey: {Method: AskElicit, Params: map[string]any{
		"message": approvalMessage(env.Caller.UserID, pending, calls),
		"requestedSchema": map[string]any{
			"type": "object",
			"properties": map[string]any{"approve": map[string]any{
				"type": "boolean", "title": "Approve these case versions",
				"description": "true: these steps may call these tools with your credentials, in this and later runs of the same versions",
			}},
			"required": []string{"approve"},
		},
	}}}, b)
}

// sameCases reports whether the answer is about exactly the versions that
// need approval now (a case edited in between needs a new question).
func sameCases(asked []approvalCase, pending []*duet.Case) bool {
	if len(asked) != len(pending) {
		return false
	}
	for i, c := range pending {
		if asked[i].ID != c.ID || asked[i].Version != c.Version {
			return false
		}
	}
	return true
}

func caseList(cases []*duet.Case) string {
	var parts []string
	for _, c := range cases {
		parts = append(parts, fmt.Sprintf("case %s %q (version %d)", c.ID, c.Title, c.Version))
	}
	return strings.Join(parts, ", ")
}

// approvalMessage is what the person is shown: who wrote each case, and
// which steps would call which tools with their credentials.
func approvalMessage(user string, cases []*duet.Case, calls map[string][]PendingCall) string {
	var b strings.Builder
	fmt.Fprintf(&b, "This run uses your (%s) MCP credentials in cases someone else wrote. These steps call tools your catalog does not mark read-only:", user)
	for _, c := range cases {
		fmt.Fprintf(&b, "\n- case %q (%s, version %d) by %s:", c.Title, c.ID, c.Version, c.CreatedBy)
		for _, pc := range calls[c.ID] {
			fmt.Fprintf(&b, "\n    step %d (%s) calls %s of %s", pc.Step, pc.Name, pc.Tool, strings.TrimSpace(pc.ServerName+" "+pc.ServerKey))
		}
	}
	b.WriteString("\nApprove these case versions? Editing a case makes a new version, which asks again.")
	return b.String()
}

// recordApproval records the caller's approval of c's version, as `duet case
// approve` does, with an audit record.
func recordApproval(ctx context.Context, env *Env, c *duet.Case) error {
	start := env.Catalog.opts.Now()
	ap := &duet.CaseApproval{User: env.Caller.UserID, CaseID: c.ID, Version: c.Version}
	// The approval and its audit record are stored in one transaction.
	rec := duet.AuditRecord{Time: start, TraceID: env.Caller.TraceID, CallSource: env.Caller.Source, Caller: env.Caller.UserID, Method: "case.approve", Tool: c.ID}
	intent := duet.NewAuditIntent(rec)
	err := env.Store.ApproveCase(duet.WithAuditIntent(ctx, intent), ap)
	rec.Outcome = duet.OutcomeOK
	if err != nil {
		rec.Outcome = duet.ErrorCode(err)
	}
	rec.ID, rec.DurationUs = intent.Close(), env.Catalog.opts.Now().Sub(start).Microseconds()
	env.Catalog.Audit(&rec)
	if duet.ErrorCode(err) == duet.CodeConflict {
		return duet.Errorf(duet.CodeApprovalRequired, "case %s changed while you were asked (it has a new version now): call again to review it", c.ID)
	}
	return err
}
