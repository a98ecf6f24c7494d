package step_test

import (
	"strings"
	"testing"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/compiler"
	"github.com/duet-test/duet/internal/eval"
	"github.com/duet-test/duet/internal/step"
)

// TestFreezeWritesThePlanAsLiterals: a cached plan's locators and values
// are what the page showed and the model typed, used as they are when the
// plan is replayed; frozen into written steps they must mean the same, so
// a "${" in them is written "$${" (a literal), never read as a template.
// An aiFill's own value stays the template the case wrote.
func TestFreezeWritesThePlanAsLiterals(t *testing.T) {
	t.Parallel()
	src := "key: pay\ntitle: Pay\nsteps:\n" +
		"  - open: /cart\n" +
		"  - ai: pay the order\n" +
		"  - aiFill: {prompt: the coupon field, value: \"${coupon}\"}\n"
	nth := 1
	frozen, n, err := step.Freeze(src, "", []step.FrozenStep{
		{Kind: step.StepAI, Prompt: "pay the order", Actions: []duet.AIAction{
			{Do: "fill", Locator: &duet.Locator{Label: "Note ${x}"}, Value: "ref ${order}"},
			{Do: "click", Locator: &duet.Locator{
				Role: "button", Name: "Pay ${total}", Exact: true, Nth: &nth,
				Within: &duet.Locator{Role: "region", HasText: "${cart}"},
				Has:    &duet.Locator{XPath: "//span[.='${sum}']"},
			}},
		}},
		{Kind: step.StepAIFill, Prompt: "the coupon field", Value: "${coupon}", Actions: []duet.AIAction{
			{Do: "fill", Locator: &duet.Locator{CSS: "#coupon"}},
		}},
	})
	if err != nil || n != 2 {
		t.Fatalf("Freeze: %d, %v", n, err)
	}
	c, err := compiler.CompileCase(t.Context(), []byte(frozen), &duet.Task{Name: "t", BaseURL: "https://shop.example", HookSaves: []string{"coupon"}}, compiler.Options{})
	if err != nil {
		t.Fatalf("the frozen case does not compile: %v\n%s", err, frozen)
	}
	if len(c.Steps) != 4 {
		t.Fatalf("got %d steps, want 4:\n%s", len(c.Steps), frozen)
	}
	lit := func(what, s string) string {
		t.Helper()
		v, err := eval.RenderString(s, map[string]any{"coupon": "C1"})
		if err != nil {
			t.Fatalf("%s %q: %v\n%s", what, s, err, frozen)
		}
		return v
	}
	fill, click, aiFill := c.Steps[1].Browser, c.Steps[2].Browser, c.Steps[3].Browser
	got := []string{
		lit("fill's label", fill.Locator.Label), lit("fill's value", fill.Value),
		lit("click's name", click.Locator.Name), lit("within's hasText", click.Locator.Within.HasText),
		lit("has's xpath", click.Locator.Has.XPath), lit("aiFill's value", aiFill.Value),
	}
	want := []string{"Note ${x}", "ref ${order}", "Pay ${total}", "${cart}", "//span[.='${sum}']", "C1"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("got %q, want %q\n%s", got, want, frozen)
	}
	if l := click.Locator; !l.Exact || l.Nth == nil || *l.Nth != 1 || l.Role != "button" || l.Within.Role != "region" {
		t.Errorf("the click's locator lost a key: %+v\n%s", l, frozen)
	}
}
