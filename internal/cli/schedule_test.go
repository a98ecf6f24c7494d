package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/duet-test/duet/internal/api"
)

const scheduledSuite = `task:
  name: shop
  baseURL: http://127.0.0.1:1
  schedule:
    - name: nightly
      cron: "0 2 * * *"
      timeZone: Europe/Paris
    - every: 1h
      overlap: queue
cases:
  - {title: c, steps: [{assert: 'true'}]}
`

// TestScheduleCommands: schedules from the suite and by hand, listed with
// their next fire times, paused and resumed; a suite's schedule is not
// removed by hand; every change is the Service's, audited with callSource
// cli.
func TestScheduleCommands(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	e := &duetEnv{tr: &transcript{}, vars: map[string]string{"DUET_HOME": home, "HOME": home}}
	suite := filepath.Join(home, "suite.yaml")
	if err := os.WriteFile(suite, []byte(scheduledSuite), 0o600); err != nil {
		t.Fatal(err)
	}
	e.must(t, "apply", "-f", suite, "--as", "alice")
	out := e.must(t, "schedule", "add", "shop", "--every", "2h", "--name", "two-hourly", "--missed", "runOnce", "--as", "alice")
	if !strings.Contains(out, "every 2h0m0s of task shop as alice") || strings.Count(out, "  next: ") != 3 {
		t.Fatalf("add: %s", out)
	}
	var list api.ScheduleList
	if err := json.Unmarshal([]byte(e.must(t, "schedule", "list", "--task", "shop", "--as", "alice", "--json")), &list); err != nil {
		t.Fatal(err)
	}
	byName := map[string]api.ScheduleView{}
	for _, v := range list.Schedules {
		byName[v.Name] = v
	}
	nightly, hourly, mine := byName["nightly"], byName["every 1h"], byName["two-hourly"]
	if len(list.Schedules) != 3 || nightly.Source != "suite" || nightly.TimeZone != "Europe/Paris" || hourly.Overlap != "queue" ||
		mine.Source != "user" || mine.Missed != "runOnce" || nightly.NextFireAt == nil || !strings.HasPrefix(nightly.NextFires[0][11:], "02:00:00") {
		t.Fatalf("list: %+v", list)
	}
	if out := e.must(t, "schedule", "list", "--as", "alice"); !strings.Contains(out, "nightly") || !strings.Contains(out, "next ") {
		t.Fatalf("list as text: %s", out)
	}

	if _, errs, code := e.run(t, "schedule", "add", "shop", "--as", "alice"); code != 2 || !strings.Contains(errs, "--cron EXPR or --every DURATION") {
		t.Fatalf("add without a timing: exit %d %s", code, errs)
	}
	if _, errs, code := e.run(t, "schedule", "add", "shop", "--cron", "0 2 * *", "--as", "alice"); code != 1 || !strings.Contains(errs, "INVALID_ARGUMENT") {
		t.Fatalf("add with a bad cron: exit %d %s", code, errs)
	}
	if _, errs, code := e.run(t, "schedule", "add", "shop", "--every", "1h", "--as", "bob"); code != 1 || !strings.Contains(errs, "NOT_FOUND") {
		t.Fatalf("bob schedules alice's task: exit %d %s", code, errs)
	}
	if out := e.must(t, "schedule", "list", "--as", "bob"); !strings.Contains(out, "no schedules visible to bob") {
		t.Fatalf("bob's list: %s", out)
	}

	if out := e.must(t, "schedule", "pause", mine.ID, "--as", "alice"); !strings.Contains(out, "paused") {
		t.Fatalf("pause: %s", out)
	}
	if out := e.must(t, "schedule", "list", "--as", "alice"); !strings.Contains(out, "PAUSED") {
		t.Fatalf("list after pause: %s", out)
	}
	if out := e.must(t, "schedule", "resume", mine.ID, "--as", "alice"); !strings.Contains(out, "active") || !strings.Contains(out, "next: ") {
		t.Fatalf("resume: %s", out)
	}
	if _, errs, code := e.run(t, "schedule", "remove", nightly.ID, "--as", "alice"); code != 1 || !strings.Contains(errs, "declared in the task's suite") {
		t.Fatalf("remove a suite's schedule: exit %d %s", code, errs)
	}
	e.must(t, "schedule", "remove", mine.ID, "--as", "alice")

	// Applying the suite without its schedule removes the suite's.
	if err := os.WriteFile(suite, []byte(strings.Replace(scheduledSuite, "  schedule:\n    - name: nightly\n      cron: \"0 2 * * *\"\n      timeZone: Europe/Paris\n    - every: 1h\n      overlap: queue\n", "", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	e.must(t, "apply", "-f", suite, "--as", "alice")
	if out := e.must(t, "schedule", "list", "--as", "alice"); !strings.Contains(out, "no schedules") {
		t.Fatalf("after removing schedule: from the suite: %s", out)
	}

	var recs []struct{ Method, CallSource, Outcome string }
	json.Unmarshal([]byte(e.must(t, "audit", "--caller", "alice", "--source", "cli", "--json", "--as", "alice")), &recs)
	seen := map[string]bool{}
	for _, r := range recs {
		seen[r.Method+" "+r.Outcome] = true
	}
	for _, want := range []string{"createSchedule OK", "listSchedules OK", "pauseSchedule OK", "resumeSchedule OK", "deleteSchedule OK", "deleteSchedule INVALID_ARGUMENT"} {
		if !seen[want] {
			t.Errorf("no audit record %q with callSource cli: %v", want, seen)
		}
	}
}
