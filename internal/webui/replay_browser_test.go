package webui_test

import (
	"bytes"
	"image"
	"image/jpeg"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/app/apptest"
	"github.com/duet-test/duet/internal/browser/chromiumtest"
	"github.com/duet-test/duet/internal/redact"
	"github.com/duet-test/duet/internal/trace"
)

// storeTrace keeps, as alice's worker would, the trace of a case of three
// steps (0–300, 300–600, 600–900 ms) with two replay frames in each, and
// returns the viewer's path in the console.
func storeTrace(t *testing.T, e *apptest.Env) string {
	t.Helper()
	taskID, caseID := evidenceTask(t, e, "replay")
	l, xid := e.HeldExecution("alice", taskID, caseID)
	frame := func(y uint8) []byte {
		img := image.NewGray(image.Rect(0, 0, 64, 48))
		for i := range img.Pix {
			img.Pix[i] = y
		}
		var b bytes.Buffer
		if err := jpeg.Encode(&b, img, nil); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	start := time.Now().Add(-time.Second)
	at := func(ms int) time.Time { return start.Add(time.Duration(ms) * time.Millisecond) }
	meta := trace.Meta{RunID: l.RunID, ExecutionID: xid, CaseKey: "home", CaseTitle: "Home", Mode: trace.On, Status: duet.StatusPassed,
		Started: start, Finished: at(900), Steps: []trace.StepInfo{
			{Index: 0, Kind: duet.StepOpen, Name: "open /", Status: duet.StatusPassed, Start: at(0), End: at(300)},
			{Index: 1, Kind: duet.StepClick, Name: "click #buy", Status: duet.StatusPassed, Start: at(300), End: at(600), Action: true},
			{Index: 2, Kind: duet.StepAssertText, Name: "assertText #done", Status: duet.StatusPassed, Start: at(600), End: at(900)},
		}}
	c := &trace.Capture{Start: start, Viewport: trace.Viewport{Width: 64, Height: 48}}
	for i, ms := range []int64{50, 250, 350, 550, 650, 850} {
		c.Frames = append(c.Frames, trace.CapturedFrame{AtMs: ms, Data: frame(uint8(40 * i)), Pinned: true})
	}
	c.Marks = []trace.Mark{{Index: 0, StartMs: 0, EndMs: 300, Before: -1, After: 1}, {Index: 1, StartMs: 300, EndMs: 600, Before: 1, After: 3}, {Index: 2, StartMs: 600, EndMs: 900, Before: -1, After: 5}}
	zipped, _, err := trace.Build(meta, c, redact.NewSet(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.App.Artifacts.SaveTrace(t.Context(), l.RunID, xid, zipped); err != nil {
		t.Fatal(err)
	}
	return "/runs/" + l.RunID + "/cases/" + xid + "/trace/"
}

// TestReplayFollowsTheStepsInChromium: in the trace viewer, the replay and
// the step list move together — choosing a step shows the replay at its
// start; moving the replay's slider into another step selects that step
// (its panel shown, the others hidden); playing runs through to the last
// step, selecting each as the replay reaches it.
func TestReplayFollowsTheStepsInChromium(t *testing.T) {
	chromiumtest.Require(t)
	e := apptest.New(t, nil)
	viewer := storeTrace(t, e)
	alice := signedInTab(t, e, "alice")
	alice.open(viewer)
	alice.do("the viewer", chromedp.WaitVisible(chromedp.CSS("#steps")), chromedp.WaitVisible(chromedp.CSS("#replay-frame")))
	state := func() (selected, playing, shown string, frame string) {
		t.Helper()
		s := run(alice, "state", chromedp.Evaluate[[]string](`[
			(document.querySelector('#steps a.selected') || {}).id || '',
			(document.querySelector('#steps a.playing') || {}).id || '',
			[...document.querySelectorAll('[id^="step-"]:not([id^="step-link"])')].filter(d => !d.hidden).map(d => d.id).join(','),
			document.querySelector('#replay-frame').getAttribute('src')]`))
		return s[0], s[1], s[2], s[3]
	}
	frames := run(alice, "frames", chromedp.Evaluate[[]string](`[...document.querySelectorAll('#frames li')].map(li => li.dataset.src)`))
	if len(frames) != 6 {
		t.Fatalf("replay frames: %v", frames)
	}
	// Choosing a step seeks the replay to its start.
	alice.do("step 2", chromedp.Click(chromedp.CSS("#step-link-1")))
	if sel, playing, shown, frame := state(); sel != "step-link-1" || playing != "step-link-1" || shown != "step-1" || frame != frames[2] {
		t.Errorf("after choosing step 2: selected %q, playing %q, shown %q, frame %q; want step 2 and its first frame (%s)", sel, playing, shown, frame, frames[2])
	}
	if txt := alice.text("#replay-step"); txt != "step 2" {
		t.Errorf("the replay says %q, want step 2", txt)
	}
	// Sliding the replay into step 3 selects step 3.
	run(alice, "slide", chromedp.Evaluate[bool](`(() => { const s = document.querySelector('#scrub'); s.value = '4'; s.dispatchEvent(new Event('input', {bubbles: true})); return true; })()`))
	if sel, playing, shown, frame := state(); sel != "step-link-2" || playing != "step-link-2" || shown != "step-2" || frame != frames[4] {
		t.Errorf("after sliding to frame 5: selected %q, playing %q, shown %q, frame %q; want step 3", sel, playing, shown, frame)
	}
	// Playing from the first step runs through to the last, selecting it.
	alice.do("step 1", chromedp.Click(chromedp.CSS("#step-link-0")))
	if sel, _, _, frame := state(); sel != "step-link-0" || frame != frames[0] {
		t.Fatalf("back at step 1: %q %q", sel, frame)
	}
	alice.do("play", chromedp.Click(chromedp.CSS("#play")))
	run(alice, "played to the end", chromedp.Poll[bool](`document.querySelector('#replay-frame').getAttribute('src') === `+jsString(frames[5])+` && document.querySelector('#play').textContent === 'Play'`))
	if sel, playing, shown, _ := state(); sel != "step-link-2" || playing != "step-link-2" || shown != "step-2" {
		t.Errorf("after playing: selected %q, playing %q, shown %q; want the last step", sel, playing, shown)
	}
}

func jsString(s string) string {
	return "'" + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), "'", `\'`) + "'"
}
