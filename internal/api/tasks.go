package api

import (
	"context"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/catalog"
)

// ListTasks lists the tasks the caller may see (list_test_tasks).
func (s *Service) ListTasks(ctx context.Context, c duet.Caller, in catalog.ListTasksIn) (catalog.ListTasksOut, error) {
	return tool[catalog.ListTasksOut](ctx, s, c, catalog.ToolListTasks, in)
}

// GetTask returns one task (get_test_task). Returns NOT_FOUND.
func (s *Service) GetTask(ctx context.Context, c duet.Caller, taskID string) (catalog.GetTaskOut, error) {
	return tool[catalog.GetTaskOut](ctx, s, c, catalog.ToolGetTask, catalog.GetTaskIn{TaskID: taskID})
}

// ListCases lists the cases of a task (list_test_cases).
func (s *Service) ListCases(ctx context.Context, c duet.Caller, in catalog.ListCasesIn) (catalog.ListCasesOut, error) {
	return tool[catalog.ListCasesOut](ctx, s, c, catalog.ToolListCases, in)
}

// GetCase returns a case with its YAML and steps (get_test_case).
func (s *Service) GetCase(ctx context.Context, c duet.Caller, caseID string) (catalog.GetCaseOut, error) {
	return tool[catalog.GetCaseOut](ctx, s, c, catalog.ToolGetCase, catalog.GetCaseIn{CaseID: caseID})
}

// TaskCases is a page of a task's cases with their YAML and steps.
type TaskCases struct {
	TaskID     string             `json:"taskId"`
	Cases      []catalog.CaseView `json:"cases"`
	Total      int                `json:"total"`
	NextCursor string             `json:"nextCursor,omitempty"`
}

// CaseSources returns a page of a task's cases (drafts too) with their
// YAML and compiled steps, in one governed operation (the console's task
// page). Returns NOT_FOUND, INVALID_ARGUMENT (a bad cursor).
func (s *Service) CaseSources(ctx context.Context, c duet.Caller, taskID, cursor string, limit int) (TaskCases, error) {
	return govern(ctx, s, c, "listCaseSources", nil, func(ctx context.Context) (TaskCases, error) {
		t, err := s.task(ctx, c, taskID)
		if err != nil {
			return TaskCases{}, err
		}
		cases, next, total, err := s.d.Store.FindCases(ctx, duet.CaseFilter{TaskID: t.ID, IncludeDrafts: true, Cursor: cursor, Limit: limit})
		if err != nil {
			return TaskCases{}, err
		}
		out := TaskCases{TaskID: t.ID, Cases: make([]catalog.CaseView, 0, len(cases)), Total: total, NextCursor: next}
		for _, cs := range cases {
			out.Cases = append(out.Cases, catalog.CaseView{CaseSummary: catalog.CaseSummary{ID: cs.ID, Key: cs.Key, Title: cs.Title, Version: cs.Version,
				Status: string(cs.Status), StepCount: len(cs.Steps), UpdatedAt: cs.UpdatedAt.UTC().Format(time.RFC3339Nano), CreatedBy: cs.CreatedBy}, TaskID: cs.TaskID, Source: cs.Source, Steps: nonNil(cs.Steps)})
		}
		return out, nil
	})
}

// MaxSuiteBytes bounds the YAML of one suite applied through the API.
const MaxSuiteBytes = 1 << 20

// ApplyIn is a suite to apply.
type ApplyIn struct {
	Source  string `json:"source" jsonschema:"the suite, in the declarative YAML format (docs/suite-format.md)"`
	BaseURL string `json:"baseUrl,omitempty" jsonschema:"overrides the task's baseURL"`
	// Name is the suite's file name, for the compiler's messages
	// (FILE:LINE:COL); default suite.yaml.
	Name   string `json:"name,omitempty" jsonschema:"the suite's file name, which the compiler's messages name (FILE:LINE:COL); default suite.yaml"`
	DryRun bool   `json:"dryRun,omitempty" jsonschema:"compile only: nothing is applied; the result names the task and its cases, with no actions"`
	// Files is the suite's folder, where its upload steps read their
	// files: only in this process (duet apply); a suite sent over REST
	// has none, and its upload steps give their files inline.
	Files fs.FS `json:"-"`
}

// ApplySuite compiles a suite as the caller writes it and creates or
// updates its task and cases, owned by the caller. Returns
// INVALID_ARGUMENT (with the compiler's messages), TOO_LARGE.
func (s *Service) ApplySuite(ctx context.Context, c duet.Caller, in ApplyIn) (*duet.ApplyResult, error) {
	return govern(ctx, s, c, "applySuite", in, func(ctx context.Context) (*duet.ApplyResult, error) {
		if strings.TrimSpace(in.Source) == "" {
			return nil, duet.Errorf(duet.CodeInvalidArgument, "the suite is empty")
		}
		if len(in.Source) > MaxSuiteBytes {
			return nil, duet.Errorf(duet.CodeTooLarge, "the suite is %d bytes; the limit is %d", len(in.Source), MaxSuiteBytes)
		}
		name := strings.TrimSpace(in.Name)
		if name == "" {
			name = "suite.yaml"
		}
		if len(name) > 256 || strings.ContainsFunc(name, unicode.IsControl) {
			return nil, duet.Errorf(duet.CodeInvalidArgument, "name: a file name of at most 256 characters, on one line")
		}
		suite, err := s.d.Compile(ctx, c.UserID, []byte(in.Source), name, in.Files)
		if err != nil {
			if duet.ErrorCode(err) == duet.CodeInternal {
				return nil, err
			}
			return nil, duet.WrapError(duet.CodeInvalidArgument, err, "%s", duet.ErrorMessage(err))
		}
		if in.BaseURL != "" {
			suite.Task.BaseURL = strings.TrimRight(in.BaseURL, "/")
		}
		if in.DryRun {
			out := &duet.ApplyResult{Task: &duet.Task{Name: suite.Task.Name, Description: suite.Task.Description, BaseURL: suite.Task.BaseURL, Owner: c.UserID},
				Cases: []duet.ApplyCaseResult{}}
			for _, cs := range suite.Cases {
				out.Cases = append(out.Cases, duet.ApplyCaseResult{Key: cs.Key})
			}
			return out, nil
		}
		for _, sc := range suite.Schedules {
			sc.TokenID = c.TokenID // revoking it pauses the schedule
		}
		suite.Source = &duet.SuiteSource{Name: name, Source: in.Source} // the suite editor opens it (GetSuiteSource)
		res, err := s.d.Store.ApplySuite(ctx, c.UserID, suite)
		if err == nil && len(suite.Schedules) > 0 {
			s.scheduleChanged()
		}
		return res, err
	})
}

// ShareIn names whom to share with.
type ShareIn struct {
	With string `json:"with" jsonschema:"a user id, or team:NAME for every member of a team"`
}

// Sharing is who a task is shared with.
type Sharing struct {
	TaskID     string   `json:"taskId"`
	SharedWith []string `json:"sharedWith"`
}

func (s *Service) sharing(ctx context.Context, c duet.Caller, taskID string) (Sharing, error) {
	t, err := s.d.Store.FindTaskByID(ctx, c.UserID, taskID)
	if err != nil {
		return Sharing{}, err
	}
	return Sharing{TaskID: t.ID, SharedWith: nonNil(t.SharedWith)}, nil
}

// ShareTask shares the caller's task with a user or a team. Returns
// NOT_FOUND (also for a task the caller does not own), INVALID_ARGUMENT.
func (s *Service) ShareTask(ctx context.Context, c duet.Caller, taskID string, in ShareIn) (Sharing, error) {
	return govern(ctx, s, c, "shareTask", in, func(ctx context.Context) (Sharing, error) {
		with := strings.TrimSpace(in.With)
		if err := validPrincipal(with); err != nil {
			return Sharing{}, err
		}
		return s.changeSharing(ctx, c, taskID, with, s.d.Store.ShareTask)
	})
}

// UnshareTask stops sharing the caller's task with a user or team.
// Returns NOT_FOUND.
func (s *Service) UnshareTask(ctx context.Context, c duet.Caller, taskID, with string) (Sharing, error) {
	return govern(ctx, s, c, "unshareTask", ShareIn{With: with}, func(ctx context.Context) (Sharing, error) {
		return s.changeSharing(ctx, c, taskID, with, s.d.Store.UnshareTask)
	})
}

// changeSharing makes change (Store.ShareTask, Store.UnshareTask) to the
// sharing of the caller's task with a user or team, and returns the
// task's sharing as it is then.
func (s *Service) changeSharing(ctx context.Context, c duet.Caller, taskID, with string, change func(ctx context.Context, user, taskID, with string) error) (Sharing, error) {
	t, err := s.task(ctx, c, taskID)
	if err != nil {
		return Sharing{}, err
	}
	if err := change(ctx, c.UserID, t.ID, with); err != nil {
		return Sharing{}, err
	}
	return s.sharing(ctx, c, t.ID)
}

// validPrincipal checks a user id or "team:NAME" (duet.ValidPrincipal, the
// one rule; the store checks the team exists). Returns INVALID_ARGUMENT.
func validPrincipal(p string) error {
	if err := duet.ValidPrincipal(p); err != nil {
		return duet.Errorf(duet.CodeInvalidArgument, "share with: %s", duet.ErrorMessage(err))
	}
	return nil
}

// TransferIn names the new owner of a task.
type TransferIn struct {
	To string `json:"to" jsonschema:"the new owner: a user id or team:NAME"`
}

// TransferTask hands the caller's task to another user or a team. Returns
// NOT_FOUND, INVALID_ARGUMENT.
func (s *Service) TransferTask(ctx context.Context, c duet.Caller, taskID string, in TransferIn) (*duet.TaskTransfer, error) {
	return govern(ctx, s, c, "transferTask", in, func(ctx context.Context) (*duet.TaskTransfer, error) {
		to := strings.TrimSpace(in.To)
		if err := validPrincipal(to); err != nil {
			return nil, err
		}
		t, err := s.task(ctx, c, taskID)
		if err != nil {
			return nil, err
		}
		return s.d.Store.TransferTask(ctx, c.UserID, t.ID, to)
	})
}

// Transfers is a task's transfer history.
type Transfers struct {
	Transfers []*duet.TaskTransfer `json:"transfers"`
}

// ListTransfers returns the transfers of a task the caller may see.
func (s *Service) ListTransfers(ctx context.Context, c duet.Caller, taskID string) (Transfers, error) {
	return govern(ctx, s, c, "listTransfers", nil, func(ctx context.Context) (Transfers, error) {
		t, err := s.task(ctx, c, taskID)
		if err != nil {
			return Transfers{}, err
		}
		tr, err := s.d.Store.FindTaskTransfers(ctx, c.UserID, t.ID)
		return Transfers{Transfers: nonNil(tr)}, err
	})
}

// ---- trends ----

// TrendPoint is one execution of a case in a task's history.
type TrendPoint struct {
	RunID      string         `json:"runId"`
	At         time.Time      `json:"at" jsonschema:"when the run was created"`
	Version    int            `json:"version" jsonschema:"the case version that ran"`
	Status     duet.RunStatus `json:"status"`
	DurationMs int64          `json:"durationMs"`
}

// CaseTrend is the history of one case over the runs of the window.
type CaseTrend struct {
	CaseID   string       `json:"caseId"`
	Key      string       `json:"key"`
	Title    string       `json:"title"`
	Runs     int          `json:"runs" jsonschema:"finished executions in the window"`
	Passed   int          `json:"passed"`
	PassRate float64      `json:"passRate" jsonschema:"passed / finished, 0 to 1"`
	Flaky    bool         `json:"flaky" jsonschema:"the case passed and failed at the same version"`
	FlakyAt  []int        `json:"flakyVersions,omitempty" jsonschema:"the versions that both passed and failed"`
	Points   []TrendPoint `json:"points" jsonschema:"oldest first"`
}

// RunTrend is one run of the window: its pass rate and duration.
type RunTrend struct {
	RunID      string         `json:"runId"`
	At         time.Time      `json:"at"`
	Status     duet.RunStatus `json:"status"`
	Cases      int            `json:"cases"`
	Passed     int            `json:"passed"`
	PassRate   float64        `json:"passRate"`
	DurationMs int64          `json:"durationMs"`
}

// Trends is a task's run history.
type Trends struct {
	TaskID string      `json:"taskId"`
	Runs   []RunTrend  `json:"runs" jsonschema:"the finished runs of the window, oldest first"`
	Cases  []CaseTrend `json:"cases"`
	Flaky  int         `json:"flaky" jsonschema:"cases flagged flaky"`
	// Vitals are the page-speed values assertPerformance steps measured,
	// per metric, per run of the window that measured it.
	Vitals []VitalTrend `json:"vitals"`
}

// VitalTrend is one page-speed metric over the runs.
type VitalTrend struct {
	Name   string       `json:"name" jsonschema:"lcp, fcp, cls, inp, ttfb, domContentLoaded or load"`
	Unit   string       `json:"unit" jsonschema:"ms, or empty for cls"`
	Points []VitalPoint `json:"points" jsonschema:"oldest first"`
}

// VitalPoint is a metric's value in one run: the median of the values its
// steps measured.
type VitalPoint struct {
	RunID   string    `json:"runId"`
	At      time.Time `json:"at"`
	Value   float64   `json:"value"`
	Samples int       `json:"samples" jsonschema:"how many steps measured it"`
}

// vitalOrder is the order of the metrics in Trends.Vitals.
var vitalOrder = []string{"lcp", "cls", "inp", "fcp", "ttfb", "domContentLoaded", "load"}

// vitals gathers the metrics of runs (oldest first) per metric and run.
func vitals(runs []*duet.Run, ms []*duet.Metric) []VitalTrend {
	values := map[string]map[string][]float64{} // name → run → values
	for _, m := range ms {
		if values[m.Name] == nil {
			values[m.Name] = map[string][]float64{}
		}
		values[m.Name][m.RunID] = append(values[m.Name][m.RunID], m.Value)
	}
	out := []VitalTrend{}
	for _, name := range vitalOrder {
		byRun := values[name]
		if byRun == nil {
			continue
		}
		vt := VitalTrend{Name: name, Unit: "ms", Points: []VitalPoint{}}
		if name == "cls" {
			vt.Unit = ""
		}
		for _, r := range runs {
			vs := byRun[r.ID]
			if len(vs) == 0 {
				continue
			}
			slices.Sort(vs)
			med := vs[len(vs)/2]
			if len(vs)%2 == 0 {
				med = (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2
			}
			vt.Points = append(vt.Points, VitalPoint{RunID: r.ID, At: r.CreatedAt, Value: med, Samples: len(vs)})
		}
		out = append(out, vt)
	}
	return out
}

// TrendsIn selects the window.
type TrendsIn struct {
	Runs int `json:"runs,omitempty" jsonschema:"how many of the latest runs; default 30, at most 100"`
}

// Trends returns the history of a task's latest finished runs: pass rate
// and duration per run and per case, and the flaky cases — those that
// passed and failed at the same version. Returns NOT_FOUND.
func (s *Service) Trends(ctx context.Context, c duet.Caller, taskID string, in TrendsIn) (Trends, error) {
	return govern(ctx, s, c, "getTrends", in, func(ctx context.Context) (Trends, error) {
		n := pageSize(in.Runs, 30, maxTrendRuns)
		task, err := s.task(ctx, c, taskID)
		if err != nil {
			return Trends{}, err
		}
		out := Trends{TaskID: task.ID, Runs: []RunTrend{}, Cases: []CaseTrend{}}
		var runs []*duet.Run
		for r, err := range duet.Paged(func(cursor string) ([]*duet.Run, string, error) {
			return s.d.Store.FindRuns(ctx, duet.RunFilter{Viewer: c.UserID, TaskID: task.ID, Cursor: cursor, Limit: 100})
		}) {
			if err != nil {
				return Trends{}, err
			}
			if !r.Status.Final() || r.Status == duet.StatusCancelled {
				continue
			}
			if runs = append(runs, r); len(runs) == n { // n ≥ 1 (pageSize)
				break
			}
		}
		slices.Reverse(runs)
		byCase := map[string]*CaseTrend{}
		var order []string
		type vk struct {
			id      string
			version int
		}
		seen := map[vk][2]bool{} // passed, failed
		for _, r := range runs {
			rt := RunTrend{RunID: r.ID, At: r.CreatedAt, Status: r.Status, Cases: r.Totals.Cases, Passed: r.Totals.Passed}
			if fin := r.Totals.Passed + r.Totals.Failed + r.Totals.Error; fin > 0 {
				rt.PassRate = float64(r.Totals.Passed) / float64(fin)
			}
			if r.StartedAt != nil && r.FinishedAt != nil {
				rt.DurationMs = r.FinishedAt.Sub(*r.StartedAt).Milliseconds()
			}
			out.Runs = append(out.Runs, rt)
			cur := ""
			for {
				execs, next, err := s.d.Store.FindExecutionPage(ctx, duet.ExecutionFilter{RunID: r.ID, Cursor: cur, Limit: 1000})
				if err != nil {
					return Trends{}, err
				}
				for _, x := range execs {
					ct := byCase[x.CaseID]
					if ct == nil {
						ct = &CaseTrend{CaseID: x.CaseID, Key: x.CaseKey, Points: []TrendPoint{}}
						byCase[x.CaseID] = ct
						order = append(order, x.CaseID)
					}
					ct.Title = x.CaseTitle
					p := TrendPoint{RunID: r.ID, At: r.CreatedAt, Version: x.CaseVersion, Status: x.Status}
					if x.StartedAt != nil && x.FinishedAt != nil {
						p.DurationMs = x.FinishedAt.Sub(*x.StartedAt).Milliseconds()
					}
					ct.Points = append(ct.Points, p)
					switch x.Status {
					case duet.StatusPassed:
						ct.Runs++
						ct.Passed++
						v := seen[vk{x.CaseID, x.CaseVersion}]
						v[0] = true
						seen[vk{x.CaseID, x.CaseVersion}] = v
					case duet.StatusFlaky:
						// A pass (the run's verdict counts it so) that
						// failed first: the version is flaky.
						ct.Runs++
						ct.Passed++
						seen[vk{x.CaseID, x.CaseVersion}] = [2]bool{true, true}
					case duet.StatusFailed, duet.StatusError:
						ct.Runs++
						v := seen[vk{x.CaseID, x.CaseVersion}]
						v[1] = true
						seen[vk{x.CaseID, x.CaseVersion}] = v
					}
				}
				if next == "" {
					break
				}
				cur = next
			}
		}
		for _, id := range order {
			ct := byCase[id]
			if ct.Runs > 0 {
				ct.PassRate = float64(ct.Passed) / float64(ct.Runs)
			}
			versions := map[int]bool{}
			for _, p := range ct.Points {
				versions[p.Version] = true
			}
			for _, v := range slices.Sorted(maps.Keys(versions)) {
				if pf := seen[vk{id, v}]; pf[0] && pf[1] {
					ct.Flaky = true
					ct.FlakyAt = append(ct.FlakyAt, v)
				}
			}
			if ct.Flaky {
				out.Flaky++
			}
			out.Cases = append(out.Cases, *ct)
		}
		ids := make([]string, len(runs))
		for i, r := range runs {
			ids[i] = r.ID
		}
		ms, err := s.d.Store.FindMetrics(ctx, ids)
		if err != nil {
			return Trends{}, err
		}
		out.Vitals = vitals(runs, ms)
		return out, nil
	})
}

// ---- approvals ----

// Approval is the caller's consent to one version of a case someone else
// wrote: with it, that version's steps may call MCP tools with the caller's
// credentials when the caller runs it, and send what they obtain to the
// places shown (Destinations) — while those stay the same.
type Approval struct {
	CaseID  string `json:"caseId"`
	Version int    `json:"version" jsonschema:"the case's current version"`
	Author  string `json:"author" jsonschema:"who wrote this version"`
	Needed  bool   `json:"needed" jsonschema:"true when someone else wrote it and a step calls an MCP tool with your credentials"`
	// Calls are the steps that would call a tool with your credentials.
	Calls []ApprovalCall `json:"calls" jsonschema:"the steps that call an MCP tool with your credentials"`
	// Destinations are every place the version can send data to now.
	Destinations     duet.Destinations  `json:"destinations" jsonschema:"every place this version can send data to: hosts, MCP tools, post-run actions"`
	DestinationsHash string             `json:"destinationsHash" jsonschema:"identifies the destinations: pass it when you approve, to approve exactly what you reviewed"`
	Approved         bool               `json:"approved" jsonschema:"true when your approval covers this version and these destinations"`
	Approval         *duet.CaseApproval `json:"approval,omitempty" jsonschema:"your approval of this version, if you gave it (for other destinations when approved is false)"`
}

// ApprovalCall is a step that calls an MCP tool with the caller's
// credentials.
type ApprovalCall struct {
	Step       int    `json:"step" jsonschema:"from 1"`
	Name       string `json:"name"`
	ServerKey  string `json:"serverKey"`
	ServerName string `json:"serverName,omitempty" jsonschema:"as the author wrote it"`
	Tool       string `json:"tool"`
}

// ApprovalIn names the version the caller reviewed, and the destinations.
type ApprovalIn struct {
	Version          int    `json:"version" jsonschema:"the version you reviewed: approving fails with CONFLICT if the case changed since"`
	DestinationsHash string `json:"destinationsHash,omitempty" jsonschema:"the destinationsHash you reviewed: approving fails with CONFLICT if where the case can send data changed since"`
}

// review returns the current version of caseID and what it asks of c.
func (s *Service) review(ctx context.Context, c duet.Caller, caseID string) (*duet.Case, *catalog.CaseReview, error) {
	cs, err := s.d.Store.FindCaseByID(ctx, c.UserID, caseID)
	if err != nil {
		return nil, nil, err
	}
	task, err := s.d.Store.FindTaskByID(ctx, c.UserID, cs.TaskID)
	if err != nil {
		return nil, nil, err
	}
	r, err := s.d.Catalog.ReviewCase(ctx, c.UserID, task, cs)
	if err != nil {
		return nil, nil, err
	}
	return cs, r, nil
}

func (s *Service) approval(ctx context.Context, c duet.Caller, caseID string) (Approval, error) {
	cs, r, err := s.review(ctx, c, caseID)
	if err != nil {
		return Approval{}, err
	}
	out := Approval{CaseID: cs.ID, Version: cs.Version, Author: cs.CreatedBy, Needed: cs.CreatedBy != c.UserID && r.Needed(),
		Calls: []ApprovalCall{}, Destinations: r.Destinations, DestinationsHash: r.DestinationsHash}
	for _, pc := range r.Calls {
		out.Calls = append(out.Calls, ApprovalCall(pc))
	}
	if a, err := s.d.Store.FindCaseApproval(ctx, c.UserID, cs.ID, cs.Version); err == nil {
		out.Approval, out.Approved = a, a.Holds(r.DestinationsHash)
	} else if duet.ErrorCode(err) != duet.CodeNotFound {
		return Approval{}, err
	}
	return out, nil
}

// GetApproval says whether the caller approved the current version of a
// case. Returns NOT_FOUND.
func (s *Service) GetApproval(ctx context.Context, c duet.Caller, caseID string) (Approval, error) {
	return govern(ctx, s, c, "getCaseApproval", nil, func(ctx context.Context) (Approval, error) {
		return s.approval(ctx, c, caseID)
	})
}

// ApproveCase records the caller's approval of the version of a case they
// reviewed, for the places it can send data to now (the ones they reviewed,
// when in names them). Returns NOT_FOUND, CONFLICT (the case or its
// destinations changed since), INVALID_ARGUMENT.
func (s *Service) ApproveCase(ctx context.Context, c duet.Caller, caseID string, in ApprovalIn) (Approval, error) {
	return govern(ctx, s, c, "approveCase", in, func(ctx context.Context) (Approval, error) {
		_, r, err := s.review(ctx, c, caseID)
		if err != nil {
			return Approval{}, err
		}
		if in.DestinationsHash != "" && in.DestinationsHash != r.DestinationsHash {
			return Approval{}, duet.Errorf(duet.CodeConflict, "where case %s can send data changed since you reviewed it (the task's base URL or its post-run actions): review it again before approving", caseID)
		}
		if err := s.d.Store.ApproveCase(ctx, &duet.CaseApproval{User: c.UserID, CaseID: caseID, Version: in.Version, DestinationsHash: r.DestinationsHash}); err != nil {
			return Approval{}, err
		}
		return s.approval(ctx, c, caseID)
	})
}
