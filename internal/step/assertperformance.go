package step

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/duet-test/duet"
)

// MetricsReader is a Page that reads the current document's page-speed
// values from the browser (internal/browser's sessions do): ttfb, fcp,
// lcp, inp, domContentLoaded and load in milliseconds, cls unitless; a
// value the browser did not report is absent.
type MetricsReader interface {
	PageMetrics(ctx context.Context) (map[string]float64, error)
}

// MetricRecorder is an Env that keeps the page-speed values a step
// measured with the run (the engine is one), for the trends.
type MetricRecorder interface {
	RecordMetrics(ctx context.Context, st *duet.Step, values map[string]float64) error
}

// perfMetric is a metric assertPerformance knows.
type perfMetric struct {
	name  string
	timed bool
	doc   string
}

// performanceMetrics are the metrics assertPerformance knows, in the
// order the docs and outputs list them; timed says which are durations.
var performanceMetrics = []perfMetric{
	{"lcp", true, "Largest Contentful Paint"},
	{"fcp", true, "First Contentful Paint"},
	{"cls", false, "Cumulative Layout Shift (unitless)"},
	{"inp", true, "Interaction to Next Paint (only after an interaction)"},
	{"ttfb", true, "Time to First Byte"},
	{"domContentLoaded", true, "the DOMContentLoaded event's end"},
	{"load", true, "the load event's end"},
}

// Budget is one parsed budget of assertPerformance: Metric Op Limit (in
// milliseconds for a duration).
type Budget struct {
	Metric string
	Op     string // <, <=, >, >=
	Limit  float64
}

// holds reports whether v is within the budget.
func (b Budget) holds(v float64) bool {
	switch b.Op {
	case "<":
		return v < b.Limit
	case "<=":
		return v <= b.Limit
	case ">":
		return v > b.Limit
	}
	return v >= b.Limit
}

var budgetRe = regexp.MustCompile(`^\s*(<=|>=|<|>)?\s*([0-9]+(?:\.[0-9]+)?)\s*(ms|s)?\s*$`)

// ParseBudget reads the budget of metric as written ("< 2500ms", "<= 2.5s",
// "< 0.1", or a bare number: at most). A duration metric takes ms or s (a
// bare number is milliseconds); cls takes no unit.
func ParseBudget(metric, text string) (Budget, error) {
	i := slices.IndexFunc(performanceMetrics, func(m perfMetric) bool { return m.name == metric })
	if i < 0 {
		return Budget{}, fmt.Errorf("unknown metric %q (want lcp, fcp, cls, inp, ttfb, domContentLoaded or load)", metric)
	}
	m := budgetRe.FindStringSubmatch(text)
	if m == nil {
		return Budget{}, fmt.Errorf("%s: want a budget such as \"< 2500ms\", \"<= 2.5s\" or \"< 0.1\", got %q", metric, text)
	}
	v, err := strconv.ParseFloat(m[2], 64)
	if err != nil || math.IsInf(v, 0) {
		return Budget{}, fmt.Errorf("%s: %q is not a number", metric, m[2])
	}
	switch {
	case !performanceMetrics[i].timed && m[3] != "":
		return Budget{}, fmt.Errorf("%s is unitless: write \"< 0.1\", not %q", metric, text)
	case m[3] == "s":
		v *= 1000
	}
	op := m[1]
	if op == "" {
		op = "<="
	}
	return Budget{Metric: metric, Op: op, Limit: v}, nil
}

// AssertPerformance is the assertPerformance step.
var AssertPerformance = register(&Kind{
	Name:    duet.StepAssertPerformance,
	Section: Browser,
	Order:   250,
	Summary: "Check the page's Core Web Vitals and load timings against budgets; the values are kept for the trends.",
	Form: Form{
		Keys: func() []Key {
			var keys []Key
			for _, m := range performanceMetrics {
				unit := `"< 2500ms" or "<= 2.5s"`
				if !m.timed {
					unit = `"< 0.1"`
				}
				keys = append(keys, Key{Name: m.name, Type: Text, Doc: m.doc + ": its budget, as " + unit})
			}
			return keys
		}(),
		Null: true,
	},
	Example: "- assertPerformance:\n- assertPerformance: {lcp: \"< 2500ms\", cls: \"< 0.1\", ttfb: \"< 800ms\"}\n",
	Doc: "Reads, once the page's load event has finished, the values the browser itself reports through its " +
		"PerformanceObserver and Navigation Timing: `lcp`, `fcp`, `cls` (the largest session window of layout shifts " +
		"without recent input), `inp` (only once the case interacted with the page), `ttfb`, `domContentLoaded` and " +
		"`load`, for the document the earlier steps opened. Each budget is a comparison (`<`, `<=`, `>`, `>=`; a bare " +
		"number is at most) with `ms` or `s` for the timings (a bare number is milliseconds) and no unit for `cls`. A " +
		"value past its budget, or a budgeted value the browser did not report, fails the case with `ASSERTION_FAILED`. " +
		"Every value measured is in the step's output and kept with the run: the console's trends page draws them " +
		"over time beside the pass rate. With no budgets the step only measures.",
	Agent: "`assertPerformance: {lcp: \"< 2500ms\", cls: \"< 0.1\"}` — check Core Web Vitals of the loaded page (also fcp, inp, ttfb, domContentLoaded, load); the values are kept for trends.",
	Compile: evidenceStep(true, func(c *Compiler, n *Node, bd *body, ev *duet.EvidenceStep) {
		if bd.isShort {
			c.Errf(n, "assertPerformance takes a mapping of budgets (lcp: \"< 2500ms\", cls: \"< 0.1\", ...) or nothing")
			return
		}
		if !bd.isMap {
			return
		}
		var names []string
		for _, m := range performanceMetrics {
			names = append(names, m.name)
		}
		c.AllowKeys(n, names...)
		for _, name := range names {
			text := c.String(n, name, false)
			if text == "" {
				continue
			}
			if _, err := ParseBudget(name, text); err != nil {
				c.Errf(n.Get(name), "%v", err)
				continue
			}
			if ev.Budgets == nil {
				ev.Budgets = map[string]string{}
			}
			ev.Budgets[name] = text
		}
	}),
	Run: func(ctx context.Context, env Env, st *duet.Step) (string, any, error) {
		mr, err := pageAs[MetricsReader](ctx, env, st, "reports no page-speed values")
		if err != nil {
			return "", nil, err
		}
		ev := st.Evidence
		values, err := mr.PageMetrics(ctx)
		if err != nil {
			return "", nil, err
		}
		if rec, ok := env.(MetricRecorder); ok && len(values) > 0 {
			if err := rec.RecordMetrics(ctx, st, values); err != nil {
				return "", nil, err
			}
		}
		out := map[string]any{}
		for k, v := range values {
			out[k] = math.Round(v*1000) / 1000
		}
		var over []string
		for _, m := range performanceMetrics {
			text, ok := ev.Budgets[m.name]
			if !ok {
				continue
			}
			b, err := ParseBudget(m.name, text)
			if err != nil {
				return "", nil, duet.WrapError(duet.CodeInvalidArgument, err, "assertPerformance: %v", err)
			}
			v, measured := values[m.name]
			switch {
			case !measured:
				over = append(over, fmt.Sprintf("%s was not reported by the browser (budget %s)", m.name, strings.TrimSpace(text)))
			case !b.holds(v):
				over = append(over, fmt.Sprintf("%s is %s, budget %s", m.name, formatMetric(m.timed, v), strings.TrimSpace(text)))
			}
		}
		if len(over) > 0 {
			return "", map[string]any{"values": out, "budgets": budgetsAny(ev.Budgets), "over": anyList(over)},
				duet.Errorf(duet.CodeAssertionFailed, "page speed past its budget: %s", strings.Join(over, "; "))
		}
		return "", map[string]any{"values": out, "budgets": budgetsAny(ev.Budgets)}, nil
	},
})

func formatMetric(timed bool, v float64) string {
	if timed {
		return strconv.FormatFloat(math.Round(v), 'f', -1, 64) + "ms"
	}
	return strconv.FormatFloat(math.Round(v*1000)/1000, 'f', -1, 64)
}

func budgetsAny(b map[string]string) map[string]any {
	out := map[string]any{}
	for k, v := range b {
		out[k] = v
	}
	return out
}

func anyList(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}
