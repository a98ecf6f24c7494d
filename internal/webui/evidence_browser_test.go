package webui_test

import (
	"bytes"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/api"
	"github.com/duet-test/duet/internal/app/apptest"
	"github.com/duet-test/duet/internal/browser/chromiumtest"
)

// evidenceTask applies, as alice, a one-case task and returns its id and
// its case's id.
func evidenceTask(t *testing.T, e *apptest.Env, name string) (taskID, caseID string) {
	t.Helper()
	src := "task: {name: " + name + ", baseURL: 'http://127.0.0.1:9'}\ncases:\n  - key: home\n    title: Home\n    steps:\n      - set: {x: '1'}\n"
	st, body, _ := e.Call("alice", "POST", api.Prefix+"/tasks", api.ApplyIn{Source: src})
	if st != http.StatusCreated && st != http.StatusOK {
		t.Fatalf("apply: %d %s", st, body)
	}
	var res duet.ApplyResult
	if err := json.Unmarshal(body, &res); err != nil || res.Task == nil || len(res.Cases) != 1 {
		t.Fatalf("apply: %v %s", err, body)
	}
	return res.Task.ID, res.Cases[0].ID
}

// signedInTab opens a Chromium tab signed in to the console as user.
func signedInTab(t *testing.T, e *apptest.Env, user string) *page {
	t.Helper()
	browser := startChromium(t)
	p := tab(t, browser, e.URL, t.TempDir(), user)
	p.open("/tasks")
	p.do("sign in", chromedp.WaitVisible(chromedp.CSS("#token")), chromedp.KeyEvent(e.Tokens[user]), chromedp.KeyEvent("\r"),
		chromedp.WaitVisible(chromedp.CSS("#whoami")))
	return p
}

// pixel returns the colour at (fx, fy), fractions of the width and height
// of img.
func pixel(img image.Image, fx, fy float64) color.RGBA {
	b := img.Bounds()
	x := b.Min.X + int(fx*float64(b.Dx()-1))
	y := b.Min.Y + int(fy*float64(b.Dy()-1))
	r, g, bl, a := img.At(x, y).RGBA()
	return color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(bl >> 8), uint8(a >> 8)}
}

func near(c, want color.RGBA) bool {
	d := func(a, b uint8) int { return int(math.Abs(float64(int(a) - int(b)))) }
	return d(c.R, want.R) < 24 && d(c.G, want.G) < 24 && d(c.B, want.B) < 24
}

// TestBaselineSliderInChromium: on a candidate's page, the slider shows
// the candidate left of its line and the baseline in use right of it, as
// Chromium paints them; moving the range input moves the line — the
// pixels at a point change from one image to the other.
func TestBaselineSliderInChromium(t *testing.T) {
	chromiumtest.Require(t)
	e := apptest.New(t, nil)
	taskID, caseID := evidenceTask(t, e, "slider")
	key := duet.BaselineKey{TaskID: taskID, CaseID: caseID, Name: "home", Device: "desktop", Environment: "http://127.0.0.1:9", Owner: "alice"}
	white, blue := color.RGBA{255, 255, 255, 255}, color.RGBA{0, 0, 255, 255}
	ratio := 1.0
	l, x := e.HeldExecution("alice", taskID, caseID)
	inUse := &duet.Baseline{BaselineKey: key, CaseKey: "home", Fingerprint: "f", SHA256: "w", Width: 400, Height: 200, RunID: l.RunID, ExecutionID: x, Image: pngOf(t, 400, 200, white)}
	cand := &duet.Baseline{BaselineKey: key, CaseKey: "home", Fingerprint: "f", SHA256: "b", Width: 400, Height: 200, RunID: l.RunID, ExecutionID: x, DiffRatio: &ratio, Image: pngOf(t, 400, 200, blue)}
	for _, b := range []*duet.Baseline{inUse, cand} {
		if err := e.App.Store.CreateBaseline(t.Context(), l, b); err != nil {
			t.Fatal(err)
		}
	}

	alice := signedInTab(t, e, "alice")
	alice.open("/baselines/" + cand.ID)
	alice.do("the slider", chromedp.WaitVisible(chromedp.CSS("[data-slider] img")))
	run(alice, "the slider's images", chromedp.Poll[bool](`[...document.querySelectorAll('[data-slider] img, #baseline-diff-image')].every(i => i.complete && i.naturalWidth === 400)`))
	// shot returns the slider as painted and the fraction of its width
	// the candidate covers.
	shot := func(what string) (image.Image, float64) {
		t.Helper()
		cover := run(alice, what, chromedp.Evaluate[float64](`(() => {
			const s = document.querySelector('[data-slider]').getBoundingClientRect();
			const top = document.querySelector('[data-slider-top]').getBoundingClientRect();
			return (top.right - s.left) / s.width; })()`))
		data := run(alice, what, chromedp.Screenshot(chromedp.CSS("[data-slider]")))
		img, err := png.Decode(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return img, cover
	}
	move := func(v int) {
		t.Helper()
		run(alice, "slide to "+strconv.Itoa(v), chromedp.Evaluate[bool](`(() => { const i = document.querySelector('[data-slider-input]');
			i.value = `+strconv.Itoa(v)+`; i.dispatchEvent(new Event('input', {bubbles: true})); return true; })()`))
	}

	img, cover := shot("at 50")
	if math.Abs(cover-0.5) > 0.03 {
		t.Errorf("at 50: the candidate covers %.2f of the slider, want 0.50", cover)
	}
	if c := pixel(img, 0.25, 0.5); !near(c, blue) {
		t.Errorf("at 50: left of the line is %v, want the candidate (blue)", c)
	}
	if c := pixel(img, 0.75, 0.5); !near(c, white) {
		t.Errorf("at 50: right of the line is %v, want the baseline in use (white)", c)
	}
	move(20)
	img, cover = shot("at 20")
	if math.Abs(cover-0.2) > 0.03 {
		t.Errorf("at 20: the candidate covers %.2f of the slider, want 0.20", cover)
	}
	if c := pixel(img, 0.35, 0.5); !near(c, white) {
		t.Errorf("at 20: 35%% across is %v, want the baseline in use (white)", c)
	}
	if c := pixel(img, 0.1, 0.5); !near(c, blue) {
		t.Errorf("at 20: 10%% across is %v, want the candidate (blue)", c)
	}
	move(90)
	img, _ = shot("at 90")
	if c := pixel(img, 0.75, 0.5); !near(c, blue) {
		t.Errorf("at 90: 75%% across is %v, want the candidate (blue)", c)
	}
	// The difference image loads too.
	if !alice.eval(`(() => { const i = document.querySelector('#baseline-diff-image'); return i.complete && i.naturalWidth === 400; })()`) {
		t.Error("the difference image did not load")
	}
}

// TestVitalChartsInChromium: the trends page draws, as Chromium lays it
// out, a chart per page-speed metric the runs measured: visible, a dot per
// run from left (oldest) to right, a higher value higher up, the line
// drawn through them, and each dot's tooltip the run and its value.
func TestVitalChartsInChromium(t *testing.T) {
	chromiumtest.Require(t)
	e := apptest.New(t, nil)
	taskID, caseID := evidenceTask(t, e, "vitals")
	lcps := []float64{1200, 2600, 1800}
	var runs []string
	for i, lcp := range lcps {
		l, x := e.HeldExecution("alice", taskID, caseID)
		ctx := t.Context()
		ms := []*duet.Metric{
			{RunID: l.RunID, ExecutionID: x, TaskID: taskID, CaseKey: "home", StepIndex: 0, Name: "lcp", Value: lcp},
			{RunID: l.RunID, ExecutionID: x, TaskID: taskID, CaseKey: "home", StepIndex: 0, Name: "cls", Value: 0.01 * float64(i+1)},
		}
		if err := e.App.Store.SaveMetrics(ctx, l, ms); err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		if err := e.App.Store.SaveStepResult(ctx, l, x, &duet.StepResult{Index: 0, Kind: duet.StepSet, Name: "x", Status: duet.StatusPassed, StartedAt: &now, FinishedAt: &now}, nil); err != nil {
			t.Fatal(err)
		}
		if err := e.App.Store.FinishExecution(ctx, l, &duet.Execution{ID: x, Status: duet.StatusPassed, StartedAt: &now, FinishedAt: &now}); err != nil {
			t.Fatal(err)
		}
		if err := e.App.Store.FinishRun(ctx, l, &duet.Run{ID: l.RunID, Status: duet.StatusPassed, FinishedAt: &now}); err != nil {
			t.Fatal(err)
		}
		runs = append(runs, l.RunID)
	}

	alice := signedInTab(t, e, "alice")
	alice.open("/tasks/" + taskID + "/trends")
	type dot struct {
		X, Y, W, H float64
		Tip        string
	}
	type chart struct {
		Metric string
		W, H   float64
		Stroke string
		Line   float64 // the polyline's drawn length
		Dots   []dot
	}
	charts := run(alice, "the vital charts", chromedp.Evaluate[[]chart](`[...document.querySelectorAll('#vitals svg.vital')].map(s => {
		const r = s.getBoundingClientRect(), line = s.querySelector('polyline');
		return {Metric: s.dataset.metric, W: r.width, H: r.height,
			Stroke: line ? getComputedStyle(line).stroke : '', Line: line ? line.getTotalLength() : 0,
			Dots: [...s.querySelectorAll('circle.dot')].map(c => { const b = c.getBoundingClientRect();
				return {X: b.x + b.width / 2, Y: b.y + b.height / 2, W: b.width, H: b.height, Tip: (c.querySelector('title') || {}).textContent || ''}; })};
	})`))
	byName := map[string]chart{}
	for _, c := range charts {
		byName[c.Metric] = c
	}
	lcp, ok := byName["lcp"]
	if !ok || byName["cls"].Metric == "" {
		t.Fatalf("the trends page's vital charts: %+v, want lcp and cls", charts)
	}
	if lcp.W < 200 || lcp.H < 50 {
		t.Errorf("the lcp chart is laid out %.0f×%.0f px", lcp.W, lcp.H)
	}
	if lcp.Stroke == "" || lcp.Stroke == "none" || lcp.Line <= 0 {
		t.Errorf("the lcp line is not drawn: stroke %q, length %.1f", lcp.Stroke, lcp.Line)
	}
	if len(lcp.Dots) != len(lcps) {
		t.Fatalf("lcp dots: %+v, want %d", lcp.Dots, len(lcps))
	}
	for i, d := range lcp.Dots {
		if d.W < 2 || d.H < 2 {
			t.Errorf("dot %d is %.1f×%.1f px", i, d.W, d.H)
		}
		if !strings.Contains(d.Tip, runs[i]) || !strings.Contains(d.Tip, strconv.Itoa(int(lcps[i]))+" ms") {
			t.Errorf("dot %d's tooltip %q, want run %s and %v ms", i, d.Tip, runs[i], lcps[i])
		}
		if i > 0 && d.X <= lcp.Dots[i-1].X {
			t.Errorf("dot %d (x %.0f) is not right of dot %d (x %.0f): oldest first", i, d.X, i-1, lcp.Dots[i-1].X)
		}
	}
	// 2600 ms is drawn above 1800 ms, which is above 1200 ms (y grows down).
	if !(lcp.Dots[1].Y < lcp.Dots[2].Y && lcp.Dots[2].Y < lcp.Dots[0].Y) {
		t.Errorf("dot heights do not follow the values: %+v", lcp.Dots)
	}
	if txt := alice.text("#vitals"); !strings.Contains(txt, "Largest Contentful Paint") || !strings.Contains(txt, "latest 1800 ms") {
		t.Errorf("the vitals section: %q", txt)
	}
}
