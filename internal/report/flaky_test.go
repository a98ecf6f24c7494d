package report_test

import (
	"bytes"
	"encoding/xml"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/artifact"
	"github.com/duet-test/duet/internal/compiler"
	"github.com/duet-test/duet/internal/report"
	"github.com/duet-test/duet/internal/sqlite"
)

// TestFlakyCase: a case that failed and then passed on a retry is flaky in
// every form of the report — JUnit a passing testcase with Surefire's
// flakyFailure (the failed attempt's message and screenshot), the HTML its
// badge and the failed attempt's screenshot, JSON its attempts — and the
// run passes unless the caller fails on flaky cases.
func TestFlakyCase(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "duet.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	s, err := compiler.CompileSuite(ctx, []byte(`
task: {name: shop, baseURL: "https://shop.example"}
cases:
  - {key: a, title: Flaky add to cart, retries: 1, steps: [{open: /flaky}, {assertText: {selector: "#state", equals: ready}}]}
`), "s.yaml", compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	applied, err := db.ApplySuite(ctx, "alice", s)
	if err != nil {
		t.Fatal(err)
	}
	cases, _, _, _ := db.FindCases(ctx, duet.CaseFilter{TaskID: applied.Task.ID})
	c := cases[0]
	run := &duet.Run{TaskID: applied.Task.ID, TriggeredBy: "alice", CallSource: duet.SourceCLI}
	x := &duet.Execution{CaseID: c.ID, CaseKey: c.Key, CaseTitle: c.Title, CaseVersion: c.Version, Steps: c.Steps, Retries: c.Retries}
	if _, _, err := db.CreateRun(ctx, duet.StartRunParams{Run: run, Executions: []*duet.Execution{x}}); err != nil {
		t.Fatal(err)
	}
	claimed, _ := db.ClaimRunByID(ctx, run.ID, "w", time.Minute)
	l := duet.LeaseOf(claimed, "w")
	arts := artifact.New(filepath.Join(t.TempDir(), "artifacts"), time.Hour)
	shot := testPNG(t)
	shotID, err := arts.Save(ctx, run.ID, x.ID, 1, "failure", shot)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	save := func(r *duet.StepResult) {
		if err := db.SaveStepResult(ctx, l, x.ID, r, nil); err != nil {
			t.Fatal(err)
		}
	}
	finish := func(status duet.RunStatus, code duet.Code, msg string) {
		x.Status, x.ErrorCode, x.ErrorMessage, x.StartedAt, x.FinishedAt = status, code, msg, &now, &now
		if err := db.FinishExecution(ctx, l, x); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.StartExecution(ctx, l, x); err != nil {
		t.Fatal(err)
	}
	save(&duet.StepResult{Index: 0, Kind: duet.StepOpen, Name: "open /flaky", Status: duet.StatusPassed})
	save(&duet.StepResult{Index: 1, Kind: duet.StepAssertText, Name: "assertText #state", Status: duet.StatusFailed,
		ErrorCode: duet.CodeAssertionFailed, ErrorMessage: `text of #state is "loading failed"`, Artifacts: []string{shotID}})
	finish(duet.StatusFailed, duet.CodeAssertionFailed, `step 2: text of #state is "loading failed"`)
	if err := db.RetryExecution(ctx, l, x); err != nil {
		t.Fatal(err)
	}
	save(&duet.StepResult{Index: 0, Kind: duet.StepOpen, Name: "open /flaky", Status: duet.StatusPassed})
	save(&duet.StepResult{Index: 1, Kind: duet.StepAssertText, Name: "assertText #state", Status: duet.StatusPassed})
	finish(duet.StatusFlaky, "", "")
	run.Status, run.FinishedAt = duet.StatusPassed, &now
	if err := db.FinishRun(ctx, l, run); err != nil {
		t.Fatal(err)
	}

	r, err := report.Build(ctx, db, arts, "alice", run.ID)
	if err != nil {
		t.Fatal(err)
	}
	rc := r.Cases[0]
	if rc.Status != duet.StatusFlaky || rc.Attempt != 2 || len(rc.Attempts) != 1 || rc.Attempts[0].Steps[1].Screenshots[0].ID != shotID {
		t.Fatalf("case: %+v", rc)
	}
	if r.Exit == nil || r.Exit.Code != report.ExitPassed {
		t.Fatalf("exit: %+v", r.Exit)
	}
	if code, why := report.ExitCode(r.Run, []*duet.Execution{{Status: duet.StatusFlaky}}, true); code != report.ExitFailed {
		t.Fatalf("--fail-on-flaky: %d %s", code, why)
	}

	var buf bytes.Buffer
	if err := r.WriteJUnit(&buf); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Failures int `xml:"failures,attr"`
		Suite    struct {
			Cases []struct {
				Failure *struct{} `xml:"failure"`
				Flaky   []struct {
					Message string `xml:"message,attr"`
					Type    string `xml:"type,attr"`
					Text    string `xml:",chardata"`
				} `xml:"flakyFailure"`
			} `xml:"testcase"`
			Properties []report.JUnitProperty `xml:"properties>property"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	jc := doc.Suite.Cases[0]
	if doc.Failures != 0 || jc.Failure != nil || len(jc.Flaky) != 1 || jc.Flaky[0].Type != string(duet.CodeAssertionFailed) ||
		!strings.Contains(jc.Flaky[0].Message, "attempt 1") || !strings.Contains(jc.Flaky[0].Text, shotID) {
		t.Fatalf("JUnit: %s", buf.String())
	}
	flakyProp := false
	for _, p := range doc.Suite.Properties {
		flakyProp = flakyProp || p.Name == "duet.cases.flaky" && p.Value == "1"
	}
	if !flakyProp {
		t.Fatalf("JUnit: no duet.cases.flaky property: %s", buf.String())
	}

	buf.Reset()
	if err := r.WriteHTML(&buf); err != nil {
		t.Fatal(err)
	}
	html := buf.String()
	if !strings.Contains(html, `class="badge s-flaky"`) || !strings.Contains(html, "Flaky: it failed, then passed on attempt 2") ||
		!strings.Contains(html, "Attempt 1") || strings.Count(html, "data:image/png;base64,") < 1 {
		t.Fatalf("HTML: the flaky case, its failed attempt and its screenshot are not all there")
	}
}
