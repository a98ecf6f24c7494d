package engine

import (
	"context"
	"fmt"

	"github.com/duet-test/duet"
)

// A shared task runs its author's steps with the executor's credentials. A
// step that would call, as the executor, an MCP tool that is not read-only,
// in a case the executor did not write, needs the executor's consent first:
// NeedsApproval decides whether a step needs it, an Approver whether it has
// it.

// ToolCatalog is where the engine reads a user's archived tool catalogs
// (duet.MCPClientStore is one).
type ToolCatalog interface {
	// FindMCPServerTool returns owner's registration of serverKey and the
	// archived tool (nil when the archive lacks it). Returns NOT_FOUND when
	// owner has not registered serverKey.
	FindMCPServerTool(ctx context.Context, owner, serverKey, tool string) (*duet.MCPServer, *duet.MCPTool, error)
}

// ApprovalRequest is a call that needs the executor's approval: of a step
// of a case, or (PostRun set) of a post-run action of the task.
type ApprovalRequest struct {
	Executor    string
	Author      string // who wrote the case version (or the post-run actions); "" when not known
	RunID       string
	TaskID      string
	TaskName    string
	CaseID      string
	CaseTitle   string
	CaseVersion int
	ServerKey   string
	Tool        string
	// PostRun names the post-run action, PostRunHash the version of the
	// task's post-run actions it belongs to; both "" for a case's step.
	PostRun     string
	PostRunHash string
}

// Approver decides whether the executor approved a call of a case someone
// else wrote. It returns nil to go ahead, or an error coded
// APPROVAL_REQUIRED: the step fails with it and the case goes on as its
// failure policy says. StoreApprover reads approvals given beforehand (duet
// case approve); an approver that asks the executor at once (an MCP
// elicitation) can wrap it.
type Approver interface {
	Approve(ctx context.Context, req ApprovalRequest) error
}

// StoreApprover approves a call when the executor has approved that version
// of the case (duet.ApprovalStore).
type StoreApprover struct {
	Store duet.ApprovalStore
}

// Approve implements Approver. Returns APPROVAL_REQUIRED.
func (a StoreApprover) Approve(ctx context.Context, req ApprovalRequest) error {
	if req.PostRun != "" {
		if a.Store != nil {
			_, err := a.Store.FindPostRunApproval(ctx, req.Executor, req.TaskID, req.PostRunHash)
			if err == nil {
				return nil
			}
			if duet.ErrorCode(err) != duet.CodeNotFound {
				return err
			}
		}
		return postRunApprovalRequired(req)
	}
	if a.Store != nil {
		_, err := a.Store.FindCaseApproval(ctx, req.Executor, req.CaseID, req.CaseVersion)
		if err == nil {
			return nil
		}
		if duet.ErrorCode(err) != duet.CodeNotFound {
			return err
		}
	}
	return approvalRequired(req)
}

func approvalRequired(req ApprovalRequest) error {
	writer := req.Author
	if writer == "" {
		writer = "someone else (the case changed after the run started)"
	}
	return duet.Errorf(duet.CodeApprovalRequired,
		"case %q (version %d) was written by %s, and this step calls %s of MCP server %s, which your catalog does not mark read-only, with your credentials, %s: "+
			"review the case, then approve this version with `duet case approve %s --as %s` and run it again",
		req.CaseTitle, req.CaseVersion, writer, req.Tool, req.ServerKey, req.Executor, req.CaseID, req.Executor)
}

func postRunApprovalRequired(req ApprovalRequest) error {
	writer := req.Author
	if writer == "" {
		writer = "someone else"
	}
	task := req.TaskName
	if task == "" {
		task = req.TaskID
	}
	return duet.Errorf(duet.CodeApprovalRequired,
		"the post-run actions of task %q were written by %s, and action %q calls %s of MCP server %s, which your catalog does not mark read-only, with your credentials, %s: "+
			"review them with `duet task show %s --as %s`, then approve this version with `duet task approve-post-run %s --as %s`",
		task, writer, req.PostRun, req.Tool, req.ServerKey, req.Executor, req.TaskID, req.Executor, req.TaskID, req.Executor)
}

// NeedsApproval reports whether step m of a case version written by author
// needs executor's approval before it calls its tool as executor: when
// author is someone else (or not known) and executor's archived catalog of
// the server does not annotate the tool readOnlyHint: true (a tool missing
// from the archive is not read-only). A call to a server executor has not
// registered needs none: it fails with MCP_SERVER_NOT_CONFIGURED, using
// nobody's credentials. tools nil means nothing is known to be read-only.
func NeedsApproval(ctx context.Context, tools ToolCatalog, executor, author string, m *duet.MCPCallStep) (bool, error) {
	if m == nil || author != "" && author == executor {
		return false, nil
	}
	if tools == nil {
		return true, nil
	}
	_, tool, err := tools.FindMCPServerTool(ctx, executor, m.ServerKey, m.ToolName)
	switch {
	case duet.ErrorCode(err) == duet.CodeNotFound:
		return false, nil
	case err != nil:
		return false, fmt.Errorf("reading %s's catalog of %s: %w", executor, m.ServerKey, err)
	}
	return !tool.ReadOnly(), nil
}

// checkApproval fails a call of a case the executor did not write to a
// tool that is not read-only, unless the executor approved the case version.
func (cr *caseRun) checkApproval(ctx context.Context, m *duet.MCPCallStep) error {
	executor := cr.run.TriggeredBy
	author, err := cr.author(ctx)
	if err != nil {
		return err
	}
	need, err := NeedsApproval(ctx, cr.e.tools, executor, author, m)
	if err != nil || !need {
		return err
	}
	return cr.e.approver.Approve(ctx, ApprovalRequest{
		Executor: executor, Author: author, RunID: cr.run.ID, TaskID: cr.task.ID,
		CaseID: cr.x.CaseID, CaseTitle: cr.x.CaseTitle, CaseVersion: cr.x.CaseVersion,
		ServerKey: m.ServerKey, Tool: m.ToolName,
	})
}

// author returns who wrote the version of the case this execution runs; ""
// when that is not known (the case has another version now).
func (cr *caseRun) author(ctx context.Context) (string, error) {
	if cr.authorKnown {
		return cr.authorName, nil
	}
	c, err := cr.e.store.FindCaseByID(ctx, "", cr.x.CaseID)
	switch {
	case duet.ErrorCode(err) == duet.CodeNotFound:
	case err != nil:
		return "", err
	case c.Version == cr.x.CaseVersion:
		cr.authorName = c.CreatedBy
	}
	cr.authorKnown = true
	return cr.authorName, nil
}

// PendingCall is a step of a case that needs its executor's approval.
type PendingCall struct {
	Step       int    `json:"step"` // from 1
	Name       string `json:"name"`
	ServerKey  string `json:"serverKey"`
	ServerName string `json:"serverName,omitempty"` // as the author wrote it
	Tool       string `json:"tool"`
}

// CallsNeedingApproval returns the steps of the current version of c that
// would need executor's approval (NeedsApproval): none when executor wrote
// it.
func CallsNeedingApproval(ctx context.Context, tools ToolCatalog, executor string, c *duet.Case) ([]PendingCall, error) {
	var out []PendingCall
	for _, st := range c.Steps {
		if st.MCP == nil {
			continue
		}
		need, err := NeedsApproval(ctx, tools, executor, c.CreatedBy, st.MCP)
		if err != nil {
			return nil, err
		}
		if need {
			out = append(out, PendingCall{Step: st.Index + 1, Name: st.Name, ServerKey: st.MCP.ServerKey, ServerName: st.MCP.ServerName, Tool: st.MCP.ToolName})
		}
	}
	return out, nil
}
