package app_test

import (
	"bytes"
	"strings"
	"sync"
	"testing"

	"github.com/duet-test/duet/internal/app"
	"github.com/duet-test/duet/internal/catalog"
	"github.com/duet-test/duet/internal/config"
)

// syncBuffer is a bytes.Buffer safe for the logger and the test at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestStopReleaseBoundAtStart: DUET_STOP_TOOL_USERS=team:qa,team:ops with
// ops made before Duet starts and qa not: the start-up log names the team
// the release went to and warns that qa does not exist; qa, created later
// by someone else, gets nothing; ops' members get it.
func TestStopReleaseBoundAtStart(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DUET_HOME": t.TempDir(), "DUET_STOP_TOOL_USERS": "team:qa,team:ops", "DUET_LOG_LEVEL": "info"}
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	first, err := app.Open(t.Context(), cfg, app.Options{Stderr: &syncBuffer{}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := first.Store.CreateTeam(t.Context(), "alice", "ops"); err != nil {
		t.Fatal(err)
	}
	first.Close()

	var log syncBuffer
	a, err := app.Open(t.Context(), cfg, app.Options{Stderr: &log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	a.ReportStopRelease()
	out := log.String()
	if !strings.Contains(out, "names team qa, which does not exist") || !strings.Contains(out, "level=WARN") {
		t.Errorf("no warning about team qa at start-up:\n%s", out)
	}
	if !strings.Contains(out, "released to the members of team ops") {
		t.Errorf("the start-up log does not name team ops:\n%s", out)
	}
	if _, err := a.Store.CreateTeam(t.Context(), "mallory", "qa"); err != nil {
		t.Fatal(err)
	}
	for user, want := range map[string]bool{"mallory": false, "alice": true} {
		if ok, err := a.Catalog.Released(t.Context(), user, catalog.ToolStopRun); ok != want || err != nil {
			t.Errorf("Released(%s): got %v %v, want %v", user, ok, err, want)
		}
	}
}
