package webui

import (
	"strings"
	"testing"
)

// TestDurationScale: the scale of the duration axis reaches past the
// longest run in round steps, in the unit that reads best.
func TestDurationScale(t *testing.T) {
	for _, c := range []struct {
		max  int64
		want string
	}{
		{0, "0 ms, 5 ms, 10 ms"},
		{7, "0 ms, 5 ms, 10 ms"},
		{15, "0 ms, 5 ms, 10 ms, 15 ms"},
		{999, "0 ms, 500 ms, 1000 ms"},
		{1200, "0 ms, 500 ms, 1000 ms, 1500 ms"},
		{2500, "0 s, 1 s, 2 s, 3 s"},
		{61_000, "0 s, 20 s, 40 s, 60 s, 80 s"},
		{400_000, "0 min, 2 min, 4 min, 6 min, 8 min"},
		{3_600_000, "0 min, 20 min, 40 min, 60 min"},
	} {
		ticks, unit, div := durationScale(c.max)
		var got []string
		for _, v := range ticks {
			got = append(got, inUnit(v, unit, div))
		}
		if strings.Join(got, ", ") != c.want || ticks[len(ticks)-1] < float64(c.max) {
			t.Errorf("durationScale(%d): %s, want %s", c.max, strings.Join(got, ", "), c.want)
		}
	}
}
