package webui

import (
	"fmt"
	"html/template"
	"math"
	"strconv"
	"strings"

	"github.com/duet-test/duet/internal/api"
)

// charts are a task's trend charts, drawn on the server as SVG: numbers
// and escaped text only, styled by the console's stylesheet, readable
// without script. Every chart has its axes with their units, and every
// point or bar its tooltip (an SVG <title>).
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

// The frame of the run charts, in viewBox units: the plot sits inside the
// margins, the y axis's labels on the left, the x axis's below.
const (
	chartW, chartH                  = 720.0, 250.0
	marginL, marginR                = 64.0, 40.0
	marginT, marginB                = 14.0, 50.0
	plotW, plotH                    = chartW - marginL - marginR, chartH - marginT - marginB
	plotBottom                      = marginT + plotH
	xLabelWidth                     = 84.0 // room for one x label ("Jan 2 15:04") and a gap
	maxBarWidth                     = 56.0
	timeLabel, timeTip              = "Jan 2 15:04", "2006-01-02 15:04:05 UTC"
	sparkCell, sparkH, sparkPadding = 14.0, 24.0, 4.0
	sparkMaxW                       = 280.0
)

func esc(s string) string { return template.HTMLEscapeString(s) }

func num(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) }

// slotX is the centre of run i of n along the x axis: the runs share the
// whole width, oldest on the left.
func slotX(i, n int) float64 { return marginL + (float64(i)+0.5)*plotW/float64(n) }

// xLabels returns the runs whose time is written under the x axis: all
// of them when they fit, else evenly spaced ones, the first and the last
// always, never two closer than a label's width.
func xLabels(n int) []int {
	fit := max(int(math.Floor(plotW/xLabelWidth)), 2)
	if n <= fit {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	step := int(math.Ceil(float64(n-1) / float64(fit-1)))
	var out []int
	for i := 0; i < n-1; i += step {
		out = append(out, i)
	}
	if last := out[len(out)-1]; float64(n-1-last)*plotW/float64(n) < xLabelWidth {
		out = out[:len(out)-1]
	}
	return append(out, n-1)
}

// frame writes the axes, the horizontal grid lines at ticks (with the
// labels label gives them), the x axis's labels and the two axis titles.
func frame(b *strings.Builder, runs []api.RunTrend, ticks []float64, y func(float64) float64, label func(float64) string, yTitle string) {
	for _, v := range ticks {
		fmt.Fprintf(b, `<line class="grid" x1="%s" y1="%s" x2="%s" y2="%s"/>`, num(marginL), num(y(v)), num(marginL+plotW), num(y(v)))
		fmt.Fprintf(b, `<text class="tick" x="%s" y="%s" text-anchor="end">%s</text>`, num(marginL-6), num(y(v)+4), esc(label(v)))
	}
	fmt.Fprintf(b, `<line class="axis" x1="%s" y1="%s" x2="%s" y2="%s"/>`, num(marginL), num(marginT), num(marginL), num(plotBottom))
	fmt.Fprintf(b, `<line class="axis" x1="%s" y1="%s" x2="%s" y2="%s"/>`, num(marginL), num(plotBottom), num(marginL+plotW), num(plotBottom))
	for _, i := range xLabels(len(runs)) {
		x := slotX(i, len(runs))
		fmt.Fprintf(b, `<line class="axis" x1="%s" y1="%s" x2="%s" y2="%s"/>`, num(x), num(plotBottom), num(x), num(plotBottom+4))
		fmt.Fprintf(b, `<text class="tick" x="%s" y="%s" text-anchor="middle">%s</text>`, num(x), num(plotBottom+17), esc(runs[i].At.UTC().Format(timeLabel)))
	}
	fmt.Fprintf(b, `<text class="axis-title" x="%s" y="%s" text-anchor="middle">run start (UTC), oldest first</text>`, num(marginL+plotW/2), num(chartH-8))
	fmt.Fprintf(b, `<text class="axis-title" x="%s" y="%s" text-anchor="middle" transform="rotate(-90 %s %s)">%s</text>`,
		num(14), num(marginT+plotH/2), num(14), num(marginT+plotH/2), esc(yTitle))
}

// durationScale returns the ticks (in ms) of a duration axis from 0 to
// past maxMs and the unit it is read in — ms, s or min, whichever the
// longest run reads best in — with round steps in that unit (1, 2 or 5
// times a power of ten, four or five of them).
func durationScale(maxMs int64) (ticks []float64, unit string, div float64) {
	top := math.Max(float64(maxMs), 10) // at least 10 ms: a run that took no time still has a scale
	switch {
	case top < 2000:
		unit, div = "ms", 1
	case top < 180_000:
		unit, div = "s", 1000
	default:
		unit, div = "min", 60_000
	}
	raw := top / div / 4
	pow := math.Pow(10, math.Floor(math.Log10(raw)))
	step := pow * 10
	for _, m := range []float64{1, 2, 5, 10} {
		if m*pow >= raw {
			step = m * pow
			break
		}
	}
	for k := 0; ; k++ {
		v := float64(k) * step
		ticks = append(ticks, v*div)
		if v*div >= top {
			break
		}
	}
	return ticks, unit, div
}

// inUnit writes ms in unit (ms, s, min), rounded to what a tick needs.
func inUnit(ms float64, unit string, div float64) string {
	return strconv.FormatFloat(math.Round(ms/div*1000)/1000, 'f', -1, 64) + " " + unit
}

func drawCharts(t api.Trends) charts {
	c := charts{Cases: map[string]caseChart{}}
	for _, v := range t.Vitals {
		c.Vitals = append(c.Vitals, drawVital(v))
	}
	dur := funcs["dur"].(func(int64) string)
	if n := len(t.Runs); n > 0 {
		// Pass rate: a bar per run, 0 to 100 %.
		var b strings.Builder
		fmt.Fprintf(&b, `<svg class="chart" viewBox="0 0 %s %s" role="img" aria-labelledby="pr-title"><title id="pr-title">Pass rate of the last %d runs, oldest first, from 0 to 100%%</title>`,
			num(chartW), num(chartH), n)
		y := func(v float64) float64 { return plotBottom - v*plotH }
		frame(&b, t.Runs, []float64{0, 0.25, 0.5, 0.75, 1}, y, func(v float64) string { return fmt.Sprintf("%.0f%%", v*100) }, "pass rate (%)")
		bw := math.Min(plotW/float64(n)*0.7, maxBarWidth)
		for i, r := range t.Runs {
			h := math.Max(r.PassRate*plotH, 2) // a run that passed nothing still shows
			fmt.Fprintf(&b, `<rect class="bar %s" x="%s" y="%s" width="%s" height="%s"><title>%s, %s: %s, %d of %d cases passed (%.0f%%)</title></rect>`,
				esc(string(r.Status)), num(slotX(i, n)-bw/2), num(plotBottom-h), num(bw), num(h),
				esc(r.RunID), esc(r.At.UTC().Format(timeTip)), esc(string(r.Status)), r.Passed, r.Cases, r.PassRate*100)
		}
		b.WriteString(`</svg>`)
		c.PassRate = template.HTML(b.String())

		// Duration: a point per run on a scale from 0, in ms, s or min.
		var maxMs int64
		for _, r := range t.Runs {
			maxMs = max(maxMs, r.DurationMs)
		}
		ticks, unit, div := durationScale(maxMs)
		top := ticks[len(ticks)-1]
		b.Reset()
		fmt.Fprintf(&b, `<svg class="chart" viewBox="0 0 %s %s" role="img" aria-labelledby="du-title"><title id="du-title">Duration of the last %d runs, oldest first, from 0 to %s (the longest took %s)</title>`,
			num(chartW), num(chartH), n, esc(inUnit(top, unit, div)), esc(dur(maxMs)))
		y = func(v float64) float64 { return plotBottom - v/top*plotH }
		frame(&b, t.Runs, ticks, y, func(v float64) string { return inUnit(v, unit, div) }, "duration ("+unit+")")
		var pts []string
		for i, r := range t.Runs {
			pts = append(pts, num(slotX(i, n))+","+num(y(float64(r.DurationMs))))
		}
		if n > 1 {
			fmt.Fprintf(&b, `<polyline class="line" points="%s"/>`, strings.Join(pts, " "))
		}
		for i, r := range t.Runs {
			fmt.Fprintf(&b, `<circle class="dot %s" cx="%s" cy="%s" r="5"><title>%s, %s: %s, %s</title></circle>`,
				esc(string(r.Status)), num(slotX(i, n)), num(y(float64(r.DurationMs))), esc(r.RunID), esc(r.At.UTC().Format(timeTip)), esc(dur(r.DurationMs)), esc(string(r.Status)))
		}
		b.WriteString(`</svg>`)
		c.Duration = template.HTML(b.String())
	}
	for _, ct := range t.Cases {
		c.Cases[ct.CaseID] = drawSparks(ct, dur)
	}
	return c
}

// drawSparks draws a case's sparklines, one pixel a unit: a cell per run
// coloured by its result, and its duration as a line from its shortest to
// its longest (drawn mid-height when they are equal) — each point with its
// tooltip. A cell is sparkCell wide, narrower when the runs would take
// more than sparkMaxW.
func drawSparks(ct api.CaseTrend, dur func(int64) string) caseChart {
	n := max(len(ct.Points), 1)
	cell := math.Min(sparkCell, sparkMaxW/float64(n))
	w := cell * float64(n)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="spark" width="%s" height="%s" viewBox="0 0 %s %s" role="img" aria-label="results of %s, oldest first">`,
		num(w), num(sparkCell), num(w), num(sparkCell), esc(ct.Key))
	for i, p := range ct.Points {
		fmt.Fprintf(&b, `<rect class="cell %s" x="%s" y="0" width="%s" height="%s"><title>%s, %s, v%d: %s</title></rect>`,
			esc(string(p.Status)), num(float64(i)*cell+cell*0.1), num(cell*0.8), num(sparkCell), esc(p.RunID), esc(p.At.UTC().Format(timeTip)), p.Version, esc(string(p.Status)))
	}
	b.WriteString(`</svg>`)
	cc := caseChart{Statuses: template.HTML(b.String())}

	lo, hi := int64(math.MaxInt64), int64(0)
	for _, p := range ct.Points {
		lo, hi = min(lo, p.DurationMs), max(hi, p.DurationMs)
	}
	y := func(ms int64) float64 {
		if hi == lo {
			return sparkH / 2
		}
		return sparkH - sparkPadding - float64(ms-lo)/float64(hi-lo)*(sparkH-2*sparkPadding)
	}
	b.Reset()
	label := "duration of " + ct.Key + ", oldest first"
	if len(ct.Points) > 0 {
		label += ", from " + dur(lo) + " to " + dur(hi)
	}
	fmt.Fprintf(&b, `<svg class="spark" width="%s" height="%s" viewBox="0 0 %s %s" role="img" aria-label="%s">`, num(w), num(sparkH), num(w), num(sparkH), esc(label))
	var pts []string
	for i, p := range ct.Points {
		pts = append(pts, num((float64(i)+0.5)*cell)+","+num(y(p.DurationMs)))
	}
	if len(pts) > 1 {
		fmt.Fprintf(&b, `<polyline class="line" points="%s"/>`, strings.Join(pts, " "))
	}
	r := math.Min(3, cell/2)
	for i, p := range ct.Points {
		fmt.Fprintf(&b, `<circle class="dot %s" cx="%s" cy="%s" r="%s"><title>%s, %s: %s</title></circle>`,
			esc(string(p.Status)), num((float64(i)+0.5)*cell), num(y(p.DurationMs)), num(r), esc(p.RunID), esc(p.At.UTC().Format(timeTip)), esc(dur(p.DurationMs)))
	}
	b.WriteString(`</svg>`)
	cc.Duration = template.HTML(b.String())
	return cc
}
