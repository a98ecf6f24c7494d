// Package report turns a finished (or running) run into a report: a
// self-contained HTML page for people, JSON for programs and JUnit XML for CI
// systems. Build gathers the run, its task, its executions and their
// screenshots; the Write methods render it.
//
// Secrets stay out of reports: saved variables and step outputs are stored
// redacted by the engine and are redacted again here, including variables
// whose own name says they hold a secret. A run used its executor's
// credentials, so a report shows its outputs, variables, messages and
// screenshots only to the executor (duet.RunDisclosure); others get
// statuses, timings and error codes.
//
// A report shows at most MaxCases cases; a bigger run's report says how many
// more there are and the cursor of the next part.
package report

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/catalog"
	"github.com/duet-test/duet/internal/redact"
	"github.com/duet-test/duet/internal/scan"
)

// Store is what Build reads runs from; *sqlite.DB is one.
type Store interface {
	FindRunByID(ctx context.Context, viewer, id string) (*duet.Run, error)
	FindExecutionPage(ctx context.Context, filter duet.ExecutionFilter) ([]*duet.Execution, string, error)
	FindTaskByID(ctx context.Context, viewer, id string) (*duet.Task, error)
	// The executor's registered MCP servers and their archived catalogs,
	// for the report's scan of the tools the cases call.
	FindMCPServers(ctx context.Context, owner string) ([]*duet.MCPServer, error)
	FindMCPTools(ctx context.Context, id string) ([]*duet.MCPTool, error)
	// The task's cases, for each case's tags.
	FindCases(ctx context.Context, f duet.CaseFilter) ([]*duet.Case, string, int, error)
}

// MaxCases is how many cases a report shows when its Page does not say:
// the report of a bigger run shows the first MaxCases and says how to get
// the rest.
const MaxCases = 500

// maxPage bounds Page.Limit.
const maxPage = 1000

// Page selects the part of a run a report shows: at most Limit cases (0
// means MaxCases; at most 1000) after Cursor (a Window.NextCursor; "" is
// the start).
type Page struct {
	Cursor string
	Limit  int
}

// Window says which cases a report shows when it does not show them all.
type Window struct {
	First      int    `json:"first"` // position of the first case shown, from 1
	Last       int    `json:"last"`  // position of the last case shown
	Total      int    `json:"total"` // cases in the run
	NotShown   int    `json:"notShown"`
	NextCursor string `json:"nextCursor,omitempty"` // the page after this one
}

// Artifacts is what Build reads screenshots from; *artifact.Store is one.
type Artifacts interface {
	Read(ctx context.Context, id string) ([]byte, error)
}

// Format is an output format of a report.
type Format string

// Formats.
const (
	HTML  Format = "html"
	JSON  Format = "json"
	JUnit Format = "junit"
)

// ParseFormat returns the format named s ("" means HTML). It returns
// INVALID_ARGUMENT for an unknown name.
func ParseFormat(s string) (Format, error) {
	switch f := Format(strings.ToLower(s)); f {
	case "":
		return HTML, nil
	case HTML, JSON, JUnit:
		return f, nil
	}
	return "", duet.Errorf(duet.CodeInvalidArgument, "unknown report format %q: use html, json or junit", s)
}

// Hint says how to get the cases after the window, or "" when there are
// none.
func (w *Window) Hint(runID string) string {
	if w == nil || w.NotShown == 0 || w.NextCursor == "" {
		return ""
	}
	return fmt.Sprintf("%d more case(s) not shown: get them with `duet report %s --cursor %s`, or read the MCP resource duet://runs/%s/report.json?cursor=%s",
		w.NotShown, runID, w.NextCursor, runID, w.NextCursor)
}

// Report is everything a report shows about one run.
type Report struct {
	GeneratedAt time.Time `json:"generatedAt"`
	Run         *duet.Run `json:"run"`
	Task        Task      `json:"task"`
	DurationMs  int64     `json:"durationMs"` // of the run so far
	// Disclosure is what the viewer sees: full, or restricted to statuses,
	// timings and error codes (the run used someone else's credentials).
	Disclosure duet.Disclosure `json:"disclosure"`
	// Window is set when the report shows only part of the run's cases.
	Window *Window `json:"window,omitempty"`
	Cases  []*Case `json:"cases"`
	// Exit is the run's exit code for a CI pipeline, once it ended
	// (ExitCode: what `duet run --wait` exits with).
	Exit *Exit `json:"exit,omitempty"`
	// Scan is set when the run's cases call MCP tools and the viewer is
	// the executor: the scan findings of the tools the cases call and the
	// coverage of the executor's servers by the cases (of the whole run,
	// whatever the Window), from the servers' archived catalogs.
	Scan *scan.TaskReport `json:"scan,omitempty"`
}

// Task is the part of the run's task a report shows.
type Task struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	BaseURL string `json:"baseUrl,omitempty"`
	Device  string `json:"device,omitempty"`
}

// Case is one execution of a case.
type Case struct {
	ExecutionID string `json:"executionId"`
	CaseID      string `json:"caseId"`
	Key         string `json:"key"`
	Title       string `json:"title"`
	Version     int    `json:"version"`
	// Tags are the case's tags, its own and its task's (as the case is
	// now: tags select cases, they do not change what a version does).
	Tags         []string       `json:"tags,omitempty"`
	Status       duet.RunStatus `json:"status"`
	ErrorCode    duet.Code      `json:"errorCode,omitempty"`
	ErrorMessage string         `json:"errorMessage,omitempty"`
	StartedAt    *time.Time     `json:"startedAt,omitempty"`
	FinishedAt   *time.Time     `json:"finishedAt,omitempty"`
	DurationMs   int64          `json:"durationMs"`
	Steps        []*Step        `json:"steps"`
	Variables    map[string]any `json:"variables,omitempty"` // redacted
	// Trace is set when the case kept a trace and the viewer is the
	// executor (traces are stored beside the report, not in it).
	Trace *TraceLink `json:"trace,omitempty"`
	// Attempt is the attempt Steps are of (1 the first; a flaky case
	// passed on a later one), and Attempts the case's earlier, failed
	// attempts, each with its steps and screenshots.
	Attempt  int        `json:"attempt,omitempty"`
	Attempts []*Attempt `json:"attempts,omitempty"`
}

// Attempt is an earlier, failed attempt at a case that was retried.
type Attempt struct {
	Attempt      int            `json:"attempt"`
	Status       duet.RunStatus `json:"status"`
	ErrorCode    duet.Code      `json:"errorCode,omitempty"`
	ErrorMessage string         `json:"errorMessage,omitempty"`
	DurationMs   int64          `json:"durationMs"`
	Steps        []*Step        `json:"steps"`
}

// TraceLink says where a case's trace is.
type TraceLink struct {
	Bytes   int    `json:"bytes"`
	Href    string `json:"href"`    // the console's trace viewer, on the host that serves the report
	API     string `json:"api"`     // the zip over REST
	Command string `json:"command"` // the CLI command that downloads it
	// Video is the replay as a webm video over REST (?format=mp4), where
	// the instance has ffmpeg; none when the trace holds no replay (a
	// first attempt under on-failure, trace.Replay).
	Video string `json:"video,omitempty"`
}

// Step is one step of a case: its result, or StatusPending when it did not
// run.
type Step struct {
	Index        int             `json:"index"`
	Kind         duet.StepKind   `json:"kind"`
	Name         string          `json:"name"`
	Line         int             `json:"line,omitempty"`
	Status       duet.RunStatus  `json:"status"`
	StartedAt    *time.Time      `json:"startedAt,omitempty"`
	OffsetMs     int64           `json:"offsetMs"` // from the start of the case
	DurationMs   int64           `json:"durationMs"`
	SavedAs      string          `json:"savedAs,omitempty"`
	Output       json.RawMessage `json:"output,omitempty"` // redacted
	ErrorCode    duet.Code       `json:"errorCode,omitempty"`
	ErrorMessage string          `json:"errorMessage,omitempty"`
	Optional     bool            `json:"optional,omitempty"`
	Screenshots  []*Screenshot   `json:"screenshots,omitempty"`
	AI           *duet.AIUsage   `json:"ai,omitempty"` // an AI step's model calls and tokens
	// AITranscript is what an AI step's model was shown and answered
	// (redacted by value when kept): in the executor's report only.
	AITranscript string `json:"aiTranscript,omitempty"`
	// Hook names the hook (beforeEach, afterEach) the step belongs to.
	Hook string `json:"hook,omitempty"`
	// A flow step's: the branch an if ran, the iterations a loop began,
	// the steps it ran (each with its loop iteration), and how many passed
	// ones were not kept.
	Branch     string  `json:"branch,omitempty"`
	Iterations int     `json:"iterations,omitempty"`
	Iteration  int     `json:"iteration,omitempty"`
	Children   []*Step `json:"children,omitempty"`
	Omitted    int     `json:"omitted,omitempty"`
}

// Screenshot is an artifact of a step. The HTML report embeds its content;
// JSON and JUnit name it by id.
type Screenshot struct {
	ID          string `json:"id"`
	ContentType string `json:"contentType,omitempty"`
	Bytes       int    `json:"bytes"`
	// OnFailure is true for the screenshot taken because the step failed,
	// false for one a screenshot step asked for.
	OnFailure bool `json:"onFailure,omitempty"`
	// Unavailable says why the content is missing (expired under the
	// retention, or unreadable); empty when it was read.
	Unavailable string `json:"unavailable,omitempty"`
	data        []byte
}

// DataURI returns the content as a data: URI, or "" when it is not an image.
func (s *Screenshot) DataURI() string {
	if len(s.data) == 0 || !strings.HasPrefix(s.ContentType, "image/") {
		return ""
	}
	return "data:" + s.ContentType + ";base64," + base64.StdEncoding.EncodeToString(s.data)
}

// Build gathers the report of run runID as viewer sees it: its first
// MaxCases cases (BuildPage gets the others). arts may be nil (screenshots
// are then listed as unavailable).
//
// Errors: NOT_FOUND when the run does not exist or viewer may not see it;
// the store's errors otherwise.
func Build(ctx context.Context, store Store, arts Artifacts, viewer, runID string) (*Report, error) {
	return BuildPage(ctx, store, arts, viewer, runID, Page{})
}

// BuildPage gathers the part of the report of run runID that p selects, as
// viewer sees it. Errors: as Build, and INVALID_ARGUMENT for a bad cursor.
func BuildPage(ctx context.Context, store Store, arts Artifacts, viewer, runID string, p Page) (*Report, error) {
	run, err := store.FindRunByID(ctx, viewer, runID)
	if err != nil {
		return nil, err
	}
	r := &Report{GeneratedAt: time.Now().UTC(), Run: run, Task: Task{ID: run.TaskID, Name: run.TaskID}}
	taskSeen := false
	if t, err := store.FindTaskByID(ctx, viewer, run.TaskID); err == nil {
		r.Task = Task{ID: t.ID, Name: t.Name, BaseURL: t.BaseURL, Device: t.Device}
		taskSeen = true
	} else if duet.ErrorCode(err) != duet.CodeNotFound {
		return nil, err
	}
	if run.StartedAt != nil {
		end := r.GeneratedAt
		if run.FinishedAt != nil {
			end = *run.FinishedAt
		}
		r.DurationMs = end.Sub(*run.StartedAt).Milliseconds()
	}
	limit := p.Limit
	if limit <= 0 {
		limit = MaxCases
	}
	limit = min(limit, maxPage)
	execs, next, err := store.FindExecutionPage(ctx, duet.ExecutionFilter{RunID: run.ID, Cursor: p.Cursor, Limit: limit, Results: true})
	if err != nil {
		return nil, err
	}
	r.Disclosure = duet.DiscloseRun(viewer, run, execs...)
	if total := run.Totals.Cases; len(execs) < total {
		w := &Window{Total: total, NextCursor: next}
		if len(execs) > 0 {
			w.First, w.Last = execs[0].Ordinal+1, execs[len(execs)-1].Ordinal+1
		}
		w.NotShown = max(total-w.Last, 0)
		if next == "" {
			w.NotShown = 0
		}
		r.Window = w
	}
	shots := &shotReader{arts: arts, left: -1}
	if b := catalog.ResultBudget(ctx); b > 0 {
		// Screenshots go into the HTML report in base64 (4 bytes for 3): past
		// three quarters of the call's result budget the report could not be
		// sent anyway, so no more are read into memory.
		shots.left, shots.limit = b/4*3, b
	}
	tags, err := caseTags(ctx, store, taskSeen, run.TaskID)
	if err != nil {
		return nil, err
	}
	for _, x := range execs {
		c, err := buildCase(ctx, shots, x, r.GeneratedAt)
		if err != nil {
			return nil, err
		}
		c.Tags = tags[x.CaseID]
		r.Cases = append(r.Cases, c)
	}
	if run.Status.Final() {
		code, why := ExitCode(run, execs, false)
		r.Exit = &Exit{Code: code, Reason: why}
	}
	if tr, ok := arts.(TraceReader); ok && r.Disclosure == duet.DiscloseFull {
		for _, c := range r.Cases {
			if n, ok := tr.HasTrace(ctx, run.ID, c.ExecutionID); ok {
				c.Trace = &TraceLink{Bytes: int(n), Href: "/runs/" + run.ID + "/cases/" + c.ExecutionID + "/trace/",
					API:     "/api/v1/runs/" + run.ID + "/cases/" + c.ExecutionID + "/trace",
					Video:   "/api/v1/runs/" + run.ID + "/cases/" + c.ExecutionID + "/trace/video",
					Command: "duet report --trace " + run.ID + " " + c.Key}
				if tr.NoReplay(ctx, run.ID, c.ExecutionID) {
					c.Trace.Video = ""
				}
			}
		}
	}
	if r.Disclosure == duet.DiscloseFull {
		if r.Scan, err = buildScan(ctx, store, run, execs, r.Window != nil); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// caseTags returns the tags of the task's cases (archived ones too) by
// case id; none when the viewer cannot see the task (visible false).
func caseTags(ctx context.Context, store Store, visible bool, taskID string) (map[string][]string, error) {
	out := map[string][]string{}
	if !visible {
		return out, nil
	}
	for c, err := range duet.AllCases(ctx, store.FindCases, duet.CaseFilter{TaskID: taskID, IncludeArchived: true}) {
		if err != nil {
			return nil, err
		}
		if len(c.Tags) > 0 {
			out[c.ID] = c.Tags
		}
	}
	return out, nil
}

// buildScan scans the MCP tools the run's cases call, as the run ran them
// (the case versions of its executions), against the archived catalogs of
// the executor's servers: the catalogs were read with the executor's
// credentials, so only the executor sees this. execs are the executions
// loaded; when they are not all of the run (partial), the others are read
// too. It returns nil when the cases call no MCP tool.
func buildScan(ctx context.Context, store Store, run *duet.Run, execs []*duet.Execution, partial bool) (*scan.TaskReport, error) {
	var cases []*duet.Case
	add := func(x *duet.Execution) {
		cases = append(cases, &duet.Case{ID: x.CaseID, Key: x.CaseKey, Version: x.CaseVersion, Steps: x.Steps})
	}
	if !partial {
		for _, x := range execs {
			add(x)
		}
	} else {
		for x, err := range duet.Paged(func(cursor string) ([]*duet.Execution, string, error) {
			return store.FindExecutionPage(ctx, duet.ExecutionFilter{RunID: run.ID, Cursor: cursor, Limit: maxPage, Results: true})
		}) {
			if err != nil {
				return nil, err
			}
			add(x)
		}
	}
	if !scan.CallsMCP(cases) {
		return nil, nil
	}
	servers, err := store.FindMCPServers(ctx, run.TriggeredBy)
	if err != nil {
		return nil, err
	}
	var sources []scan.Source
	for _, s := range servers {
		tools, err := store.FindMCPTools(ctx, s.ID)
		if err != nil {
			return nil, err
		}
		sources = append(sources, scan.ServerSource(s, tools))
	}
	return scan.ForTask(run.TriggeredBy, sources, cases), nil
}

func buildCase(ctx context.Context, arts *shotReader, x *duet.Execution, now time.Time) (*Case, error) {
	c := &Case{
		ExecutionID: x.ID, CaseID: x.CaseID, Key: x.CaseKey, Title: x.CaseTitle, Version: x.CaseVersion,
		Status: x.Status, ErrorCode: x.ErrorCode, ErrorMessage: x.ErrorMessage,
		StartedAt: x.StartedAt, FinishedAt: x.FinishedAt, Variables: redactVars(x.Vars), Attempt: x.Attempt,
	}
	for _, a := range x.Attempts {
		ca := &Attempt{Attempt: a.Attempt, Status: a.Status, ErrorCode: a.ErrorCode, ErrorMessage: a.ErrorMessage}
		if a.StartedAt != nil && a.FinishedAt != nil {
			ca.DurationMs = a.FinishedAt.Sub(*a.StartedAt).Milliseconds()
		}
		for _, res := range a.Results {
			st := &Step{Index: res.Index, Status: duet.StatusPending}
			if res.Index >= 0 && res.Index < len(x.Steps) {
				st.Line = x.Steps[res.Index].Line
			}
			if err := fillStep(ctx, arts, st, res, a.StartedAt); err != nil {
				return nil, err
			}
			ca.Steps = append(ca.Steps, st)
		}
		c.Attempts = append(c.Attempts, ca)
	}
	if x.StartedAt != nil {
		end := now
		if x.FinishedAt != nil {
			end = *x.FinishedAt
		}
		c.DurationMs = end.Sub(*x.StartedAt).Milliseconds()
	}
	results := map[int]*duet.StepResult{}
	for _, res := range x.Results {
		results[res.Index] = res
	}
	// The compiled steps give the whole list, with the ones that never ran.
	indexes := []int{}
	byIndex := map[int]*duet.Step{}
	for i := range x.Steps {
		byIndex[x.Steps[i].Index] = &x.Steps[i]
		indexes = append(indexes, x.Steps[i].Index)
	}
	for i := range results {
		if _, ok := byIndex[i]; !ok {
			indexes = append(indexes, i)
		}
	}
	slices.Sort(indexes)
	for _, i := range indexes {
		s := &Step{Index: i, Status: duet.StatusPending}
		if st := byIndex[i]; st != nil {
			s.Kind, s.Name, s.Line = st.Kind, st.Name, st.Line
		}
		if res := results[i]; res != nil {
			if err := fillStep(ctx, arts, s, res, x.StartedAt); err != nil {
				return nil, err
			}
		}
		c.Steps = append(c.Steps, s)
	}
	return c, nil
}

// fillStep fills s from res, a result of a step of a case that started at
// caseStart, and the results of the steps it ran (a flow step's children).
func fillStep(ctx context.Context, arts *shotReader, s *Step, res *duet.StepResult, caseStart *time.Time) error {
	s.Kind, s.Name, s.Status = res.Kind, res.Name, res.Status
	s.StartedAt, s.DurationMs, s.SavedAs = res.StartedAt, res.DurationMs, res.SavedAs
	s.ErrorCode, s.ErrorMessage, s.Optional = res.ErrorCode, res.ErrorMessage, res.Optional
	s.Hook, s.Branch, s.Iterations, s.Iteration, s.Omitted = res.Hook, res.Branch, res.Iterations, res.Iteration, res.Omitted
	s.AI = res.AI
	if res.AI != nil && res.AI.Transcript != "" {
		s.AITranscript = arts.text(ctx, res.AI.Transcript)
	}
	s.Output = redactOutput(res.SavedAs, res.Output)
	if res.StartedAt != nil && caseStart != nil {
		s.OffsetMs = max(res.StartedAt.Sub(*caseStart).Milliseconds(), 0)
	}
	for _, id := range outputImages(res) {
		if slices.Contains(res.Artifacts, id) {
			continue
		}
		shot, err := arts.read(ctx, id)
		if err != nil {
			return err
		}
		s.Screenshots = append(s.Screenshots, shot)
	}
	// The engine lists in Artifacts what it saved because the step
	// failed.
	for _, id := range res.Artifacts {
		shot, err := arts.read(ctx, id)
		if err != nil {
			return err
		}
		shot.OnFailure = true
		s.Screenshots = append(s.Screenshots, shot)
	}
	for _, c := range res.Children {
		cs := &Step{Index: c.Index}
		if err := fillStep(ctx, arts, cs, c, caseStart); err != nil {
			return err
		}
		s.Children = append(s.Children, cs)
	}
	return nil
}

// outputImages returns the artifact ids of the images a step saved: a
// screenshot step's, an assertScreenshot step's expected, actual and diff
// images.
func outputImages(res *duet.StepResult) []string {
	if (res.Kind != duet.StepScreenshot && res.Kind != duet.StepAssertScreenshot) || len(res.Output) == 0 {
		return nil
	}
	var out struct {
		Artifact string `json:"artifact"`
		Images   struct {
			Expected string `json:"expected"`
			Actual   string `json:"actual"`
			Diff     string `json:"diff"`
		} `json:"images"`
	}
	if json.Unmarshal(res.Output, &out) != nil {
		return nil
	}
	var ids []string
	for _, id := range []string{out.Artifact, out.Images.Expected, out.Images.Actual, out.Images.Diff} {
		if id != "" {
			ids = append(ids, id)
		}
	}
	return ids
}

// shotReader reads a report's screenshots within what the call may send:
// left is how many more bytes it may hold (-1: no limit), limit the
// result budget it came from.
type shotReader struct {
	arts        Artifacts
	left, limit int
}

func (r *shotReader) read(ctx context.Context, id string) (*Screenshot, error) {
	s := &Screenshot{ID: id}
	if r.arts == nil {
		s.Unavailable = "no artifact store"
		return s, nil
	}
	if r.left == 0 {
		s.Unavailable = r.over()
		return s, nil
	}
	data, err := r.arts.Read(ctx, id)
	if err == nil && r.left >= 0 {
		if len(data) > r.left {
			r.left, s.Unavailable = 0, r.over()
			return s, nil
		}
		r.left -= len(data)
	}
	switch {
	case err == nil:
		s.data, s.Bytes, s.ContentType = data, len(data), http.DetectContentType(data)
	case ctx.Err() != nil:
		return nil, ctx.Err()
	default:
		s.Unavailable = duet.ErrorMessage(err)
	}
	return s, nil
}

func (r *shotReader) over() string {
	return fmt.Sprintf("not included: the report's screenshots passed the result limit of %d bytes (DUET_MAX_RESULT_BYTES); "+
		"read a smaller part with the cursor, or run `duet report` where Duet runs", r.limit)
}

// redactVars redacts saved variables, by their own names too.
func redactVars(vars map[string]any) map[string]any {
	if len(vars) == 0 {
		return nil
	}
	out, _ := redact.Value(vars).(map[string]any)
	return out
}

// redactOutput redacts a stored step output.
func redactOutput(savedAs string, out json.RawMessage) json.RawMessage {
	if len(out) == 0 {
		return nil
	}
	if savedAs != "" && redact.IsSensitiveKey(savedAs) {
		b, _ := json.Marshal(redact.Mask)
		return b
	}
	var v any
	if json.Unmarshal(out, &v) != nil {
		return out
	}
	b, err := json.Marshal(redact.Value(v))
	if err != nil {
		return out
	}
	return b
}

// Totals counts the cases by how they ended.
type Totals struct {
	Cases, Passed, Failed, Error, Cancelled, NotRun int
	Flaky                                           int // passed on a retry
}

// Totals returns the counts of the run's cases: of the cases shown when it
// shows them all, else of the whole run.
func (r *Report) Totals() Totals {
	if r.Window != nil {
		rt := r.Run.Totals
		return Totals{Cases: rt.Cases, Passed: rt.Passed, Failed: rt.Failed, Error: rt.Error, Cancelled: rt.Cancelled, NotRun: rt.Pending + rt.Running, Flaky: rt.Flaky}
	}
	t := Totals{Cases: len(r.Cases)}
	for _, c := range r.Cases {
		switch c.Status {
		case duet.StatusPassed:
			t.Passed++
		case duet.StatusFlaky:
			t.Flaky++
		case duet.StatusFailed:
			t.Failed++
		case duet.StatusError:
			t.Error++
		case duet.StatusCancelled:
			t.Cancelled++
		default:
			t.NotRun++
		}
	}
	return t
}

// Write renders the report in format f.
func (r *Report) Write(w io.Writer, f Format) error {
	switch f {
	case HTML, "":
		return r.WriteHTML(w)
	case JSON:
		return r.WriteJSON(w)
	case JUnit:
		return r.WriteJUnit(w)
	}
	return duet.Errorf(duet.CodeInvalidArgument, "unknown report format %q", f)
}

// WriteJSON writes the report as indented JSON. Screenshots appear by id,
// without their content.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(r)
}

// formatDuration renders milliseconds for people: "85 ms", "1.24 s",
// "2 min 5 s", "1 h 2 min".
func formatDuration(ms int64) string {
	if ms < 3_600_000 {
		return duet.FormatMs(ms, 2)
	}
	return fmt.Sprintf("%d h %d min", ms/3_600_000, ms%3_600_000/60_000)
}
