package mcpclient

import (
	"log/slog"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/sqlite"
)

// TestRecorderLosesNothing: records added from many goroutines — more than
// the queue holds, so adders wait — are all stored exactly once: the ones
// queued before Close by the recorder, the ones after Close at once. A
// flush stores what was queued before it, whether or not a batch is full.
func TestRecorderLosesNothing(t *testing.T) {
	t.Parallel()
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "duet.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	r := newRecorder(db, time.Hour, slog.New(slog.DiscardHandler)) // only batches, flush and close store
	rec := func(i int) *duet.Invocation {
		return &duet.Invocation{Time: time.Now(), TraceID: strconv.Itoa(i), Executor: "alice", Source: duet.SourceAgent,
			ServerKey: "mcp_x_00000001", Tool: "t", Outcome: duet.OutcomeOK}
	}
	count := func() int {
		got, err := db.FindInvocations(t.Context(), duet.InvocationFilter{Executor: "alice", Limit: 10000})
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, g := range got {
			if seen[g.TraceID] {
				t.Fatalf("record %s stored twice", g.TraceID)
			}
			seen[g.TraceID] = true
		}
		return len(got)
	}
	r.add(rec(-1))
	r.flush()
	if n := count(); n != 1 {
		t.Fatalf("after a flush: %d records stored, want 1", n)
	}
	const workers, each = 8, 1000 // 8000 > maxQueuedRecords
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				r.add(rec(w*each + i))
			}
		})
	}
	wg.Wait()
	r.close()
	r.add(rec(-2)) // after close: stored at once
	if n := count(); n != workers*each+2 {
		t.Fatalf("%d records stored, want %d", n, workers*each+2)
	}
}
