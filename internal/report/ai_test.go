package report_test

import (
	"bytes"
	"encoding/json"
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

// aiRun is a finished run of alice's task, shared with bob and carol, that
// bob executed: an aiAssert that asked the model twice (its transcript
// kept), an ai step replayed from the cache, and one that healed and
// proposed a draft.
func aiRun(t *testing.T) (*sqlite.DB, *artifact.Store, *duet.Run, *duet.Execution) {
	t.Helper()
	ctx := t.Context()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "duet.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	s, err := compiler.CompileSuite(ctx, []byte(`
task: {name: shop, baseURL: "https://shop.example"}
cases:
  - key: a
    title: Buy headphones
    steps:
      - open: /order?orderId=A1001
      - aiAssert: the order is paid
      - ai: add the wireless headphones to the cart
      - ai: open the cart
`), "s.yaml", compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	applied, err := db.ApplySuite(ctx, "alice", s)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"bob", "carol"} {
		if err := db.ShareTask(ctx, "alice", applied.Task.ID, u); err != nil {
			t.Fatal(err)
		}
	}
	c := applied.Cases[0]
	run := &duet.Run{TaskID: applied.Task.ID, TriggeredBy: "bob", CallSource: duet.SourceCLI}
	x := &duet.Execution{CaseID: c.ID, CaseKey: c.Key, CaseTitle: "Buy headphones", CaseVersion: c.Version, Steps: s.Cases[0].Steps}
	if _, _, err := db.CreateRun(ctx, duet.StartRunParams{Run: run, Executions: []*duet.Execution{x}}); err != nil {
		t.Fatal(err)
	}
	claimed, _ := db.ClaimRunByID(ctx, run.ID, "w", time.Minute)
	l := duet.LeaseOf(claimed, "w")
	arts := artifact.New(filepath.Join(t.TempDir(), "artifacts"), time.Hour)
	tr, err := arts.Save(ctx, run.ID, x.ID, 1, "ai-transcript", []byte(`{"exchanges": [{"shown": "PAGE-SHOWN-CANARY", "answered": "{\"pass\": true}"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := db.StartExecution(ctx, l, x); err != nil {
		t.Fatal(err)
	}
	add := &duet.Locator{Role: "button", Name: "Add to basket", Exact: true}
	now := time.Now()
	for _, r := range []*duet.StepResult{
		{Index: 0, Kind: duet.StepOpen, Name: "open /order?orderId=A1001", Status: duet.StatusPassed},
		{Index: 1, Kind: "aiAssert", Name: "aiAssert the order is paid", Status: duet.StatusPassed,
			AI: &duet.AIUsage{Calls: 2, PromptTokens: 900, CompletionTokens: 40, TotalTokens: 940, Transcript: tr}},
		{Index: 2, Kind: "ai", Name: "ai add the wireless headphones to the cart", Status: duet.StatusPassed,
			AI: &duet.AIUsage{Cached: true, Actions: []duet.AIAction{{Do: "click", Locator: add}}}},
		{Index: 3, Kind: "ai", Name: "ai open the cart", Status: duet.StatusPassed,
			AI: &duet.AIUsage{Calls: 1, TotalTokens: 700, Healed: true, HealedDraft: "case_healed7", Transcript: tr,
				Actions: []duet.AIAction{{Do: "fill", Locator: add, Value: "TYPED-CANARY"}}}},
	} {
		r.StartedAt, r.FinishedAt = &now, &now
		if err := db.SaveStepResult(ctx, l, x.ID, r, nil); err != nil {
			t.Fatal(err)
		}
	}
	x.Status, x.StartedAt, x.FinishedAt = duet.StatusPassed, &now, &now
	if err := db.FinishExecution(ctx, l, x); err != nil {
		t.Fatal(err)
	}
	run.Status, run.FinishedAt = duet.StatusPassed, &now
	if err := db.FinishRun(ctx, l, run); err != nil {
		t.Fatal(err)
	}
	return db, arts, run, x
}

// render builds the run's report as viewer and writes it as HTML and JSON.
func render(t *testing.T, db *sqlite.DB, arts *artifact.Store, viewer, runID string) (html, js string) {
	t.Helper()
	r, err := report.Build(t.Context(), db, arts, viewer, runID)
	if err != nil {
		t.Fatal(err)
	}
	var h, j bytes.Buffer
	if err := r.WriteHTML(&h); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteJSON(&j); err != nil {
		t.Fatal(err)
	}
	return h.String(), j.String()
}

// TestReportAILine: each AI step's line in the HTML report says what it
// cost — its model calls and tokens — or that it came from the cache, and
// a healed step says so with the draft it proposed.
func TestReportAILine(t *testing.T) {
	t.Parallel()
	db, arts, run, _ := aiRun(t)
	for _, viewer := range []string{"bob", "alice"} { // the executor, and the owner
		html, _ := render(t, db, arts, viewer, run.ID)
		for _, want := range []string{
			`<span class="kind">aiAssert</span> the order is paid <span class="muted">(line 8)</span> <span class="muted ai">AI: 2 model calls, 940 tokens</span>`,
			`<span class="kind">ai</span> add the wireless headphones to the cart <span class="muted">(line 9)</span> <span class="muted ai">AI: from the cache, no model call</span>`,
			`<span class="kind">ai</span> open the cart <span class="muted">(line 10)</span> <span class="muted ai">AI: 1 model call, 700 tokens; <strong>healed</strong>, draft case_healed7 awaits the owner's approval</span>`,
		} {
			if !strings.Contains(html, want) {
				t.Errorf("%s's HTML report lacks the AI line\n%s", viewer, want)
			}
		}
	}
}

// TestAITranscriptsAreTheExecutors: what an AI step's model was shown and
// answered is in the report of the run's executor only — HTML and JSON,
// which REST, the console and the MCP resources serve — and the task's
// owner and a sharee who did not run it see neither the transcript nor
// its artifact id nor the values the step typed, in the report or in the
// results every other surface gives (duet.DiscloseRun).
func TestAITranscriptsAreTheExecutors(t *testing.T) {
	t.Parallel()
	db, arts, run, x := aiRun(t)
	html, js := render(t, db, arts, "bob", run.ID)
	if !strings.Contains(html, "PAGE-SHOWN-CANARY") || !strings.Contains(html, "What the model was shown and answered") || !strings.Contains(js, `PAGE-SHOWN-CANARY`) {
		t.Errorf("the executor's report lacks the transcript")
	}
	for _, viewer := range []string{"alice", "carol"} { // the owner, a sharee
		html, js := render(t, db, arts, viewer, run.ID)
		for _, leak := range []string{"PAGE-SHOWN-CANARY", "ai-transcript", "TYPED-CANARY", "What the model was shown"} {
			if strings.Contains(html, leak) || strings.Contains(js, leak) {
				t.Errorf("%s's report shows %s", viewer, leak)
			}
		}
		got, err := db.FindRunByID(t.Context(), viewer, run.ID)
		if err != nil {
			t.Fatal(err)
		}
		execs, err := db.FindExecutions(t.Context(), run.ID)
		if err != nil {
			t.Fatal(err)
		}
		duet.DiscloseRun(viewer, got, execs...)
		b, _ := json.Marshal(execs)
		if strings.Contains(string(b), "ai-transcript") || strings.Contains(string(b), "TYPED-CANARY") || !strings.Contains(string(b), `"healed":true`) {
			t.Errorf("%s's results show the transcript or typed values, or lost the AI usage: %s", viewer, b)
		}
	}
	execs, _ := db.FindExecutions(t.Context(), x.RunID)
	duet.DiscloseRun("bob", run, execs...)
	if b, _ := json.Marshal(execs); !strings.Contains(string(b), "ai-transcript") {
		t.Errorf("the executor's results lost the transcript's id")
	}
}
