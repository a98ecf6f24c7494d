package catalog

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/schedule"
	"github.com/duet-test/duet/internal/trace"
)

// Tool names of the product catalog.
const (
	ToolListTasks          = "list_test_tasks"
	ToolGetTask            = "get_test_task"
	ToolListCases          = "list_test_cases"
	ToolGetCase            = "get_test_case"
	ToolGetRun             = "get_test_run"
	ToolGetExecutionResult = "get_execution_result"
	ToolStartRun           = "start_test_run"
)

func ptr[T any](v T) *T { return &v }

func limitProp(s *jsonschema.Schema, def, max int) {
	p := s.Properties["limit"]
	p.Minimum, p.Maximum, p.Default = ptr(1.0), ptr(float64(max)), json.RawMessage(fmt.Sprint(def))
}

func minLen(s *jsonschema.Schema, prop string, n int) {
	s.Properties[prop].MinLength = ptr(n)
}

var readOnly = Annotations{ReadOnly: true, Idempotent: true}

// Bounds of the tools' arguments. Every string argument has a maxLength and
// every array a maxItems, so that oversized input is refused as
// INVALID_ARGUMENT by input validation, before a tool does any work.
const (
	maxIDLen     = 100  // taskId, caseId, runId, executionId and the items of caseIds
	maxTextLen   = 1024 // any other string without its own bound
	maxListItems = 1000 // any array
)

// maxDeviceLen bounds a device name: a preset, android:SERIAL, or
// PRESET@ a remote browser's DevTools address — Chrome's own
// ws://HOST:PORT/devtools/browser/UUID is longer than 64 characters.
const maxDeviceLen = 512

// maxLens are the bounds of string arguments by name.
var maxLens = map[string]int{"query": 200, "owner": 128, "cursor": 256, "idempotencyKey": 200, "device": maxDeviceLen, "environment": 64}

// bounded returns adjust followed by the bounds of every argument.
func bounded(adjust func(in, out *jsonschema.Schema)) func(in, out *jsonschema.Schema) {
	return func(in, out *jsonschema.Schema) {
		if adjust != nil {
			adjust(in, out)
		}
		for name, p := range in.Properties {
			boundArg(name, p)
		}
	}
}

func boundArg(name string, p *jsonschema.Schema) {
	switch {
	case hasType(p, "string") && p.MaxLength == nil:
		n := maxLens[name]
		if n == 0 && strings.HasSuffix(name, "Id") {
			n = maxIDLen
		}
		if n == 0 {
			n = maxTextLen
		}
		p.MaxLength = ptr(n)
	case hasType(p, "array"):
		if p.MaxItems == nil {
			p.MaxItems = ptr(maxListItems)
		}
		if p.Items != nil && hasType(p.Items, "string") && p.Items.MaxLength == nil {
			p.Items.MaxLength = ptr(maxIDLen)
		}
	}
}

func hasType(s *jsonschema.Schema, t string) bool {
	return s.Type == t || slices.Contains(s.Types, t)
}

func productTools() []*Tool {
	return []*Tool{
		Define(ToolListTasks, "List test tasks",
			"List the test tasks you can access: the ones you own and the ones shared with you. "+
				"A task is a web product under test (name, base URL) with its test cases. "+
				"Filter by a text query or by owner; page with cursor/nextCursor. Read-only.",
			readOnly, bounded(func(in, out *jsonschema.Schema) { limitProp(in, 20, 100) }), listTasks),
		Define(ToolGetTask, "Get a test task",
			"Get one test task by id: its description, base URL, owner, who it is shared with, how many cases it has and its latest run. "+
				"Returns NOT_FOUND for a task that does not exist or that you cannot access. Read-only.",
			readOnly, bounded(func(in, out *jsonschema.Schema) { minLen(in, "taskId", 1) }), getTask),
		Define(ToolListCases, "List test cases",
			"List the test cases of a task (title, key, version, number of steps), in key order; page with cursor/nextCursor. "+
				"Set includeDrafts to see generated cases not yet accepted. Read-only.",
			readOnly, bounded(func(in, out *jsonschema.Schema) { minLen(in, "taskId", 1); limitProp(in, 50, 200) }), listCases),
		Define(ToolGetCase, "Get a test case",
			"Get one test case by id: its declarative source (YAML) and the compiled steps the engine runs. Read-only.",
			readOnly, bounded(func(in, out *jsonschema.Schema) { minLen(in, "caseId", 1) }), getCase),
		Define(ToolGetRun, "Get a test run",
			"Get the progress or outcome of a test run by runId: its status (queued, running, passed, failed, error, cancelled), "+
				"counts per status, and one line per case execution with its executionId, a page at a time (page with cursor/nextCursor). "+
				"Poll it until done is true. Error messages are shown only to the person who started the run; others see the codes. Read-only.",
			readOnly, bounded(func(in, out *jsonschema.Schema) { minLen(in, "runId", 1); limitProp(in, 200, 1000) }), getRun),
		Define(ToolGetExecutionResult, "Get an execution result",
			"Get the result of one case execution within a run (executionId from get_test_run): every step with its status, "+
				"duration, saved output and error code, and the variables saved (secrets redacted). The run used its executor's "+
				"credentials, so outputs, variables and error messages are shown only to that person; others (disclosure: restricted) "+
				"see statuses, timings and error codes. Read-only.",
			readOnly, bounded(func(in, out *jsonschema.Schema) { minLen(in, "executionId", 1) }), getExecution),
		Define(ToolStartRun, "Start a test run",
			"Start running a task's test cases asynchronously and return a runId at once; follow it with get_test_run. "+
				"Runs all active cases unless caseIds names some. The run executes as you: MCP calls inside cases use your own "+
				"registered servers and credentials. idempotencyKey is required: retrying with the same key and the same arguments "+
				"returns the first result (replayed: true) instead of starting another run; the same key with different arguments "+
				"fails with IDEMPOTENCY_CONFLICT. In a case someone else wrote, a step that calls a tool with your credentials "+
				"(read-only ones too) fails with APPROVAL_REQUIRED until you approve that version of the case and the places it can "+
				"send data to: a client that can answer "+
				"an elicitation is asked for that approval before the run starts; otherwise approve with duet case approve. "+
				"With a progress token (_meta.progressToken) the call stays open instead: it reports progress (cases done of "+
				"the total, the case and step running) and answers when the run ends, with its result.",
			Annotations{Idempotent: true}, bounded(func(in, out *jsonschema.Schema) {
				minLen(in, "taskId", 1)
				k := in.Properties["idempotencyKey"]
				k.MinLength, k.MaxLength = ptr(1), ptr(200)
			}), startRun).streaming().WithTasks(TaskOptional).WithInput(), // asks the executor to approve shared cases (approve.go)
		stopRunTool(), // released gradually: see stop.go
	}
}

// streaming marks a tool that, when the client asks for progress, reports
// it until its work is done (Limits.StreamTimeout).
func (t *Tool) streaming() *Tool {
	t.streams = true
	return t
}

// ---- views ----

// TaskView is a task as tools show it.
type TaskView struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Description string   `json:"description"`
	BaseURL     string   `json:"baseUrl"`
	Owner       string   `json:"owner"`
	SharedWith  []string `json:"sharedWith"`
	// Environments are the names of the task's environments (a run names
	// one as environment), DefaultEnvironment the one a run that names
	// none runs in.
	Environments       []string `json:"environments,omitempty" jsonschema:"the task's environments, by name: start_test_run's environment names one"`
	DefaultEnvironment string   `json:"defaultEnvironment,omitempty" jsonschema:"the environment a run that names none runs in"`
	CreatedAt          string   `json:"createdAt"`
	UpdatedAt          string   `json:"updatedAt"`
}

func ts(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func tsp(t *time.Time) string {
	if t == nil {
		return ""
	}
	return ts(*t)
}

func taskView(t *duet.Task) TaskView {
	shared := t.SharedWith
	if shared == nil {
		shared = []string{}
	}
	return TaskView{ID: t.ID, Name: t.Name, Description: t.Description, BaseURL: t.BaseURL, Owner: t.Owner,
		Environments: slices.Sorted(maps.Keys(t.Environments)), DefaultEnvironment: t.DefaultEnvironment,
		SharedWith: shared, CreatedAt: ts(t.CreatedAt), UpdatedAt: ts(t.UpdatedAt)}
}

// ---- list_test_tasks ----

// ListTasksIn are the arguments of list_test_tasks.
type ListTasksIn struct {
	Query  string `json:"query,omitempty" jsonschema:"case-insensitive text to find in a task's name or description"`
	Owner  string `json:"owner,omitempty" jsonschema:"only tasks owned by this user id"`
	Cursor string `json:"cursor,omitempty" jsonschema:"nextCursor from the previous page"`
	Limit  int    `json:"limit,omitempty" jsonschema:"page size"`
}

// ListTasksOut is the result of list_test_tasks.
type ListTasksOut struct {
	Tasks      []TaskView `json:"tasks"`
	Total      int        `json:"total" jsonschema:"number of tasks matching, over all pages"`
	NextCursor string     `json:"nextCursor,omitempty" jsonschema:"pass as cursor to get the next page; absent on the last page"`
}

// Text implements Texter.
func (o ListTasksOut) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d task(s) you can access", o.Total)
	if len(o.Tasks) < o.Total {
		fmt.Fprintf(&b, " (%d on this page)", len(o.Tasks))
	}
	b.WriteString(".")
	for _, t := range o.Tasks {
		fmt.Fprintf(&b, "\n- %s  %s (owner %s)", t.ID, t.Name, t.Owner)
		if t.Description != "" {
			b.WriteString(": " + t.Description)
		}
	}
	if o.NextCursor != "" {
		b.WriteString("\nMore: call again with cursor " + o.NextCursor)
	}
	return b.String()
}

func listTasks(ctx context.Context, env *Env, in ListTasksIn) (ListTasksOut, error) {
	tasks, next, total, err := env.Store.FindTasks(ctx, duet.TaskFilter{Viewer: env.Caller.UserID, Query: in.Query, Owner: in.Owner, Cursor: in.Cursor, Limit: in.Limit})
	if err != nil {
		return ListTasksOut{}, err
	}
	return ListTasksOut{Tasks: Views(tasks, taskView), Total: total, NextCursor: next}, nil
}

// ---- get_test_task ----

// GetTaskIn are the arguments of get_test_task.
type GetTaskIn struct {
	TaskID string `json:"taskId" jsonschema:"the task's id (from list_test_tasks), or its name when one task you can see has it"`
}

// GetTaskOut is the result of get_test_task.
type GetTaskOut struct {
	Task      TaskView `json:"task"`
	CaseCount int      `json:"caseCount" jsonschema:"active cases"`
	LastRun   *RunView `json:"lastRun,omitempty"`
	// DependencyAlerts are the contract alerts of the task's cases.
	DependencyAlerts []DependencyAlert `json:"dependencyAlerts,omitempty" jsonschema:"cases whose MCP tools changed since they were written: broken (the call no longer fits the tool) or changed compatibly"`
	Schedules        []ScheduleBrief   `json:"schedules,omitempty" jsonschema:"the task's schedules and their next fire times"`
}

// DependencyAlert is a case an MCP tool change concerns.
type DependencyAlert struct {
	CaseID   string   `json:"caseId"`
	Case     string   `json:"case" jsonschema:"the case's title"`
	Server   string   `json:"serverKey"`
	Tool     string   `json:"tool"`
	Broken   bool     `json:"broken" jsonschema:"true: broken by a dependency change, the next run fails; false: the tool changed compatibly"`
	Problems []string `json:"problems,omitempty"`
	Changes  []string `json:"changes"`
}

// ScheduleBrief is a schedule of a task.
type ScheduleBrief struct {
	ID           string `json:"id"`
	Name         string `json:"name"`
	Owner        string `json:"owner"`
	Timing       string `json:"timing"`
	Paused       bool   `json:"paused"`
	PausedReason string `json:"pausedReason,omitempty"`
	NextFireAt   string `json:"nextFireAt,omitempty"`
}

// Text implements Texter.
func (o GetTaskOut) Text() string {
	t := o.Task
	var b strings.Builder
	fmt.Fprintf(&b, "Task %s: %s\n", t.ID, t.Name)
	if t.Description != "" {
		fmt.Fprintf(&b, "%s\n", t.Description)
	}
	fmt.Fprintf(&b, "Base URL: %s\nOwner: %s", orNone(t.BaseURL), t.Owner)
	if len(t.SharedWith) > 0 {
		fmt.Fprintf(&b, "; shared with %s", strings.Join(t.SharedWith, ", "))
	}
	fmt.Fprintf(&b, "\nCases: %d", o.CaseCount)
	for _, a := range o.DependencyAlerts {
		state := "dependency changed"
		if a.Broken {
			state = "BROKEN by a dependency change: " + strings.Join(a.Problems, "; ")
		}
		fmt.Fprintf(&b, "\nCase %q (%s): tool %s of %s %s (%s)", a.Case, a.CaseID, a.Tool, a.Server, state, strings.Join(a.Changes, "; "))
	}
	for _, sc := range o.Schedules {
		next := "next " + sc.NextFireAt
		if sc.Paused {
			next = "paused " + sc.PausedReason
		}
		fmt.Fprintf(&b, "\nSchedule %q (%s) by %s: %s, %s", sc.Name, sc.ID, sc.Owner, sc.Timing, next)
	}
	if o.LastRun != nil {
		fmt.Fprintf(&b, "\nLast run: %s %s (%d passed, %d failed of %d)", o.LastRun.ID, o.LastRun.Status, o.LastRun.Totals.Passed, o.LastRun.Totals.Failed, o.LastRun.Totals.Cases)
	}
	return b.String()
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func getTask(ctx context.Context, env *Env, in GetTaskIn) (GetTaskOut, error) {
	// The three reads make one answer, read together (one round trip on
	// PostgreSQL; one freshness check of SQLite's cache).
	o, err := env.Store.FindTaskOverview(ctx, env.Caller.UserID, in.TaskID)
	if duet.ErrorCode(err) == duet.CodeNotFound {
		// Not an id: a name the caller can see unambiguously.
		var t *duet.Task
		if t, err = FindTask(ctx, env.Store, env.Caller.UserID, in.TaskID); err == nil {
			o, err = env.Store.FindTaskOverview(ctx, env.Caller.UserID, t.ID)
		}
	}
	if err != nil {
		return GetTaskOut{}, err
	}
	out := GetTaskOut{Task: taskView(o.Task), CaseCount: o.ActiveCases}
	for _, a := range o.Alerts {
		out.DependencyAlerts = append(out.DependencyAlerts, DependencyAlert{CaseID: a.CaseID, Case: a.CaseTitle, Server: a.ServerKey, Tool: a.Tool,
			Broken: a.Broken, Problems: a.Problems, Changes: a.Changes})
	}
	for _, sc := range o.Schedules {
		v := ScheduleBrief{ID: sc.ID, Name: sc.Name, Owner: sc.Owner, Timing: schedule.Describe(sc), Paused: sc.Paused, PausedReason: sc.PausedReason}
		if !sc.Paused {
			v.NextFireAt = sc.NextFireAt.UTC().Format(time.RFC3339)
		}
		out.Schedules = append(out.Schedules, v)
	}
	if o.LastRun != nil {
		duet.DiscloseRun(env.Caller.UserID, o.LastRun)
		v := runView(o.LastRun)
		out.LastRun = &v
	}
	return out, nil
}

// ---- list_test_cases ----

// ListCasesIn are the arguments of list_test_cases.
type ListCasesIn struct {
	TaskID        string `json:"taskId" jsonschema:"the task's id, or its name when one task you can see has it"`
	IncludeDrafts bool   `json:"includeDrafts,omitempty" jsonschema:"also list generated draft cases"`
	Cursor        string `json:"cursor,omitempty" jsonschema:"nextCursor from the previous page"`
	Limit         int    `json:"limit,omitempty" jsonschema:"page size"`
}

// CaseSummary is a case in a list.
type CaseSummary struct {
	ID        string `json:"id"`
	Key       string `json:"key"`
	Title     string `json:"title"`
	Version   int    `json:"version"`
	Status    string `json:"status" jsonschema:"active or draft"`
	StepCount int    `json:"stepCount"`
	UpdatedAt string `json:"updatedAt"`
	// CreatedBy marks whose proposal a draft is: a draft in a shared task
	// may be a sharee's, which only the owner makes a case of the suite.
	CreatedBy string `json:"createdBy" jsonschema:"who wrote this version: the task's owner, or a draft's author"`
	// Tags are the case's own and its task's.
	Tags []string `json:"tags,omitempty" jsonschema:"the case's tags, its own and its task's; a run selects cases by them"`
}

// ListCasesOut is the result of list_test_cases.
type ListCasesOut struct {
	TaskID     string        `json:"taskId"`
	Cases      []CaseSummary `json:"cases"`
	Total      int           `json:"total"`
	NextCursor string        `json:"nextCursor,omitempty"`
}

// Text implements Texter.
func (o ListCasesOut) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d case(s) in task %s.", o.Total, o.TaskID)
	for _, c := range o.Cases {
		fmt.Fprintf(&b, "\n- %s  %s (key %s, v%d, %d steps", c.ID, c.Title, c.Key, c.Version, c.StepCount)
		if c.Status != string(duet.CaseActive) {
			b.WriteString(", " + c.Status)
		}
		if c.Status == string(duet.CaseDraft) {
			b.WriteString(" by " + c.CreatedBy)
		}
		b.WriteString(")")
	}
	if o.NextCursor != "" {
		b.WriteString("\nMore: call again with cursor " + o.NextCursor)
	}
	return b.String()
}

func caseSummary(c *duet.Case) CaseSummary {
	return CaseSummary{ID: c.ID, Key: c.Key, Title: c.Title, Version: c.Version, Status: string(c.Status), StepCount: len(c.Steps), UpdatedAt: ts(c.UpdatedAt), Tags: c.Tags,
		CreatedBy: c.CreatedBy}
}

func listCases(ctx context.Context, env *Env, in ListCasesIn) (ListCasesOut, error) {
	f := duet.CaseFilter{TaskID: in.TaskID, IncludeDrafts: in.IncludeDrafts, Cursor: in.Cursor, Limit: in.Limit}
	t, cases, next, total, err := env.Store.FindTaskCases(ctx, env.Caller.UserID, f)
	if duet.ErrorCode(err) == duet.CodeNotFound {
		// Not an id: a name the caller can see unambiguously.
		if t, err = FindTask(ctx, env.Store, env.Caller.UserID, in.TaskID); err == nil {
			f.TaskID = t.ID
			t, cases, next, total, err = env.Store.FindTaskCases(ctx, env.Caller.UserID, f)
		}
	}
	if err != nil {
		return ListCasesOut{}, err
	}
	return ListCasesOut{TaskID: t.ID, Cases: Views(cases, caseSummary), Total: total, NextCursor: next}, nil
}

// ---- get_test_case ----

// GetCaseIn are the arguments of get_test_case.
type GetCaseIn struct {
	CaseID string `json:"caseId" jsonschema:"the case's id (from list_test_cases)"`
}

// CaseView is a case with its source and steps.
type CaseView struct {
	CaseSummary
	TaskID string      `json:"taskId"`
	Source string      `json:"source" jsonschema:"the declarative source (YAML) the steps were compiled from"`
	Steps  []duet.Step `json:"steps"`
}

// GetCaseOut is the result of get_test_case.
type GetCaseOut struct {
	Case CaseView `json:"case"`
}

// Text implements Texter.
func (o GetCaseOut) Text() string {
	c := o.Case
	var b strings.Builder
	fmt.Fprintf(&b, "Case %s: %s (key %s, v%d, %s)\nSteps:", c.ID, c.Title, c.Key, c.Version, c.Status)
	for _, s := range c.Steps {
		fmt.Fprintf(&b, "\n%d. %s", s.Index+1, s.Name)
	}
	fmt.Fprintf(&b, "\nSource:\n%s", c.Source)
	return b.String()
}

func getCase(ctx context.Context, env *Env, in GetCaseIn) (GetCaseOut, error) {
	c, err := env.Store.FindCaseByID(ctx, env.Caller.UserID, in.CaseID)
	if err != nil {
		return GetCaseOut{}, err
	}
	steps := c.Steps
	if steps == nil {
		steps = []duet.Step{}
	}
	return GetCaseOut{Case: CaseView{CaseSummary: caseSummary(c), TaskID: c.TaskID, Source: c.Source, Steps: steps}}, nil
}

// ---- get_test_run ----

// GetRunIn are the arguments of get_test_run.
type GetRunIn struct {
	RunID  string `json:"runId" jsonschema:"the run's id (from start_test_run)"`
	Cursor string `json:"cursor,omitempty" jsonschema:"nextCursor from the previous page of executions"`
	Limit  int    `json:"limit,omitempty" jsonschema:"executions per page"`
}

// RunView is a run as tools show it.
type RunView struct {
	ID           string         `json:"id"`
	TaskID       string         `json:"taskId"`
	Status       duet.RunStatus `json:"status" jsonschema:"queued, running, passed, failed, error or cancelled (a run whose cases passed, some flaky, passed)"`
	Done         bool           `json:"done" jsonschema:"true once the run has reached a final status"`
	TriggeredBy  string         `json:"triggeredBy"`
	CallSource   string         `json:"callSource"`
	CreatedAt    string         `json:"createdAt"`
	StartedAt    string         `json:"startedAt,omitempty"`
	FinishedAt   string         `json:"finishedAt,omitempty"`
	ErrorCode    string         `json:"errorCode,omitempty"`
	ErrorMessage string         `json:"errorMessage,omitempty"`
	Totals       duet.RunTotals `json:"totals"`
	// PostRun are notes, never part of the verdict.
	PostRun []*duet.PostRunResult `json:"postRun,omitempty" jsonschema:"outcomes of the task's post-run actions (MCP tool calls made when the run ended): notes that never change the run's status"`
	Origin  *duet.RunOrigin       `json:"origin,omitempty" jsonschema:"the CI job that started the run: commit, branch, pull request, pipeline"`
	Hooks   []*duet.StepResult    `json:"hooks,omitempty" jsonschema:"the results of the task's beforeAll and afterAll steps"`
	// Environment is the task's environment the run ran in.
	Environment string `json:"environment,omitempty" jsonschema:"the task's environment the run ran in"`
}

func runView(r *duet.Run) RunView {
	return RunView{ID: r.ID, TaskID: r.TaskID, Status: r.Status, Done: r.Status.Final(), TriggeredBy: r.TriggeredBy,
		CallSource: string(r.CallSource), CreatedAt: ts(r.CreatedAt), StartedAt: tsp(r.StartedAt), FinishedAt: tsp(r.FinishedAt),
		ErrorCode: string(r.ErrorCode), ErrorMessage: r.ErrorMessage, Totals: r.Totals, PostRun: r.PostRun, Origin: r.Origin, Hooks: r.Hooks, Environment: r.Environment}
}

// ExecutionSummary is one case execution of a run.
type ExecutionSummary struct {
	ID           string         `json:"executionId"`
	CaseID       string         `json:"caseId"`
	CaseKey      string         `json:"caseKey"`
	CaseTitle    string         `json:"caseTitle"`
	Status       duet.RunStatus `json:"status"`
	ErrorCode    string         `json:"errorCode,omitempty"`
	ErrorMessage string         `json:"errorMessage,omitempty"`
	DurationMs   int64          `json:"durationMs"`
	Attempt      int            `json:"attempt,omitempty" jsonschema:"the attempt running or last run: 1 the first, 2 the first retry, ...; a flaky case passed on a retry"`
	Retries      int            `json:"retries,omitempty" jsonschema:"how many retries the case has in this run"`
}

// GetRunOut is the result of get_test_run.
type GetRunOut struct {
	Run        RunView            `json:"run"`
	Executions []ExecutionSummary `json:"executions" jsonschema:"one page of the run's case executions, in order"`
	NextCursor string             `json:"nextCursor,omitempty" jsonschema:"pass as cursor to get the next page of executions; absent on the last page"`
	Disclosure duet.Disclosure    `json:"disclosure" jsonschema:"full, or restricted: error messages are shown only to the run's executor"`

	first, last int // ordinals of the page's executions, for the text
}

// Text implements Texter.
func (o GetRunOut) Text() string {
	r := o.Run
	var b strings.Builder
	flaky := ""
	if r.Totals.Flaky > 0 {
		flaky = fmt.Sprintf(", %d flaky", r.Totals.Flaky)
	}
	fmt.Fprintf(&b, "Run %s of task %s: %s (%d passed%s, %d failed, %d error, %d cancelled, %d pending of %d)",
		r.ID, r.TaskID, r.Status, r.Totals.Passed, flaky, r.Totals.Failed, r.Totals.Error, r.Totals.Cancelled, r.Totals.Pending+r.Totals.Running, r.Totals.Cases)
	if r.ErrorMessage != "" {
		fmt.Fprintf(&b, "\n%s: %s", r.ErrorCode, r.ErrorMessage)
	}
	for _, p := range r.PostRun {
		fmt.Fprintf(&b, "\nNote: post-run action %q (%s) %s", p.Name, p.Tool, p.Status)
		if p.ErrorCode != "" {
			fmt.Fprintf(&b, ": %s: %s", p.ErrorCode, p.ErrorMessage)
		}
		b.WriteString(" (it does not change the run's status)")
	}
	if len(o.Executions) < r.Totals.Cases && len(o.Executions) > 0 {
		fmt.Fprintf(&b, "\nExecutions %d to %d of %d:", o.first+1, o.last+1, r.Totals.Cases)
	}
	for _, x := range o.Executions {
		fmt.Fprintf(&b, "\n- %s  %s: %s", x.ID, x.CaseTitle, x.Status)
		if x.Attempt > 1 {
			fmt.Fprintf(&b, " on attempt %d", x.Attempt)
		}
		if x.ErrorCode != "" {
			fmt.Fprintf(&b, " (%s: %s)", x.ErrorCode, x.ErrorMessage)
		}
	}
	if o.NextCursor != "" {
		fmt.Fprintf(&b, "\nMore: %d more execution(s); call get_test_run again with cursor %s", max(r.Totals.Cases-o.last-1, 1), o.NextCursor)
	}
	if !r.Done {
		b.WriteString("\nThe run is not finished; call get_test_run again.")
	}
	return b.String()
}

func durationMs(start, end *time.Time) int64 {
	if start == nil || end == nil {
		return 0
	}
	return end.Sub(*start).Milliseconds()
}

func getRun(ctx context.Context, env *Env, in GetRunIn) (GetRunOut, error) {
	limit := in.Limit
	if limit <= 0 {
		limit = 200
	}
	r, execs, next, err := env.Store.FindRunPage(ctx, env.Caller.UserID, duet.ExecutionFilter{RunID: in.RunID, Cursor: in.Cursor, Limit: limit})
	if err != nil {
		return GetRunOut{}, err
	}
	d := duet.DiscloseRun(env.Caller.UserID, r, execs...)
	out := GetRunOut{Run: runView(r), Executions: Views(execs, executionSummary), NextCursor: next, Disclosure: d}
	if len(execs) > 0 {
		out.first, out.last = execs[0].Ordinal, execs[len(execs)-1].Ordinal
	}
	return out, nil
}

func executionSummary(x *duet.Execution) ExecutionSummary {
	return ExecutionSummary{ID: x.ID, CaseID: x.CaseID, CaseKey: x.CaseKey, CaseTitle: x.CaseTitle,
		Status: x.Status, ErrorCode: string(x.ErrorCode), ErrorMessage: x.ErrorMessage, DurationMs: durationMs(x.StartedAt, x.FinishedAt),
		Attempt: x.Attempt, Retries: x.Retries}
}

// ---- get_execution_result ----

// GetExecutionIn are the arguments of get_execution_result.
type GetExecutionIn struct {
	ExecutionID string `json:"executionId" jsonschema:"the execution's id (from get_test_run)"`
}

// ExecutionView is one case execution with its step results.
type ExecutionView struct {
	ID           string             `json:"executionId"`
	RunID        string             `json:"runId"`
	CaseID       string             `json:"caseId"`
	CaseTitle    string             `json:"caseTitle"`
	CaseVersion  int                `json:"caseVersion"`
	Status       duet.RunStatus     `json:"status"`
	ErrorCode    string             `json:"errorCode,omitempty"`
	ErrorMessage string             `json:"errorMessage,omitempty"`
	StartedAt    string             `json:"startedAt,omitempty"`
	FinishedAt   string             `json:"finishedAt,omitempty"`
	DurationMs   int64              `json:"durationMs"`
	Steps        []*duet.StepResult `json:"steps"`
	Variables    map[string]any     `json:"variables" jsonschema:"variables saved by the steps, secrets redacted"`
	Attempt      int                `json:"attempt,omitempty" jsonschema:"the attempt these steps are of: 1 the first, 2 the first retry, ..."`
	// Attempts are the earlier, failed attempts of a retried case.
	Attempts []*duet.ExecutionAttempt `json:"attempts,omitempty" jsonschema:"the case's earlier, failed attempts (it was retried), each with its step results and screenshots"`
}

// GetExecutionOut is the result of get_execution_result.
type GetExecutionOut struct {
	Execution  ExecutionView   `json:"execution"`
	Disclosure duet.Disclosure `json:"disclosure" jsonschema:"full, or restricted: outputs, variables and error messages are shown only to the run's executor"`
}

// Text implements Texter.
func (o GetExecutionOut) Text() string {
	x := o.Execution
	var b strings.Builder
	fmt.Fprintf(&b, "Execution %s of case %q (run %s): %s in %d ms", x.ID, x.CaseTitle, x.RunID, x.Status, x.DurationMs)
	if x.Attempt > 1 {
		fmt.Fprintf(&b, ", attempt %d", x.Attempt)
	}
	for _, a := range x.Attempts {
		fmt.Fprintf(&b, "\nAttempt %d: %s", a.Attempt, a.Status)
		if a.ErrorCode != "" {
			fmt.Fprintf(&b, " %s: %s", a.ErrorCode, a.ErrorMessage)
		}
	}
	if x.ErrorCode != "" {
		fmt.Fprintf(&b, "\n%s: %s", x.ErrorCode, x.ErrorMessage)
	}
	for _, s := range x.Steps {
		fmt.Fprintf(&b, "\n%d. [%s] %s (%d ms)", s.Index+1, s.Status, s.Name, s.DurationMs)
		if s.ErrorCode != "" {
			fmt.Fprintf(&b, " %s: %s", s.ErrorCode, s.ErrorMessage)
		}
	}
	if o.Disclosure == duet.DiscloseRestricted {
		b.WriteString("\nOutputs, variables and error messages are shown only to the person who ran it (with their own credentials).")
	}
	return b.String()
}

func getExecution(ctx context.Context, env *Env, in GetExecutionIn) (GetExecutionOut, error) {
	x, run, err := env.Store.FindExecutionAndRun(ctx, env.Caller.UserID, in.ExecutionID)
	if err != nil {
		return GetExecutionOut{}, err
	}
	d := duet.DiscloseRun(env.Caller.UserID, run, x)
	vars := x.Vars
	if vars == nil {
		vars = map[string]any{}
	}
	results := x.Results
	if results == nil {
		results = []*duet.StepResult{}
	}
	return GetExecutionOut{Execution: ExecutionView{ID: x.ID, RunID: x.RunID, CaseID: x.CaseID, CaseTitle: x.CaseTitle, CaseVersion: x.CaseVersion,
		Status: x.Status, ErrorCode: string(x.ErrorCode), ErrorMessage: x.ErrorMessage, StartedAt: tsp(x.StartedAt), FinishedAt: tsp(x.FinishedAt),
		DurationMs: durationMs(x.StartedAt, x.FinishedAt), Steps: results, Variables: vars, Attempt: x.Attempt, Attempts: x.Attempts}, Disclosure: d}, nil
}

// ---- start_test_run ----

// StartRunIn are the arguments of start_test_run.
type StartRunIn struct {
	TaskID         string   `json:"taskId" jsonschema:"the task to run: its id, or its name when one task you can see has it"`
	CaseIDs        []string `json:"caseIds,omitempty" jsonschema:"run only these cases (default: all active cases)"`
	IdempotencyKey string   `json:"idempotencyKey" jsonschema:"a key you choose (e.g. a UUID); a retry with the same key and arguments returns the first run instead of starting another"`
	Device         string   `json:"device,omitempty" jsonschema:"device for browser steps: a preset (e.g. desktop, iphone-15, pixel-7), android:SERIAL, or PRESET@ws://… a remote browser's DevTools address; default: the task's"`
	Environment    string   `json:"environment,omitempty" jsonschema:"the task's environment to run in (its base URL and env variables); default: the task's default environment"`
	Trace          string   `json:"trace,omitempty" jsonschema:"when the run's cases keep a trace (screenshots, DOM, console, network, replay): off, on-failure, on-first-retry or on; default: the task's, else on-failure"`
	Retries        *int     `json:"retries,omitempty" jsonschema:"how many times each failed case runs again from its start, in place of the cases' own retries (0 for none); a case that fails and then passes is flaky"`
	Tags           []string `json:"tags,omitempty" jsonschema:"run only the cases with at least one of these tags"`
	ExcludeTags    []string `json:"excludeTags,omitempty" jsonschema:"leave out the cases with any of these tags"`
	Grep           string   `json:"grep,omitempty" jsonschema:"run only the cases whose title or key contains this text (case-insensitive)"`
}

// StartRunOut is the result of start_test_run.
type StartRunOut struct {
	RunID     string         `json:"runId"`
	TaskID    string         `json:"taskId"`
	Status    duet.RunStatus `json:"status"`
	CaseCount int            `json:"caseCount"`
	Replayed  bool           `json:"replayed" jsonschema:"true when this is the stored result of an earlier call with the same idempotencyKey"`
	// Result is the run at its end, when the call streamed progress.
	Result *GetRunOut `json:"result,omitempty" jsonschema:"the finished run and its case executions; present only when the call asked for progress (a progress token) and waited for the run to end"`
}

// Text implements Texter.
func (o StartRunOut) Text() string {
	if o.Result != nil {
		return o.Result.Text()
	}
	s := fmt.Sprintf("Started run %s of task %s with %d case(s); follow it with get_test_run.", o.RunID, o.TaskID, o.CaseCount)
	if o.Replayed {
		s = fmt.Sprintf("Run %s of task %s was already started with this idempotency key (replayed); follow it with get_test_run.", o.RunID, o.TaskID)
	}
	return s
}

// StartRun starts a run of a task as the caller; it is start_test_run, and the
// CLI and REST paths call it too. The run keeps the caller's call depth.
// Returns NOT_FOUND, INVALID_ARGUMENT, IDEMPOTENCY_CONFLICT, RATE_LIMITED
// (Limits.MaxQueuedRuns, Limits.MaxRunsPerMinute).
func (c *Catalog) StartRun(ctx context.Context, caller duet.Caller, in StartRunIn) (StartRunOut, error) {
	env := &Env{Caller: caller, Store: c.store, Catalog: c, Progress: func(float64, float64, string) {}}
	return startRun(ctx, env, in)
}

// StartScheduled starts the run of a schedule's slot as the schedule's
// owner (caller, Source schedule): start_test_run through Call — the same
// governance, checks, approvals, queue caps and audit as any start — with
// the slot's claim made in the transaction that creates the run
// (duet.StartRunParams.Fire). replayed is true when the key's run exists
// already (another scheduler made it).
func (c *Catalog) StartScheduled(ctx context.Context, caller duet.Caller, taskID, key string, fire *duet.ScheduleFire) (runID string, replayed bool, err error) {
	in := StartRunIn{TaskID: taskID, IdempotencyKey: key}
	if fire != nil {
		in.Tags = fire.Tags // the schedule's selection
	}
	args, err := json.Marshal(in)
	if err != nil {
		return "", false, err
	}
	res, err := c.Call(ctx, Request{Caller: caller, Tool: ToolStartRun, Args: args, Fire: fire})
	if err != nil {
		return "", false, err
	}
	if res.IsError {
		var body struct{ Error ErrorBody }
		json.Unmarshal(res.Structured, &body)
		return "", false, duet.Errorf(res.Code, "%s", body.Error.Message)
	}
	var out StartRunOut
	if err := json.Unmarshal(res.Structured, &out); err != nil {
		return "", false, err
	}
	return out.RunID, out.Replayed, nil
}

func startRun(ctx context.Context, env *Env, in StartRunIn) (StartRunOut, error) {
	c := env.Catalog
	key := strings.TrimSpace(in.IdempotencyKey)
	if key == "" {
		return StartRunOut{}, duet.Errorf(duet.CodeInvalidArgument, "idempotencyKey is required")
	}
	task, err := FindTask(ctx, env.Store, env.Caller.UserID, in.TaskID)
	if err != nil {
		return StartRunOut{}, err
	}
	if in.Device != "" && c.opts.ValidDevice != nil {
		if err := c.opts.ValidDevice(in.Device); err != nil {
			return StartRunOut{}, err
		}
	}
	envName, _, err := task.Environment(in.Environment)
	if err != nil {
		return StartRunOut{}, err
	}
	if _, err := trace.ParseMode(in.Trace); err != nil {
		return StartRunOut{}, err
	}
	if err := checkRunSelection(in, c.opts.Limits.MaxRetries); err != nil {
		return StartRunOut{}, err
	}
	cases, err := selectCases(ctx, env, task, in.CaseIDs)
	if err != nil {
		return StartRunOut{}, err
	}
	if cases, err = filterCases(task, cases, in); err != nil {
		return StartRunOut{}, err
	}
	// Cases someone else wrote that would call tools with the caller's
	// credentials: ask for the approval first when the client can be
	// asked (approve.go).
	if err := approveShared(ctx, env, task, cases); err != nil {
		return StartRunOut{}, err
	}
	ids := slices.Clone(in.CaseIDs)
	slices.Sort(ids)
	h := sha256.New()
	args := []any{task.ID, ids, in.Device}
	if in.Environment != "" {
		args = append(args, in.Environment) // the hash of a start without one stays what it was
	}
	if in.Trace != "" {
		args = append(args, in.Trace) // (a run without one hashes as before)
	}
	if in.Retries != nil || len(in.Tags) > 0 || len(in.ExcludeTags) > 0 || in.Grep != "" {
		// (a run without them hashes as before)
		args = append(args, map[string]any{"retries": in.Retries, "tags": sortedSet(in.Tags), "excludeTags": sortedSet(in.ExcludeTags), "grep": in.Grep})
	}
	json.NewEncoder(h).Encode(args)
	origin, err := checkOrigin(env.origin)
	if err != nil {
		return StartRunOut{}, err
	}
	run := &duet.Run{TaskID: task.ID, TriggeredBy: env.Caller.UserID, CallSource: env.Caller.Source, TraceID: env.Caller.TraceID, Device: in.Device,
		CallDepth: env.Caller.CallDepth, Origin: origin, Environment: envName, Trace: in.Trace}
	var execs []*duet.Execution
	for _, cs := range cases {
		retries := cs.Retries
		if in.Retries != nil {
			retries = *in.Retries // the run's retries win
		}
		execs = append(execs, &duet.Execution{CaseID: cs.ID, CaseKey: cs.Key, CaseTitle: cs.Title, CaseVersion: cs.Version, Steps: cs.Steps, TimeoutMs: cs.TimeoutMs, Row: cs.Row,
			Retries: retries})
	}
	rec, replayed, err := env.Store.CreateRun(ctx, duet.StartRunParams{
		Run: run, Executions: execs,
		Idempotency: &duet.IdempotencyRecord{Caller: env.Caller.UserID, Key: key, Tool: ToolStartRun, ArgsHash: hex.EncodeToString(h.Sum(nil)),
			ExpiresAt: c.opts.Now().Add(c.opts.Limits.IdempotencyTTL)},
		ResultFunc: func(r *duet.Run) (json.RawMessage, error) {
			return json.Marshal(StartRunOut{RunID: r.ID, TaskID: r.TaskID, Status: r.Status, CaseCount: len(execs)})
		},
		MaxQueued:    c.opts.Limits.MaxQueuedRuns,
		MaxPerMinute: c.opts.Limits.MaxRunsPerMinute,
		Fire:         env.fire,
	})
	if err != nil {
		return StartRunOut{}, err
	}
	var out StartRunOut
	if err := json.Unmarshal(rec.Result, &out); err != nil {
		return StartRunOut{}, fmt.Errorf("stored idempotent result: %w", err)
	}
	out.Replayed = replayed
	if !replayed && c.opts.RunCreated != nil {
		c.opts.RunCreated(out.RunID)
	}
	if env.TasksDeclared() {
		// The client follows the run as a task (tasks/get, tasks/cancel).
		env.TrackRun(out.RunID)
		return out, nil
	}
	if env.Streaming {
		// The client asked for progress and keeps the request open: report
		// it until the run ends, and answer with the result.
		res, err := followRun(ctx, env, out.RunID)
		if err != nil {
			return StartRunOut{}, err
		}
		out.Result = res
		if res != nil {
			out.Status = res.Run.Status
		}
	}
	return out, nil
}

// checkOrigin checks a run's origin: one-line values of at most 300
// characters, the pull request and pipeline http(s) URLs. Returns
// INVALID_ARGUMENT; nil for an empty origin.
func checkOrigin(o *duet.RunOrigin) (*duet.RunOrigin, error) {
	if o.Empty() {
		return nil, nil
	}
	c := *o
	for _, f := range []struct {
		name string
		v    *string
		url  bool
	}{{"commit", &c.Commit, false}, {"branch", &c.Branch, false}, {"pullRequest", &c.PullRequest, true}, {"pipeline", &c.Pipeline, true}} {
		*f.v = strings.TrimSpace(*f.v)
		v := *f.v
		switch {
		case len(v) > 300 || strings.ContainsAny(v, "\r\n\t") || !utf8.ValidString(v):
			return nil, duet.Errorf(duet.CodeInvalidArgument, "origin.%s must be one line of at most 300 characters", f.name)
		case f.url && v != "" && !strings.HasPrefix(v, "https://") && !strings.HasPrefix(v, "http://"):
			return nil, duet.Errorf(duet.CodeInvalidArgument, "origin.%s must be an http(s) URL, got %q", f.name, v)
		}
	}
	return &c, nil
}

func selectCases(ctx context.Context, env *Env, task *duet.Task, ids []string) ([]*duet.Case, error) {
	if len(ids) == 0 {
		var all []*duet.Case
		for c, err := range duet.AllCases(ctx, env.Store.FindCases, duet.CaseFilter{TaskID: task.ID}) {
			if err != nil {
				return nil, err
			}
			all = append(all, c)
		}
		if len(all) == 0 {
			return nil, duet.Errorf(duet.CodeInvalidArgument, "task %s has no active cases to run", task.ID)
		}
		return all, nil
	}
	var out []*duet.Case
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			continue
		}
		seen[id] = true
		cs, err := env.Store.FindCaseByID(ctx, env.Caller.UserID, id)
		if err != nil || cs.TaskID != task.ID || cs.Status == duet.CaseArchived {
			return nil, duet.Errorf(duet.CodeNotFound, "case %q not found in task %s", id, task.ID)
		}
		out = append(out, cs)
	}
	return out, nil
}

// Views shows each item of list with view: an empty list, not nil, when
// there are none (JSON [], not null).
func Views[T, V any](list []T, view func(T) V) []V {
	out := make([]V, 0, len(list))
	for _, x := range list {
		out = append(out, view(x))
	}
	return out
}
