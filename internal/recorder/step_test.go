package recorder_test

import (
	"testing"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/recorder"
)

// TestStepYAMLWritesEveryLocatorKey: a recorded step is written with the
// locator keys a frozen plan is written with (step.LocatorYAML): every key
// of the locator, xpath and has included, its texts literals.
func TestStepYAMLWritesEveryLocatorKey(t *testing.T) {
	t.Parallel()
	nth := -1
	s := recorder.Step{Kind: recorder.KindFill, Value: "${v}", Locator: &duet.Locator{
		Role: "textbox", Name: "Total ${n}", Exact: true, Nth: &nth,
		Within: &duet.Locator{CSS: "#cart"},
		Has:    &duet.Locator{XPath: "//input[@name='q']"},
	}}
	got := s.YAML("  ")
	want := `  - fill: {role: "textbox", name: "Total $${n}", exact: true, nth: -1, within: {selector: "#cart"}, has: {xpath: "//input[@name='q']"}, value: "$${v}"}` + "\n"
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
