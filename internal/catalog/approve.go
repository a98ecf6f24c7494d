package catalog

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/duet-test/duet"
)

// Approvals over MCP. A shared task runs its author's steps with the
// executor's credentials; in a case the executor did not write, every step
// that would call a tool with those credentials (read-only ones included)
// needs the executor's approval of that case version, bound to the places
// the version can send data to (duet.CaseApproval, duet.Destinations).
// start_test_run asks for it before it starts the run when the client can
// be asked (an in-band elicitation of the 2026-07-28 revision, or one over a
// handshake-era session): the question shows the calls and the
// destinations, the executor approves, the approvals are recorded as `duet
// case approve` records them, and the run starts. A client that cannot be
// asked gets the run as before: such steps fail with APPROVAL_REQUIRED until
// the executor approves with the CLI.

// CaseReview is what running a version of a case asks of its executor (the
// engine's rule, Options.Review): the steps that would use their
// credentials — none means nothing to approve — and every place the
// version can send data to, which an approval shows and is bound to.
type CaseReview struct {
	Calls            []duet.PendingCall
	Destinations     duet.Destinations
	DestinationsHash string // Destinations.Hash
}

// Needed reports whether a run of the version by the executor needs their
// approval.
func (r *CaseReview) Needed() bool { return r != nil && len(r.Calls) > 0 }

// ReviewCase returns what the current version of c, a case of task, asks of
// executor (Options.Review); without that option, nothing.
func (c *Catalog) ReviewCase(ctx context.Context, executor string, task *duet.Task, cs *duet.Case) (*CaseReview, error) {
	if c.opts.Review == nil {
		return &CaseReview{}, nil
	}
	return c.opts.Review(ctx, executor, task, cs)
}

// approvalKey is the key of the approval question in an input-required result.
const approvalKey = "approve_shared_cases"

// approvalState is what start_test_run keeps between the rounds: the case
// versions it asked about and the destinations it showed for each. The
// seal binds it to the caller and the arguments; the versions and the
// destinations are checked again when the answer comes.
type approvalState struct {
	Cases []approvalCase `json:"cases"`
}

type approvalCase struct {
	ID      string `json:"id"`
	Version int    `json:"version"`
	Hash    string `json:"destinations"` // duet.Destinations.Hash shown
}

// pendingApproval is a case version that needs the caller's approval, and
// what it asks.
type pendingApproval struct {
	c      *duet.Case
	review *CaseReview
}

// pendingApprovals returns the cases (of cases, of task) that need env's
// caller's approval and do not have it for the destinations they have now.
func pendingApprovals(ctx context.Context, env *Env, task *duet.Task, cases []*duet.Case) ([]pendingApproval, error) {
	if env.Catalog.opts.Review == nil {
		return nil, nil
	}
	var out []pendingApproval
	for _, c := range cases {
		if c.CreatedBy == env.Caller.UserID {
			continue
		}
		r, err := env.Catalog.ReviewCase(ctx, env.Caller.UserID, task, c)
		if err != nil {
			return nil, err
		}
		if !r.Needed() {
			continue
		}
		ap, err := env.Store.FindCaseApproval(ctx, env.Caller.UserID, c.ID, c.Version)
		switch {
		case err == nil && ap.Holds(r.DestinationsHash):
			continue
		case err != nil && duet.ErrorCode(err) != duet.CodeNotFound:
			return nil, err
		}
		out = append(out, pendingApproval{c: c, review: r})
	}
	return out, nil
}

// approveShared asks the caller to approve the cases of task that need it,
// when the client can be asked, and records the approval. It returns nil
// to go on (nothing to approve, approved now, or a client that cannot be
// asked: the steps then fail with APPROVAL_REQUIRED as before), Env.Ask's
// error to ask, or APPROVAL_REQUIRED when the caller did not approve (an
// answer counts only when it says approve: true).
func approveShared(ctx context.Context, env *Env, task *duet.Task, cases []*duet.Case) error {
	if !env.CanAsk(AskElicit) && env.State() == nil {
		return nil
	}
	pending, err := pendingApprovals(ctx, env, task, cases)
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
		if !accepted(answer, "approve") {
			return duet.Errorf(duet.CodeApprovalRequired,
				"you did not approve the calls of %s, so the run was not started: call again to be asked again, or approve with `duet case approve CASE_ID`",
				caseList(pending))
		}
		for _, p := range pending {
			if err := recordApproval(ctx, env, p); err != nil {
				return err
			}
		}
		return nil
	}
	if !env.CanAsk(AskElicit) {
		return nil
	}
	st := approvalState{}
	for _, p := range pending {
		st.Cases = append(st.Cases, approvalCase{ID: p.c.ID, Version: p.c.Version, Hash: p.review.DestinationsHash})
	}
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	return env.Ask(map[string]InputRequest{approvalKey: {Method: AskElicit, Params: map[string]any{
		"message": approvalMessage(env.Caller.UserID, pending),
		"requestedSchema": map[string]any{
			"type": "object",
			"properties": map[string]any{"approve": map[string]any{
				"type": "boolean", "title": "Approve these case versions",
				"description": "true: these steps may call these tools with your credentials, and what they obtain may go to the places listed, in this and later runs of the same versions",
			}},
			"required": []string{"approve"},
		},
	}}}, b)
}

// accepted reports whether an elicitation's answer is a person's consent:
// accepted, with the form's boolean field explicitly true. An empty or
// defaulted answer ({action: accept, content: {}}) is not one.
func accepted(answer Elicitation, field string) bool {
	v, ok := answer.Content[field].(bool)
	return answer.Action == "accept" && ok && v
}

// sameCases reports whether the answer is about exactly the versions that
// need approval now, with the destinations they have now (a case edited in
// between, or a task whose base URL changed, needs a new question).
func sameCases(asked []approvalCase, pending []pendingApproval) bool {
	if len(asked) != len(pending) {
		return false
	}
	for i, p := range pending {
		if asked[i].ID != p.c.ID || asked[i].Version != p.c.Version || asked[i].Hash != p.review.DestinationsHash {
			return false
		}
	}
	return true
}

func caseList(pending []pendingApproval) string {
	var parts []string
	for _, p := range pending {
		parts = append(parts, fmt.Sprintf("case %s %q (version %d)", p.c.ID, p.c.Title, p.c.Version))
	}
	return strings.Join(parts, ", ")
}

// approvalMessage is what the person is shown: who wrote each case, which
// steps would call which tools with their credentials, and every place
// what they obtain can go.
func approvalMessage(user string, pending []pendingApproval) string {
	var b strings.Builder
	fmt.Fprintf(&b, "This run uses your (%s) MCP credentials in cases someone else wrote. What these calls obtain can reach every place listed under each case.", user)
	for _, p := range pending {
		fmt.Fprintf(&b, "\n- case %q (%s, version %d) by %s:", p.c.Title, p.c.ID, p.c.Version, p.c.CreatedBy)
		for _, pc := range p.review.Calls {
			fmt.Fprintf(&b, "\n    step %d (%s) calls %s of %s with your credentials", pc.Step, pc.Name, pc.Tool, strings.TrimSpace(pc.ServerName+" "+pc.ServerKey))
		}
		b.WriteString("\n    it can send data to:")
		for _, l := range p.review.Destinations.Lines() {
			b.WriteString("\n      " + l)
		}
	}
	b.WriteString("\nApprove these case versions? Editing a case, or changing where it can send data (the task's base URL, its post-run actions), asks again.")
	return b.String()
}

// recordApproval records the caller's approval of p's case version, for the
// destinations they were shown, as `duet case approve` does, with an audit
// record.
func recordApproval(ctx context.Context, env *Env, p pendingApproval) error {
	c := p.c
	start := env.Catalog.opts.Now()
	ap := &duet.CaseApproval{User: env.Caller.UserID, CaseID: c.ID, Version: c.Version, DestinationsHash: p.review.DestinationsHash}
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
