package duet

import (
	"context"
	"encoding/json"
	"time"
)

// CaseApproval is a user's consent that one version of a case someone else
// wrote may call, with the user's own MCP credentials, tools that are not
// read-only. A shared task runs its author's steps as the executor: without
// this consent such a step fails with APPROVAL_REQUIRED. Editing the case
// makes a new version, which needs a new approval.
type CaseApproval struct {
	User       string    `json:"user"`
	CaseID     string    `json:"caseId"`
	Version    int       `json:"version"`
	SourceHash string    `json:"sourceHash"` // of the approved version's source
	TaskID     string    `json:"taskId"`
	ApprovedAt time.Time `json:"approvedAt"`
}

// ApprovalStore keeps case approvals.
type ApprovalStore interface {
	// ApproveCase records a.User's approval of version a.Version of case
	// a.CaseID, which must be the case's current version and a case a.User
	// may see; it fills SourceHash, TaskID and ApprovedAt. Approving a
	// version again keeps the first approval. Returns NOT_FOUND, CONFLICT
	// (the case has another version now: review it again),
	// INVALID_ARGUMENT.
	ApproveCase(ctx context.Context, a *CaseApproval) error

	// FindCaseApproval returns user's approval of that version of the case.
	// Returns NOT_FOUND.
	FindCaseApproval(ctx context.Context, user, caseID string, version int) (*CaseApproval, error)

	// FindCaseApprovals lists user's approvals, of the cases of taskID only
	// when it is not "", newest first.
	FindCaseApprovals(ctx context.Context, user, taskID string) ([]*CaseApproval, error)

	// RevokeCaseApproval withdraws user's approvals of every version of the
	// case. Returns NOT_FOUND when there was none.
	RevokeCaseApproval(ctx context.Context, user, caseID string) error

	// ApprovePostRun records user's approval of the post-run actions of
	// taskID in the version hash (PostRunHash), which must be the task's
	// current version, of a task user may see. Approving again keeps the
	// first approval. Returns NOT_FOUND, CONFLICT (the actions changed:
	// review them again), INVALID_ARGUMENT (the task has none).
	ApprovePostRun(ctx context.Context, user, taskID, hash string) (*PostRunApproval, error)

	// FindPostRunApproval returns user's approval of that version of the
	// task's post-run actions. Returns NOT_FOUND.
	FindPostRunApproval(ctx context.Context, user, taskID, hash string) (*PostRunApproval, error)
}

// ReadOnly reports whether the server annotated the tool readOnlyHint: true.
// Annotations are hints from the server; a tool without them is not
// read-only.
func (t *MCPTool) ReadOnly() bool {
	if t == nil || len(t.Annotations) == 0 {
		return false
	}
	var a struct {
		ReadOnly bool `json:"readOnlyHint"`
	}
	return json.Unmarshal(t.Annotations, &a) == nil && a.ReadOnly
}
