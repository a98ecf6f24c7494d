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
	tx func(context.Context, func(*sql.Tx) error) error
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
		err := c.tx(ctx, func(tx *sql.Tx) error {
			var err error
			res, err = tx.StmtContext(ctx, s).ExecContext(ctx, args...)
			return err
		})
		return res, err
	}
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
