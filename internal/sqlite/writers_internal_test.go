package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// TestWritersTakeTurns: sixteen writers at once on eight connections whose
// busy timeout is far shorter than each write holds the lock — half of
// them transactions, half single statements — all succeed, because they
// wait their turn in the process instead of on SQLite's busy handler
// (which gives up with SQLITE_BUSY after busy_timeout). Without
// writerQueue most of them fail.
func TestWritersTakeTurns(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	d, err := Open(ctx, filepath.Join(t.TempDir(), "duet.db"), &Options{MaxOpenConns: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	// Every connection of the pool, opened now, waits 5 ms for a lock.
	var conns []*sql.Conn
	for range 8 {
		c, err := d.db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.ExecContext(ctx, `PRAGMA busy_timeout = 5`); err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	for _, c := range conns {
		c.Close()
	}
	const writers = 16
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for i := range writers {
		wg.Go(func() {
			if i%2 == 0 {
				errs[i] = d.tx(ctx, func(tx *cachedTx) error {
					if _, err := tx.ExecContext(ctx, `DELETE FROM user_secrets WHERE user_id = ?`, "nobody"); err != nil {
						return err
					}
					time.Sleep(30 * time.Millisecond) // holding the write lock
					return nil
				})
				return
			}
			_, errs[i] = d.q.ExecContext(ctx, `DELETE FROM user_secrets WHERE user_id = ?`, "nobody")
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("writer %d: %v", i, err)
		}
	}
}

// TestWriterQueueContext: a writer waiting its turn gives up when its
// context ends, and one that has waited longer than patience goes on
// without the turn.
func TestWriterQueueContext(t *testing.T) {
	w := newWriterQueue()
	release, err := w.wait(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := w.wait(ctx); err != context.Canceled {
		t.Fatalf("a cancelled writer waiting its turn: got %v, want %v", err, context.Canceled)
	}
	w.patience = time.Millisecond
	if r, err := w.wait(t.Context()); err != nil {
		t.Fatalf("a writer past its patience: %v", err)
	} else {
		r() // a no-op: the turn is still the first writer's
	}
	release()
	if r, err := w.wait(t.Context()); err != nil {
		t.Fatal(err)
	} else {
		r()
	}
}
