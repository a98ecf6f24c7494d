package step

import (
	"context"
	"math"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/duet-test/duet"
)

// ScreenshotComparer is a Page that takes screenshots for a visual
// comparison (internal/browser's sessions do): of the viewport or one
// element, animations stopped, mask elements covered.
type ScreenshotComparer interface {
	ComparableScreenshot(ctx context.Context, selector string, mask []string) ([]byte, error)
}

// Baseliner is an Env that keeps the baselines of visual comparisons (the
// engine is one): it compares png with the step's baseline, records a new
// baseline that awaits approval when there is none or it differs, keeps
// the images as the run's artifacts, and returns the step's output; an
// error ASSERTION_FAILED when the difference is past the step's tolerance.
type Baseliner interface {
	CheckBaseline(ctx context.Context, st *duet.Step, png []byte) (any, error)
}

// selectorList is a list of CSS selectors.
var selectorList = TypeOf("list of CSS selectors", func(bool) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "array", Items: &jsonschema.Schema{Type: "string"}}
})

// ratio is a number from 0 to 1.
var ratio = TypeOf("number from 0 to 1", func(bool) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "number", Minimum: new(0.0), Maximum: new(1.0)}
})

// AssertScreenshot is the assertScreenshot step.
var AssertScreenshot = register(&Kind{
	Name:    duet.StepAssertScreenshot,
	Section: Browser,
	Order:   230,
	Summary: "Compare the page (or one element) with its approved baseline screenshot; the first run records the baseline.",
	Form: shortFor("name", Text, "the baseline's name", "names the baseline within the case",
		Key{Name: "locator", Type: Text, Doc: "CSS selector of the element to capture (default: the viewport)"},
		Key{Name: "mask", Type: selectorList, Doc: "elements covered by a box before the capture (clocks, adverts)"},
		Key{Name: "maxDiffPixelRatio", Type: ratio, Doc: "the share of pixels that may differ (default 0)"},
		Key{Name: "threshold", Type: ratio, Doc: "how far two pixels' colours may be and still match, 0 to 1 (default 0.1)"},
	),
	Example: "- assertScreenshot: home page\n- assertScreenshot: {name: banner, locator: \"#banner\", mask: [\"#clock\"], maxDiffPixelRatio: 0.01}\n",
	Doc: "The screenshot is taken with CSS animations and transitions stopped and the caret hidden; `mask` covers elements " +
		"that change on every load. It is compared with the baseline of the task, case, name, device and environment (the " +
		"base URL's origin) **of the person running it** — what a run saw with your credentials is yours — with a " +
		"pixelmatch-style comparison that tolerates anti-aliasing. The first run records the screenshot as a baseline " +
		"that awaits approval (the step passes and says so); a later one that differs past `maxDiffPixelRatio` fails " +
		"with `ASSERTION_FAILED`, keeps the expected, actual and diff images as artifacts, and records the new " +
		"screenshot as a candidate baseline. Approve or reject it in the console (Baselines), with `duet baseline " +
		"approve|reject ID` or over REST; the newest approved baseline is the one compared against. A baseline follows " +
		"the case across versions until a step before it changes.",
	Agent: "`assertScreenshot: {name: banner, locator: \"#banner\", mask: [\"#clock\"], maxDiffPixelRatio: 0.01}` — compare with the approved baseline screenshot (the first run records it).",
	Compile: evidenceStep(false, func(c *Compiler, n *Node, bd *body, ev *duet.EvidenceStep) {
		if bd.isShort {
			ev.Name = strings.TrimSpace(bd.short)
		} else {
			c.AllowKeys(n, "name", "locator", "mask", "maxDiffPixelRatio", "threshold")
			ev.Name = strings.TrimSpace(c.String(n, "name", true))
			ev.Selector = c.String(n, "locator", false)
			ev.Mask = c.selectors(n, "mask")
			ev.MaxDiffPixelRatio = c.ratio(n, "maxDiffPixelRatio")
			ev.Threshold = c.ratio(n, "threshold")
		}
		if ev.Name == "" {
			c.Errf(n, "assertScreenshot needs a name")
		} else if len(ev.Name) > 100 || strings.ContainsAny(ev.Name, "\n\r\t") {
			c.Errf(n, "assertScreenshot: the name must be one line of at most 100 characters")
		}
	}),
	Run: func(ctx context.Context, env Env, st *duet.Step) (string, any, error) {
		sc, err := pageAs[ScreenshotComparer](ctx, env, st, "cannot take comparable screenshots")
		if err != nil {
			return "", nil, err
		}
		ev := st.Evidence
		b, ok := env.(Baseliner)
		if !ok {
			return "", nil, duet.Errorf(duet.CodeUnavailable, "assertScreenshot: this instance keeps no baselines")
		}
		png, err := sc.ComparableScreenshot(ctx, ev.Selector, ev.Mask)
		if err != nil {
			return "", nil, err
		}
		out, err := b.CheckBaseline(ctx, st, png)
		return "", out, err
	},
	Title: func(st *duet.Step) string {
		if st.Evidence != nil {
			return "assertScreenshot " + st.Evidence.Name
		}
		return "assertScreenshot"
	},
})

// evidenceStep is the Compile of a kind that checks the page as a whole
// (assertScreenshot, assertAccessible, assertPerformance): it needs a
// page, and f reads its parameters from the body bd into ev, the step's
// Evidence (null: the body may be empty).
func evidenceStep(null bool, f func(c *Compiler, n *Node, bd *body, ev *duet.EvidenceStep)) func(*Compiler, *duet.Step, *Node) {
	return pageStep(null, func(c *Compiler, st *duet.Step, n *Node, bd *body) {
		st.Browser = nil
		ev := &duet.EvidenceStep{}
		st.Evidence = ev
		f(c, n, bd, ev)
	})
}

// selectors reads an optional list of CSS selectors.
func (c *Compiler) selectors(n *Node, key string) []string {
	return c.stringList(n, key, "a list of CSS selectors", "a CSS selector")
}

// ratio reads an optional number from 0 to 1.
func (c *Compiler) ratio(n *Node, key string) float64 {
	v := n.Get(key)
	if v == nil || v.Type == NullNode {
		return 0
	}
	f, ok := v.Float()
	if !ok {
		c.Errf(v, "%s must be a number from 0 to 1", key)
		return 0
	}
	if math.IsNaN(f) || f < 0 || f > 1 {
		c.Errf(v, "%s must be a number from 0 to 1, got %v", key, f)
		return 0
	}
	return f
}
