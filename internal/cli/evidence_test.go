package cli_test

import (
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/duet-test/duet/internal/sample/sampletest"
	"github.com/duet-test/duet/internal/trace"
)

// TestReportTraceAndGC: `duet run --trace on` keeps both cases' traces,
// `duet report --trace RUN CASE` writes one as a zip the viewer opens from,
// bob gets PERMISSION_DENIED for alice's run (shared with him), and
// `duet gc` removes what is past the retention (and, dry, says so first).
func TestReportTraceAndGC(t *testing.T) {
	t.Parallel()
	requireBrowser(t)
	h := newHome(t)
	h.apply(`
task: {name: traced, baseURL: ` + sampletest.Shop(t) + `, sharedWith: [bob]}
cases:
  - key: loads
    title: Orders load
    steps:
      - open: /evidence/orders
      - assertText: {selector: "#load-state", equals: loaded}
`)
	out := h.must(0, "run", "traced", "--trace", "on")
	m := runIDRe.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no run id in %s", out)
	}
	runID := m[1]
	zipPath := filepath.Join(t.TempDir(), "t.zip")
	out = h.must(0, "report", "--trace", runID, "loads", "-o", zipPath)
	if !strings.Contains(out, "wrote the trace of case loads") {
		t.Fatalf("report --trace: %s", out)
	}
	data, err := os.ReadFile(zipPath)
	if err != nil {
		t.Fatal(err)
	}
	a, err := trace.Open(data)
	if err != nil || a.Trace.Mode != trace.On || a.Trace.Status != "passed" || len(a.Trace.Steps) != 2 || a.Trace.Steps[1].DOM == "" {
		t.Fatalf("the trace: %v %+v", err, a.Trace)
	}
	if _, _, err := a.File("index.html"); err != nil {
		t.Fatal(err)
	}
	h.env["DUET_USER"] = "bob"
	code, _, errOut := h.duet(t.Context(), "report", "--trace", runID, "loads", "-o", filepath.Join(t.TempDir(), "b.zip"))
	if code != 1 || !strings.Contains(errOut, "PERMISSION_DENIED") {
		t.Fatalf("bob: exit %d %s", code, errOut)
	}
	h.env["DUET_USER"] = "alice"
	if code, _, errOut := h.duet(t.Context(), "report", "--trace", runID); code != 2 || !strings.Contains(errOut, "--trace needs RUN_ID and CASE") {
		t.Fatalf("report --trace with one argument: exit %d %s", code, errOut)
	}

	// Age the run's artifacts past a one-hour retention.
	old := time.Now().Add(-2 * time.Hour)
	dir := filepath.Join(h.env["DUET_HOME"], "artifacts", runID)
	entries, _ := os.ReadDir(dir)
	for _, e := range append(entries, nil) {
		p := dir
		if e != nil {
			p = filepath.Join(dir, e.Name())
		}
		os.Chtimes(p, old, old)
	}
	h.env["DUET_ARTIFACT_RETENTION"] = "1h"
	if out := h.must(0, "gc", "--dry-run"); !strings.Contains(out, "would remove the artifacts of 1 run(s)") {
		t.Fatalf("gc --dry-run: %s", out)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("a dry run removed %s", dir)
	}
	if out := h.must(0, "gc"); !strings.Contains(out, "removed the artifacts of 1 run(s)") {
		t.Fatalf("gc: %s", out)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("gc left %s: %v", dir, err)
	}
	code, _, errOut = h.duet(t.Context(), "report", "--trace", runID, "loads", "-o", zipPath)
	if code != 1 || !strings.Contains(errOut, "NOT_FOUND") {
		t.Fatalf("the trace after gc: exit %d %s", code, errOut)
	}
}

// TestBaselineCommands: a first run records alice's baseline (pending); a
// new banner design fails the case with a candidate, which `duet baseline
// list --status pending` shows and `duet baseline approve` approves
// (audited); the next run passes. Bob cannot decide alice's baselines, and
// a decided one is not decided again.
func TestBaselineCommands(t *testing.T) {
	t.Parallel()
	requireBrowser(t)
	shop := sampletest.Shop(t)
	h := newHome(t)
	// Budgets a loaded machine meets under -race (a comparison decodes and
	// compares two viewport PNGs), not claims of speed.
	h.env["DUET_STEP_TIMEOUT"], h.env["DUET_CASE_TIMEOUT"] = "3m", "10m"
	h.apply(`
task: {name: looks, baseURL: ` + shop + `, sharedWith: [bob]}
cases:
  - key: banner
    title: The offers page looks as approved
    steps:
      - open: /evidence/banner
      - assertScreenshot: {name: offers, mask: ["#clock"]}
`)
	h.must(0, "run", "looks")
	out := h.must(0, "baseline", "list", "--task", "looks")
	if !strings.Contains(out, "pending") || !strings.Contains(out, "offers") || strings.Count(out, "\n") != 2 {
		t.Fatalf("baseline list after the first run: %s", out)
	}
	resp, err := http.Post(shop+"/evidence/banner?variant=b", "text/plain", nil)
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("switching the banner: %v %v", resp, err)
	}
	out = h.must(1, "run", "looks")
	m := regexp.MustCompile(`duet baseline approve (base_[0-9a-z]+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("the failing run names no candidate: %s", out)
	}
	cand := m[1]
	if out := h.must(0, "baseline", "list", "--status", "pending", "--json"); !strings.Contains(out, cand) || !strings.Contains(out, `"diffRatio"`) {
		t.Fatalf("baseline list --json: %s", out)
	}
	h.env["DUET_USER"] = "bob"
	if code, _, errOut := h.duet(t.Context(), "baseline", "approve", cand); code != 1 || !strings.Contains(errOut, "NOT_FOUND") {
		t.Fatalf("bob approving alice's baseline: exit %d %s", code, errOut)
	}
	h.env["DUET_USER"] = "alice"
	if out := h.must(0, "baseline", "approve", cand); !strings.Contains(out, "approved baseline "+cand+" (v2") {
		t.Fatalf("baseline approve: %s", out)
	}
	if code, _, errOut := h.duet(t.Context(), "baseline", "reject", cand); code != 1 || !strings.Contains(errOut, "CONFLICT") {
		t.Fatalf("rejecting an approved baseline: exit %d %s", code, errOut)
	}
	if code, _, errOut := h.duet(t.Context(), "baseline", "list", "--status", "old"); code != 2 || !strings.Contains(errOut, "--status") {
		t.Fatalf("baseline list --status old: exit %d %s", code, errOut)
	}
	h.must(0, "run", "looks")
	if out := h.must(0, "audit", "--method", "approveBaseline"); !strings.Contains(out, "alice") || !strings.Contains(out, "OK") {
		t.Fatalf("the audit of the decisions: %s", out)
	}
	// Bob's refused attempt is in his records (each sees only their own).
	if out := h.must(0, "audit", "--method", "approveBaseline", "--as", "bob"); !strings.Contains(out, "bob") || !strings.Contains(out, "NOT_FOUND") {
		t.Fatalf("the audit of bob's attempt: %s", out)
	}
}
