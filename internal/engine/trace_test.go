package engine_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/artifact"
	"github.com/duet-test/duet/internal/engine"
	"github.com/duet-test/duet/internal/sample/sampletest"
	"github.com/duet-test/duet/internal/sqlite"
	"github.com/duet-test/duet/internal/trace"
)

// traceSuite is a passing case and a failing one on the sample shop's
// evidence pages: the failing case's page gets a 500 from its API, and
// its label changed.
const traceSuite = `task: {name: traced, baseURL: %s}
cases:
  - key: orders-load
    title: Orders load
    steps:
      - open: /evidence/orders
      - assertText: {selector: "#load-state", equals: loaded}
  - key: orders-label
    title: The orders page keeps its label
    steps:
      - open: /evidence/orders?fail=api
      - assertText: {selector: "#load-state", equals: failed}
      - click: "#orders-label"
      - assertText: {selector: "#orders-label", equals: "Your orders"}
        timeout: 1s
`

// TestTrace: under on-failure the failing case keeps a trace whose
// failing step has its screenshot, DOM, the page's console error and the
// API's 500 before it, and the passing case keeps none; off keeps none;
// on keeps both. A first attempt under on-failure records no replay (no
// screencast, DOM after every step instead), unless TraceReplay says
// always: then the click has its screenshots before and after.
func TestTrace(t *testing.T) {
	t.Parallel()
	shopURL := sampletest.Shop(t)
	db := openStore(t)
	res := apply(t, db, "alice", strings.Replace(traceSuite, "%s", shopURL, 1))
	opts, arts := browserEngine(t, nil)
	replayAlways := opts
	replayAlways.TraceReplay = trace.ReplayAlways
	runWith := func(opts engine.Options, mode trace.Mode) map[string]*duet.Execution {
		t.Helper()
		r := startRun(t, db, res.Task, "alice")
		executeClaimed(t, db, opts, r, func(c *duet.Run) { c.Trace = string(mode) })
		_, byKey := awaitRun(t, db, r.ID)
		if byKey["orders-load"].Status != duet.StatusPassed || byKey["orders-label"].Status != duet.StatusFailed {
			t.Fatalf("%s: got\n%s\n%s", mode, describe(byKey["orders-load"]), describe(byKey["orders-label"]))
		}
		return byKey
	}
	run := func(mode trace.Mode) map[string]*duet.Execution { t.Helper(); return runWith(opts, mode) }
	has := func(x *duet.Execution) bool {
		_, err := arts.ReadTrace(t.Context(), x.RunID, x.ID)
		if err != nil && duet.ErrorCode(err) != duet.CodeNotFound {
			t.Fatal(err)
		}
		return err == nil
	}

	failed := func(byKey map[string]*duet.Execution) *trace.Archive {
		t.Helper()
		if has(byKey["orders-load"]) {
			t.Error("on-failure kept the trace of a passing case")
		}
		x := byKey["orders-label"]
		data, err := arts.ReadTrace(t.Context(), x.RunID, x.ID)
		if err != nil {
			t.Fatal(err)
		}
		if p := os.Getenv("DUET_DUMP_TRACE"); p != "" {
			os.WriteFile(p, data, 0o644)
		}
		a, err := trace.Open(data)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}

	a := failed(run("")) // the default: on-failure, no replay on a first attempt
	tr := a.Trace
	if tr.Mode != trace.OnFailure || tr.Status != duet.StatusFailed || len(tr.Steps) != 4 {
		t.Fatalf("trace: mode %s, status %s, %d steps", tr.Mode, tr.Status, len(tr.Steps))
	}
	failing := tr.Steps[3]
	if failing.Status != duet.StatusFailed || !strings.HasPrefix(failing.After, "shots/03-failure") || failing.DOM == "" {
		t.Fatalf("failing step: %+v", failing)
	}
	for _, st := range tr.Steps[:3] {
		if st.DOM == "" || st.Before != "" || st.After != "" {
			t.Errorf("without a replay, step %d has no DOM, or screenshots from no screencast: %+v", st.Index, st)
		}
	}
	dom, _, err := a.File(failing.DOM)
	if err != nil || !strings.Contains(string(dom), "Recent orders") || strings.Contains(string(dom), "<script") {
		t.Errorf("DOM of the failing step: %v\n%s", err, dom)
	}
	var consoleErr, api500 bool
	for _, l := range tr.Console {
		consoleErr = consoleErr || (l.Type == "error" && strings.Contains(l.Text, "HTTP 500") && l.Step <= failing.Index)
	}
	for _, r := range tr.Network {
		api500 = api500 || (r.Status == 500 && strings.Contains(r.URL, "/api/evidence/orders") && r.Step <= failing.Index && strings.Contains(r.Body, "database is down"))
	}
	if !consoleErr || !api500 {
		t.Errorf("console error %v, the 500 %v:\n%+v\n%+v", consoleErr, api500, tr.Console, tr.Network)
	}
	if len(tr.Frames) != 0 || !tr.NoReplay {
		t.Errorf("a first attempt under on-failure recorded %d replay frames (noReplay %v)", len(tr.Frames), tr.NoReplay)
	}
	if page, _, err := a.File("index.html"); err != nil || !strings.Contains(string(page), `id="no-replay"`) {
		t.Errorf("the viewer does not say there is no replay: %v", err)
	}
	for _, name := range []string{"index.html", "network.har"} {
		if _, _, err := a.File(name); err != nil {
			t.Error(err)
		}
	}

	tr = failed(runWith(replayAlways, "")).Trace
	if click := tr.Steps[2]; click.Before == "" || click.After == "" || click.DOM != "" {
		t.Errorf("with the replay, the click has no screenshots before and after, or a DOM: %+v", click)
	}
	if len(tr.Frames) == 0 || tr.NoReplay {
		t.Errorf("no replay frames with TraceReplay always (noReplay %v)", tr.NoReplay)
	}

	byKey := run(trace.Off)
	if has(byKey["orders-load"]) || has(byKey["orders-label"]) {
		t.Error("off kept a trace")
	}
	byKey = run(trace.On)
	if !has(byKey["orders-load"]) || !has(byKey["orders-label"]) {
		t.Error("on did not keep both traces")
	}
	if _, err := arts.ReadTrace(t.Context(), "run_x", "exec_x"); duet.ErrorCode(err) != duet.CodeNotFound || !strings.Contains(duet.ErrorMessage(err), "kept none") {
		t.Errorf("a missing trace: got %v", err)
	}
	var _ engine.TraceSaver = (*artifact.Store)(nil)
}

// executeClaimed claims r (the only queued run of db) and executes it under
// its lease, as a worker does; edit, if set, changes the claimed run first.
func executeClaimed(t *testing.T, db *sqlite.DB, opts engine.Options, r *duet.Run, edit func(*duet.Run)) {
	t.Helper()
	claimed, err := db.ClaimRun(t.Context(), "w1", time.Minute)
	if err != nil || claimed == nil || claimed.ID != r.ID {
		t.Fatalf("claiming %s: %v %v", r.ID, claimed, err)
	}
	if edit != nil {
		edit(claimed)
	}
	if err := engine.New(db, opts).Execute(context.WithoutCancel(t.Context()), duet.LeaseOf(claimed, "w1"), claimed, nil); err != nil {
		t.Fatal(err)
	}
}
