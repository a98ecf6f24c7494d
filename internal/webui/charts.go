package webui

import (
	"fmt"
	"html/template"
	"strings"

	"github.com/duet-test/duet/internal/api"
)

// charts are a task's trend charts, drawn on the server as SVG: numbers
// and escaped text only, styled by the console's stylesheet.
type charts struct {
	PassRate template.HTML
	Duration template.HTML
	Cases    map[string]caseChart
	Vitals   []vitalChart
}

// vitalChart is the line of one page-speed metric over the runs.
type vitalChart struct {
	Name, Label string
	Last        string // the newest value, formatted
	SVG         template.HTML
}

// vitalLabels name the metrics of assertPerformance.
var vitalLabels = map[string]string{
	"lcp": "Largest Contentful Paint", "cls": "Cumulative Layout Shift", "inp": "Interaction to Next Paint",
	"fcp": "First Contentful Paint", "ttfb": "Time to First Byte", "domContentLoaded": "DOMContentLoaded", "load": "Load",
}

// drawVital draws the line of v over the runs, oldest first.
func drawVital(v api.VitalTrend) vitalChart {
	format := func(x float64) string {
		if v.Unit == "" {
			return fmt.Sprintf("%.3f", x)
		}
		return fmt.Sprintf("%.0f %s", x, v.Unit)
	}
	label := vitalLabels[v.Name]
	if label == "" {
		label = v.Name
	}
	vc := vitalChart{Name: v.Name, Label: label}
	n := len(v.Points)
	if n == 0 {
		return vc
	}
	vc.Last = format(v.Points[n-1].Value)
	top := 0.0
	for _, p := range v.Points {
		top = max(top, p.Value)
	}
	if top <= 0 {
		top = 1
	}
	var b strings.Builder
	id := "vt-" + v.Name
	fmt.Fprintf(&b, `<svg class="chart vital" data-metric="%s" viewBox="0 0 %.0f %.0f" role="img" aria-labelledby="%s"><title id="%s">%s of the last %d runs that measured it, oldest first (highest %s)</title>`,
		esc(v.Name), chartW, chartH+20, esc(id), esc(id), esc(label), n, esc(format(top)))
	fmt.Fprintf(&b, `<line class="axis" x1="0" y1="%.0f" x2="%.0f" y2="%.0f"/>`, chartH, chartW, chartH)
	w := min(chartW/float64(n), 40)
	var pts []string
	for i, p := range v.Points {
		x := (float64(i) + 0.5) * w
		y := chartH - p.Value/top*(chartH-10)
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", x, y))
		fmt.Fprintf(&b, `<circle class="dot" cx="%.1f" cy="%.1f" r="4"><title>%s: %s (median of %d)</title></circle>`, x, y, esc(p.RunID), esc(format(p.Value)), p.Samples)
	}
	fmt.Fprintf(&b, `<polyline class="line" points="%s"/>`, strings.Join(pts, " "))
	b.WriteString(`</svg>`)
	vc.SVG = template.HTML(b.String())
	return vc
}

type caseChart struct {
	Statuses template.HTML
	Duration template.HTML
}

const chartW, chartH = 640.0, 160.0

func esc(s string) string { return template.HTMLEscapeString(s) }

func drawCharts(t api.Trends) charts {
	c := charts{Cases: map[string]caseChart{}}
	for _, v := range t.Vitals {
		c.Vitals = append(c.Vitals, drawVital(v))
	}
	n := len(t.Runs)
	if n > 0 {
		var b strings.Builder
		fmt.Fprintf(&b, `<svg class="chart" viewBox="0 0 %.0f %.0f" role="img" aria-labelledby="pr-title"><title id="pr-title">Pass rate of the last %d runs, oldest first</title>`, chartW, chartH+20, n)
		fmt.Fprintf(&b, `<line class="axis" x1="0" y1="%.0f" x2="%.0f" y2="%.0f"/>`, chartH, chartW, chartH)
		for _, y := range []float64{0.5, 1} {
			fmt.Fprintf(&b, `<line class="grid" x1="0" y1="%.1f" x2="%.0f" y2="%.1f"/><text class="tick" x="2" y="%.1f">%.0f%%</text>`, chartH*(1-y), chartW, chartH*(1-y), chartH*(1-y)+12, y*100)
		}
		w := min(chartW/float64(n), 40)
		for i, r := range t.Runs {
			h := r.PassRate * chartH
			fmt.Fprintf(&b, `<rect class="bar %s" x="%.1f" y="%.1f" width="%.1f" height="%.1f"><title>%s: %s, %d of %d passed</title></rect>`,
				esc(string(r.Status)), float64(i)*w+1, chartH-h, max(w-2, 1), max(h, 1), esc(r.RunID), esc(r.At.UTC().Format("2006-01-02 15:04")), r.Passed, r.Cases)
		}
		fmt.Fprintf(&b, `<text class="tick" x="2" y="%.0f">%s</text>`, chartH+15, esc(t.Runs[0].At.UTC().Format("Jan 2 15:04")))
		if n > 1 {
			fmt.Fprintf(&b, `<text class="tick" x="%.1f" y="%.0f" text-anchor="end">%s</text>`, float64(n)*w, chartH+15, esc(t.Runs[n-1].At.UTC().Format("Jan 2 15:04")))
		}
		b.WriteString(`</svg>`)
		c.PassRate = template.HTML(b.String())

		var maxMs int64 = 1
		for _, r := range t.Runs {
			maxMs = max(maxMs, r.DurationMs)
		}
		b.Reset()
		fmt.Fprintf(&b, `<svg class="chart" viewBox="0 0 %.0f %.0f" role="img" aria-labelledby="du-title"><title id="du-title">Duration of the last %d runs, oldest first (longest %s)</title>`,
			chartW, chartH+20, n, esc(funcs["dur"].(func(int64) string)(maxMs)))
		fmt.Fprintf(&b, `<line class="axis" x1="0" y1="%.0f" x2="%.0f" y2="%.0f"/>`, chartH, chartW, chartH)
		var pts []string
		for i, r := range t.Runs {
			x := (float64(i) + 0.5) * w
			y := chartH - float64(r.DurationMs)/float64(maxMs)*(chartH-10)
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x, y))
			fmt.Fprintf(&b, `<circle class="dot %s" cx="%.1f" cy="%.1f" r="4"><title>%s: %d ms</title></circle>`, esc(string(r.Status)), x, y, esc(r.RunID), r.DurationMs)
		}
		fmt.Fprintf(&b, `<polyline class="line" points="%s"/>`, strings.Join(pts, " "))
		b.WriteString(`</svg>`)
		c.Duration = template.HTML(b.String())
	}
	for _, ct := range t.Cases {
		var b strings.Builder
		const cell = 14.0
		fmt.Fprintf(&b, `<svg class="spark" viewBox="0 0 %.0f %.0f" role="img" aria-label="results of %s, oldest first">`, cell*float64(max(len(ct.Points), 1)), cell, esc(ct.Key))
		var maxMs int64 = 1
		for i, p := range ct.Points {
			maxMs = max(maxMs, p.DurationMs)
			fmt.Fprintf(&b, `<rect class="cell %s" x="%.0f" y="0" width="%.0f" height="%.0f"><title>%s v%d: %s</title></rect>`,
				esc(string(p.Status)), float64(i)*cell+1, cell-2, cell, esc(p.RunID), p.Version, esc(string(p.Status)))
		}
		b.WriteString(`</svg>`)
		cc := caseChart{Statuses: template.HTML(b.String())}
		b.Reset()
		fmt.Fprintf(&b, `<svg class="spark" viewBox="0 0 %.0f 30" role="img" aria-label="duration of %s, oldest first">`, cell*float64(max(len(ct.Points), 1)), esc(ct.Key))
		var pts []string
		for i, p := range ct.Points {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", (float64(i)+0.5)*cell, 28-float64(p.DurationMs)/float64(maxMs)*26))
		}
		fmt.Fprintf(&b, `<polyline class="line" points="%s"/>`, strings.Join(pts, " "))
		if len(pts) == 1 {
			x, y, _ := strings.Cut(pts[0], ",")
			fmt.Fprintf(&b, `<circle class="dot" cx="%s" cy="%s" r="3"/>`, x, y)
		}
		b.WriteString(`</svg>`)
		cc.Duration = template.HTML(b.String())
		c.Cases[ct.CaseID] = cc
	}
	return c
}
