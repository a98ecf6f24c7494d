package engine_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/engine"
)

// TestParallelCap checks that Options.Parallel (DUET_PARALLEL) caps how many
// cases of one run execute at once, and that a task's parallel: replaces
// it, within Options.MaxParallel (DUET_MAX_PARALLEL).
func TestParallelCap(t *testing.T) {
	t.Parallel()
	// Each request is held until more are in flight than the cap allows
	// (or, for a cap, until no more came for a while): the test waits on
	// the requests themselves, not on how fast a loaded machine starts
	// cases.
	for _, tt := range []struct {
		parallel int
		task     int           // the task's parallel: (0: none)
		max      int           // Options.MaxParallel
		hold     int           // release the held requests once this many are in flight
		patience time.Duration // or after this long
		check    func(peak int) bool
		want     string
	}{
		{1, 0, 0, 2, 2 * time.Second, func(p int) bool { return p == 1 }, "1"},
		{2, 0, 0, 3, 2 * time.Second, func(p int) bool { return p == 2 }, "2"},
		{6, 0, 0, 3, time.Minute, func(p int) bool { return p > 2 }, "more than 2"},
		{1, 3, 0, 3, time.Minute, func(p int) bool { return p == 3 }, "3 (the task's)"},
		{6, 1, 0, 2, 2 * time.Second, func(p int) bool { return p == 1 }, "1 (the task's)"},
		{1, 6, 2, 3, 2 * time.Second, func(p int) bool { return p == 2 }, "2 (the deployment's bound)"},
	} {
		t.Run(fmt.Sprint("parallel=", tt.parallel, ",task=", tt.task, ",max=", tt.max), func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			inFlight, peak := 0, 0
			release := make(chan struct{})
			var once sync.Once
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				inFlight++
				peak = max(peak, inFlight)
				if inFlight >= tt.hold {
					once.Do(func() { close(release) })
				}
				mu.Unlock()
				select {
				case <-release:
				case <-time.After(tt.patience):
				}
				mu.Lock()
				inFlight--
				mu.Unlock()
			}))
			t.Cleanup(srv.Close)
			var suite strings.Builder
			task := ""
			if tt.task > 0 {
				task = fmt.Sprintf(", parallel: %d", tt.task)
			}
			fmt.Fprintf(&suite, "task: {name: cap, baseURL: %s%s}\ncases:\n", srv.URL, task)
			for i := range 6 {
				fmt.Fprintf(&suite, "  - key: c%d\n    title: case %d\n    steps:\n      - http: GET /hold\n", i, i)
			}
			db := openStore(t)
			res := apply(t, db, "alice", suite.String())
			w, _, _ := worker(t, db, engine.Options{Parallel: tt.parallel, MaxParallel: tt.max}, engine.WorkerOptions{})
			run := startRun(t, db, res.Task, "alice")
			w.Notify()
			if final := waitFinal(t, db, run.ID); final.Status != duet.StatusPassed {
				t.Fatalf("run: got %s", final.Status)
			}
			mu.Lock()
			defer mu.Unlock()
			if !tt.check(peak) {
				t.Errorf("cases in flight at once: got %d, want %s", peak, tt.want)
			}
		})
	}
}
