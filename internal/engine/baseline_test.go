package engine_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/sample/sampletest"
)

// TestVisualComparison: the first run records a baseline that awaits
// approval; a second run matches it although the page animates and shows
// a clock (animations stopped, the clock masked); a new banner design is
// caught with a candidate baseline and the expected, actual and diff
// images; once the candidate is approved the next run passes; bob, with
// whom the task is shared, compares against baselines of his own.
func TestVisualComparison(t *testing.T) {
	t.Parallel()
	shopURL := sampletest.Shop(t)
	db := openStore(t)
	// The 3m step timeouts are budgets a loaded machine meets under -race
	// (a comparison decodes and compares two viewport PNGs), not claims.
	res := apply(t, db, "alice", `task: {name: visual, baseURL: `+shopURL+`, sharedWith: [bob]}
cases:
  - key: banner
    title: The offers page looks as approved
    steps:
      - open: /evidence/banner
      - assertScreenshot: {name: offers, mask: ["#clock"]}
        timeout: 3m
  - key: banner-element
    title: The banner looks as approved
    steps:
      - open: /evidence/banner
      - assertScreenshot: {name: banner only, locator: "#banner"}
        timeout: 3m
`)
	opts, arts := browserEngine(t, nil)
	var element *duet.Execution // the banner-element case of the last run
	run := func(user string) *duet.Execution {
		t.Helper()
		r := startRun(t, db, res.Task, user)
		executeClaimed(t, db, opts, r, nil)
		_, byKey := awaitRun(t, db, r.ID)
		element = byKey["banner-element"]
		return byKey["banner"]
	}
	output := func(x *duet.Execution, i int) map[string]any {
		var m map[string]any
		json.Unmarshal(x.Results[i].Output, &m)
		return m
	}

	x := run("alice")
	if x.Status != duet.StatusPassed || element.Status != duet.StatusPassed {
		t.Fatalf("first run: %s\n%s", describe(x), describe(element))
	}
	if o := output(element, 1); o["status"] != "pending" {
		t.Fatalf("the element's first baseline: %v", o)
	}
	first := output(x, 1)
	if first["status"] != "pending" || !strings.Contains(first["note"].(string), "awaits your approval") {
		t.Fatalf("first run's output: %v", first)
	}
	x = run("alice")
	if x.Status != duet.StatusPassed || element.Status != duet.StatusPassed {
		t.Fatalf("second run (animations and a clock on the page): %s\n%s", describe(x), describe(element))
	}
	if o := output(x, 1); o["baseline"] != first["baseline"] || o["diffRatio"] != 0.0 {
		t.Errorf("second run's output: %v", o)
	}

	// A new design.
	resp, err := http.Post(shopURL+"/evidence/banner?variant=b", "text/plain", nil)
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("switching the banner: %v %v", resp, err)
	}
	x = run("alice")
	if x.Status != duet.StatusFailed || x.Results[1].ErrorCode != duet.CodeAssertionFailed || !strings.Contains(x.Results[1].ErrorMessage, "differs from its pending baseline v1") {
		t.Fatalf("the new design: %s", describe(x))
	}
	if element.Status != duet.StatusFailed {
		t.Fatalf("the new design, the element: %s", describe(element))
	}
	elementCand, _ := output(element, 1)["candidate"].(string)
	o := output(x, 1)
	cand, _ := o["candidate"].(string)
	images, _ := o["images"].(map[string]any)
	if cand == "" || o["diffRatio"].(float64) <= 0 || len(images) != 3 {
		t.Fatalf("the failure's output: %v", o)
	}
	for _, what := range []string{"expected", "actual", "diff"} {
		if data, err := arts.Read(t.Context(), images[what].(string)); err != nil || len(data) < 100 {
			t.Errorf("the %s image: %v", what, err)
		}
	}
	// Run again before deciding: the same candidate, not another one.
	x = run("alice")
	if o2 := output(x, 1); o2["candidate"] != cand {
		t.Errorf("a second run of the same change recorded another candidate: %v, want %s", o2["candidate"], cand)
	}
	if _, err := db.DecideBaseline(t.Context(), "bob", cand, duet.BaselineApproved); duet.ErrorCode(err) != duet.CodeNotFound {
		t.Fatalf("bob approving alice's baseline: %v", err)
	}
	if _, err := db.DecideBaseline(t.Context(), "alice", cand, duet.BaselineApproved); err != nil {
		t.Fatal(err)
	}
	x = run("alice")
	if x.Status != duet.StatusPassed || element.Status != duet.StatusFailed {
		t.Fatalf("after approving the page's candidate, not the element's: %s\n%s", describe(x), describe(element))
	}
	if _, err := db.DecideBaseline(t.Context(), "alice", elementCand, duet.BaselineApproved); err != nil {
		t.Fatal(err)
	}
	x = run("alice")
	if x.Status != duet.StatusPassed || element.Status != duet.StatusPassed {
		t.Fatalf("after approving both: %s\n%s", describe(x), describe(element))
	}
	if o := output(x, 1); o["baseline"] != cand || o["status"] != "approved" {
		t.Errorf("after approving, the baseline compared: %v", o)
	}
	// Bob's run records his own baseline.
	x = run("bob")
	if o := output(x, 1); x.Status != duet.StatusPassed || o["baseline"] == cand || o["status"] != "pending" {
		t.Fatalf("bob's first run: %s %v", describe(x), o)
	}
}
