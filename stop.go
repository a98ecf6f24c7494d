package duet

import (
	"context"
	"time"
)

// StopStatus is the state of a stop request.
type StopStatus string

// Stop request states. A pending request past its ExpiresAt reads as
// expired: nobody can approve it any more.
const (
	StopPending  StopStatus = "pending"  // waits for the run's executor
	StopApproved StopStatus = "approved" // confirmed: the run was asked to stop
	StopDenied   StopStatus = "denied"   // declined: nothing was done
	StopExpired  StopStatus = "expired"  // nobody approved it in time: nothing was done
)

// How a stop request was decided (StopRequest.Via).
const (
	StopViaElicitation = "elicitation" // the caller confirmed in their MCP client
	StopViaCLI         = "cli"         // the run's executor, with duet run approve-stop or deny-stop
)

// StopRequest is one request to stop a run made with the stop_test_run
// tool, and its decision: who asked and when, who approved (or declined)
// and when, and how. It is kept for the audit trail, decided or not.
type StopRequest struct {
	ID          string     `json:"id"` // "stop_…"
	RunID       string     `json:"runId"`
	TaskID      string     `json:"taskId"`
	Executor    string     `json:"executor"` // the run's executor: the one who may approve
	RequestedBy string     `json:"requestedBy"`
	Reason      string     `json:"reason,omitempty"`
	TraceID     string     `json:"traceId,omitempty"` // of the tool call that asked
	Status      StopStatus `json:"status"`
	Via         string     `json:"via,omitempty"`       // StopViaElicitation or StopViaCLI, once decided
	DecidedBy   string     `json:"decidedBy,omitempty"` // who approved or declined
	CreatedAt   time.Time  `json:"createdAt"`
	ExpiresAt   time.Time  `json:"expiresAt"`
	DecidedAt   *time.Time `json:"decidedAt,omitempty"`
}

// Settle reads a pending request that expired before now as expired.
// Stores call it on every request they return.
func (r *StopRequest) Settle(now time.Time) {
	if r != nil && r.Status == StopPending && !now.Before(r.ExpiresAt) {
		r.Status = StopExpired
	}
}

// StopRequestFilter selects stop requests.
type StopRequestFilter struct {
	// User is required: requests for runs the user executes (to approve)
	// and requests the user made.
	User  string
	RunID string // only requests for this run
	// Pending keeps only requests still waiting (not expired).
	Pending bool
	Limit   int // 0 means 50; at most 500
}

// StopRequestStore keeps stop requests.
type StopRequestStore interface {
	// CreateStopRequest stores r: pending, or already decided (a
	// confirmation by elicitation) when r.Status says so. It fills ID
	// (when empty) and CreatedAt. Returns INVALID_ARGUMENT, NOT_FOUND (the
	// run does not exist).
	CreateStopRequest(ctx context.Context, r *StopRequest) error

	// FindStopRequest returns a request viewer made or may decide (the
	// run's executor); viewer "" means any (internal use). Returns
	// NOT_FOUND.
	FindStopRequest(ctx context.Context, viewer, id string) (*StopRequest, error)

	// FindStopRequests returns the requests filter selects, newest first.
	FindStopRequests(ctx context.Context, filter StopRequestFilter) ([]*StopRequest, error)

	// DecideStopRequest records by's decision on a pending request, made
	// via a door (StopViaCLI, ...): only the run's executor may decide
	// (PERMISSION_DENIED for the requester when that is someone else),
	// only before it expires (APPROVAL_EXPIRED), and only once (CONFLICT,
	// naming the decision). It returns the decided request. Returns
	// NOT_FOUND, PERMISSION_DENIED, APPROVAL_EXPIRED, CONFLICT.
	DecideStopRequest(ctx context.Context, id, by, via string, approve bool) (*StopRequest, error)
}

// ValidateStopRequest checks a request before it is stored. Returns
// INVALID_ARGUMENT.
func ValidateStopRequest(r *StopRequest) error {
	switch {
	case r == nil || r.RunID == "" || r.TaskID == "" || r.Executor == "" || r.RequestedBy == "":
		return Errorf(CodeInvalidArgument, "a stop request needs a run, its task, its executor and who asks")
	case r.ExpiresAt.IsZero():
		return Errorf(CodeInvalidArgument, "a stop request needs a time limit")
	case len(r.Reason) > 1024:
		return Errorf(CodeInvalidArgument, "the reason is longer than 1024 bytes")
	}
	switch r.Status {
	case StopPending:
		if r.DecidedBy != "" || r.DecidedAt != nil {
			return Errorf(CodeInvalidArgument, "a pending stop request has no decision")
		}
	case StopApproved, StopDenied:
		if r.DecidedBy == "" || r.DecidedAt == nil || r.Via == "" {
			return Errorf(CodeInvalidArgument, "a decided stop request names who decided, when and how")
		}
	default:
		return Errorf(CodeInvalidArgument, "a stop request is stored pending, approved or denied, not %q", r.Status)
	}
	return nil
}

// StopRequestDecided is the CONFLICT of a decision on a request decided
// already.
func StopRequestDecided(r *StopRequest) error {
	at := ""
	if r.DecidedAt != nil {
		at = " at " + r.DecidedAt.UTC().Format(time.RFC3339)
	}
	return Errorf(CodeConflict, "stop request %s was %s by %s%s already", r.ID, r.Status, r.DecidedBy, at)
}

// StopRequestExpired is the APPROVAL_EXPIRED of a request that expired.
func StopRequestExpired(r *StopRequest) error {
	return Errorf(CodeApprovalExpired, "stop request %s for run %s expired at %s without an approval: nothing was stopped; call stop_test_run again to ask anew",
		r.ID, r.RunID, r.ExpiresAt.UTC().Format(time.RFC3339))
}
