package app

import (
	"runtime"
	"testing"

	"github.com/duet-test/duet/internal/config"
)

// TestBrowserProcesses: DUET_BROWSER_PROCESSES is taken as it is; 0 means
// the smallest of DUET_BROWSERS, DUET_PARALLEL and half the CPUs (at least 1).
func TestBrowserProcesses(t *testing.T) {
	cpus := runtime.NumCPU()
	tests := []struct {
		set, browsers, parallel, want int
	}{
		{3, 4, 1, 3},
		{0, 4, 1, 1},
		{0, 1, 8, 1},
		{0, 64, 64, max(1, cpus/2)},
		{0, 2, 2, max(1, min(2, cpus/2))},
	}
	for _, tt := range tests {
		cfg := &config.Config{BrowserProcesses: tt.set, Browsers: tt.browsers, Parallel: tt.parallel}
		if got := browserOptions(cfg, nil, tt.browsers, nil).Processes; got != tt.want {
			t.Errorf("DUET_BROWSER_PROCESSES=%d DUET_BROWSERS=%d DUET_PARALLEL=%d: got %d processes, want %d", tt.set, tt.browsers, tt.parallel, got, tt.want)
		}
	}
}
