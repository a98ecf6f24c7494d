package api

import (
	"context"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/catalog"
	"github.com/duet-test/duet/internal/scan"
)

// The operations of this file are the ones the command line needed beside
// the console's (docs/architecture.md, "The CLI is a client of the
// service"): a task's post-run actions and their approval, the list of case
// approvals, stop requests, the phones of the server's machine and past
// generations. Like every other operation they are governed and audited
// once, and served over REST, so `duet --server URL` does them too.

// task resolves a task reference (an id, or a name the caller can see
// unambiguously: catalog.FindTask, the rule of every door). Returns
// NOT_FOUND, INVALID_ARGUMENT.
func (s *Service) task(ctx context.Context, c duet.Caller, ref string) (*duet.Task, error) {
	return catalog.FindTask(ctx, s.d.Store, c.UserID, ref)
}

// taskID resolves the task reference of a list's filter to the task's id;
// "" (no task named) stays "". Returns NOT_FOUND, INVALID_ARGUMENT.
func (s *Service) taskID(ctx context.Context, c duet.Caller, ref string) (string, error) {
	if ref == "" {
		return "", nil
	}
	t, err := s.task(ctx, c, ref)
	if err != nil {
		return "", err
	}
	return t.ID, nil
}

// ---- post-run actions ----

// PostRunAction is one of a task's post-run actions, as a person reviewing
// them sees it.
type PostRunAction struct {
	Name       string   `json:"name"`
	On         string   `json:"on" jsonschema:"when it runs: pass, fail or always"`
	Tool       string   `json:"tool"`
	ServerName string   `json:"serverName,omitempty" jsonschema:"as the author wrote it"`
	ServerKey  string   `json:"serverKey"`
	Inputs     []string `json:"inputs" jsonschema:"the tool's arguments it sets"`
	// NeedsApproval: it would call a server the caller registered, with
	// the caller's credentials, and the caller has not approved this
	// version of the actions.
	NeedsApproval bool `json:"needsApproval" jsonschema:"true when it would call a server you registered with your credentials and you have not approved this version"`
}

// PostRun is a task's post-run actions and whether the caller approved the
// current version of them for their runs.
type PostRun struct {
	TaskID     string          `json:"taskId"`
	TaskName   string          `json:"taskName"`
	Author     string          `json:"author,omitempty" jsonschema:"who wrote the actions"`
	Hash       string          `json:"hash,omitempty" jsonschema:"identifies this version of the actions; pass it when you approve"`
	Approved   bool            `json:"approved" jsonschema:"true when you wrote them or approved this version"`
	ApprovedAt *time.Time      `json:"approvedAt,omitempty"`
	Actions    []PostRunAction `json:"actions"`
}

func (s *Service) postRun(ctx context.Context, c duet.Caller, t *duet.Task) (PostRun, error) {
	out := PostRun{TaskID: t.ID, TaskName: t.Name, Author: t.PostRunBy, Hash: duet.PostRunHash(t.PostRun), Actions: []PostRunAction{}}
	if len(t.PostRun) == 0 {
		return out, nil
	}
	out.Approved = t.PostRunBy == c.UserID
	if !out.Approved {
		ap, err := s.d.Store.FindPostRunApproval(ctx, c.UserID, t.ID, out.Hash)
		switch {
		case err == nil:
			out.Approved, out.ApprovedAt = true, &ap.ApprovedAt
		case duet.ErrorCode(err) != duet.CodeNotFound:
			return PostRun{}, err
		}
	}
	for _, act := range t.PostRun {
		pa := PostRunAction{Name: act.Name, On: string(act.On), Tool: act.ToolName, ServerName: act.ServerName, ServerKey: act.ServerKey,
			Inputs: nonNil(slices.Sorted(maps.Keys(act.InputBindings)))}
		if !out.Approved && s.d.NeedsApproval != nil {
			need, err := s.d.NeedsApproval(ctx, c.UserID, t.PostRunBy, &duet.MCPCallStep{ServerKey: act.ServerKey, ToolName: act.ToolName})
			if err != nil {
				return PostRun{}, err
			}
			pa.NeedsApproval = need
		}
		out.Actions = append(out.Actions, pa)
	}
	return out, nil
}

// GetPostRun returns a task's post-run actions and whether the caller's
// runs may call each. Returns NOT_FOUND.
func (s *Service) GetPostRun(ctx context.Context, c duet.Caller, taskRef string) (PostRun, error) {
	return govern(ctx, s, c, "getPostRun", nil, func(ctx context.Context) (PostRun, error) {
		t, err := s.task(ctx, c, taskRef)
		if err != nil {
			return PostRun{}, err
		}
		return s.postRun(ctx, c, t)
	})
}

// PostRunApprovalIn names the version of the actions the caller reviewed.
type PostRunApprovalIn struct {
	Hash string `json:"hash,omitempty" jsonschema:"the hash you reviewed (getPostRun): approving fails with CONFLICT if the actions changed since; absent approves the current version"`
}

// ApprovePostRun records the caller's approval of the current version of a
// task's post-run actions, for the caller's runs. Returns NOT_FOUND,
// CONFLICT (the actions changed since in.Hash), INVALID_ARGUMENT (the task
// has none).
func (s *Service) ApprovePostRun(ctx context.Context, c duet.Caller, taskRef string, in PostRunApprovalIn) (PostRun, error) {
	return govern(ctx, s, c, "approvePostRun", in, func(ctx context.Context) (PostRun, error) {
		t, err := s.task(ctx, c, taskRef)
		if err != nil {
			return PostRun{}, err
		}
		if len(t.PostRun) == 0 {
			return PostRun{}, duet.Errorf(duet.CodeInvalidArgument, "task %s has no post-run actions to approve", t.Name)
		}
		hash := duet.PostRunHash(t.PostRun)
		if in.Hash != "" && in.Hash != hash {
			return PostRun{}, duet.Errorf(duet.CodeConflict, "the post-run actions of task %s changed since you reviewed them: review them again", t.Name)
		}
		if _, err := s.d.Store.ApprovePostRun(ctx, c.UserID, t.ID, hash); err != nil {
			return PostRun{}, err
		}
		return s.postRun(ctx, c, t)
	})
}

// ---- case approvals ----

// ApprovalsIn selects the cases to list.
type ApprovalsIn struct {
	TaskID string `json:"taskId,omitempty" jsonschema:"only the cases of this task (id or name)"`
}

// CaseApproval is a case someone else wrote whose steps would call MCP
// tools with the caller's credentials, and whether the caller approved it.
type CaseApproval struct {
	CaseID       string            `json:"caseId"`
	Title        string            `json:"title"`
	Version      int               `json:"version"`
	Author       string            `json:"author"`
	TaskID       string            `json:"taskId"`
	TaskName     string            `json:"taskName"`
	Status       string            `json:"status" jsonschema:"needs approval, approved, or needs approval again (where it can send data changed since)"`
	ApprovedAt   *time.Time        `json:"approvedAt,omitempty"`
	Calls        []ApprovalCall    `json:"calls"`
	Destinations duet.Destinations `json:"destinations"`
}

// ApprovalList is the cases whose calls need the caller's approval.
type ApprovalList struct {
	Cases []CaseApproval `json:"cases"`
}

// Approval statuses of CaseApproval.
const (
	ApprovalNeeded      = "needs approval"
	ApprovalGiven       = "approved"
	ApprovalNeededAgain = "needs approval again: where it can send data changed since you approved this version"
)

// ListApprovals walks the active and draft cases the caller may see (of
// in.TaskID only, when set) that someone else wrote, and returns those with
// calls needing the caller's approval, saying whether the caller approved
// their current version. Returns NOT_FOUND (the task).
func (s *Service) ListApprovals(ctx context.Context, c duet.Caller, in ApprovalsIn) (ApprovalList, error) {
	return govern(ctx, s, c, "listApprovals", in, func(ctx context.Context) (ApprovalList, error) {
		var tasks []*duet.Task
		if in.TaskID != "" {
			t, err := s.task(ctx, c, in.TaskID)
			if err != nil {
				return ApprovalList{}, err
			}
			tasks = append(tasks, t)
		} else {
			for t, err := range duet.Paged(func(cursor string) ([]*duet.Task, string, error) {
				page, next, _, err := s.d.Store.FindTasks(ctx, duet.TaskFilter{Viewer: c.UserID, Cursor: cursor, Limit: 100})
				return page, next, err
			}) {
				if err != nil {
					return ApprovalList{}, err
				}
				tasks = append(tasks, t)
			}
		}
		out := ApprovalList{Cases: []CaseApproval{}}
		for _, t := range tasks {
			for cs, err := range duet.AllCases(ctx, s.d.Store.FindCases, duet.CaseFilter{TaskID: t.ID, IncludeDrafts: true}) {
				if err != nil {
					return ApprovalList{}, err
				}
				if cs.CreatedBy == c.UserID {
					continue
				}
				r, err := s.d.Catalog.ReviewCase(ctx, c.UserID, t, cs)
				if err != nil {
					return ApprovalList{}, err
				}
				if !r.Needed() {
					continue
				}
				ca := CaseApproval{CaseID: cs.ID, Title: cs.Title, Version: cs.Version, Author: cs.CreatedBy, TaskID: t.ID, TaskName: t.Name,
					Calls: []ApprovalCall{}, Destinations: r.Destinations, Status: ApprovalNeeded}
				for _, pc := range r.Calls {
					ca.Calls = append(ca.Calls, ApprovalCall(pc))
				}
				ap, err := s.d.Store.FindCaseApproval(ctx, c.UserID, cs.ID, cs.Version)
				switch {
				case err == nil && ap.Holds(r.DestinationsHash):
					ca.Status, ca.ApprovedAt = ApprovalGiven, &ap.ApprovedAt
				case err == nil:
					ca.Status = ApprovalNeededAgain
				case duet.ErrorCode(err) != duet.CodeNotFound:
					return ApprovalList{}, err
				}
				out.Cases = append(out.Cases, ca)
			}
		}
		return out, nil
	})
}

// RevokeApproval withdraws the caller's approvals of every version of a
// case (withdrawing none is no error).
func (s *Service) RevokeApproval(ctx context.Context, c duet.Caller, caseID string) (Empty, error) {
	return govern(ctx, s, c, "revokeCaseApproval", nil, func(ctx context.Context) (Empty, error) {
		return Empty{}, s.d.Store.RevokeCaseApproval(ctx, c.UserID, caseID)
	})
}

// ---- stop requests ----

// StopRequestsIn selects stop requests.
type StopRequestsIn struct {
	RunID string `json:"runId,omitempty" jsonschema:"only requests to stop this run"`
	All   bool   `json:"all,omitempty" jsonschema:"also decided and expired requests (default: only those waiting)"`
}

// StopRequestList is the requests to stop the caller's runs and the ones
// the caller made, newest first.
type StopRequestList struct {
	Requests []*duet.StopRequest `json:"requests"`
}

// ListStopRequests lists the stop_test_run requests that wait for the
// caller's decision (runs the caller started) and those the caller made.
func (s *Service) ListStopRequests(ctx context.Context, c duet.Caller, in StopRequestsIn) (StopRequestList, error) {
	return govern(ctx, s, c, "listStopRequests", in, func(ctx context.Context) (StopRequestList, error) {
		reqs, err := s.d.Store.FindStopRequests(ctx, duet.StopRequestFilter{User: c.UserID, RunID: in.RunID, Pending: !in.All, Limit: 200})
		return StopRequestList{Requests: nonNil(reqs)}, err
	})
}

// StopDecisionIn is the decision of a run's executor on a stop request.
type StopDecisionIn struct {
	Approve bool `json:"approve" jsonschema:"true stops the run; false declines and the run goes on"`
}

// StopDecision is a decided stop request and the run as it is now.
type StopDecision struct {
	Request *duet.StopRequest `json:"request"`
	Run     RunSummary        `json:"run"`
}

// DecideStop records the caller's decision — the caller must have started
// the run — on a pending stop request; approving stops the run as cancelRun
// does (catalog.DecideStop, audited as run.stop.approve or run.stop.deny).
// Returns NOT_FOUND, PERMISSION_DENIED, APPROVAL_EXPIRED, CONFLICT.
func (s *Service) DecideStop(ctx context.Context, c duet.Caller, requestID string, in StopDecisionIn) (StopDecision, error) {
	req, run, err := s.d.Catalog.DecideStop(ctx, c, requestID, in.Approve)
	if err != nil {
		return StopDecision{}, err
	}
	duet.DiscloseRun(c.UserID, run)
	return StopDecision{Request: req, Run: runSummary(run, "")}, nil
}

// ---- devices ----

// Device is a phone the server's machine sees over adb.
type Device struct {
	Name    string `json:"device" jsonschema:"the name a run's device takes: android:SERIAL"`
	Serial  string `json:"serial"`
	State   string `json:"state" jsonschema:"as adb says: device, unauthorized, offline, ..."`
	Model   string `json:"model,omitempty"`
	Android string `json:"android,omitempty" jsonschema:"the Android version"`
	SDK     string `json:"sdk,omitempty" jsonschema:"the API level"`
	Ready   bool   `json:"ready"`
	Problem string `json:"problem,omitempty" jsonschema:"why it is not ready, and what to do"`
	// InUseBy is the user whose run holds the phone now.
	InUseBy    string     `json:"inUseBy,omitempty"`
	InUseUntil *time.Time `json:"inUseUntil,omitempty"`
}

// DeviceList is the phones runs can use.
type DeviceList struct {
	Devices []Device `json:"devices"`
}

// ListDevices lists the phones adb sees on the machine that executes runs
// (this process's), with the run holding each. Returns UNAVAILABLE when
// adb cannot be run.
func (s *Service) ListDevices(ctx context.Context, c duet.Caller) (DeviceList, error) {
	return govern(ctx, s, c, "listDevices", nil, func(ctx context.Context) (DeviceList, error) {
		out := DeviceList{Devices: []Device{}}
		if s.d.Devices == nil {
			return out, nil
		}
		devs, err := s.d.Devices(ctx)
		if err != nil {
			return DeviceList{}, err
		}
		leases, err := s.d.Store.FindDeviceLeases(ctx)
		if err != nil {
			return DeviceList{}, err
		}
		for _, d := range devs {
			if i := slices.IndexFunc(leases, func(l *duet.DeviceLease) bool { return l.Device == d.Name }); i >= 0 {
				d.InUseBy, d.InUseUntil = leases[i].Owner, &leases[i].ExpiresAt
			}
			out.Devices = append(out.Devices, d)
		}
		return out, nil
	})
}

// ---- generations ----

// GenerationsIn selects past generations.
type GenerationsIn struct {
	TaskID string `json:"taskId,omitempty" jsonschema:"only generations for this task (id or name)"`
	Limit  int    `json:"limit,omitempty" jsonschema:"default 20, at most 200"`
}

// GenerationList is the caller's past generations, newest first.
type GenerationList struct {
	Generations []*duet.Generation `json:"generations"`
}

// ListGenerations lists the caller's past generations (duet generate):
// outcome, turns, tokens, attempts and the case each wrote. Returns
// NOT_FOUND (the task).
func (s *Service) ListGenerations(ctx context.Context, c duet.Caller, in GenerationsIn) (GenerationList, error) {
	return govern(ctx, s, c, "listGenerations", in, func(ctx context.Context) (GenerationList, error) {
		f := duet.GenerationFilter{User: c.UserID, Limit: pageSize(in.Limit, 20, 200)}
		var err error
		if f.TaskID, err = s.taskID(ctx, c, in.TaskID); err != nil {
			return GenerationList{}, err
		}
		gens, err := s.d.Store.FindGenerations(ctx, f)
		return GenerationList{Generations: nonNil(gens)}, err
	})
}

// opsRoutes are the REST routes of the operations above, and of the other
// operations the command line needs beside the console's.
func opsRoutes() []*route {
	return []*route{
		op("GET", Prefix+"/tasks/{taskId}/sources", "listCaseSources", "tasks", "A page of a task's cases, drafts too, with their YAML and compiled steps",
			func(ctx context.Context, s *Service, c duet.Caller, r *http.Request, _ Empty) (TaskCases, error) {
				limit, err := intParam(r, "limit")
				if err != nil {
					return TaskCases{}, err
				}
				return s.CaseSources(ctx, c, r.PathValue("taskId"), r.URL.Query().Get("cursor"), limit)
			}, path("taskId", "the task's id or name"), query("cursor", "nextCursor of the previous page"), queryInt("limit", "page size (default 50)", 1, 200)),
		byID("GET", Prefix+"/tasks/{taskId}/servers", "listTaskServers", "tasks", "The MCP servers a task calls, with their addresses and whether you registered each", "the task's id or name", (*Service).ListTaskServers),
		byID("GET", Prefix+"/tasks/{taskId}/post-run", "getPostRun", "tasks", "A task's post-run actions, and whether your runs may call each (your approval)", "the task's id or name", (*Service).GetPostRun),
		byIDWith("POST", Prefix+"/tasks/{taskId}/post-run/approval", "approvePostRun", "tasks", "Approve the post-run actions of a task someone else wrote, for your runs", "the task's id or name", (*Service).ApprovePostRun),
		op("GET", Prefix+"/approvals", "listApprovals", "tasks", "The cases someone else wrote whose steps would call MCP tools with your credentials, approved or not",
			func(ctx context.Context, s *Service, c duet.Caller, r *http.Request, _ Empty) (ApprovalList, error) {
				return s.ListApprovals(ctx, c, ApprovalsIn{TaskID: r.URL.Query().Get("taskId")})
			}, query("taskId", "only the cases of this task (id or name)")),
		byID("DELETE", Prefix+"/cases/{caseId}/approval", "revokeCaseApproval", "tasks", "Withdraw your approvals of every version of a case", "the case's id", (*Service).RevokeApproval),
		op("GET", Prefix+"/stop-requests", "listStopRequests", "runs", "Requests to stop your runs (yours to decide) and the ones you made, newest first",
			func(ctx context.Context, s *Service, c duet.Caller, r *http.Request, _ Empty) (StopRequestList, error) {
				return s.ListStopRequests(ctx, c, StopRequestsIn{RunID: r.URL.Query().Get("runId"), All: r.URL.Query().Get("all") == "true"})
			}, query("runId", "only requests to stop this run"), param{name: "all", in: "query", typ: "boolean", desc: "also decided and expired requests"}),
		byIDWith("POST", Prefix+"/stop-requests/{requestId}/decision", "decideStop", "runs", "Approve (the run stops) or decline a request to stop a run you started", "the stop request's id", (*Service).DecideStop),
		byIDWith("POST", Prefix+"/servers/{server}/login", "loginServer", "mcp", "Obtain a token for a client-credentials registration (a machine identity) and sync its catalog; a person's OAuth authorization needs `duet server login` on the server's machine", "the server's name or serverKey", (*Service).LoginServer),
		op("GET", Prefix+"/devices", "listDevices", "runs", "The phones the server's machine sees over adb, and the run using each",
			noInput((*Service).ListDevices)),
		op("POST", Prefix+"/generations", "generateCase", "tasks", "Have the test agent write a case of a task, saved as a draft (the server's model, DUET_LLM_*); answers when the generation ends",
			func(ctx context.Context, s *Service, c duet.Caller, r *http.Request, in GenerateIn) (Generated, error) {
				return s.GenerateCase(ctx, c, in, nil)
			}),
		op("GET", Prefix+"/generations", "listGenerations", "tasks", "Your past generations of cases by the test agent: outcome, turns, tokens, the case written",
			func(ctx context.Context, s *Service, c duet.Caller, r *http.Request, _ Empty) (GenerationList, error) {
				limit, err := intParam(r, "limit")
				if err != nil {
					return GenerationList{}, err
				}
				return s.ListGenerations(ctx, c, GenerationsIn{TaskID: r.URL.Query().Get("taskId"), Limit: limit})
			}, query("taskId", "only generations for this task (id or name)"), queryInt("limit", "default 20", 1, 200)),
	}
}

// GenerateIn asks the test agent for a case of a task.
type GenerateIn struct {
	TaskID     string   `json:"taskId" jsonschema:"the task (id or name)"`
	Goal       string   `json:"goal,omitempty" jsonschema:"what the case should prove"`
	Skills     []string `json:"skills,omitempty" jsonschema:"skills to apply (name or owner/name)"`
	Prompt     string   `json:"prompt,omitempty" jsonschema:"a prompt asset to start from"`
	AllowTools []string `json:"allowTools,omitempty" jsonschema:"MCP tools the model may call although not read-only: SERVER/TOOL, SERVER/* or *"`
	AllowFlows []string `json:"allowFlows,omitempty" jsonschema:"FROM:TO pairs of your MCP servers whose data may pass from one to the other"`
	MaxTurns   int      `json:"maxTurns,omitempty" jsonschema:"most model answers (default 12)"`
	MaxTokens  int      `json:"maxTokens,omitempty" jsonschema:"most tokens in all (default 120000)"`
	TimeoutMs  int64    `json:"timeoutMs,omitempty" jsonschema:"wall-clock limit (default 5 minutes, at most 30)"`
	MaxRepairs int      `json:"maxRepairs,omitempty" jsonschema:"drafts sent back with compile errors before giving up (default 3; -1 none)"`
}

// Generated is what a generation did: the draft case it saved (none when
// it failed: Error says why), the record of the generation, and what the
// agent withheld from the model or refused.
type Generated struct {
	Case       *duet.Case       `json:"case,omitempty"`
	Generation *duet.Generation `json:"generation,omitempty"`
	Flagged    []scan.Finding   `json:"flagged"`
	Refused    []Refusal        `json:"refused"`
	Error      *ErrorBody       `json:"error,omitempty" jsonschema:"why the generation failed, when it did"`
}

// Refusal is a tool call of the model the agent refused.
type Refusal struct {
	Tool   string `json:"tool"`
	Reason string `json:"reason"`
}

// Generator runs the test agent for user on task (app: the agent of this
// process's DUET_LLM_* settings), sending progress lines to progress.
type Generator func(ctx context.Context, user string, task *duet.Task, in GenerateIn, progress func(string)) (Generated, error)

// maxGeneration bounds a generation's time limit.
const maxGeneration = 30 * time.Minute

// GenerateCase has the test agent write one case of a task the caller may
// see, saved as a draft (docs/agent.md); progress, when not nil, receives
// the agent's progress lines. A generation that ran and failed is not an
// error of the operation: Generated.Error says why, beside its record.
// Returns NOT_FOUND, INVALID_ARGUMENT, LLM_NOT_CONFIGURED.
func (s *Service) GenerateCase(ctx context.Context, c duet.Caller, in GenerateIn, progress func(string)) (Generated, error) {
	limit := time.Duration(in.TimeoutMs) * time.Millisecond
	if limit <= 0 {
		limit = 5 * time.Minute
	}
	var out Generated
	b, _ := jsonMarshal(in)
	err := s.d.Catalog.Govern(ctx, catalog.Op{Caller: c, Method: "generateCase", ArgBytes: len(b), Timeout: limit + time.Minute}, func(ctx context.Context) (int, error) {
		if in.TimeoutMs < 0 || limit > maxGeneration {
			return 0, duet.Errorf(duet.CodeInvalidArgument, "timeoutMs: at most %s", maxGeneration)
		}
		if s.d.Generate == nil {
			return 0, duet.Errorf(duet.CodeLLMNotConfigured, "this Duet has no test agent")
		}
		t, err := s.task(ctx, c, in.TaskID)
		if err != nil {
			return 0, err
		}
		if progress == nil {
			progress = func(string) {}
		}
		in.TimeoutMs = limit.Milliseconds()
		if out, err = s.d.Generate(ctx, c.UserID, t, in, progress); err != nil {
			return 0, err
		}
		out.Flagged = nonNil(out.Flagged)
		out.Refused = nonNil(out.Refused)
		b, _ := jsonMarshal(out)
		return len(b), nil
	})
	return out, err
}

// ---- the servers a task calls ----

// TaskServer is an MCP server a task's cases or post-run actions call.
type TaskServer struct {
	ServerKey string `json:"serverKey"`
	Name      string `json:"name" jsonschema:"the name its author gave it"`
	URL       string `json:"url,omitempty" jsonschema:"its address, from its author's registration (absent when the author no longer has one)"`
	Author    string `json:"author" jsonschema:"who wrote the calls"`
	// RegisteredAs is the caller's own registration of the server; a run
	// the caller starts calls it with those credentials.
	RegisteredAs string `json:"registeredAs,omitempty" jsonschema:"the name of your registration of it; absent: you have not registered it, and the calls of your runs fail with MCP_SERVER_NOT_CONFIGURED"`
}

// TaskServers are the MCP servers a task calls.
type TaskServers struct {
	TaskID   string       `json:"taskId"`
	TaskName string       `json:"taskName"`
	Servers  []TaskServer `json:"servers"`
}

// ListTaskServers lists the MCP servers a task the caller can see calls
// (its active and draft cases' mcpCall steps and its post-run actions),
// each with its address as its author registered it — never a credential —
// and whether the caller registered it too: what a sharee needs to
// register them (`duet server add`). Returns NOT_FOUND.
func (s *Service) ListTaskServers(ctx context.Context, c duet.Caller, taskRef string) (TaskServers, error) {
	return govern(ctx, s, c, "listTaskServers", nil, func(ctx context.Context) (TaskServers, error) {
		t, err := s.task(ctx, c, taskRef)
		if err != nil {
			return TaskServers{}, err
		}
		out := TaskServers{TaskID: t.ID, TaskName: t.Name, Servers: []TaskServer{}}
		seen := map[string]bool{}
		add := func(key, name, author string) {
			if key == "" || seen[key] {
				return
			}
			seen[key] = true
			out.Servers = append(out.Servers, TaskServer{ServerKey: key, Name: name, Author: author})
		}
		for cs, err := range duet.AllCases(ctx, s.d.Store.FindCases, duet.CaseFilter{TaskID: t.ID, IncludeDrafts: true}) {
			if err != nil {
				return TaskServers{}, err
			}
			for _, st := range cs.Steps {
				if st.MCP != nil {
					add(st.MCP.ServerKey, st.MCP.ServerName, cs.CreatedBy)
				}
			}
		}
		for _, a := range t.PostRun {
			add(a.ServerKey, a.ServerName, t.PostRunBy)
		}
		if s.d.MCP == nil {
			return out, nil
		}
		mine, err := s.d.MCP.Servers(ctx, c.UserID)
		if err != nil {
			return TaskServers{}, err
		}
		for i := range out.Servers {
			ts := &out.Servers[i]
			if j := slices.IndexFunc(mine, func(m *duet.MCPServer) bool { return m.ServerKey == ts.ServerKey }); j >= 0 {
				ts.RegisteredAs, ts.URL = mine[j].Name, mine[j].URL
				continue
			}
			switch reg, _, err := s.d.MCP.Server(ctx, ts.Author, ts.ServerKey); {
			case err == nil:
				ts.URL = reg.URL
			case duet.ErrorCode(err) != duet.CodeNotFound:
				return TaskServers{}, err
			}
		}
		return out, nil
	})
}
