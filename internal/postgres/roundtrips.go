package postgres

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
)

// RoundTrips is a pgx tracer (Options.Tracer) that counts the round trips
// the store makes to PostgreSQL: each query or statement (BEGIN and COMMIT
// included), each batch and each COPY is one. Every one is counted in
// Total; those made with a context from Track are also counted, with their
// statements, in that context's Tally — the round trips of one call, even
// while others run beside it. The statements a connection prepares the
// first time it sees them are not counted: a warm connection does not.
type RoundTrips struct {
	total atomic.Int64
}

var (
	_ pgx.QueryTracer    = (*RoundTrips)(nil)
	_ pgx.BatchTracer    = (*RoundTrips)(nil)
	_ pgx.CopyFromTracer = (*RoundTrips)(nil)
)

// Tally is what the round trips made with one Track context came to.
type Tally struct {
	parent *Tally // the Tally of the context Track was given, counted too
	mu     sync.Mutex
	n      int // round trips
	m      int // statements (a batch's each counted)
	stmts  []string
}

type tallyKey struct{}

// Track returns a context whose round trips are counted in the returned
// Tally, and in the Tally of ctx, if any.
func (r *RoundTrips) Track(ctx context.Context) (context.Context, *Tally) {
	parent, _ := ctx.Value(tallyKey{}).(*Tally)
	t := &Tally{parent: parent}
	return context.WithValue(ctx, tallyKey{}, t), t
}

// Total returns the round trips counted so far, tracked or not.
func (r *RoundTrips) Total() int64 { return r.total.Load() }

// N returns the round trips counted in t.
func (t *Tally) N() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.n
}

// StatementCount returns the statements counted in t: a batch counts as
// many as it holds. Each statement is a plan the server starts and a
// transaction it keeps: a batch of two costs the server more than one
// statement that reads both parts.
func (t *Tally) StatementCount() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.m
}

// Statements returns the statements of t's round trips, in order (a batch
// is its statements joined by "; ").
func (t *Tally) Statements() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.stmts...)
}

// count counts a round trip of n statements.
func (r *RoundTrips) count(ctx context.Context, sql string, n int) {
	r.total.Add(1)
	t, _ := ctx.Value(tallyKey{}).(*Tally)
	for ; t != nil; t = t.parent {
		t.mu.Lock()
		t.n++
		t.m += n
		t.stmts = append(t.stmts, sql)
		t.mu.Unlock()
	}
}

// TraceQueryStart counts a query or statement.
func (r *RoundTrips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	r.count(ctx, data.SQL, 1)
	return ctx
}

// TraceQueryEnd does nothing.
func (r *RoundTrips) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// TraceBatchStart counts a batch: its queries go in one round trip.
func (r *RoundTrips) TraceBatchStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceBatchStartData) context.Context {
	sql, n := "batch:", 0
	if data.Batch != nil {
		n = len(data.Batch.QueuedQueries)
		for i, q := range data.Batch.QueuedQueries {
			if i > 0 {
				sql += ";"
			}
			sql += " " + q.SQL
		}
	}
	r.count(ctx, sql, n)
	return ctx
}

// TraceBatchQuery does nothing: the batch was counted.
func (r *RoundTrips) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

// TraceBatchEnd does nothing.
func (r *RoundTrips) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// TraceCopyFromStart counts a COPY.
func (r *RoundTrips) TraceCopyFromStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceCopyFromStartData) context.Context {
	r.count(ctx, "COPY "+data.TableName.Sanitize(), 1)
	return ctx
}

// TraceCopyFromEnd does nothing.
func (r *RoundTrips) TraceCopyFromEnd(context.Context, *pgx.Conn, pgx.TraceCopyFromEndData) {}
