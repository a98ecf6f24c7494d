package storerules

import (
	"context"
	"database/sql"
	"errors"
	"time"
)

// Engine is one driver's way to run the SQL texts of this package, which
// use $n parameters (PostgreSQL's, which modernc's SQLite driver binds to
// the n-th argument too), times written with Stored and read with TimeOf.
// Every error it returns is mapped by the engine.
type Engine struct {
	// Read reads one row; Write writes and reads the one row it returns
	// (in a transaction where the engine wants one).
	Read, Write RowFunc
	// Exec runs a statement and returns how many rows it changed.
	Exec func(ctx context.Context, sql string, args ...any) (int64, error)
	// Query runs a statement and hands each row to each.
	Query func(ctx context.Context, each func(Row) error, sql string, args ...any) error
	// Stored is how the engine writes a time.
	Stored StoredTime
	// In is the engine's condition that col is one of ids, the only
	// parameters of its statement, and their arguments.
	In func(col string, ids []string) (cond string, args []any)
	// VisibleTo is the engine's condition that user $1 may see task t. It
	// comes before any other parameter of a statement: SQLite's ?1 in it
	// numbers the parameters after it.
	VisibleTo string
	// ForUpdate ends a SELECT that locks the rows it reads until the
	// transaction ends (" FOR UPDATE"); "" on an engine with one writer,
	// which has nothing to lock.
	ForUpdate string
	// Now is the current time.
	Now func() time.Time
	// Tx runs fn in a transaction, on an Engine whose statements run in
	// it; fn may run again where the engine retries a transaction, so it
	// depends only on what it reads in it. An Engine on a transaction has
	// none.
	Tx func(ctx context.Context, fn func(Engine) error) error
}

// All runs a statement on e and reads every row with scan.
func All[T any](ctx context.Context, e Engine, scan func(Row) (T, error), sql string, args ...any) ([]T, error) {
	out := []T{}
	err := e.Query(ctx, func(r Row) error {
		v, err := scan(r)
		out = append(out, v)
		return err
	}, sql, args...)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// One runs a statement on e and reads its row with scan; no row is an
// error that errors.Is sql.ErrNoRows.
func One[T any](ctx context.Context, e Engine, scan func(Row) (T, error), query string, args ...any) (T, error) {
	var v T
	found := false
	err := e.Query(ctx, func(r Row) error {
		var err error
		found = true
		v, err = scan(r)
		return err
	}, query, args...)
	if err == nil && !found {
		err = sql.ErrNoRows
	}
	return v, err
}

// StoredPtr is Stored for a nullable time: nil is NULL.
func (e Engine) StoredPtr(t *time.Time) any {
	if t == nil {
		return nil
	}
	return e.Stored(*t)
}

// Stores are the stores written once here, on an engine; a driver embeds
// them (NewStores).
type Stores struct {
	Tasks
	Devices
	Sessions
	Stops
	CaseVersions
	OAuth
	Baselines
	Teams
	Assets
	Deliveries
	MCPServers
	Contracts
	AIPlans
	Runs
	Schedules
	Metrics
}

// NewStores returns the stores of this package on e.
func NewStores(e Engine) Stores {
	return Stores{Tasks{e}, Devices{e}, Sessions{e}, Stops{e}, CaseVersions{e}, OAuth{e}, Baselines{e}, Teams{e}, Assets{e}, Deliveries{e}, MCPServers{e}, Contracts{e}, AIPlans{e}, Runs{e}, Schedules{e}, Metrics{e}}
}

// Found maps the error of a read of the one object kind id: no row is
// NOT_FOUND, any other error the engine's mapErr's.
func Found(err error, kind, id string, mapErr func(error) error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return NotFound(kind, id)
	}
	return mapErr(err)
}

// Collect reads every row of rows with scan (the driver closes rows and
// maps the error).
func Collect[T any](rows Rows, scan func(Row) (T, error)) ([]T, error) {
	out := []T{}
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// InTx is an Engine's Tx for a driver whose tx runs fn in a transaction
// of type T, on the Engine that on makes on such a transaction.
func InTx[T any](tx func(context.Context, func(T) error) error, on func(T) Engine) func(context.Context, func(Engine) error) error {
	return func(ctx context.Context, fn func(Engine) error) error {
		return tx(ctx, func(t T) error { return fn(on(t)) })
	}
}
