package step_test

import (
	"strings"
	"testing"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/sample/sampletest"
)

// TestSoftAssertions: a soft assertion that fails is recorded and the case
// goes on to its end, then fails with it; without soft the case stops there.
func TestSoftAssertions(t *testing.T) {
	t.Parallel()
	base := sampletest.Shop(t)
	steps := `      - open: /lab/table
      - assertText: {role: status, name: Detail, equals: nothing yet}
        timeout: 2s
        SOFT
      - click: {role: button, name: Details, nth: 0}
      - assertText: {role: status, name: Detail, contains: A1001}
`
	x := runSteps(t, base, strings.Replace(steps, "SOFT", "soft: true", 1))
	if x.Status != duet.StatusFailed || x.ErrorCode != duet.CodeAssertionFailed || !strings.Contains(x.ErrorMessage, "a soft assertion") || len(x.Results) != 4 {
		t.Fatalf("got %s", describe(x))
	}
	if r := x.Results[1]; r.Status != duet.StatusFailed || !r.Soft {
		t.Errorf("the soft step: %+v", r)
	}
	for _, r := range []*duet.StepResult{x.Results[2], x.Results[3]} {
		if r.Status != duet.StatusPassed {
			t.Errorf("the steps after a soft failure run: got %s", describe(x))
		}
	}
	x = runSteps(t, base, strings.Replace(steps, "        SOFT\n", "", 1))
	if x.Status != duet.StatusFailed || x.Results[2].Status != duet.StatusSkipped || x.Results[1].Soft {
		t.Errorf("without soft: got %s", describe(x))
	}
}

// TestStepFailures: what the new kinds fail with, each with its code.
func TestStepFailures(t *testing.T) {
	t.Parallel()
	base := sampletest.Shop(t)
	for _, tt := range []struct {
		name, steps string
		code        duet.Code
		msg         string
	}{
		// A step that fails with what it last saw there needs a timeout
		// long enough for a loaded machine's page to answer once (3s).
		{"ambiguous", "      - open: /lab/table\n      - click: {role: button, name: Details}\n", duet.CodeLocatorAmbiguous,
			`role=button[name="Details"] matches 3 elements`},
		{"no popup", "      - open: /lab/popup\n      - waitForPopup:\n        timeout: 500ms\n", duet.CodeStepTimeout, "no new tab opened"},
		{"too large", "      - open: /lab/\n      - evaluate: {expression: \"'x'.repeat(2000000)\", as: v}\n", duet.CodeTooLarge, "over the budget"},
		{"loop", "      - open: /lab/\n      - evaluate: \"(() => { for (;;) {} })()\"\n        timeout: 1s\n", duet.CodeStepTimeout, ""},
		{"throws", "      - open: /lab/\n      - evaluate: \"nope.nope\"\n", duet.CodeBrowserError, "nope is not defined"},
		{"not", "      - open: /lab/form\n      - assertValue: {label: Coupon, equals: WELCOME10, not: true}\n        timeout: 3s\n", duet.CodeAssertionFailed,
			`value of label="Coupon" is "WELCOME10"; expected it not to equal "WELCOME10"`},
		{"disabled", "      - open: /lab/form\n      - assertEnabled: {role: button, name: Pay}\n        timeout: 2s\n", duet.CodeAssertionFailed, "is not enabled"},
		{"no dialog", "      - open: /lab/dialogs\n      - assertDialog: anything\n        timeout: 300ms\n", duet.CodeAssertionFailed, "no dialog opened"},
		{"first tab", "      - open: /lab/\n      - closeTab:\n", duet.CodeInvalidArgument, "first tab"},
		{"no tab", "      - open: /lab/\n      - switchTo: 3\n        timeout: 300ms\n", duet.CodeNotFound, "no tab 3"},
		{"not a frame", "      - open: /lab/\n      - frame: h1\n", duet.CodeInvalidArgument, "is a <h1>, not an <iframe>"},
		{"unknown time zone", "      - emulate: {timezone: Mars/Olympus}\n", duet.CodeInvalidArgument, "time zone"},
		{"no option", "      - open: /lab/form\n      - select: {label: Shipping, value: Drone}\n        timeout: 3s\n", duet.CodeElementNotFound, "no option"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			x := runSteps(t, base, tt.steps)
			r := x.Results[len(x.Results)-1]
			if r.ErrorCode != tt.code || !strings.Contains(r.ErrorMessage, tt.msg) {
				t.Errorf("got %s, want %s %q", describe(x), tt.code, tt.msg)
			}
		})
	}
}

// TestWaitForLocatorAndWait: waitFor waits for an element named by a
// locator; wait pauses.
func TestWaitForLocatorAndWait(t *testing.T) {
	t.Parallel()
	x := runSteps(t, sampletest.Shop(t), `      - open: /lab/late
      - click: {role: button, name: Build report}
      - waitFor: {role: button, name: Open report, visible: true}
      - wait: 10ms
      - assertVisible: {role: alert, not: true}
      - waitFor: {role: dialog}
        timeout: 1s
`)
	if x.Status != duet.StatusFailed || len(x.Results) != 6 || x.Results[4].Status != duet.StatusPassed || x.Results[5].ErrorCode != duet.CodeStepTimeout {
		t.Fatalf("got %s", describe(x))
	}
}
