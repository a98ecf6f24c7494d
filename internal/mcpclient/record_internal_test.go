package mcpclient

import (
	"context"
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

// flakyStore fails its first fails appends as a database away for a moment
// would, then stores through the real store.
type flakyStore struct {
	duet.MCPClientStore
	mu    sync.Mutex
	fails int
	sizes []int
}

func (f *flakyStore) AppendInvocations(ctx context.Context, recs []*duet.Invocation) error {
	f.mu.Lock()
	f.sizes = append(f.sizes, len(recs))
	fail := f.fails > 0
	f.fails--
	f.mu.Unlock()
	if fail {
		return duet.Errorf(duet.CodeUnavailable, "the database is busy")
	}
	return f.MCPClientStore.AppendInvocations(ctx, recs)
}

// TestRecorderKeepsRecordsTheDatabaseRefused: a batch the database refused
// for a moment is kept and stored at the next attempt (it was logged and
// dropped), no transaction writes more than a batch, and what is still
// refused at close is tried again before the recorder stops.
func TestRecorderKeepsRecordsTheDatabaseRefused(t *testing.T) {
	t.Parallel()
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "duet.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	fs := &flakyStore{MCPClientStore: db, fails: 2}
	r := newRecorder(fs, time.Hour, slog.New(slog.DiscardHandler))
	count := func() int {
		got, err := db.FindInvocations(t.Context(), duet.InvocationFilter{Executor: "alice", Limit: 10000})
		if err != nil {
			t.Fatal(err)
		}
		return len(got)
	}
	const n = 1000
	r.mu.Lock() // queue them all at once, as a slow store would find them
	for i := range n {
		r.queue = append(r.queue, &duet.Invocation{Time: time.Now(), TraceID: strconv.Itoa(i), Executor: "alice",
			Source: duet.SourceAgent, ServerKey: "mcp_x_00000001", Tool: "t", Outcome: duet.OutcomeOK})
	}
	r.mu.Unlock()
	r.flush() // refused
	r.flush() // refused again
	if got := count(); got != 0 {
		t.Fatalf("%d records stored while the database refused them", got)
	}
	r.flush()
	if got := count(); got != n {
		t.Fatalf("%d records stored after the database came back, want %d", got, n)
	}
	for _, size := range fs.sizes {
		if size > recordBatch {
			t.Errorf("a transaction of %d records, want at most %d", size, recordBatch)
		}
	}

	fs.mu.Lock()
	fs.fails = 1
	fs.mu.Unlock()
	r.add(&duet.Invocation{Time: time.Now(), TraceID: "last", Executor: "alice", Source: duet.SourceAgent,
		ServerKey: "mcp_x_00000001", Tool: "t", Outcome: duet.OutcomeOK})
	r.close()
	if got := count(); got != n+1 {
		t.Fatalf("%d records stored after close, want %d", got, n+1)
	}
}
