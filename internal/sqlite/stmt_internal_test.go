package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/duet-test/duet"
)

// TestTransactionsUsePreparedStatements: a transaction's writes and
// single-row reads run prepared statements from the second time on
// (cachedTx), with the same results, on a handle of one connection, where
// preparing through the pool during a transaction would wait for ever.
// It fails with cachedTx parsing every statement ("prepared 0").
func TestTransactionsUsePreparedStatements(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	d, err := Open(ctx, filepath.Join(t.TempDir(), "duet.db"), &Options{MaxOpenConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	res, err := d.ApplySuite(ctx, "alice", &duet.Suite{Task: duet.Task{Name: "shop"}, Cases: []*duet.Case{{Key: "a", Title: "a", Source: "s", SourceHash: "h",
		Steps: []duet.Step{{Kind: duet.StepAssert, Assert: &duet.AssertStep{Expr: "true"}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	id := res.Task.ID
	round := func() {
		t.Helper()
		if err := d.ShareTask(ctx, "alice", id, "bob"); err != nil {
			t.Fatal(err)
		}
		if tk, err := d.FindTaskByID(ctx, "bob", id); err != nil || tk.ID != id {
			t.Fatalf("shared: %v, %v", tk, err)
		}
		if err := d.UnshareTask(ctx, "alice", id, "bob"); err != nil {
			t.Fatal(err)
		}
		if _, err := d.FindTaskByID(ctx, "bob", id); duet.ErrorCode(err) != duet.CodeNotFound {
			t.Fatalf("unshared: %v", err)
		}
	}
	round()
	prepared0, parsed0 := d.q.txPrepared.Load(), d.q.txParsed.Load()
	round()
	round()
	if prepared, parsed := d.q.txPrepared.Load()-prepared0, d.q.txParsed.Load()-parsed0; prepared == 0 || parsed != 0 {
		t.Fatalf("after the first share and unshare: prepared %d, parsed %d; want all prepared", prepared, parsed)
	}

	// Transactions at once on one connection, each with statements not
	// prepared yet: none waits for a connection to prepare one.
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			if _, err := d.CreateTeam(ctx, "alice", fmt.Sprintf("team-%d", i)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
}
