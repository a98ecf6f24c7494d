package cli

import (
	"bytes"
	"io"
	"runtime/debug"
	"strings"
	"testing"
)

// TestTuneGC: duet serve collects at 400% growth under a 1 GiB soft limit,
// unless GOGC or GOMEMLIMIT say otherwise (docs/performance.md). It
// changes the process's collector, so it does not run in parallel.
func TestTuneGC(t *testing.T) {
	oldPercent, oldLimit := debug.SetGCPercent(100), debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetGCPercent(oldPercent); debug.SetMemoryLimit(oldLimit) })
	for _, tt := range []struct {
		env          map[string]string
		percent      int
		limit        int64
		limitChanged bool
	}{
		{map[string]string{}, 400, 1 << 30, true},
		{map[string]string{"GOGC": "100"}, 100, 1 << 30, true},
		{map[string]string{"GOMEMLIMIT": "2GiB"}, 400, 0, false},
	} {
		debug.SetGCPercent(100)
		const before = 1 << 40
		debug.SetMemoryLimit(before)
		tuneGC(func(k string) string { return tt.env[k] })
		if got := debug.SetGCPercent(100); got != tt.percent {
			t.Errorf("%v: GC percent %d, want %d", tt.env, got, tt.percent)
		}
		got := debug.SetMemoryLimit(-1)
		if tt.limitChanged && got != tt.limit || !tt.limitChanged && got != before {
			t.Errorf("%v: memory limit %d, want %d (changed %v)", tt.env, got, tt.limit, tt.limitChanged)
		}
	}
}

// TestMCPTunesGC: duet mcp, a server for as long as its client runs, sets
// the collector as duet serve does, before it opens anything (a cold start
// with fewer collections: docs/performance.md).
func TestMCPTunesGC(t *testing.T) {
	oldPercent, oldLimit := debug.SetGCPercent(100), debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetGCPercent(oldPercent); debug.SetMemoryLimit(oldLimit) })
	vars := map[string]string{"DUET_HOME": t.TempDir(), "DUET_USER": "alice", "DUET_WORKERS": "0"}
	var stderr bytes.Buffer
	env := Env{Getenv: func(k string) string { return vars[k] }, Stdin: io.NopCloser(strings.NewReader("")), Stdout: io.Discard, Stderr: &stderr}
	if code := Main(t.Context(), []string{"mcp"}, env); code != 0 {
		t.Fatalf("duet mcp: exit %d: %s", code, stderr.String())
	}
	if got := debug.SetGCPercent(100); got != 400 {
		t.Errorf("duet mcp left GC percent %d, want 400", got)
	}
}
