package sqlite

import (
	"context"
	"database/sql"
	"sync"
	"sync/atomic"

	"github.com/duet-test/duet"
)

// stmtCache runs queries through prepared statements kept for the life of
// the database handle, so SQLite parses each distinct statement once instead
// of on every call (parsing was a third of the CPU of a read-heavy tool call
// before; see docs/performance.md). Queries are built from a fixed set of
// fragments, so the number of distinct statements is bounded.
type stmtCache struct {
	db    *sql.DB
	mu    sync.Mutex
	stmts map[string]*sql.Stmt
	// writes counts the statements this handle has written with (each
	// counted once it returned): a read cache's memo of the epoch
	// (cache.go) is stale once it moved.
	writes atomic.Uint64
	// tx runs a transaction (DB.tx): ExecContext runs a statement in one
	// when ctx carries a pending audit record, which the transaction
	// writes too (duet.AuditIntent).
	tx func(context.Context, func(*cachedTx) error) error
	// writers queues the statements that write outside a transaction
	// with the transactions (writers.go).
	writers *writerQueue
	// wanted are the statements a transaction ran unprepared because none
	// was prepared yet (cachedTx), to prepare once it has ended; unwanted
	// those that failed to prepare, never tried again.
	wanted, unwanted map[string]bool
	// txPrepared and txParsed count the statements transactions ran
	// prepared and parsed afresh (tests).
	txPrepared, txParsed atomic.Int64
}

var _ querier = (*stmtCache)(nil)

func (c *stmtCache) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	c.mu.Lock()
	s, ok := c.stmts[query]
	c.mu.Unlock()
	if ok {
		return s, nil
	}
	s, err := c.db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.stmts[query]; ok {
		s.Close()
		return old, nil
	}
	if len(c.stmts) >= 4096 {
		// A safety valve, not expected to trigger: start afresh.
		for k, old := range c.stmts {
			old.Close()
			delete(c.stmts, k)
		}
	}
	c.stmts[query] = s
	return s, nil
}

func (c *stmtCache) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	s, err := c.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return s.QueryContext(ctx, args...)
}

func (c *stmtCache) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	s, err := c.stmt(ctx, query)
	if err != nil {
		// Let the error surface through the row, as database/sql does.
		return c.db.QueryRowContext(ctx, query, args...)
	}
	return s.QueryRowContext(ctx, args...)
}

func (c *stmtCache) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	defer c.writes.Add(1)
	s, err := c.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	if c.tx != nil && duet.AuditIntentFrom(ctx).Pending() {
		// A governed call's change: with its audit record.
		var res sql.Result
		err := c.tx(ctx, func(tx *cachedTx) error {
			var err error
			res, err = tx.StmtContext(ctx, s).ExecContext(ctx, args...)
			return err
		})
		return res, err
	}
	release, err := c.writers.wait(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	return s.ExecContext(ctx, args...)
}

func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, s := range c.stmts {
		s.Close()
		delete(c.stmts, k)
	}
}

// maxWanted bounds the statements noted to prepare after one transaction.
const maxWanted = 64

// prepared returns the prepared statement of query, or nil when there is
// none yet, noting query to prepare later (prepareWanted). It never takes
// a connection: a transaction holds one, and taking another while the
// pool's are all held by transactions would wait for ever.
func (c *stmtCache) prepared(query string) *sql.Stmt {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.stmts[query]
	if !ok && !c.unwanted[query] && len(c.wanted) < maxWanted {
		if c.wanted == nil {
			c.wanted = map[string]bool{}
		}
		c.wanted[query] = true
	}
	return s
}

// prepareWanted prepares the statements prepared found missing, through
// the pool (called when a transaction has given its connection back). One
// that the database refuses is not tried again.
func (c *stmtCache) prepareWanted(ctx context.Context) {
	c.mu.Lock()
	wanted := c.wanted
	c.wanted = nil
	c.mu.Unlock()
	for q := range wanted {
		if _, err := c.stmt(ctx, q); err != nil && ctx.Err() == nil {
			c.mu.Lock()
			if c.unwanted == nil {
				c.unwanted = map[string]bool{}
			}
			if len(c.unwanted) < 4096 {
				c.unwanted[q] = true
			}
			c.mu.Unlock()
		}
	}
}

// cachedTx is a transaction (DB.tx) whose ExecContext and QueryRowContext
// run the handle's prepared statements on the transaction's connection
// (sql.Tx.StmtContext prepares each once per connection), so that SQLite
// parses a transaction's statements once instead of on every call: parsing
// was a fifth of the CPU of a write such as sharing a task. A statement not
// prepared yet runs as before and is prepared after the transaction.
// QueryContext parses afresh: its rows stay open while the caller reads
// them, and a prepared statement is one cursor per connection, so the same
// query run again before they are closed would reset them under the
// caller. ExecContext's statement is done when it returns, QueryRowContext's
// when its row is scanned, which every caller does at once.
type cachedTx struct {
	*sql.Tx
	c *stmtCache
}

var _ querier = (*cachedTx)(nil)

func (t *cachedTx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if s := t.c.prepared(query); s != nil {
		t.c.txPrepared.Add(1)
		return t.Tx.StmtContext(ctx, s).ExecContext(ctx, args...)
	}
	t.c.txParsed.Add(1)
	return t.Tx.ExecContext(ctx, query, args...)
}

func (t *cachedTx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if s := t.c.prepared(query); s != nil {
		t.c.txPrepared.Add(1)
		return t.Tx.StmtContext(ctx, s).QueryRowContext(ctx, args...)
	}
	t.c.txParsed.Add(1)
	return t.Tx.QueryRowContext(ctx, query, args...)
}
