package webui

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/api"
	"github.com/duet-test/duet/internal/auth"
	"github.com/duet-test/duet/internal/catalog"
	"github.com/duet-test/duet/internal/linediff"
	"github.com/duet-test/duet/internal/report"
	"github.com/duet-test/duet/internal/serverkey"
)

// ---- tasks ----

type tasksData struct {
	Query string
	Tasks catalog.ListTasksOut
}

func (c *Console) tasks(w http.ResponseWriter, r *http.Request, v *view) error {
	q := r.URL.Query()
	out, err := c.svc.ListTasks(r.Context(), v.caller, catalog.ListTasksIn{Query: q.Get("q"), Cursor: q.Get("cursor"), Limit: 50})
	if err != nil {
		return err
	}
	v.Title, v.Nav, v.Data = "Tasks", "tasks", tasksData{Query: q.Get("q"), Tasks: out}
	return c.render(w, http.StatusOK, "tasks", v)
}

type applyData struct {
	Source, BaseURL string
	// Editing is the task whose suite source is being edited (editSuite).
	Editing, TaskName, AppliedAt string
	ChangedSince                 []string
}

func (c *Console) applyForm(w http.ResponseWriter, r *http.Request, v *view) error {
	v.Title, v.Nav, v.Data = "Apply a suite", "tasks", applyData{}
	return c.render(w, http.StatusOK, "apply", v)
}

// editSuite opens the YAML the task was last applied from in the
// apply page's editor (api.GetSuiteSource: the owner's alone); saving it
// is an apply like any other.
func (c *Console) editSuite(w http.ResponseWriter, r *http.Request, v *view) error {
	src, err := c.svc.GetSuiteSource(r.Context(), v.caller, r.PathValue("id"))
	if err != nil {
		return err
	}
	t, err := c.svc.GetTask(r.Context(), v.caller, src.TaskID)
	if err != nil {
		return err
	}
	v.Title, v.Nav, v.Data = "Edit the suite of "+t.Task.Name, "tasks", applyData{Source: src.Source, Editing: src.TaskID, TaskName: t.Task.Name,
		AppliedAt: src.UpdatedAt.UTC().Format("2006-01-02 15:04 UTC") + " by " + src.AppliedBy, ChangedSince: src.ChangedSince}
	return c.render(w, http.StatusOK, "apply", v)
}

func (c *Console) apply(w http.ResponseWriter, r *http.Request, v *view) error {
	in := api.ApplyIn{Source: r.PostForm.Get("source"), BaseURL: strings.TrimSpace(r.PostForm.Get("baseUrl"))}
	res, err := c.svc.ApplySuite(r.Context(), v.caller, in)
	if err != nil {
		v.Title, v.Nav, v.Error, v.Data = "Apply a suite", "tasks", duet.ErrorMessage(err), applyData{Source: in.Source, BaseURL: in.BaseURL}
		return c.render(w, StatusOf(c.o.Codes, err), "apply", v)
	}
	return redirect(w, r, "/tasks/"+res.Task.ID, "applied")
}

type taskData struct {
	Task      catalog.GetTaskOut
	Owner     bool
	Cases     []catalog.CaseView
	MoreCases bool
	Runs      api.RunList
	Transfers api.Transfers
	RunKey    string
	Schedules api.ScheduleList
}

func (c *Console) task(w http.ResponseWriter, r *http.Request, v *view) error {
	ctx, id := r.Context(), r.PathValue("id")
	t, err := c.svc.GetTask(ctx, v.caller, id)
	if err != nil {
		return err
	}
	d := taskData{Task: t, Owner: t.Task.Owner == v.User, RunKey: duet.NewID("web")}
	cases, err := c.svc.CaseSources(ctx, v.caller, id, "", 200)
	if err != nil {
		return err
	}
	d.Cases, d.MoreCases = cases.Cases, cases.NextCursor != ""
	if d.Runs, err = c.svc.ListRuns(ctx, v.caller, api.RunListIn{TaskID: id, Limit: 10}); err != nil {
		return err
	}
	if d.Transfers, err = c.svc.ListTransfers(ctx, v.caller, id); err != nil {
		return err
	}
	if d.Schedules, err = c.svc.ListSchedules(ctx, v.caller, api.ScheduleListIn{TaskID: id}); err != nil {
		return err
	}
	v.Title, v.Nav, v.Data = t.Task.Name, "tasks", d
	return c.render(w, http.StatusOK, "task", v)
}

func (c *Console) startRun(w http.ResponseWriter, r *http.Request, v *view) error {
	key := r.PostForm.Get("idempotencyKey")
	if key == "" {
		key = duet.NewID("web")
	}
	out, err := c.svc.StartRun(r.Context(), v.caller, catalog.StartRunIn{TaskID: r.PathValue("id"), IdempotencyKey: key,
		Device: strings.TrimSpace(r.PostForm.Get("device")), Environment: strings.TrimSpace(r.PostForm.Get("environment")),
		Tags: tagList(r.PostForm.Get("tags")), Grep: strings.TrimSpace(r.PostForm.Get("grep"))})
	if err != nil {
		return err
	}
	return redirect(w, r, "/runs/"+out.RunID, "")
}

// tagList reads a comma-separated list of tags (none: nil).
func tagList(s string) []string {
	var out []string
	for t := range strings.SplitSeq(s, ",") {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, t)
		}
	}
	return out
}

func (c *Console) share(w http.ResponseWriter, r *http.Request, v *view) error {
	if _, err := c.svc.ShareTask(r.Context(), v.caller, r.PathValue("id"), api.ShareIn{With: r.PostForm.Get("with")}); err != nil {
		return err
	}
	return redirect(w, r, "/tasks/"+r.PathValue("id"), "shared")
}

func (c *Console) unshare(w http.ResponseWriter, r *http.Request, v *view) error {
	if _, err := c.svc.UnshareTask(r.Context(), v.caller, r.PathValue("id"), r.PostForm.Get("with")); err != nil {
		return err
	}
	return redirect(w, r, "/tasks/"+r.PathValue("id"), "unshared")
}

func (c *Console) transfer(w http.ResponseWriter, r *http.Request, v *view) error {
	if _, err := c.svc.TransferTask(r.Context(), v.caller, r.PathValue("id"), api.TransferIn{To: r.PostForm.Get("to")}); err != nil {
		return err
	}
	return redirect(w, r, "/tasks/"+r.PathValue("id"), "transferred")
}

type trendsData struct {
	Task   catalog.GetTaskOut
	Trends api.Trends
	Charts charts
}

func (c *Console) trends(w http.ResponseWriter, r *http.Request, v *view) error {
	t, err := c.svc.GetTask(r.Context(), v.caller, r.PathValue("id"))
	if err != nil {
		return err
	}
	n, _ := strconv.Atoi(r.URL.Query().Get("runs"))
	tr, err := c.svc.Trends(r.Context(), v.caller, t.Task.ID, api.TrendsIn{Runs: n})
	if err != nil {
		return err
	}
	v.Title, v.Nav, v.Data = "Trends: "+t.Task.Name, "tasks", trendsData{Task: t, Trends: tr, Charts: drawCharts(tr)}
	return c.render(w, http.StatusOK, "trends", v)
}

type caseData struct {
	Case     catalog.CaseView
	TaskName string
	Approval api.Approval
	Alerts   []*duet.ContractAlert
	Versions api.CaseVersions // the newest, and the diff asked for
	From, To int              // the versions the comparison form names
	Diff     []diffLine
}

// diffLine is one line of a diff of two case versions as the case page
// shows it: a class (kept, added, removed) and its sign.
type diffLine struct {
	Class, Sign, Text string
}

// caseVersions reads the newest versions of case caseID and, when the
// query names them, the diff of two (from, to): what the case page shows.
func (c *Console) caseVersions(r *http.Request, v *view, d *caseData) error {
	in := api.CaseVersionsIn{}
	in.From, _ = strconv.Atoi(r.URL.Query().Get("from"))
	in.To, _ = strconv.Atoi(r.URL.Query().Get("to"))
	vs, err := c.svc.ListCaseVersions(r.Context(), v.caller, d.Case.ID, in)
	if err != nil {
		return err
	}
	d.Versions, d.From, d.To = vs, in.From, in.To
	if in.From == 0 && len(vs.Versions) > 1 {
		d.From, d.To = vs.Versions[1].Version, vs.Versions[0].Version
	}
	if vs.Diff != nil {
		for _, l := range vs.Diff.Lines {
			dl := diffLine{Class: "kept", Sign: " ", Text: l.Text}
			switch l.Op {
			case linediff.Added:
				dl.Class, dl.Sign = "added", "+"
			case linediff.Removed:
				dl.Class, dl.Sign = "removed", "-"
			}
			d.Diff = append(d.Diff, dl)
		}
	}
	return nil
}

func (c *Console) caseDetail(w http.ResponseWriter, r *http.Request, v *view) error {
	cs, err := c.svc.GetCase(r.Context(), v.caller, r.PathValue("id"))
	if err != nil {
		return err
	}
	ap, err := c.svc.GetApproval(r.Context(), v.caller, cs.Case.ID)
	if err != nil {
		return err
	}
	t, err := c.svc.GetTask(r.Context(), v.caller, cs.Case.TaskID)
	if err != nil {
		return err
	}
	alerts, err := c.svc.ContractAlerts(r.Context(), v.caller, cs.Case.TaskID)
	if err != nil {
		return err
	}
	d := caseData{Case: cs.Case, TaskName: t.Task.Name, Approval: ap}
	if err := c.caseVersions(r, v, &d); err != nil {
		return err
	}
	for _, a := range alerts.Alerts {
		if a.CaseID == cs.Case.ID {
			d.Alerts = append(d.Alerts, a)
		}
	}
	v.Title, v.Nav, v.Data = cs.Case.Title, "tasks", d
	return c.render(w, http.StatusOK, "case", v)
}

func (c *Console) approve(w http.ResponseWriter, r *http.Request, v *view) error {
	ver, _ := strconv.Atoi(r.PostForm.Get("version"))
	in := api.ApprovalIn{Version: ver, DestinationsHash: r.PostForm.Get("destinations")}
	if in.DestinationsHash == "" {
		// The form always names what it showed: an approval is of that.
		return duet.Errorf(duet.CodeInvalidArgument, "the approval form names no destinations: reload the case and review it again")
	}
	if _, err := c.svc.ApproveCase(r.Context(), v.caller, r.PathValue("id"), in); err != nil {
		return err
	}
	return redirect(w, r, "/cases/"+escapePath(r.PathValue("id")), "approved")
}

// ---- runs ----

type runsData struct {
	TaskID, Status string
	Branch, Commit string
	Statuses       []string
	Tasks          []catalog.TaskView
	Runs           api.RunList
}

// RunsPageSize is how many runs a page of the console lists.
const RunsPageSize = 50

func (c *Console) runs(w http.ResponseWriter, r *http.Request, v *view) error {
	q := r.URL.Query()
	in := api.RunListIn{TaskID: q.Get("task"), Status: duet.RunStatus(q.Get("status")), Branch: q.Get("branch"), Commit: q.Get("commit"), Cursor: q.Get("cursor"), Limit: RunsPageSize}
	list, err := c.svc.ListRuns(r.Context(), v.caller, in)
	if err != nil {
		return err
	}
	tasks, err := c.svc.ListTasks(r.Context(), v.caller, catalog.ListTasksIn{Limit: 100})
	if err != nil {
		return err
	}
	v.Title, v.Nav, v.Data = "Runs", "runs", runsData{TaskID: in.TaskID, Status: string(in.Status), Branch: in.Branch, Commit: in.Commit, Runs: list, Tasks: tasks.Tasks,
		Statuses: []string{"queued", "running", "passed", "failed", "error", "cancelled"}}
	return c.render(w, http.StatusOK, "runs", v)
}

type runData struct {
	Run      catalog.GetRunOut
	TaskName string
	Traces   map[string]*api.TraceOf // execution id → its trace (trace.go)
	Tags     map[string][]string     // case id → the case's tags
}

func (c *Console) run(w http.ResponseWriter, r *http.Request, v *view) error {
	run, err := c.svc.GetRun(r.Context(), v.caller, catalog.GetRunIn{RunID: r.PathValue("id"), Cursor: r.URL.Query().Get("cursor"), Limit: 200})
	if err != nil {
		return err
	}
	t, err := c.svc.GetTask(r.Context(), v.caller, run.Run.TaskID)
	if err != nil {
		return err
	}
	n, err := c.svc.RunNumber(r.Context(), v.caller, run.Run.ID)
	if err != nil {
		return err
	}
	tags, err := c.caseTags(r, v, run.Run.TaskID)
	if err != nil {
		return err
	}
	d := runData{Run: run, TaskName: t.Task.Name, Traces: c.svc.TracesOf(r.Context(), v.caller, run), Tags: tags}
	v.Title, v.Nav, v.Data = runTitle(t.Task.Name, n, run.Run), "runs", d
	return c.render(w, http.StatusOK, "run", v)
}

// caseTags returns the tags of the task's cases by case id.
func (c *Console) caseTags(r *http.Request, v *view, taskID string) (map[string][]string, error) {
	out := map[string][]string{}
	for cs, err := range duet.Paged(func(cursor string) ([]catalog.CaseSummary, string, error) {
		page, err := c.svc.ListCases(r.Context(), v.caller, catalog.ListCasesIn{TaskID: taskID, Cursor: cursor, Limit: 200})
		return page.Cases, page.NextCursor, err
	}) {
		if err != nil {
			return nil, err
		}
		if len(cs.Tags) > 0 {
			out[cs.ID] = cs.Tags
		}
	}
	return out, nil
}

// runTitle names a run as a person does: its task, its number among the
// task's runs (1 the first) and when it started (its id is on the page).
func runTitle(task string, n int, r catalog.RunView) string {
	at, what := r.CreatedAt, "queued"
	if r.StartedAt != "" {
		at, what = r.StartedAt, "started"
	}
	if t, err := time.Parse(time.RFC3339Nano, at); err == nil {
		at = t.UTC().Format("Jan 2, 15:04:05 UTC")
	}
	return fmt.Sprintf("%s — run #%d, %s %s", task, n, what, at)
}

// cancel asks a run to stop, and says what came of it: a run that had
// already ended had nothing to cancel.
func (c *Console) cancel(w http.ResponseWriter, r *http.Request, v *view) error {
	run, err := c.svc.CancelRun(r.Context(), v.caller, r.PathValue("id"))
	if err != nil {
		return err
	}
	done := "cancelled"
	switch {
	case run.Done && run.Status != duet.StatusCancelled:
		done = "ended"
	case run.Done:
		done = "cancelled-now"
	}
	return redirect(w, r, "/runs/"+r.PathValue("id"), done)
}

func (c *Console) events(w http.ResponseWriter, r *http.Request, v *view) error {
	w.Header().Del("Cache-Control")
	return api.ServeProgress(w, r, c.svc, v.caller, r.PathValue("id"), func(w http.ResponseWriter, err error) {
		api.WriteError(w, StatusOf(c.o.Codes, err), duet.ErrorCode(err), duet.ErrorMessage(err))
	})
}

func (c *Console) report(w http.ResponseWriter, r *http.Request, v *view) error {
	f, err := report.ParseFormat(r.URL.Query().Get("format"))
	if err != nil {
		return err
	}
	rep, err := c.svc.RunReport(r.Context(), v.caller, r.PathValue("id"), f, r.URL.Query().Get("cursor"))
	if err != nil {
		return err
	}
	w.Header().Del("X-Frame-Options")
	api.WriteReport(w, rep, r.PathValue("id"), f, r.URL.Query().Has("download"))
	return nil
}

// ---- AI asset center ----

type assetsData struct {
	List api.AssetList
	Kind string
	Form api.AssetIn
}

func (c *Console) assets(w http.ResponseWriter, r *http.Request, v *view) error {
	kind := r.URL.Query().Get("kind")
	list, err := c.svc.ListAssets(r.Context(), v.caller, api.AssetListIn{Kind: duet.AssetKind(kind)})
	if err != nil {
		return err
	}
	v.Title, v.Nav, v.Data = "AI Asset Center", "assets", assetsData{List: list, Kind: kind, Form: api.AssetIn{Kind: duet.AssetSkill}}
	return c.render(w, http.StatusOK, "assets", v)
}

func splitList(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\r' || r == '\t' })
}

func (c *Console) saveAsset(w http.ResponseWriter, r *http.Request, v *view) error {
	f := r.PostForm
	in := api.AssetIn{Kind: duet.AssetKind(f.Get("kind")), Name: f.Get("name"), Description: f.Get("description"), Body: f.Get("body")}
	if f.Has("sharedWith") {
		sw := splitList(f.Get("sharedWith"))
		in.SharedWith = &sw
	}
	saved, err := c.svc.SaveAsset(r.Context(), v.caller, in)
	if err != nil {
		list, lerr := c.svc.ListAssets(r.Context(), v.caller, api.AssetListIn{})
		if lerr != nil {
			return err
		}
		v.Title, v.Nav, v.Error, v.Data = "AI Asset Center", "assets", duet.ErrorMessage(err), assetsData{List: list, Form: in}
		return c.render(w, StatusOf(c.o.Codes, err), "assets", v)
	}
	a := saved.Asset
	return redirect(w, r, "/assets/"+string(a.Kind)+"/"+escapePath(a.Owner)+"/"+a.Name, "saved")
}

type assetData struct {
	Asset    *duet.Asset
	Versions []int
	Owner    bool
}

func (c *Console) asset(w http.ResponseWriter, r *http.Request, v *view) error {
	ver, _ := strconv.Atoi(r.URL.Query().Get("version"))
	kind := duet.AssetKind(r.PathValue("kind"))
	ref := r.PathValue("owner") + "/" + r.PathValue("name")
	a, err := c.svc.GetAsset(r.Context(), v.caller, kind, ref, ver)
	if err != nil {
		return err
	}
	latest := a
	if ver != 0 {
		if latest, err = c.svc.GetAsset(r.Context(), v.caller, kind, ref, 0); err != nil {
			return err
		}
	}
	d := assetData{Asset: a, Owner: a.Owner == v.User}
	for i := latest.Version; i >= 1; i-- {
		d.Versions = append(d.Versions, i)
	}
	v.Title, v.Nav, v.Data = string(a.Kind)+" "+a.Name, "assets", d
	return c.render(w, http.StatusOK, "asset", v)
}

func (c *Console) shareAsset(w http.ResponseWriter, r *http.Request, v *view) error {
	saved, err := c.svc.ShareAsset(r.Context(), v.caller, duet.AssetKind(r.PathValue("kind")), r.PathValue("name"),
		api.AssetShareIn{SharedWith: splitList(r.PostForm.Get("sharedWith"))})
	if err != nil {
		return err
	}
	return redirect(w, r, "/assets/"+string(saved.Asset.Kind)+"/"+escapePath(saved.Asset.Owner)+"/"+saved.Asset.Name, "shared")
}

func (c *Console) deleteAsset(w http.ResponseWriter, r *http.Request, v *view) error {
	if _, err := c.svc.DeleteAsset(r.Context(), v.caller, duet.AssetKind(r.PathValue("kind")), r.PathValue("name")); err != nil {
		return err
	}
	return redirect(w, r, "/assets", "deleted")
}

// ---- MCP servers ----

type serversData struct {
	List    api.ServerList
	Name    string
	URL     string
	Replace bool
	Problem *mcpProblem
}

func (c *Console) servers(w http.ResponseWriter, r *http.Request, v *view) error {
	list, err := c.svc.ListServers(r.Context(), v.caller)
	if err != nil {
		return err
	}
	v.Title, v.Nav, v.Data = "MCP servers", "servers", serversData{List: list}
	return c.render(w, http.StatusOK, "servers", v)
}

// parseHeaders reads "Name: value" lines. Messages name lines, never
// values.
func parseHeaders(s string) (map[string]string, error) {
	h := map[string]string{}
	for i, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		name, val, ok := strings.Cut(line, ":")
		if !ok || strings.TrimSpace(name) == "" {
			return nil, duet.Errorf(duet.CodeInvalidArgument, "header line %d: want Name: value", i+1)
		}
		h[strings.TrimSpace(name)] = strings.TrimSpace(val)
	}
	return h, nil
}

func credentials(f map[string][]string) (api.Credentials, error) {
	get := func(k string) string {
		if v := f[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	h, err := parseHeaders(get("headers"))
	if err != nil {
		return api.Credentials{}, err
	}
	return api.Credentials{BearerToken: strings.TrimSpace(get("bearerToken")), Headers: h}, nil
}

// register registers a server (or replaces the caller's registration of
// that name) and syncs it. When the registration was made but its sync
// failed — a wrong token, a server down — the answer is the new
// registration's page with what went wrong and the form to fix it; when
// nothing was registered, the MCP page with its form filled as the advice
// says. The credentials are never rendered back.
func (c *Console) register(w http.ResponseWriter, r *http.Request, v *view) error {
	creds, err := credentials(r.PostForm)
	name, u := strings.TrimSpace(r.PostForm.Get("name")), strings.TrimSpace(r.PostForm.Get("url"))
	replace := r.PostForm.Get("replace") != ""
	var reg api.ServerDetail
	if err == nil {
		reg, err = c.svc.RegisterServer(r.Context(), v.caller, api.RegisterIn{Name: name, URL: u, Credentials: creds, Replace: replace})
		clear(creds.Headers)
	}
	if err == nil {
		return redirect(w, r, "/servers/"+escapePath(reg.Server.Name), "registered")
	}
	list, lerr := c.svc.ListServers(r.Context(), v.caller)
	if lerr != nil {
		return err
	}
	key, _ := serverkey.Key(u)
	if kept := c.keptRegistration(r, v, err, name, key, list); kept != nil {
		return c.renderServer(w, v, *kept, err)
	}
	p, form := registerProblem(err, name, key, list.Servers)
	form.List, form.URL, form.Problem = list, u, &p
	form.Replace = form.Replace || replace
	v.Title, v.Nav, v.Data = "MCP servers", "servers", form
	return c.render(w, StatusOf(c.o.Codes, err), "servers", v)
}

// keptRegistration returns the registration named name with serverKey
// key when registering it failed after it was stored — its sync failed —
// and nil when nothing was registered (a refusal of the registration
// itself: a conflict, a bad name, address or header).
func (c *Console) keptRegistration(r *http.Request, v *view, err error, name, key string, list api.ServerList) *api.ServerDetail {
	switch duet.ErrorCode(err) {
	case duet.CodeConflict, duet.CodeInvalidArgument, duet.CodeUnavailable, duet.CodePermissionDenied, duet.CodeNotFound:
		return nil
	}
	for _, s := range list.Servers {
		if s.Name == name && s.ServerKey == key {
			d, gerr := c.svc.GetServer(r.Context(), v.caller, name)
			if gerr != nil {
				return nil
			}
			return &d
		}
	}
	return nil
}

type serverData struct {
	Detail  api.ServerDetail
	Problem *mcpProblem
}

// renderServer answers with a registration's page, showing err (nil for
// none) in the console's words with the form that fixes it.
func (c *Console) renderServer(w http.ResponseWriter, v *view, d api.ServerDetail, err error) error {
	status, data := http.StatusOK, serverData{Detail: d}
	if err != nil {
		p := serverProblem(err, d.Server)
		status, data.Problem = StatusOf(c.o.Codes, err), &p
	}
	v.Title, v.Nav, v.Data = "MCP server "+d.Server.Name, "servers", data
	return c.render(w, status, "server", v)
}

// serversProblem answers with the MCP page and err on it (a registration
// that is gone, say).
func (c *Console) serversProblem(w http.ResponseWriter, r *http.Request, v *view, err error) error {
	list, lerr := c.svc.ListServers(r.Context(), v.caller)
	if lerr != nil {
		return err
	}
	p := serverProblem(err, api.ServerView{Name: r.PathValue("name")})
	p.Replace = false
	v.Title, v.Nav, v.Data = "MCP servers", "servers", serversData{List: list, Problem: &p}
	return c.render(w, StatusOf(c.o.Codes, err), "servers", v)
}

func (c *Console) server(w http.ResponseWriter, r *http.Request, v *view) error {
	d, err := c.svc.GetServer(r.Context(), v.caller, r.PathValue("name"))
	if err != nil {
		return err
	}
	return c.renderServer(w, v, d, nil)
}

// syncServer archives a server's catalog again; a failure is shown on
// the server's page with what to do (not the bare error page).
func (c *Console) syncServer(w http.ResponseWriter, r *http.Request, v *view) error {
	if _, err := c.svc.SyncServer(r.Context(), v.caller, r.PathValue("name")); err != nil {
		d, gerr := c.svc.GetServer(r.Context(), v.caller, r.PathValue("name"))
		if gerr != nil {
			return c.serversProblem(w, r, v, gerr)
		}
		return c.renderServer(w, v, d, err)
	}
	return redirect(w, r, "/servers/"+escapePath(r.PathValue("name")), "synced")
}

func (c *Console) removeServer(w http.ResponseWriter, r *http.Request, v *view) error {
	if _, err := c.svc.RemoveServer(r.Context(), v.caller, r.PathValue("name")); err != nil {
		return c.serversProblem(w, r, v, err)
	}
	return redirect(w, r, "/servers", "removed")
}

type toolData struct {
	Server  api.ServerView
	Tool    *duet.MCPTool
	Form    form
	Call    *api.CallOut
	Problem *mcpProblem // what to do about the call's error
	Pretty  string
	Text    string
}

// toolProblem answers a tool page that cannot be shown — its
// registration or its tool is gone — with the page that can: the
// server's, or the MCP page.
func (c *Console) toolProblem(w http.ResponseWriter, r *http.Request, v *view, d api.ServerDetail, err error) error {
	if duet.ErrorCode(err) == duet.CodeMCPToolNotFound {
		return c.renderServer(w, v, d, err)
	}
	return c.serversProblem(w, r, v, err)
}

func (c *Console) findTool(r *http.Request, v *view) (api.ServerDetail, *duet.MCPTool, error) {
	d, err := c.svc.GetServer(r.Context(), v.caller, r.PathValue("name"))
	if err != nil {
		return d, nil, err
	}
	for _, t := range d.Tools {
		if t.Name == r.PathValue("tool") {
			return d, t, nil
		}
	}
	return d, nil, duet.Errorf(duet.CodeMCPToolNotFound, "%s has no tool %q in its archived catalog (sync it if it changed)", d.Server.Name, r.PathValue("tool"))
}

func (c *Console) toolForm(w http.ResponseWriter, r *http.Request, v *view) error {
	d, t, err := c.findTool(r, v)
	if err != nil {
		return c.toolProblem(w, r, v, d, err)
	}
	v.Title, v.Nav, v.Data = t.Name+" — "+d.Server.Name, "servers", toolData{Server: d.Server, Tool: t, Form: buildForm(t.InputSchema, nil)}
	return c.render(w, http.StatusOK, "tool", v)
}

func (c *Console) callTool(w http.ResponseWriter, r *http.Request, v *view) error {
	d, t, err := c.findTool(r, v)
	if err != nil {
		return c.toolProblem(w, r, v, d, err)
	}
	f := buildForm(t.InputSchema, r.PostForm)
	args, err := f.arguments(r.PostForm)
	data := toolData{Server: d.Server, Tool: t, Form: f}
	status := http.StatusOK
	if err != nil {
		// Refused before the call: audited here, once (a call audits
		// itself).
		c.svc.Catalog().Refuse(catalog.Op{Caller: v.caller, Method: "callTool"}, err)
		v.Error = duet.ErrorMessage(err)
		status = StatusOf(c.o.Codes, err)
	} else {
		out, err := c.svc.CallTool(r.Context(), v.caller, d.Server.Name, t.Name, api.CallIn{Arguments: args})
		if err != nil {
			return c.toolProblem(w, r, v, d, err)
		}
		data.Call = &out
		if out.Error != nil {
			p := serverProblem(&duet.Error{Code: out.Error.Code, Message: out.Error.Message}, d.Server)
			if p.Replace {
				p.Link = "/servers/" + escapePath(d.Server.Name) + "#replace"
			}
			data.Problem = &p
		}
		if out.Result != nil {
			data.Text = out.Result.Text()
			if len(out.Result.StructuredContent) > 0 {
				data.Pretty = prettyJSON(out.Result.StructuredContent)
			}
		}
	}
	v.Title, v.Nav, v.Data = t.Name+" — "+d.Server.Name, "servers", data
	return c.render(w, status, "tool", v)
}

func prettyJSON(raw json.RawMessage) string {
	var x any
	if json.Unmarshal(raw, &x) != nil {
		return string(raw)
	}
	b, err := json.MarshalIndent(x, "", "  ")
	if err != nil {
		return string(raw)
	}
	return string(b)
}

// ---- teams ----

func (c *Console) teams(w http.ResponseWriter, r *http.Request, v *view) error {
	list, err := c.svc.ListTeams(r.Context(), v.caller)
	if err != nil {
		return err
	}
	v.Title, v.Nav, v.Data = "Teams", "teams", list
	return c.render(w, http.StatusOK, "teams", v)
}

func (c *Console) createTeam(w http.ResponseWriter, r *http.Request, v *view) error {
	t, err := c.svc.CreateTeam(r.Context(), v.caller, api.TeamIn{Name: r.PostForm.Get("name")})
	if err != nil {
		return err
	}
	return redirect(w, r, "/teams/"+t.Name, "created")
}

type teamData struct {
	Detail  api.TeamDetail
	Mine    api.ServerList
	Problem *mcpProblem // of registering a listed server
}

func (c *Console) team(w http.ResponseWriter, r *http.Request, v *view) error {
	d, err := c.svc.GetTeam(r.Context(), v.caller, r.PathValue("team"))
	if err != nil {
		return err
	}
	mine, err := c.svc.ListServers(r.Context(), v.caller)
	if err != nil {
		return err
	}
	v.Title, v.Nav, v.Data = "Team "+d.Team.Name, "teams", teamData{Detail: d, Mine: mine}
	return c.render(w, http.StatusOK, "team", v)
}

func (c *Console) addMember(w http.ResponseWriter, r *http.Request, v *view) error {
	if _, err := c.svc.AddMember(r.Context(), v.caller, r.PathValue("team"), api.MemberIn{User: r.PostForm.Get("user")}); err != nil {
		return err
	}
	return redirect(w, r, "/teams/"+r.PathValue("team"), "added")
}

func (c *Console) removeMember(w http.ResponseWriter, r *http.Request, v *view) error {
	if _, err := c.svc.RemoveMember(r.Context(), v.caller, r.PathValue("team"), r.PostForm.Get("user")); err != nil {
		return err
	}
	return redirect(w, r, "/teams/"+r.PathValue("team"), "removed")
}

func (c *Console) setTeamRole(w http.ResponseWriter, r *http.Request, v *view) error {
	in := api.RoleIn{Role: duet.TeamRole(r.PostForm.Get("role"))}
	if _, err := c.svc.SetRole(r.Context(), v.caller, r.PathValue("team"), r.PostForm.Get("user"), in); err != nil {
		return err
	}
	return redirect(w, r, "/teams/"+r.PathValue("team"), "role")
}

func (c *Console) deleteTeam(w http.ResponseWriter, r *http.Request, v *view) error {
	if _, err := c.svc.DeleteTeam(r.Context(), v.caller, r.PathValue("team")); err != nil {
		return err
	}
	return redirect(w, r, "/teams", "deleted")
}

func (c *Console) addTeamServer(w http.ResponseWriter, r *http.Request, v *view) error {
	if _, err := c.svc.AddTeamServer(r.Context(), v.caller, r.PathValue("team"), api.TeamServerIn{From: r.PostForm.Get("from"), Description: r.PostForm.Get("description")}); err != nil {
		return err
	}
	return redirect(w, r, "/teams/"+r.PathValue("team"), "added")
}

func (c *Console) removeTeamServer(w http.ResponseWriter, r *http.Request, v *view) error {
	if _, err := c.svc.RemoveTeamServer(r.Context(), v.caller, r.PathValue("team"), r.PathValue("name")); err != nil {
		return err
	}
	return redirect(w, r, "/teams/"+r.PathValue("team"), "removed")
}

func (c *Console) registerTeamServer(w http.ResponseWriter, r *http.Request, v *view) error {
	creds, err := credentials(r.PostForm)
	if err != nil {
		return err
	}
	// The page showed the entry's address; the form carries it back, so a
	// list changed since the page was read is refused (CONFLICT).
	in := api.TeamRegisterIn{URL: r.PostForm.Get("url"), Credentials: creds}
	d, err := c.svc.RegisterTeamServer(r.Context(), v.caller, r.PathValue("team"), r.PathValue("name"), in)
	clear(creds.Headers)
	if err == nil {
		return redirect(w, r, "/servers/"+escapePath(d.Server.Name), "registered")
	}
	// Registered, but its sync failed: the registration's page says what
	// to do. Else the team page does.
	list, lerr := c.svc.ListServers(r.Context(), v.caller)
	if lerr != nil {
		return err
	}
	key, _ := serverkey.Key(strings.TrimSpace(in.URL))
	if kept := c.keptRegistration(r, v, err, r.PathValue("name"), key, list); kept != nil {
		return c.renderServer(w, v, *kept, err)
	}
	team, terr := c.svc.GetTeam(r.Context(), v.caller, r.PathValue("team"))
	if terr != nil {
		return err
	}
	p, _ := registerProblem(err, r.PathValue("name"), key, list.Servers)
	for _, s := range list.Servers {
		if s.ServerKey == key {
			p.What = fmt.Sprintf("You registered this address already, as %q: your cases and calls reach it by that name.", s.Name)
			p.Advice = fmt.Sprintf("Use %q as it is, or give it new credentials on its page (Replace the registration).", s.Name)
			p.Link = "/servers/" + escapePath(s.Name) + "#replace"
		}
	}
	v.Title, v.Nav, v.Data = "Team "+team.Team.Name, "teams", teamData{Detail: team, Mine: list, Problem: &p}
	return c.render(w, StatusOf(c.o.Codes, err), "team", v)
}

// ---- audit ----

type auditData struct {
	View        string
	Filter      api.RecordsIn
	Audit       api.AuditList
	Invocations api.InvocationList
	Next        string
}

func (c *Console) audit(w http.ResponseWriter, r *http.Request, v *view) error {
	q := r.URL.Query()
	in := api.RecordsIn{User: q.Get("user"), Tool: q.Get("tool"), Method: q.Get("method"), Source: q.Get("source"), Outcome: q.Get("outcome"),
		TraceID: q.Get("traceId"), Server: q.Get("server"), Limit: 100}
	if b := q.Get("before"); b != "" {
		t, err := time.Parse(time.RFC3339Nano, b)
		if err != nil {
			return duet.Errorf(duet.CodeInvalidArgument, "before: want an RFC 3339 time")
		}
		in.Before = t
	}
	d := auditData{View: q.Get("view"), Filter: in}
	var last time.Time
	var n int
	if d.View == "invocations" {
		list, err := c.svc.ListInvocations(r.Context(), v.caller, in)
		if err != nil {
			return err
		}
		d.Invocations, n = list, len(list.Records)
		if n > 0 {
			last = list.Records[n-1].Time
		}
	} else {
		d.View = "audit"
		list, err := c.svc.ListAudit(r.Context(), v.caller, in)
		if err != nil {
			return err
		}
		d.Audit, n = list, len(list.Records)
		if n > 0 {
			last = list.Records[n-1].Time
		}
	}
	if n == in.Limit {
		nq := r.URL.Query()
		nq.Set("before", last.UTC().Format(time.RFC3339Nano))
		d.Next = "/audit?" + nq.Encode()
	}
	v.Title, v.Nav, v.Data = "Audit", "audit", d
	return c.render(w, http.StatusOK, "audit", v)
}

// ---- tokens ----

type tokensData struct {
	List    api.TokenList
	Created *api.TokenCreated
}

// newTokenCookie carries a new token's value from the POST that created
// it to the page that shows it, once (redirect after POST: a reload posts
// nothing and shows nothing). It is sealed (newTokenKey) and lives a
// minute, on /tokens only.
const newTokenCookie = "duet_new_token"

// newTokenKey is the key that seals a new token's value for its trip in
// newTokenCookie: derived from the session's CSRF secret, so that the
// cookie alone — in a browser's cookie store, say — opens nothing, and
// only the session that created the token reads it.
func newTokenKey(csrf string) cipher.AEAD {
	k := sha256.Sum256([]byte("duet new-token cookie\x00" + csrf))
	block, _ := aes.NewCipher(k[:])
	aead, _ := cipher.NewGCMWithRandomNonce(block)
	return aead
}

func (c *Console) tokens(w http.ResponseWriter, r *http.Request, v *view) error {
	list, err := c.svc.ListTokens(r.Context(), v.caller)
	if err != nil {
		return err
	}
	d := tokensData{List: list}
	if ck, err := r.Cookie(newTokenCookie); err == nil {
		// Shown once: the cookie goes with this answer.
		http.SetCookie(w, &http.Cookie{Name: newTokenCookie, Path: "/tokens", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: auth.OverTLS(r)})
		var created api.TokenCreated
		if sealed, err := base64.RawURLEncoding.DecodeString(ck.Value); err == nil {
			if plain, err := newTokenKey(v.CSRF).Open(nil, nil, sealed, []byte(v.User)); err == nil && json.Unmarshal(plain, &created) == nil {
				d.Created = &created
			}
		}
	}
	v.Title, v.Nav, v.Data = "Tokens", "tokens", d
	return c.render(w, http.StatusOK, "tokens", v)
}

func (c *Console) createToken(w http.ResponseWriter, r *http.Request, v *view) error {
	days, _ := strconv.Atoi(r.PostForm.Get("expiresInDays"))
	created, err := c.svc.CreateToken(r.Context(), v.caller, api.TokenIn{Name: r.PostForm.Get("name"), ExpiresInDays: days})
	if err != nil {
		return err
	}
	plain, err := json.Marshal(created)
	if err != nil {
		return err
	}
	sealed := newTokenKey(v.CSRF).Seal(nil, nil, plain, []byte(v.User))
	http.SetCookie(w, &http.Cookie{Name: newTokenCookie, Value: base64.RawURLEncoding.EncodeToString(sealed), Path: "/tokens", MaxAge: 60,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: auth.OverTLS(r)})
	return redirect(w, r, "/tokens", "")
}

func (c *Console) revokeToken(w http.ResponseWriter, r *http.Request, v *view) error {
	if _, err := c.svc.RevokeToken(r.Context(), v.caller, r.PathValue("id")); err != nil {
		return err
	}
	return redirect(w, r, "/tokens", "revoked")
}

// ---- schedules ----

func (c *Console) addSchedule(w http.ResponseWriter, r *http.Request, v *view) error {
	f := r.PostForm
	in := api.ScheduleIn{TaskID: r.PathValue("id"), Name: f.Get("name"), Missed: f.Get("missed"), Overlap: f.Get("overlap")}
	if f.Get("kind") == "every" {
		in.Every = f.Get("every")
	} else {
		in.Cron, in.TimeZone = f.Get("cron"), f.Get("timeZone")
	}
	if _, err := c.svc.CreateSchedule(r.Context(), v.caller, in); err != nil {
		return err
	}
	return redirect(w, r, "/tasks/"+escapePath(in.TaskID), "scheduled")
}

func (c *Console) changeSchedule(w http.ResponseWriter, r *http.Request, v *view) error {
	id := r.PathValue("sid")
	var err error
	switch r.PathValue("action") {
	case "pause":
		_, err = c.svc.PauseSchedule(r.Context(), v.caller, id)
	case "resume":
		_, err = c.svc.ResumeSchedule(r.Context(), v.caller, id)
	case "remove":
		_, err = c.svc.RemoveSchedule(r.Context(), v.caller, id)
	default:
		return duet.Errorf(duet.CodeNotFound, "no such action")
	}
	if err != nil {
		return err
	}
	return redirect(w, r, "/tasks/"+escapePath(r.PathValue("id")), "schedule "+r.PathValue("action")+"d")
}
