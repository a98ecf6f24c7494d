package api_test

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"testing"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/app/apptest"
)

// pngOf is a w×h PNG of one colour.
func pngOf(t *testing.T, w, h int, c color.RGBA) []byte {
	t.Helper()
	m := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			m.SetRGBA(x, y, c)
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, m); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// baselines records, as alice's runs would, a first baseline of the
// task's case and a candidate that differs from it.
func baselines(t *testing.T, e *apptest.Env, taskID, caseID string) (first, candidate *duet.Baseline) {
	t.Helper()
	key := duet.BaselineKey{TaskID: taskID, CaseID: caseID, Name: "home", Device: "desktop", Environment: "http://shop", Owner: "alice"}
	ratio := 1.0
	l, x := e.HeldExecution("alice", taskID, caseID)
	first = &duet.Baseline{BaselineKey: key, CaseKey: "a", Fingerprint: "f", SHA256: "1", Width: 4, Height: 3, RunID: l.RunID, ExecutionID: x, Image: pngOf(t, 4, 3, color.RGBA{255, 255, 255, 255})}
	candidate = &duet.Baseline{BaselineKey: key, CaseKey: "a", Fingerprint: "f", SHA256: "2", Width: 4, Height: 3, RunID: l.RunID, ExecutionID: x, DiffRatio: &ratio, Image: pngOf(t, 4, 3, color.RGBA{255, 0, 0, 255})}
	for _, b := range []*duet.Baseline{first, candidate} {
		if err := e.App.Store.CreateBaseline(t.Context(), l, b); err != nil {
			t.Fatal(err)
		}
	}
	return first, candidate
}
