package compiler

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/duet-test/duet"
)

func TestCompileSchedules(t *testing.T) {
	t.Parallel()
	src := `task:
  name: t
  schedule:
    - name: nightly
      cron: "0 2 * * *"
      timeZone: Europe/Paris
      missed: runOnce
      overlap: queue
    - every: 90m
cases:
  - {title: c, steps: [{assert: 'true'}]}
`
	before := time.Now()
	s, err := CompileSuite(context.Background(), []byte(src), "s.yaml", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Schedules) != 2 {
		t.Fatalf("schedules: %+v", s.Schedules)
	}
	n := s.Schedules[0]
	if n.Name != "nightly" || n.Cron != "0 2 * * *" || n.TimeZone != "Europe/Paris" || n.Missed != duet.MissedRunOnce || n.Overlap != duet.OverlapQueue {
		t.Fatalf("nightly: %+v", n)
	}
	if paris, _ := time.LoadLocation("Europe/Paris"); !n.NextFireAt.After(before) || n.NextFireAt.In(paris).Hour() != 2 {
		t.Fatalf("nightly's next fire: %v", n.NextFireAt)
	}
	e := s.Schedules[1]
	if e.Name != "every 1h30m" || e.Every != 90*time.Minute || e.Missed != duet.MissedSkip || e.Overlap != duet.OverlapSkip {
		t.Fatalf("every: %+v", e)
	}
	one, err := CompileSuite(context.Background(), []byte("task:\n  name: t\n  schedule: {every: 1h}\ncases:\n  - {title: c, steps: [{assert: 'true'}]}\n"), "s.yaml", Options{})
	if err != nil || len(one.Schedules) != 1 || one.Schedules[0].Name != "every 1h" {
		t.Fatalf("a single schedule: %+v %v", one, err)
	}
	tagged, err := CompileSuite(context.Background(), []byte("task:\n  name: t\n  schedule: {every: 1h, tags: [smoke]}\ncases:\n  - {title: c, tags: smoke, steps: [{assert: 'true'}]}\n  - {title: d, steps: [{assert: 'true'}]}\n"), "s.yaml", Options{})
	if err != nil || len(tagged.Schedules[0].Tags) != 1 || tagged.Schedules[0].Tags[0] != "smoke" {
		t.Fatalf("a schedule's tags: %+v %v", tagged, err)
	}
}

func TestCompileScheduleErrors(t *testing.T) {
	t.Parallel()
	tail := "cases:\n  - {title: c, steps: [{assert: 'true'}]}\n"
	head := "task:\n  name: t\n  schedule:\n"
	for _, tt := range []struct {
		name, src, want string
	}{
		{"bad cron", head + "    - {cron: '0 2 * *'}\n", "4:14: cron \"0 2 * *\""},
		{"bad zone", head + "    - {cron: '0 2 * * *', timeZone: Mars/Olympus}\n", "4:37: unknown time zone"},
		{"both", head + "    - {cron: '0 2 * * *', every: 1h}\n", "cron or every, not both"},
		{"neither", head + "    - {name: x}\n", "needs cron"},
		{"short every", head + "    - {every: 10s}\n", "4:15: every must be whole seconds and at least 1m0s"},
		{"bad every", head + "    - {every: soon}\n", "4:15: every must be a duration"},
		{"bad missed", head + "    - {every: 1h, missed: always}\n", "missed must be skip or runOnce"},
		{"bad overlap", head + "    - {every: 1h, overlap: wait}\n", "overlap must be skip or queue"},
		{"unknown key", head + "    - {every: 1h, labels: [a]}\n", "unknown key \"labels\""},
		{"tag no case has", head + "    - {every: 1h, tags: [nightly]}\n", "4:25: schedule tags: no case has the tag \"nightly\""},
		{"same name", head + "    - {every: 1h}\n    - {every: 1h}\n", "5:7: schedule name \"every 1h\" is already used"},
		{"not a mapping", "task:\n  name: t\n  schedule: nightly\n", "3:13: a schedule is a mapping"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := CompileSuite(context.Background(), []byte(tt.src+tail), "s.yaml", Options{})
			if duet.ErrorCode(err) != duet.CodeInvalidArgument || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want INVALID_ARGUMENT with %q", err, tt.want)
			}
		})
	}
}
