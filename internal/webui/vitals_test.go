package webui

import (
	"strings"
	"testing"
	"time"

	"github.com/duet-test/duet/internal/api"
)

// TestVitalCharts: the trends page's charts draw a line per page-speed
// metric with a point per run, its value and the run in the tooltip.
func TestVitalCharts(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	c := drawCharts(api.Trends{Vitals: []api.VitalTrend{
		{Name: "lcp", Unit: "ms", Points: []api.VitalPoint{{RunID: "run_a", At: at, Value: 1200, Samples: 1}, {RunID: "run_b", At: at, Value: 2600, Samples: 2}}},
		{Name: "cls", Points: []api.VitalPoint{{RunID: "run_b", At: at, Value: 0.031, Samples: 1}}},
	}})
	if len(c.Vitals) != 2 || c.Vitals[0].Label != "Largest Contentful Paint" || c.Vitals[0].Last != "2600 ms" || c.Vitals[1].Last != "0.031" {
		t.Fatalf("charts: %+v", c.Vitals)
	}
	svg := string(c.Vitals[0].SVG)
	for _, want := range []string{`data-metric="lcp"`, "run_a: 1200 ms (median of 1)", "run_b: 2600 ms (median of 2)", "<polyline"} {
		if !strings.Contains(svg, want) {
			t.Errorf("the lcp chart lacks %q: %s", want, svg)
		}
	}
}
