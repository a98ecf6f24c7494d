package engine_test

import (
	"testing"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/sample/sampletest"
)

// TestFlakyInBrowser: in headless Chromium, the sample shop's flaky element
// (busy on its first load per key) fails a case's first attempt and its
// retry — a new browser context, the beforeEach hook again — passes: the
// case is flaky, the run passes with it counted apart, the failed
// attempt keeps its own failure screenshot (not replaced by the retry's
// evidence), and trace: on-first-retry keeps the first retry's trace. A
// case without retries fails on the same element.
//
// The steps' timeouts are seconds: the retry's click must find the button
// in time on a loaded machine (with 2 s, a retry slowed past it fails too,
// and the case ends failed instead of flaky).
func TestFlakyInBrowser(t *testing.T) {
	t.Parallel()
	shopURL := sampletest.Shop(t)
	db := openStore(t)
	res := apply(t, db, "alice", `task:
  name: flaky shop
  baseURL: `+shopURL+`
  trace: on-first-retry
  beforeEach:
    - open: /healthz
cases:
  - key: quick-add
    title: Quick add puts the item in the cart
    retries: 2
    steps:
      - open: "/flaky?key=a-${run.id}"
      - click: "#add-to-cart"
        timeout: 5s
      - assertVisible: "#added"
  - key: no-retries
    title: Quick add without retries
    steps:
      - open: "/flaky?key=b-${run.id}"
      - assertText: {selector: "#cart-state", equals: ready}
        timeout: 5s
`)
	opts, arts := browserEngine(t, nil)
	r := startRun(t, db, res.Task, "alice")
	executeClaimed(t, db, opts, r, nil)
	run, byKey := awaitRun(t, db, r.ID)
	x := byKey["quick-add"]
	if x.Status != duet.StatusFlaky || x.Attempt != 2 || len(x.Attempts) != 1 {
		t.Fatalf("quick-add: attempt %d, %d earlier attempts: %s", x.Attempt, len(x.Attempts), describe(x))
	}
	a := x.Attempts[0]
	if a.Status != duet.StatusFailed || len(a.Results) != 4 || a.Results[0].Hook != duet.HookBeforeEach || a.Results[2].Status != duet.StatusFailed ||
		len(a.Results[2].Artifacts) != 1 {
		t.Fatalf("quick-add's first attempt: %+v", a)
	}
	if x.Results[0].Hook != duet.HookBeforeEach || x.Results[0].Status != duet.StatusPassed || x.Results[3].Status != duet.StatusPassed {
		t.Fatalf("quick-add's retry: %s", describe(x))
	}
	if no := byKey["no-retries"]; no.Status != duet.StatusFailed || no.Attempt != 1 || len(no.Attempts) != 0 {
		t.Fatalf("no-retries: %s", describe(no))
	}
	if run.Status != duet.StatusFailed || run.Totals.Flaky != 1 || run.Totals.Failed != 1 {
		t.Fatalf("run: %s %+v", run.Status, run.Totals)
	}
	// The failed attempt's screenshot is its own, still there.
	if b, err := arts.Read(t.Context(), a.Results[2].Artifacts[0]); err != nil || len(b) == 0 {
		t.Fatalf("the first attempt's screenshot: %v", err)
	}
	// on-first-retry: the retry's trace is kept; a case never retried
	// keeps none.
	if _, ok := arts.HasTrace(t.Context(), r.ID, x.ID); !ok {
		t.Error("on-first-retry: no trace of the first retry")
	}
	if _, ok := arts.HasTrace(t.Context(), r.ID, byKey["no-retries"].ID); ok {
		t.Error("on-first-retry: a case never retried kept a trace")
	}
}
