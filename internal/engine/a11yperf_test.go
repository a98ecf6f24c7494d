package engine_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/sample/sampletest"
)

// TestAccessibilityAndSpeed: on the sample shop, the planted accessibility
// defects fail assertAccessible with their rules and elements (the fixed
// page passes; impact critical lets the serious contrast defect through),
// and assertPerformance measures the slow page (its late hero past an LCP
// budget, its pushed-in banner a layout shift), keeping the values with
// the run for the trends.
func TestAccessibilityAndSpeed(t *testing.T) {
	t.Parallel()
	shopURL := sampletest.Shop(t)
	db := openStore(t)
	// The 3m step timeouts are budgets a loaded machine meets under -race,
	// not claims of speed.
	res := apply(t, db, "alice", `task: {name: quality, baseURL: `+shopURL+`}
cases:
  - key: a11y
    title: The help page is accessible
    steps:
      - open: /evidence/a11y
      - assertAccessible: {tags: [wcag2a, wcag2aa]}
        timeout: 3m
  - key: a11y-fixed
    title: The fixed help page is accessible
    steps:
      - open: /evidence/a11y?fixed=1
      - assertAccessible:
        timeout: 3m
  - key: a11y-critical
    title: No critical defect in the help page's text
    steps:
      - open: /evidence/a11y
      - assertAccessible: {include: ["#faint"], impact: critical}
        timeout: 3m
  - key: speed
    title: New in loads fast
    steps:
      - open: /evidence/speed?delay=600
      - waitFor: {selector: "#promo"}
      - assertPerformance: {lcp: "< 500ms", cls: "< 0.5", ttfb: "< 60s"}
        timeout: 3m
`)
	opts, _ := browserEngine(t, nil)
	r := startRun(t, db, res.Task, "alice")
	executeClaimed(t, db, opts, r, nil)
	_, byKey := awaitRun(t, db, r.ID)
	output := func(x *duet.Execution, i int) map[string]any {
		var m map[string]any
		json.Unmarshal(x.Results[i].Output, &m)
		return m
	}

	x := byKey["a11y"]
	if x.Status != duet.StatusFailed || x.Results[1].ErrorCode != duet.CodeAssertionFailed {
		t.Fatalf("a11y: %s", describe(x))
	}
	msg := x.Results[1].ErrorMessage
	for _, want := range []string{"image-alt (critical) on #logo", "button-name (critical) on #icon-button", "color-contrast (serious) on #faint"} {
		if !strings.Contains(msg, want) {
			t.Errorf("a11y: the error does not say %q: %s", want, msg)
		}
	}
	o := output(x, 1)
	vs, _ := o["violations"].([]any)
	if len(vs) < 3 || o["engine"] != "axe-core 4.14.1" {
		t.Fatalf("a11y output: %v", o)
	}
	v0 := vs[0].(map[string]any)
	if !strings.HasPrefix(v0["helpUrl"].(string), "https://dequeuniversity.com/") || len(v0["nodes"].([]any)) == 0 {
		t.Errorf("a violation: %v", v0)
	}
	if x := byKey["a11y-fixed"]; x.Status != duet.StatusPassed {
		t.Errorf("a11y-fixed: %s", describe(x))
	}
	if x := byKey["a11y-critical"]; x.Status != duet.StatusPassed || output(x, 1)["violations"].([]any)[0].(map[string]any)["rule"] != "color-contrast" {
		t.Errorf("a11y-critical (the contrast defect is serious, reported, not failing): %s", describe(x))
	}

	x = byKey["speed"]
	if x.Status != duet.StatusFailed || !strings.Contains(x.Results[2].ErrorMessage, "lcp is ") || strings.Contains(x.Results[2].ErrorMessage, "cls") || strings.Contains(x.Results[2].ErrorMessage, "ttfb") {
		t.Fatalf("speed: %s", describe(x))
	}
	ms, err := db.FindMetrics(t.Context(), []string{r.ID})
	if err != nil {
		t.Fatal(err)
	}
	vals := map[string]float64{}
	for _, m := range ms {
		if m.ExecutionID != x.ID || m.StepIndex != 2 || m.CaseKey != "speed" || m.TaskID != res.Task.ID {
			t.Errorf("a metric: %+v", m)
		}
		vals[m.Name] = m.Value
	}
	if vals["lcp"] < 600 || vals["cls"] <= 0 || vals["ttfb"] <= 0 || vals["fcp"] <= 0 {
		t.Fatalf("the metrics kept: %v", vals)
	}
}
