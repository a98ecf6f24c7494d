package report_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"encoding/xml"
	"image"
	"image/color"
	"image/png"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/artifact"
	"github.com/duet-test/duet/internal/catalog"
	"github.com/duet-test/duet/internal/compiler"
	"github.com/duet-test/duet/internal/redact"
	"github.com/duet-test/duet/internal/report"
	"github.com/duet-test/duet/internal/sqlite"
	"github.com/duet-test/duet/internal/trace"
)

// fixture is a finished run stored in SQLite with a screenshot in an
// artifact store, as the engine leaves them: a passing case, a failing case
// whose failed step has a screenshot, an error case, and a case that never
// ran.
type fixture struct {
	db     *sqlite.DB
	arts   *artifact.Store
	run    *duet.Run
	shot   []byte
	shotID string
}

const suite = `
task: {name: shop <web>, baseURL: "https://shop.example", device: iphone-15}
cases:
  - key: a-login
    title: Sign in
    steps:
      - open: /login
      - fill: {selector: "#password", value: "not-shown"}
      - extract: {from: url.query, param: welcome, as: who}
  - key: b-status
    title: Status <b>matches</b>
    steps:
      - open: /order?orderId=A1001
      - assertText: {selector: "#status", equals: paid}
      - screenshot: after
  - key: c-api
    title: Order service
    steps:
      - http: GET /api/orders/A1001
  - key: d-late
    title: Never ran
    steps:
      - open: /
`

func testPNG(t *testing.T) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 8, 4))
	for x := range 8 {
		img.Set(x, 1, color.RGBA{R: 200, A: 255})
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := t.Context()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "duet.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	s, err := compiler.CompileSuite(ctx, []byte(suite), "suite.yaml", compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	applied, err := db.ApplySuite(ctx, "alice", s)
	if err != nil {
		t.Fatal(err)
	}
	cases, _, _, err := db.FindCases(ctx, duet.CaseFilter{TaskID: applied.Task.ID})
	if err != nil {
		t.Fatal(err)
	}
	run := &duet.Run{TaskID: applied.Task.ID, TriggeredBy: "alice", CallSource: duet.SourceCLI, TraceID: "0123456789abcdef0123456789abcdef"}
	var execs []*duet.Execution
	for _, c := range cases {
		execs = append(execs, &duet.Execution{CaseID: c.ID, CaseKey: c.Key, CaseTitle: c.Title, CaseVersion: c.Version, Steps: c.Steps})
	}
	if _, _, err := db.CreateRun(ctx, duet.StartRunParams{Run: run, Executions: execs}); err != nil {
		t.Fatal(err)
	}
	claimed, err := db.ClaimRunByID(ctx, run.ID, "w", time.Minute)
	if err != nil || claimed == nil {
		t.Fatal(err)
	}
	l := duet.LeaseOf(claimed, "w")
	f := &fixture{db: db, arts: artifact.New(filepath.Join(t.TempDir(), "artifacts"), time.Hour), run: run, shot: testPNG(t)}
	execs, err = db.FindExecutions(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	base := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
	step := func(x *duet.Execution, i int, status duet.RunStatus, ms int64, mod func(*duet.StepResult)) {
		start := base.Add(time.Duration(i) * time.Second)
		end := start.Add(time.Duration(ms) * time.Millisecond)
		r := &duet.StepResult{Index: i, Kind: x.Steps[i].Kind, Name: x.Steps[i].Name, Status: status, StartedAt: &start, FinishedAt: &end, DurationMs: ms}
		if mod != nil {
			mod(r)
		}
		if err := db.SaveStepResult(ctx, l, x.ID, r, nil); err != nil {
			t.Fatal(err)
		}
	}
	finish := func(x *duet.Execution, status duet.RunStatus, code duet.Code, msg string, vars map[string]any) {
		start, end := base, base.Add(4*time.Second)
		x.Status, x.ErrorCode, x.ErrorMessage, x.StartedAt, x.FinishedAt, x.Vars = status, code, msg, &start, &end, vars
		if err := db.FinishExecution(ctx, l, x); err != nil {
			t.Fatal(err)
		}
	}
	for _, x := range execs {
		switch x.CaseKey {
		case "a-login":
			if err := db.StartExecution(ctx, l, x); err != nil {
				t.Fatal(err)
			}
			step(x, 0, duet.StatusPassed, 420, nil)
			step(x, 1, duet.StatusPassed, 35, nil)
			step(x, 2, duet.StatusPassed, 12, func(r *duet.StepResult) { r.SavedAs, r.Output = "who", json.RawMessage(`"alice"`) })
			// As stored by an older engine: the secret-named variable in clear.
			finish(x, duet.StatusPassed, "", "", map[string]any{"who": "alice", "password": "hunter2-secret", "order": map[string]any{"access_token": "tok-xyz", "id": "A1001"}})
		case "b-status":
			if err := db.StartExecution(ctx, l, x); err != nil {
				t.Fatal(err)
			}
			id, err := f.arts.Save(ctx, run.ID, x.ID, 1, "failure", f.shot)
			if err != nil {
				t.Fatal(err)
			}
			f.shotID = id
			step(x, 0, duet.StatusPassed, 800, nil)
			step(x, 1, duet.StatusFailed, 1000, func(r *duet.StepResult) {
				r.ErrorCode, r.ErrorMessage = duet.CodeAssertionFailed, `text of #status is "<shipped>", want "paid"`
				r.Output, r.Artifacts = json.RawMessage(`"<shipped>"`), []string{id}
			})
			step(x, 2, duet.StatusSkipped, 0, func(r *duet.StepResult) { r.StartedAt, r.FinishedAt = nil, nil })
			finish(x, duet.StatusFailed, duet.CodeAssertionFailed, `step 2 (assertText #status): text of #status is "<shipped>", want "paid"`, nil)
		case "c-api":
			if err := db.StartExecution(ctx, l, x); err != nil {
				t.Fatal(err)
			}
			step(x, 0, duet.StatusError, 5, func(r *duet.StepResult) {
				r.ErrorCode, r.ErrorMessage = duet.CodeHTTPRequestFailed, "GET https://shop.example/api/orders/A1001: connection refused \x01"
				r.Artifacts = []string{run.ID + "/gone-00-failure.png"} // removed by the retention
			})
			finish(x, duet.StatusError, duet.CodeHTTPRequestFailed, "step 1 (GET /api/orders/A1001): connection refused \x01", nil)
		}
	}
	now := time.Now()
	run.Status, run.ErrorCode, run.ErrorMessage, run.FinishedAt = duet.StatusError, duet.CodeHTTPRequestFailed, `case "Order service": connection refused`, &now
	run.PostRun = []*duet.PostRunResult{{Name: "file a <ticket>", ServerKey: "mcp_tickets_0123abcd", Tool: "file_ticket", Status: duet.StatusFailed,
		ErrorCode: duet.CodeMCPToolError, ErrorMessage: "the ticket system is down"}}
	if err := db.FinishRun(ctx, l, run); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) build(t *testing.T) *report.Report {
	t.Helper()
	r, err := report.Build(t.Context(), f.db, f.arts, "alice", f.run.ID)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return r
}

func TestBuild(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	r := f.build(t)
	if got, want := r.Totals(), (report.Totals{Cases: 4, Passed: 1, Failed: 1, Error: 1, NotRun: 1}); got != want {
		t.Errorf("Totals: got %+v, want %+v", got, want)
	}
	if r.Task.Name != "shop <web>" || r.Task.Device != "iphone-15" {
		t.Errorf("task: got %+v", r.Task)
	}
	login, status, api, late := r.Cases[0], r.Cases[1], r.Cases[2], r.Cases[3]
	if got := login.Variables["password"]; got != "[redacted]" {
		t.Errorf("password variable: got %v, want [redacted]", got)
	}
	if got := login.Variables["order"].(map[string]any)["access_token"]; got != "[redacted]" {
		t.Errorf("nested token: got %v, want [redacted]", got)
	}
	if status.DurationMs != 4000 || status.Steps[1].OffsetMs != 1000 {
		t.Errorf("durations: case %d ms, step offset %d ms; want 4000 and 1000", status.DurationMs, status.Steps[1].OffsetMs)
	}
	shots := status.Steps[1].Screenshots
	if len(shots) != 1 || !shots[0].OnFailure || shots[0].ContentType != "image/png" || shots[0].Bytes != len(f.shot) {
		t.Fatalf("failure screenshot: got %+v", shots)
	}
	if want := "data:image/png;base64," + base64.StdEncoding.EncodeToString(f.shot); shots[0].DataURI() != want {
		t.Errorf("DataURI: got %.60q..., want the PNG", shots[0].DataURI())
	}
	if s := api.Steps[0].Screenshots; len(s) != 1 || !strings.Contains(s[0].Unavailable, "not found") {
		t.Errorf("expired screenshot: got %+v, want it listed as unavailable", s)
	}
	if len(late.Steps) != 1 || late.Steps[0].Status != duet.StatusPending || late.Status != duet.StatusSkipped {
		t.Errorf("case that never ran: got %s with steps %+v", late.Status, late.Steps[0])
	}

	// Other users see nothing.
	if _, err := report.Build(t.Context(), f.db, f.arts, "mallory", f.run.ID); duet.ErrorCode(err) != duet.CodeNotFound {
		t.Errorf("Build as another user: got %v, want NOT_FOUND", err)
	}
}

func TestHTML(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	var b bytes.Buffer
	if err := f.build(t).WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	for _, want := range []string{
		`<img src="data:image/png;base64,` + base64.StdEncoding.EncodeToString(f.shot) + `"`,
		"shop &lt;web&gt;",                  // escaped task name
		"Status &lt;b&gt;matches&lt;/b&gt;", // escaped case title
		"&lt;shipped&gt;",
		"ASSERTION_FAILED", "An assertion did not hold", // code and its meaning
		"HTTP_REQUEST_FAILED", "is not available",
		"What went wrong", `href="#case-`,
		"[redacted]", "device iphone-15",
		"4.00 s", "1.00 s", "not run",
		"Post-run actions", "file a &lt;ticket&gt;", "the ticket system is down", // a note, escaped
	} {
		if !strings.Contains(html, want) {
			t.Errorf("HTML: want it to contain %q", want)
		}
	}
	for _, bad := range []string{"hunter2-secret", "tok-xyz", "<script", "<b>matches", "http://", "https://fonts"} {
		if strings.Contains(html, bad) {
			t.Errorf("HTML: contains %q", bad)
		}
	}
}

func TestJUnit(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	var b bytes.Buffer
	if err := f.build(t).WriteJUnit(&b); err != nil {
		t.Fatal(err)
	}
	var got report.JUnitSuites
	if err := xml.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatalf("the JUnit output does not parse: %v\n%s", err, b.String())
	}
	if got.Tests != 4 || got.Failures != 1 || got.Errors != 1 || got.Skipped != 1 || len(got.Suites) != 1 {
		t.Fatalf("counts: got tests=%d failures=%d errors=%d skipped=%d suites=%d", got.Tests, got.Failures, got.Errors, got.Skipped, len(got.Suites))
	}
	s := got.Suites[0]
	if s.Name != "shop <web>" || s.ID != f.run.ID || len(s.Cases) != 4 {
		t.Errorf("suite: got name %q id %q with %d cases", s.Name, s.ID, len(s.Cases))
	}
	login, status, api, late := s.Cases[0], s.Cases[1], s.Cases[2], s.Cases[3]
	if login.Failure != nil || login.Error != nil || login.Skipped != nil || login.Classname != "shop <web>.a-login" || login.Time != "4.000" {
		t.Errorf("passing case: got %+v", login)
	}
	if status.Failure == nil || status.Failure.Type != "ASSERTION_FAILED" || !strings.Contains(status.Failure.Message, `"<shipped>"`) ||
		!strings.Contains(status.Failure.Text, "screenshot: "+f.shotID) {
		t.Errorf("failing case: got %+v", status.Failure)
	}
	if !strings.Contains(status.SystemOut, "skipped    3. after") {
		t.Errorf("failing case timeline: got %q", status.SystemOut)
	}
	if api.Error == nil || api.Error.Type != "HTTP_REQUEST_FAILED" || strings.ContainsRune(api.Error.Message, '\x01') {
		t.Errorf("error case: got %+v (control characters must be replaced)", api.Error)
	}
	if late.Skipped == nil {
		t.Errorf("case that never ran: got %+v, want skipped", late)
	}
	if bytes.Contains(b.Bytes(), []byte("hunter2-secret")) {
		t.Errorf("JUnit output contains a secret")
	}
}

func TestJSON(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	var b bytes.Buffer
	if err := f.build(t).WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Run   duet.Run
		Cases []struct {
			Key       string
			Status    duet.RunStatus
			Variables map[string]any
			Steps     []struct {
				Status      duet.RunStatus
				ErrorCode   duet.Code
				Screenshots []struct {
					ID        string
					Bytes     int
					OnFailure bool
				}
			}
		}
	}
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatalf("JSON does not parse: %v", err)
	}
	if got.Run.ID != f.run.ID || len(got.Cases) != 4 {
		t.Fatalf("got run %q with %d cases", got.Run.ID, len(got.Cases))
	}
	if sh := got.Cases[1].Steps[1].Screenshots; len(sh) != 1 || sh[0].ID != f.shotID || sh[0].Bytes != len(f.shot) || !sh[0].OnFailure {
		t.Errorf("screenshot: got %+v", sh)
	}
	if bytes.Contains(b.Bytes(), []byte("base64")) || bytes.Contains(b.Bytes(), []byte("hunter2-secret")) {
		t.Errorf("JSON embeds screenshot data or a secret")
	}
}

func TestParseFormat(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]report.Format{"": report.HTML, "html": report.HTML, "JSON": report.JSON, "junit": report.JUnit} {
		if got, err := report.ParseFormat(in); got != want || err != nil {
			t.Errorf("ParseFormat(%q): got %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := report.ParseFormat("pdf"); duet.ErrorCode(err) != duet.CodeInvalidArgument {
		t.Errorf("ParseFormat(pdf): got %v, want INVALID_ARGUMENT", err)
	}
}

func TestMCPResources(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	read := func(t *testing.T, user, uri string) (*mcp.ReadResourceResult, error) {
		t.Helper()
		srv := mcp.NewServer(&mcp.Implementation{Name: "duet-test", Version: "0"}, nil)
		report.MCPResources(f.db, f.arts)(srv)
		st, ct := mcp.NewInMemoryTransports()
		ctx := duet.NewContextWithCaller(t.Context(), duet.Caller{UserID: user, Source: duet.SourceStdio})
		ss, err := srv.Connect(ctx, st, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ss.Close() })
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "0"}, nil).Connect(t.Context(), ct, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		if uri == "" {
			res, err := cs.ListResourceTemplates(t.Context(), nil)
			var got []string
			if err == nil {
				for _, rt := range res.ResourceTemplates {
					got = append(got, rt.URITemplate)
				}
			}
			if slices.Sort(got); !slices.Equal(got, []string{report.TraceResourceTemplate, report.ResourceTemplate}) {
				t.Fatalf("resources/templates/list: got %+v, %v", res, err)
			}
			return nil, nil
		}
		return cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: uri})
	}
	read(t, "alice", "")
	tests := []struct {
		uri, mime, contains string
	}{
		{"duet://runs/" + f.run.ID + "/report.html", "text/html", `<img src="data:image/png;base64,`},
		{"duet://runs/" + f.run.ID + "/report.json", "application/json", `"id": "` + f.run.ID + `"`},
		{"duet://runs/" + f.run.ID + "/report.junit.xml", "application/xml", `<testsuites name="duet run ` + f.run.ID + `"`},
	}
	for _, tt := range tests {
		t.Run(tt.mime, func(t *testing.T) {
			res, err := read(t, "alice", tt.uri)
			if err != nil || len(res.Contents) != 1 {
				t.Fatalf("ReadResource(%s): got %+v, %v", tt.uri, res, err)
			}
			c := res.Contents[0]
			if c.MIMEType != tt.mime || c.URI != tt.uri || !strings.Contains(c.Text, tt.contains) {
				t.Errorf("ReadResource(%s): got %s %s with %d chars, want %s containing %q", tt.uri, c.URI, c.MIMEType, len(c.Text), tt.mime, tt.contains)
			}
		})
	}
	// The failing case's trace, as a model reads it: the steps, the
	// console error and the 500 of the failing step, not the DOM.
	execs, err := f.db.FindExecutions(t.Context(), f.run.ID)
	if err != nil {
		t.Fatal(err)
	}
	var failing *duet.Execution
	for _, x := range execs {
		if x.CaseKey == "b-status" {
			failing = x
		}
	}
	start := time.Now().Add(-time.Minute)
	at := func(ms int) time.Time { return start.Add(time.Duration(ms) * time.Millisecond) }
	zipped, _, err := trace.Build(trace.Meta{RunID: f.run.ID, ExecutionID: failing.ID, CaseKey: "b-status", CaseTitle: "status", Mode: trace.OnFailure,
		Status: duet.StatusFailed, ErrorCode: duet.CodeAssertionFailed, Error: "status", Started: start, Finished: at(900),
		Steps: []trace.StepInfo{
			{Index: 0, Kind: "open", Name: "open /", Status: duet.StatusPassed, Start: at(0), End: at(300)},
			{Index: 1, Kind: "assertText", Name: "assertText #status", Status: duet.StatusFailed, ErrorCode: duet.CodeAssertionFailed, Error: "want paid", Start: at(300), End: at(800)},
		}}, &trace.Capture{Start: start,
		Marks: []trace.Mark{{Index: 0, StartMs: 0, EndMs: 300, Before: -1, After: -1, DOM: []byte("<html><body>DOM-MARKER</body></html>")},
			{Index: 1, StartMs: 300, EndMs: 800, Before: -1, After: -1, DOM: []byte("<html><body>DOM-MARKER</body></html>")}},
		Console: []trace.ConsoleLine{{AtMs: 400, Type: "error", Text: "orders failed: 500"}},
		Network: []trace.Request{{ID: "1", AtMs: 350, Method: "GET", URL: "http://shop/api/orders", Type: "Fetch", Status: 500, DurationMs: 5}},
	}, redact.NewSet(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.arts.SaveTrace(t.Context(), f.run.ID, failing.ID, zipped); err != nil {
		t.Fatal(err)
	}
	traceURI := "duet://runs/" + f.run.ID + "/cases/b-status/trace.json"
	res, err := read(t, "alice", traceURI)
	if err != nil || len(res.Contents) != 1 || res.Contents[0].MIMEType != "application/json" {
		t.Fatalf("ReadResource(%s): %+v %v", traceURI, res, err)
	}
	if txt := res.Contents[0].Text; !strings.Contains(txt, "orders failed: 500") || !strings.Contains(txt, "http://shop/api/orders") || strings.Contains(txt, "DOM-MARKER") {
		t.Errorf("the trace summary: %s", txt)
	}
	for _, bad := range []struct{ user, uri string }{
		{"mallory", traceURI},
		{"alice", "duet://runs/" + f.run.ID + "/cases/a-login/trace.json"}, // kept no trace
		{"mallory", "duet://runs/" + f.run.ID + "/report.html"},
		{"alice", "duet://runs/run_nope/report.html"},
		{"alice", "duet://runs/" + f.run.ID + "/report.pdf"},
		{"", "duet://runs/" + f.run.ID + "/report.json"},
	} {
		if _, err := read(t, bad.user, bad.uri); err == nil {
			t.Errorf("ReadResource(%s) as %q: got no error, want resource not found", bad.uri, bad.user)
		}
	}
}

// TestScreenshotsWithinTheResultBudget: a report built for a governed call
// reads screenshots only while they can still fit the call's result budget
// (base64 included); past it they are listed as not included, with the
// reason, instead of being read into memory for a report that could not
// be sent. Outside a governed call (duet report) every one is read.
func TestScreenshotsWithinTheResultBudget(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	c := catalog.New(f.db, catalog.Options{Limits: catalog.Limits{MaxResultBytes: len(f.shot)}})
	var r *report.Report
	err := c.Govern(t.Context(), catalog.Op{Caller: duet.Caller{UserID: "alice", Source: duet.SourceCLI}, Method: "getReport"}, func(ctx context.Context) (int, error) {
		var err error
		r, err = report.Build(ctx, f.db, f.arts, "alice", f.run.ID)
		return 0, err
	})
	if err != nil {
		t.Fatal(err)
	}
	shots := r.Cases[1].Steps[1].Screenshots
	if len(shots) != 1 || shots[0].DataURI() != "" || !strings.Contains(shots[0].Unavailable, "passed the result limit") {
		t.Fatalf("a screenshot over the budget: got %+v, want it not read, with the reason", *shots[0])
	}
	r, err = report.Build(t.Context(), f.db, f.arts, "alice", f.run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if shots := r.Cases[1].Steps[1].Screenshots; len(shots) != 1 || shots[0].DataURI() == "" {
		t.Fatalf("outside a governed call: got %+v, want the screenshot", shots)
	}
}
