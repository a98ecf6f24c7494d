package report_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/report"
)

// TestRestrictedReport: alice's run used her credentials. bob, with whom the
// task is shared, gets a report of statuses, timings and error codes — in
// HTML, JSON, JUnit and as an MCP resource — without the outputs, variables,
// messages and screenshots that alice's report shows.
func TestRestrictedReport(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	if err := f.db.ShareTask(t.Context(), "alice", f.run.TaskID, "bob"); err != nil {
		t.Fatal(err)
	}
	private := []string{"shipped", "connection refused", "Saved variables", `"variables"`, "image/png;base64", f.shotID}
	render := func(r *report.Report) string {
		var all bytes.Buffer
		for _, format := range []report.Format{report.HTML, report.JSON, report.JUnit} {
			if err := r.Write(&all, format); err != nil {
				t.Fatal(err)
			}
		}
		return all.String()
	}
	alice := f.build(t)
	if alice.Disclosure != duet.DiscloseFull {
		t.Fatalf("alice's report: disclosure %s", alice.Disclosure)
	}
	mine := render(alice)
	for _, s := range private[:3] {
		if !strings.Contains(mine, s) {
			t.Fatalf("alice's own report lacks %q", s)
		}
	}

	bob, err := report.Build(t.Context(), f.db, f.arts, "bob", f.run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if bob.Disclosure != duet.DiscloseRestricted || bob.Totals() != alice.Totals() {
		t.Fatalf("bob's report: disclosure %s, totals %+v (alice's %+v)", bob.Disclosure, bob.Totals(), alice.Totals())
	}
	theirs := render(bob)
	for _, s := range private {
		if strings.Contains(theirs, s) {
			t.Errorf("bob's report shows %q of alice's run", s)
		}
	}
	for _, want := range []string{"ASSERTION_FAILED", "HTTP_REQUEST_FAILED", "shown only to alice", "assertText #status", "4.00 s"} {
		if !strings.Contains(theirs, want) {
			t.Errorf("bob's report does not show %q", want)
		}
	}

	srv := mcp.NewServer(&mcp.Implementation{Name: "duet-test", Version: "0"}, nil)
	report.MCPResources(f.db, f.arts)(srv)
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(duet.NewContextWithCaller(t.Context(), duet.Caller{UserID: "bob", Source: duet.SourceStdio}), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "0"}, nil).Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "duet://runs/" + f.run.ID + "/report.html"})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range private {
		if strings.Contains(res.Contents[0].Text, s) {
			t.Errorf("bob's report resource shows %q", s)
		}
	}
}

// TestBigRunReportIsBounded: the report of a run bigger than MaxCases shows
// the first MaxCases cases, counts the whole run, says how many more cases
// there are and how to get them; the cursor gets the rest, in the CLI's
// BuildPage and as an MCP resource.
func TestBigRunReportIsBounded(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	cases, _, _, err := f.db.FindCases(t.Context(), duet.CaseFilter{TaskID: f.run.TaskID})
	if err != nil {
		t.Fatal(err)
	}
	const n = report.MaxCases + 7
	run := &duet.Run{TaskID: f.run.TaskID, TriggeredBy: "alice", CallSource: duet.SourceCLI}
	var execs []*duet.Execution
	for i := range n {
		c := cases[i%len(cases)]
		execs = append(execs, &duet.Execution{CaseID: c.ID, CaseKey: fmt.Sprintf("k%04d", i), CaseTitle: c.Title, CaseVersion: 1, Steps: c.Steps})
	}
	if _, _, err := f.db.CreateRun(t.Context(), duet.StartRunParams{Run: run, Executions: execs}); err != nil {
		t.Fatal(err)
	}
	r, err := report.Build(t.Context(), f.db, f.arts, "alice", run.ID)
	if err != nil {
		t.Fatal(err)
	}
	w := r.Window
	if len(r.Cases) != report.MaxCases || w == nil || w.First != 1 || w.Last != report.MaxCases || w.Total != n || w.NotShown != 7 || w.NextCursor == "" {
		t.Fatalf("first part: %d cases, window %+v", len(r.Cases), w)
	}
	if got := r.Totals(); got.Cases != n || got.NotRun != n {
		t.Fatalf("totals of a bounded report: got %+v, want the whole run's %d cases", got, n)
	}
	var all bytes.Buffer
	for _, format := range []report.Format{report.HTML, report.JSON, report.JUnit} {
		if err := r.Write(&all, format); err != nil {
			t.Fatal(err)
		}
	}
	hint := "7 more case(s) not shown: get them with `duet report " + run.ID + " --cursor " + w.NextCursor + "`"
	for _, want := range []string{hint, "Cases 1 to 500 of 507 are shown", `"notShown": 7`, `name="duet.cases.not_shown" value="7"`} {
		if !strings.Contains(all.String(), want) && !strings.Contains(all.String(), strings.ReplaceAll(want, "`", "&#39;")) &&
			!strings.Contains(all.String(), strings.ReplaceAll(want, "`", "&#96;")) {
			t.Errorf("the report does not say %q", want)
		}
	}
	rest, err := report.BuildPage(t.Context(), f.db, f.arts, "alice", run.ID, report.Page{Cursor: w.NextCursor})
	if err != nil {
		t.Fatal(err)
	}
	if len(rest.Cases) != 7 || rest.Window.First != 501 || rest.Window.Last != n || rest.Window.NotShown != 0 || rest.Window.Hint(run.ID) != "" {
		t.Fatalf("second part: %d cases, window %+v", len(rest.Cases), rest.Window)
	}
	if _, err := report.BuildPage(t.Context(), f.db, f.arts, "alice", run.ID, report.Page{Cursor: "@@"}); duet.ErrorCode(err) != duet.CodeInvalidArgument {
		t.Fatalf("bad cursor: got %v", err)
	}
	// The small run's report shows everything and has no window.
	if small := f.build(t); small.Window != nil {
		t.Fatalf("a 4-case run's report has a window: %+v", small.Window)
	}

	srv := mcp.NewServer(&mcp.Implementation{Name: "duet-test", Version: "0"}, nil)
	report.MCPResources(f.db, f.arts)(srv)
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(duet.NewContextWithCaller(t.Context(), duet.Caller{UserID: "alice", Source: duet.SourceStdio}), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "0"}, nil).Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	uri := "duet://runs/" + run.ID + "/report.json?cursor=" + w.NextCursor
	res, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: uri})
	if err != nil || !strings.Contains(res.Contents[0].Text, `"first": 501`) || !strings.Contains(res.Contents[0].Text, `"key": "k0506"`) {
		t.Fatalf("ReadResource(%s): %v", uri, err)
	}
	if _, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "duet://runs/" + run.ID + "/report.json?cursor=@@"}); err == nil {
		t.Fatal("a bad cursor: got no error")
	}
}
