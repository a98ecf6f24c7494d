package webui

import (
	"encoding/xml"
	"fmt"
	"html/template"
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/api"
)

// svgNode is an element of a drawn chart: its name, attributes and the
// text of its <title> child (its tooltip).
type svgNode struct {
	name  string
	attr  map[string]string
	title string
	text  string
}

// parseSVG reads a chart as XML (it must be well formed) into its
// elements, in document order.
func parseSVG(t *testing.T, h template.HTML) []*svgNode {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(string(h)))
	var out, stack []*svgNode
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the chart is not well-formed XML: %v\n%s", err, h)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			n := &svgNode{name: tok.Name.Local, attr: map[string]string{}}
			for _, a := range tok.Attr {
				n.attr[a.Name.Local] = a.Value
			}
			out, stack = append(out, n), append(stack, n)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) == 0 {
				continue
			}
			top := stack[len(stack)-1]
			top.text += string(tok)
			if top.name == "title" && len(stack) > 1 {
				stack[len(stack)-2].title += string(tok)
			}
		}
	}
	return out
}

func f(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("not a number: %q", s)
	}
	return v
}

func trendsOf(durations ...int64) api.Trends {
	start := time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC)
	tr := api.Trends{TaskID: "task_x"}
	ct := api.CaseTrend{CaseID: "case_x", Key: "sums", Title: "sums add up"}
	for i, d := range durations {
		st := duet.StatusPassed
		if i%3 == 2 {
			st = duet.StatusFailed
		}
		at := start.Add(time.Duration(i) * time.Minute)
		id := fmt.Sprintf("run_%02d", i)
		tr.Runs = append(tr.Runs, api.RunTrend{RunID: id, At: at, Status: st, Cases: 4, Passed: 3, PassRate: 0.75, DurationMs: d})
		ct.Points = append(ct.Points, api.TrendPoint{RunID: id, At: at, Version: 1, Status: st, DurationMs: d})
	}
	tr.Cases = []api.CaseTrend{ct}
	return tr
}

// labelWidth is the room a time label under the x axis takes ("Jan 2
// 15:04" at the chart's font size, and a gap).
const labelWidth = 84.0

// TestChartsRead: with one, two, three or a hundred runs, the trend
// charts read — the runs share the whole width (the bars too), the time
// labels under the x axis never overlap, both axes say what they measure
// and in which unit, the duration axis has its scale (ticks from 0 past
// the longest run), every bar and point has its tooltip — and a case's
// duration sparkline stays visible when every run took as long.
func TestChartsRead(t *testing.T) {
	for _, durations := range [][]int64{{1200}, {5, 5}, {0, 0, 0}, {800, 2500, 1900}, {}} {
		if len(durations) == 0 {
			for i := range 100 {
				durations = append(durations, int64(1000+i*37))
			}
		}
		n := len(durations)
		t.Run(fmt.Sprint(n, " runs ", durations[0]), func(t *testing.T) {
			c := drawCharts(trendsOf(durations...))
			for name, h := range map[string]template.HTML{"pass rate": c.PassRate, "duration": c.Duration} {
				nodes := parseSVG(t, h)
				var labels []float64
				var bars, dots []*svgNode
				plotL, plotR := -1.0, -1.0 // the x axis: the longest horizontal axis line
				var axisTitles, ticks []string
				for _, e := range nodes {
					switch {
					case e.name == "text" && e.attr["class"] == "tick" && e.attr["text-anchor"] == "middle":
						labels = append(labels, f(t, e.attr["x"]))
					case e.name == "text" && e.attr["class"] == "tick":
						ticks = append(ticks, e.text)
					case e.name == "text" && e.attr["class"] == "axis-title":
						axisTitles = append(axisTitles, e.text)
					case e.name == "rect" && strings.HasPrefix(e.attr["class"], "bar"):
						bars = append(bars, e)
					case e.name == "circle":
						dots = append(dots, e)
					case e.name == "line" && e.attr["class"] == "axis" && e.attr["y1"] == e.attr["y2"]:
						if l, r := f(t, e.attr["x1"]), f(t, e.attr["x2"]); r-l > plotR-plotL {
							plotL, plotR = l, r
						}
					}
				}
				// The x labels: one per run when they fit, never closer
				// than a label's width; the first and the last run named.
				if n <= 7 && len(labels) != n || len(labels) < 2 && n > 1 {
					t.Errorf("%s: %d time labels for %d runs", name, len(labels), n)
				}
				for i := 1; i < len(labels); i++ {
					if labels[i]-labels[i-1] < labelWidth {
						t.Errorf("%s: time labels at x %.0f and %.0f overlap (a label is %.0f wide)", name, labels[i-1], labels[i], labelWidth)
					}
				}
				if len(axisTitles) != 2 || !strings.Contains(axisTitles[0]+axisTitles[1], "(UTC)") {
					t.Errorf("%s: axis titles %q, want the x axis's and the y axis's with its unit", name, axisTitles)
				}
				points := bars
				if name == "duration" {
					points = dots
					if !strings.Contains(strings.Join(axisTitles, " "), "duration (") {
						t.Errorf("duration: no unit in the axis titles %q", axisTitles)
					}
					if len(ticks) < 3 || ticks[0] != "0 ms" && !strings.HasPrefix(ticks[0], "0 ") {
						t.Errorf("duration: the y axis's scale is %q, want ticks from 0 with their unit", ticks)
					}
					for _, tk := range ticks {
						if !strings.HasSuffix(tk, " ms") && !strings.HasSuffix(tk, " s") && !strings.HasSuffix(tk, " min") {
							t.Errorf("duration: tick %q has no unit", tk)
						}
					}
				} else if !slices.Equal(ticks, []string{"0%", "25%", "50%", "75%", "100%"}) {
					t.Errorf("pass rate: the y axis's scale is %q", ticks)
				}
				if len(points) != n {
					t.Fatalf("%s: %d bars or points for %d runs", name, len(points), n)
				}
				for i, p := range points {
					if !strings.Contains(p.title, fmt.Sprintf("run_%02d", i)) || !strings.Contains(p.title, "2026-03-04") {
						t.Errorf("%s: run %d's tooltip is %q", name, i, p.title)
					}
				}
				// The runs share the width: the first at the left, the last
				// at the right of the plot.
				x := func(e *svgNode) float64 {
					if e.name == "circle" {
						return f(t, e.attr["cx"])
					}
					return f(t, e.attr["x"]) + f(t, e.attr["width"])/2
				}
				slot := (plotR - plotL) / float64(n)
				if first, last := x(points[0]), x(points[n-1]); first > plotL+slot/2+1 || n > 1 && last < plotR-slot/2-1 {
					t.Errorf("%s: the runs span x %.0f to %.0f of a plot from %.0f to %.0f", name, first, last, plotL, plotR)
				}
			}
			// The case's duration sparkline: every point visible inside
			// it, with its tooltip; mid-height when all took as long.
			cc := c.Cases["case_x"]
			var dots []*svgNode
			var height float64
			for _, e := range parseSVG(t, cc.Duration) {
				if e.name == "circle" {
					dots = append(dots, e)
				}
				if e.name == "svg" {
					box := strings.Fields(e.attr["viewBox"])
					height = f(t, box[3])
				}
			}
			if len(dots) != n {
				t.Fatalf("the duration sparkline has %d points for %d runs", len(dots), n)
			}
			same := !slices.ContainsFunc(durations, func(d int64) bool { return d != durations[0] })
			for _, d := range dots {
				cy := f(t, d.attr["cy"])
				if r := f(t, d.attr["r"]); cy-r < 0 || cy+r > height || same && cy != height/2 || d.title == "" {
					t.Errorf("a sparkline point at y %.1f of %.0f (same durations: %v), tooltip %q", cy, height, same, d.title)
				}
			}
			for _, e := range parseSVG(t, cc.Statuses) {
				if e.name == "rect" && e.title == "" {
					t.Errorf("a result cell without its tooltip")
				}
			}
		})
	}
}
