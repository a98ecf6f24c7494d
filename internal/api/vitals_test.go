package api

import (
	"testing"
	"time"

	"github.com/duet-test/duet"
)

// TestVitals: the page-speed values of a task's runs become one line per
// metric (in the documented order), a point per run that measured it: the
// median of its steps' values.
func TestVitals(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	runs := []*duet.Run{{ID: "r1", CreatedAt: at}, {ID: "r2", CreatedAt: at.Add(time.Hour)}, {ID: "r3", CreatedAt: at.Add(2 * time.Hour)}}
	m := func(run, name string, v float64) *duet.Metric { return &duet.Metric{RunID: run, Name: name, Value: v} }
	got := vitals(runs, []*duet.Metric{
		m("r3", "lcp", 900), m("r1", "lcp", 1000), m("r1", "lcp", 3000), m("r1", "lcp", 2000),
		m("r2", "cls", 0.2), m("r2", "cls", 0.1), m("r1", "ttfb", 50), m("r9", "lcp", 1),
	})
	if len(got) != 3 || got[0].Name != "lcp" || got[1].Name != "cls" || got[2].Name != "ttfb" {
		t.Fatalf("vitals: %+v", got)
	}
	lcp := got[0].Points
	if len(lcp) != 2 || lcp[0].RunID != "r1" || lcp[0].Value != 2000 || lcp[0].Samples != 3 || lcp[1].RunID != "r3" || lcp[1].Value != 900 {
		t.Errorf("lcp: %+v", lcp)
	}
	if cls := got[1]; cls.Unit != "" || len(cls.Points) != 1 || cls.Points[0].Value < 0.1499 || cls.Points[0].Value > 0.1501 {
		t.Errorf("cls: %+v", cls)
	}
	if got[0].Unit != "ms" || !got[0].Points[0].At.Equal(at) {
		t.Errorf("lcp: %+v", got[0])
	}
	if none := vitals(runs, nil); none == nil || len(none) != 0 {
		t.Errorf("no metrics: %#v", none)
	}
}
