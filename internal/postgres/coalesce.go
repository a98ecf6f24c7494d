package postgres

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"

	"github.com/duet-test/duet/internal/storerules"
)

// coalescer runs reads of one kind that arrive while others of that kind
// are in flight as one statement: a read with a lane free runs alone, at
// once, in its caller's context (one); reads that arrive while every lane
// is busy wait, and the next lane to finish runs all of them (up to max)
// as one statement (many). Under load a governed read then costs the
// database a share of one statement instead of a statement of its own:
// the fixed part of a statement (locking and opening its relations,
// starting its plan, the transaction, the backend's wakeup) is most of
// what a small read costs PostgreSQL (docs/performance.md, issue 32).
// With one caller at a time nothing waits and nothing changes.
//
// A read never sees older data than it would alone: a waiting read goes
// into a statement that starts after it was queued. A caller whose context
// ends stops waiting at once; the statement it was in goes on for the
// others, and is cancelled when no caller waits for it any more.
type coalescer[K, V any] struct {
	lanes int // statements in flight at most
	max   int // reads in one statement at most
	one   func(ctx context.Context, k K) (V, error)
	// many reads keys together: a value and an error for each key, in
	// order (the error of a key the statement did not find), or an error
	// for all of them.
	many func(ctx context.Context, keys []K) ([]V, []error, error)

	// queued, if set, is told the queue's length each time a read joins
	// it (tests).
	queued func(n int)

	mu      sync.Mutex
	running int
	queue   []*waiter[K, V]
	batches atomic.Int64 // statements of more than one read (tests, figures)
}

type waiter[K, V any] struct {
	ctx   context.Context
	key   K
	done  chan struct{}
	v     V
	err   error
	gone  bool       // its caller stopped waiting (c.mu)
	batch *readBatch // the statement it is in, once taken (c.mu)
}

// readBatch is one statement's context, cancelled when every caller in it
// has stopped waiting.
type readBatch struct {
	live   atomic.Int32
	cancel context.CancelFunc
}

// get reads k, alone or with the reads queued beside it.
func (c *coalescer[K, V]) get(ctx context.Context, k K) (V, error) {
	c.mu.Lock()
	if c.running < c.lanes && len(c.queue) == 0 {
		c.running++
		c.mu.Unlock()
		v, err := c.one(ctx, k)
		c.release()
		return v, err
	}
	w := &waiter[K, V]{ctx: ctx, key: k, done: make(chan struct{})}
	c.queue = append(c.queue, w)
	n := len(c.queue)
	if c.running < c.lanes { // a lane is free, but others queued first
		c.running++
		c.mu.Unlock()
		go c.next()
	} else {
		c.mu.Unlock()
	}
	if c.queued != nil {
		c.queued(n)
	}
	select {
	case <-w.done:
		return w.v, w.err
	case <-ctx.Done():
		c.mu.Lock()
		w.gone = true
		b := w.batch
		c.mu.Unlock()
		if b != nil && b.live.Add(-1) == 0 {
			b.cancel()
		}
		var zero V
		return zero, ctx.Err()
	}
}

// release frees the lane of a read that ran alone, or hands it to the
// reads queued meanwhile (in a goroutine of its own: the caller's read is
// done and returns now).
func (c *coalescer[K, V]) release() {
	c.mu.Lock()
	if len(c.queue) == 0 {
		c.running--
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	go c.next()
}

// next is a lane that has finished a statement: it runs the queued reads,
// a statement at a time, until none is left, then frees the lane.
func (c *coalescer[K, V]) next() {
	for {
		c.mu.Lock()
		var ws []*waiter[K, V]
		b := &readBatch{}
		take := 0
		for _, w := range c.queue {
			take++
			if w.gone {
				continue
			}
			w.batch = b
			ws = append(ws, w)
			if len(ws) == c.max {
				break
			}
		}
		c.queue = c.queue[take:]
		if len(c.queue) == 0 {
			c.queue = nil // let go of the backing array
		}
		if len(ws) == 0 {
			c.running--
			c.mu.Unlock()
			return
		}
		b.live.Store(int32(len(ws)))
		ctx, cancel := context.WithCancel(context.WithoutCancel(ws[0].ctx))
		b.cancel = cancel
		c.mu.Unlock()
		c.run(ctx, b, ws)
		cancel()
	}
}

// run reads ws's keys in one statement (or one read, for one) in ctx, b's
// context, and hands each waiter its result.
func (c *coalescer[K, V]) run(ctx context.Context, b *readBatch, ws []*waiter[K, V]) {
	if b.live.Load() == 0 { // every caller left before it started
		return
	}
	if len(ws) == 1 {
		ws[0].v, ws[0].err = c.one(ctx, ws[0].key)
		close(ws[0].done)
		return
	}
	c.batches.Add(1)
	keys := make([]K, len(ws))
	for i, w := range ws {
		keys[i] = w.key
	}
	vs, errs, err := c.many(ctx, keys)
	for i, w := range ws {
		if err != nil {
			w.err = err
		} else {
			w.v, w.err = vs[i], errs[i]
		}
		close(w.done)
	}
}

// readKey is what one read of one object asks for: the viewer, whose
// visibility applies, and the object's id.
type readKey struct{ viewer, id string }

// maxReadsTogether is the most reads one statement makes.
const maxReadsTogether = 64

// readPairs is the FROM of a statement of reads together: the pairs of
// viewer ($1) and id ($2), numbered from 1 (ord). pairParams makes the
// $1 and $2 of a read alone the columns of one pair.
//
// The arrays are unnested through sub-selects so that the server plans the
// statement once, not on each execution. Given the arrays themselves,
// unnest's estimate is their length, so each execution's custom plan (a
// few pairs) looks cheaper than the generic plan (unnest's default of 100
// rows), and PostgreSQL, comparing the two after the fifth execution, kept
// planning the statement afresh: half a millisecond of the backend's CPU
// for every statement, more than the reads it holds cost together. A
// sub-select's value is unknown to both plans, their estimates match, and
// the generic plan is kept (TestReadsTogetherPlannedOnce).
const readPairs = `unnest((SELECT $1::text[]), (SELECT $2::text[])) WITH ORDINALITY AS q (viewer, id, ord)`

var pairParams = strings.NewReplacer("$1", "q.viewer", "$2", "q.id")

// newReads returns the coalescer of one kind of read, with lanes
// statements in flight at most: alone reads one key by itself; query
// (readPairs' ord, then alone's columns) reads many, each row scanned by
// scan after its ord; kind names what a NOT_FOUND is of.
func newReads[V any](d *DB, lanes int, alone func(ctx context.Context, viewer, id string) (V, error), query, kind string, scan func(pgx.Rows) (V, error)) *coalescer[readKey, V] {
	return &coalescer[readKey, V]{
		lanes: lanes, max: maxReadsTogether,
		one: func(ctx context.Context, k readKey) (V, error) { return alone(ctx, k.viewer, k.id) },
		many: func(ctx context.Context, keys []readKey) ([]V, []error, error) {
			return readTogether(ctx, d, query, kind, keys, scan)
		},
	}
}

// readTogether runs query (whose rows are readPairs' ord, then a read's
// columns) for keys and scans each row after its ord with scan: for each
// key its value, or NOT_FOUND naming kind. more are the query's parameters
// after the pairs ($3, ...).
func readTogether[V any](ctx context.Context, d *DB, query, kind string, keys []readKey, scan func(pgx.Rows) (V, error), more ...any) ([]V, []error, error) {
	viewers, ids := make([]string, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		viewers[i], ids[i] = k.viewer, k.id
	}
	rows, err := d.pool.Query(ctx, query, append([]any{viewers, ids}, more...)...)
	if err != nil {
		return nil, nil, mapErr(err)
	}
	defer rows.Close()
	out, errs := make([]V, len(keys)), make([]error, len(keys))
	seen := make([]bool, len(keys))
	var ord int64
	row := headRow{Rows: rows, head: []any{&ord}}
	for rows.Next() {
		v, err := scan(row)
		if err != nil {
			return nil, nil, mapErr(err)
		}
		if ord < 1 || ord > int64(len(keys)) {
			return nil, nil, fmt.Errorf("%s reads together: row %d of %d", kind, ord, len(keys))
		}
		out[ord-1], seen[ord-1] = v, true
	}
	if err := rows.Err(); err != nil {
		return nil, nil, mapErr(err)
	}
	for i := range keys {
		if !seen[i] {
			errs[i] = storerules.NotFound(kind, keys[i].id)
		}
	}
	return out, errs, nil
}

// headRow is a row whose first columns go to head, the rest to Scan's dest.
type headRow struct {
	pgx.Rows
	head []any
}

func (r headRow) Scan(dest ...any) error { return r.Rows.Scan(append(r.head, dest...)...) }
