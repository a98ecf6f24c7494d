package sqlite

import (
	"database/sql"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// TestEpochConnReadsTheCounter: the counter is read on the read cache's own
// connection (not silently through the pool), and that read sees a change
// committed through another handle at once; after Close it declines and
// the pool answers (or fails) instead.
func TestEpochConnReadsTheCounter(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "duet.db")
	a, err := Open(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Open(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	n0, ok := a.cache.counter.read()
	if !ok {
		t.Fatal("the counter was not read on the cache's own connection")
	}
	if _, err := b.SQL().ExecContext(t.Context(), `UPDATE cache_epoch SET n = n + 1 WHERE id = 1`); err != nil {
		t.Fatal(err)
	}
	n1, ok := a.cache.counter.read()
	if !ok || n1 != n0+1 {
		t.Fatalf("after a change through another handle: got %d, %v, want %d", n1, ok, n0+1)
	}
	if e, ok := a.epoch(t.Context()); !ok || e != n1 {
		t.Fatalf("epoch: got %d, %v, want %d", e, ok, n1)
	}
	a.Close()
	if _, ok := a.cache.counter.read(); ok {
		t.Fatal("read after Close")
	}
}

// TestEpochFromWALIndex: while the wal-index header has not moved, the
// counter is known without a statement; a commit through another handle,
// by another process, or of a table the counter does not watch, moves the
// header and the next read queries (and sees the change).
func TestEpochFromWALIndex(t *testing.T) {
	if path := os.Getenv("DUET_TEST_EPOCH_WRITER"); path != "" {
		// The other process: a plain connection, as a hand-written
		// statement would come.
		db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
		if err == nil {
			_, err = db.Exec(`UPDATE cache_epoch SET n = n + 1 WHERE id = 1`)
			db.Close()
		}
		if err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Parallel()
	path, a, b := twoHandles(t)
	c := a.cache.counter
	read := func(what string) int64 {
		t.Helper()
		n, ok := c.read()
		if !ok {
			t.Fatalf("%s: the counter was not read on the cache's own connection", what)
		}
		return n
	}
	// The first read opens the connection and maps the wal-index; the
	// second takes the header it keeps.
	n0 := read("first")
	read("second")
	if c.index == nil {
		t.Fatal("the wal-index was not found")
	}
	q := c.queries.Load()
	for range 100 {
		if n := read("unchanged"); n != n0 {
			t.Fatalf("nothing committed: got %d, want %d", n, n0)
		}
	}
	if d := c.queries.Load() - q; d != 0 {
		t.Fatalf("100 reads with nothing committed queried the counter %d times, want 0", d)
	}

	step := func(what string, write func(), want int64) {
		t.Helper()
		q := c.queries.Load()
		write()
		if n := read(what); n != want {
			t.Fatalf("after %s: got %d, want %d", what, n, want)
		}
		if d := c.queries.Load() - q; d != 1 {
			t.Fatalf("after %s: %d queries of the counter, want 1", what, d)
		}
	}
	step("a change through another handle", func() {
		if _, err := b.SQL().ExecContext(t.Context(), `UPDATE cache_epoch SET n = n + 1 WHERE id = 1`); err != nil {
			t.Fatal(err)
		}
	}, n0+1)
	step("a change by another process", func() {
		cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestEpochFromWALIndex$")
		cmd.Env = append(os.Environ(), "DUET_TEST_EPOCH_WRITER="+path)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("the other process: %v\n%s", err, out)
		}
	}, n0+2)
	step("a commit of a table the counter does not watch", func() {
		if _, err := b.SQL().ExecContext(t.Context(), `CREATE TABLE unwatched (a INTEGER)`); err != nil {
			t.Fatal(err)
		}
	}, n0+2)
	if n := read("after"); n != n0+2 {
		t.Fatalf("got %d, want %d", n, n0+2)
	}
}

// twoHandles opens a new database (at path) twice, each handle closed when
// t ends.
func twoHandles(t *testing.T) (path string, a, b *DB) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "duet.db")
	for _, d := range []**DB{&a, &b} {
		var err error
		if *d, err = Open(t.Context(), path, nil); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { (*d).Close() })
	}
	return path, a, b
}

// TestEpochNeverOlderThanACommit: a read of the counter that starts after
// a commit returned sees that commit, while another handle commits as fast
// as it can and now and then truncates the WAL (new salts, mxFrame back to
// 0). Reading the wal-index header after the counter instead of before
// fails here: a commit that lands between the two is then kept as seen.
func TestEpochNeverOlderThanACommit(t *testing.T) {
	t.Parallel()
	_, a, b := twoHandles(t)
	c := a.cache.counter
	if _, ok := c.read(); !ok {
		t.Fatal("the counter was not read on the cache's own connection")
	}
	var committed atomic.Int64
	done := make(chan error, 1)
	go func() {
		for i := range 3000 {
			var n int64
			if err := b.SQL().QueryRowContext(t.Context(), `UPDATE cache_epoch SET n = n + 1 WHERE id = 1 RETURNING n`).Scan(&n); err != nil {
				done <- err
				return
			}
			committed.Store(n)
			if i%200 == 199 {
				if _, err := b.SQL().ExecContext(t.Context(), `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
					done <- err
					return
				}
			}
		}
		done <- nil
	}()
	reads := 0
	for {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			if c.index == nil {
				t.Fatal("the wal-index was not watched")
			}
			// Nothing is committed now: the first read may query, the
			// next is the header's.
			c.read()
			q := c.queries.Load()
			if n, ok := c.read(); !ok || n != committed.Load() || c.queries.Load() != q {
				t.Fatalf("after the commits: read %d (%v) with %d queries, want %d with none", n, ok, c.queries.Load()-q, committed.Load())
			}
			if reads == 0 {
				t.Fatal("no read while the other handle committed")
			}
			return
		default:
		}
		before := committed.Load()
		n, ok := c.read()
		if !ok {
			t.Fatal("the counter was not read on the cache's own connection")
		}
		if n < before {
			t.Fatalf("read %d after %d was committed", n, before)
		}
		reads++
	}
}

// BenchmarkEpochRead: what every cached read pays first, the counter read
// on the cache's own connection: 3.5–12 µs as a statement (`PRAGMA
// data_version` on a pooled connection, the other way to learn of another
// process's commit, took 8 µs), 27–29 ns when the wal-index header shows
// that nothing was committed since the last one.
func BenchmarkEpochRead(b *testing.B) {
	d, err := Open(b.Context(), filepath.Join(b.TempDir(), "duet.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	for b.Loop() {
		if _, ok := d.cache.counter.read(); !ok {
			b.Fatal("no read")
		}
	}
}

// BenchmarkEpochReadAfterCommit: the counter read when another connection
// committed since the last one (as the invocation recorder does): SQLite
// then drops the connection's page cache and reads the pages again (10.5 µs
// here against 4.3 µs; read-ns, beside the commit's write-ns).
func BenchmarkEpochReadAfterCommit(b *testing.B) {
	d, err := Open(b.Context(), filepath.Join(b.TempDir(), "duet.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	if _, err := d.SQL().ExecContext(b.Context(), `CREATE TABLE IF NOT EXISTS benchx (a INTEGER)`); err != nil {
		b.Fatal(err)
	}
	var w, r time.Duration
	for b.Loop() {
		t0 := time.Now()
		if _, err := d.SQL().ExecContext(b.Context(), `INSERT INTO benchx VALUES (1)`); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if _, ok := d.cache.counter.read(); !ok {
			b.Fatal("no read")
		}
		w += t1.Sub(t0)
		r += time.Since(t1)
	}
	b.ReportMetric(float64(r.Nanoseconds())/float64(b.N), "read-ns")
	b.ReportMetric(float64(w.Nanoseconds())/float64(b.N), "write-ns")
}
