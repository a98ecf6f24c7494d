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
// cases of one run execute at once.
func TestParallelCap(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		parallel int
		check    func(peak int) bool
		want     string
	}{
		{1, func(p int) bool { return p == 1 }, "1"},
		{2, func(p int) bool { return p == 2 }, "2"},
		{6, func(p int) bool { return p > 2 }, "more than 2"},
	} {
		t.Run(fmt.Sprint("parallel=", tt.parallel), func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			inFlight, peak := 0, 0
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				inFlight++
				peak = max(peak, inFlight)
				mu.Unlock()
				time.Sleep(400 * time.Millisecond)
				mu.Lock()
				inFlight--
				mu.Unlock()
			}))
			t.Cleanup(srv.Close)
			var suite strings.Builder
			fmt.Fprintf(&suite, "task: {name: cap, baseURL: %s}\ncases:\n", srv.URL)
			for i := range 6 {
				fmt.Fprintf(&suite, "  - key: c%d\n    title: case %d\n    steps:\n      - http: GET /hold\n", i, i)
			}
			db := openStore(t)
			res := apply(t, db, "alice", suite.String())
			w, _, _ := worker(t, db, engine.Options{Parallel: tt.parallel}, engine.WorkerOptions{})
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
