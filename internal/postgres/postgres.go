// Package postgres implements duet.Store on PostgreSQL with a pgx v5
// connection pool, so that several `duet serve` and `duet worker` processes
// share one database. Migrations are embedded and applied, forward only, at
// Open under a session-level advisory lock (goose's Postgres session
// locker), so instances starting together migrate once; an instance refuses
// a schema newer than it knows.
//
// The run table is the job queue: ClaimRun takes the oldest claimable run
// with FOR UPDATE SKIP LOCKED, so concurrent workers never take the same
// run and never wait on each other.
package postgres

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/storerules"
)

//go:embed migrations/*.sql
var migrations embed.FS

// DB is a Duet store on a PostgreSQL database.
type DB struct {
	pool *auditedPool
	now  func() time.Time
	// overviews, runs, cases and tokens coalesce the reads of
	// FindTaskOverview, FindRunByID, FindCaseByID and FindTokenByHash (nil:
	// each alone).
	overviews *coalescer[readKey, *duet.TaskOverview]
	runs      *coalescer[readKey, *duet.Run]
	cases     *coalescer[readKey, *duet.Case]
	tokens    *coalescer[string, *duet.Token]

	// The stores and writes written once, in storerules, on this engine
	// (rules).
	storerules.Stores
	storerules.Writes[pgx.Tx]
}

// auditedPool is the connection pool, its Exec made to keep the audit
// record of a governed call with the call's change (duet.AuditIntent): a
// statement run in a context whose intent is pending runs in a transaction
// that writes the record too (tx). Every other statement goes straight to
// the pool.
type auditedPool struct {
	*pgxpool.Pool
	d *DB
}

// Exec runs a statement: with the pending audit record of ctx, if any, in
// one transaction.
func (p *auditedPool) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if !duet.AuditIntentFrom(ctx).Pending() {
		return p.Pool.Exec(ctx, sql, args...)
	}
	var tag pgconn.CommandTag
	err := p.d.tx(ctx, func(tx pgx.Tx) error {
		var err error
		tag, err = tx.Exec(ctx, sql, args...)
		return err
	})
	return tag, err
}

var _ duet.Store = (*DB)(nil)

// Options tune Open. The zero value is fine: nil and zero fields mean the
// URL's own settings (pool_max_conns, connect_timeout, ...), else pgx's
// defaults.
type Options struct {
	MaxConns        int           // most connections; 0 keeps the URL's or pgx's default
	MinConns        int           // connections kept open while idle
	MaxConnLifetime time.Duration // 0 keeps the default (1h)
	MaxConnIdleTime time.Duration // 0 keeps the default (30m)
	ConnectTimeout  time.Duration // 0 keeps the URL's connect_timeout (else none)
	// ReadLanes is how many reads of one kind (a token, a task's overview, a run, a case)
	// run at once at most; those that arrive meanwhile are read together
	// (coalescer). 0 means 1, which makes the largest statements: a
	// statement's fixed cost is most of what a small read costs the server
	// (docs/performance.md, part 11). -1 reads each alone.
	ReadLanes int
	// NoMigrate makes Open only check that the schema is current instead of
	// applying pending migrations (the operator runs `duet migrate up`).
	NoMigrate bool
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// Tracer, if set, sees every statement the store sends (pgx's
	// QueryTracer; also its BatchTracer and CopyFromTracer where it
	// implements them): RoundTrips counts them.
	Tracer pgx.QueryTracer
}

// ParseURL parses a PostgreSQL connection URL exactly as pgx (and libpq)
// do, with the libpq environment variables (PGHOST, PGUSER, PGPASSWORD, ...)
// filling in what the URL leaves out, and applies opts' pool settings.
// Errors are INVALID_ARGUMENT and never contain the password.
func ParseURL(url string, opts *Options) (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// Not wrapped: the parse error quotes the URL, password and all.
		return nil, duet.Errorf(duet.CodeInvalidArgument, "invalid PostgreSQL URL: %s", redactedParseError(err))
	}
	if opts == nil {
		return cfg, nil
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = int32(opts.MaxConns)
	}
	if opts.MinConns > 0 {
		cfg.MinConns = int32(min(opts.MinConns, int(cfg.MaxConns)))
	}
	if opts.MaxConnLifetime > 0 {
		cfg.MaxConnLifetime = opts.MaxConnLifetime
	}
	if opts.MaxConnIdleTime > 0 {
		cfg.MaxConnIdleTime = opts.MaxConnIdleTime
	}
	if opts.ConnectTimeout > 0 {
		cfg.ConnConfig.ConnectTimeout = opts.ConnectTimeout
	}
	if opts.Tracer != nil {
		cfg.ConnConfig.Tracer = opts.Tracer
	}
	return cfg, nil
}

// redactedParseError returns the reason of a parse error without the
// connection string it quotes, nor the underlying error (which may quote it
// too): only pgx's own short message, such as "invalid port".
func redactedParseError(err error) string {
	const generic = "cannot parse it (check the scheme, host, port and parameters)"
	var pe *pgconn.ParseConfigError
	if !errors.As(err, &pe) {
		return generic
	}
	s := pe.Error()
	i := strings.LastIndex(s, "`: ")
	if i < 0 {
		return generic
	}
	msg := s[i+3:]
	if u := pe.Unwrap(); u != nil {
		msg = strings.TrimSuffix(msg, " ("+u.Error()+")")
	}
	if msg == "" || strings.ContainsAny(msg, "`@") {
		return generic
	}
	return msg
}

// Open connects to the database at url, applies pending migrations (or,
// with opts.NoMigrate, checks that none is pending) and returns the
// store. Errors are INVALID_ARGUMENT (a malformed URL), UNAVAILABLE (the
// database cannot be reached or migrated) or SCHEMA_TOO_NEW (its schema is
// newer than this build knows; the message names both versions). No error
// contains the password.
func Open(ctx context.Context, url string, opts *Options) (*DB, error) {
	if opts == nil {
		opts = &Options{}
	}
	cfg, err := ParseURL(url, opts)
	if err != nil {
		return nil, err
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, duet.WrapError(duet.CodeUnavailable, err, "cannot connect to PostgreSQL at %s: %v", where(cfg), storerules.RootCause(err))
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, duet.WrapError(duet.CodeUnavailable, err, "cannot connect to PostgreSQL at %s: %v", where(cfg), storerules.RootCause(err))
	}
	if err := prepare(ctx, pool, !opts.NoMigrate); err != nil {
		pool.Close()
		return nil, err
	}
	d := &DB{now: opts.Now}
	d.pool = &auditedPool{Pool: pool, d: d}
	d.rules()
	if lanes := opts.ReadLanes; lanes >= 0 {
		lanes = max(1, lanes)
		d.overviews = newReads(d, lanes, d.findTaskOverview, overviewsQuery, "task", func(r pgx.Rows) (*duet.TaskOverview, error) { return scanOverview(r, true, "") })
		d.runs = newReads(d, lanes, d.findRunByID, runsTogetherQuery, "run", func(r pgx.Rows) (*duet.Run, error) { return scanRunTotals(r) })
		d.cases = newReads(d, lanes, d.findCaseByID, casesTogetherQuery, "case", func(r pgx.Rows) (*duet.Case, error) { return storerules.ScanCase(r) })
		d.tokens = newTokenReads(d, lanes)
	}
	if d.now == nil {
		d.now = time.Now
	}
	return d, nil
}

// where names the server and database of cfg, never the user's password.
func where(cfg *pgxpool.Config) string {
	c := cfg.ConnConfig
	return fmt.Sprintf("%s:%d/%s", c.Host, c.Port, c.Database)
}

// prepare applies pending migrations (migrate) or checks there is none, and
// refuses a database whose schema is newer than this build's.
func prepare(ctx context.Context, pool *pgxpool.Pool, migrate bool) error {
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	p, err := provider(db)
	if err != nil {
		return duet.WrapError(duet.CodeInternal, err, "cannot read the embedded migrations")
	}
	if err := checkNotNewer(ctx, p); err != nil {
		return err
	}
	if migrate {
		if _, err := p.Up(ctx); err != nil {
			return duet.WrapError(duet.CodeUnavailable, err, "cannot migrate the PostgreSQL database: %v", storerules.RootCause(err))
		}
		return nil
	}
	pending, err := p.HasPending(ctx)
	if err != nil {
		return duet.WrapError(duet.CodeUnavailable, err, "cannot read the schema version: %v", storerules.RootCause(err))
	}
	if pending {
		return duet.Errorf(duet.CodeUnavailable, "the PostgreSQL schema is behind this duet: run `duet migrate up`")
	}
	return nil
}

func provider(db *sql.DB) (*goose.Provider, error) {
	fsys, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return nil, err
	}
	return goose.NewProvider(goose.DialectPostgres, db, fsys, goose.WithSessionLocker(sessionLocker{}))
}

// sessionLocker serialises migrations of instances that start together:
// each takes a session-level advisory lock (one per schema) before goose
// reads the version table, so exactly one applies a migration and the
// others find it applied. Unlike goose's own Postgres locker, which polls
// every 5 seconds, pg_advisory_lock waits in the server and returns the
// moment the holder releases it; a cancelled context cancels the wait.
type sessionLocker struct{}

var _ lock.SessionLocker = sessionLocker{}

const migrationLock = `hashtextextended('duet.migrate.' || current_schema(), 0)`

func (sessionLocker) SessionLock(ctx context.Context, conn *sql.Conn) error {
	_, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock(`+migrationLock+`)`)
	return err
}

func (sessionLocker) SessionUnlock(ctx context.Context, conn *sql.Conn) error {
	_, err := conn.ExecContext(ctx, `SELECT pg_advisory_unlock(`+migrationLock+`)`)
	return err
}

// checkNotNewer refuses a database migrated by a newer duet: this build
// would not know its tables.
func checkNotNewer(ctx context.Context, p *goose.Provider) error {
	srcs := p.ListSources()
	known := srcs[len(srcs)-1].Version
	current, err := p.GetDBVersion(ctx) // creates goose's version table in an empty database
	if err != nil {
		return duet.WrapError(duet.CodeUnavailable, err, "cannot read the schema version: %v", storerules.RootCause(err))
	}
	if current > known {
		return duet.Errorf(duet.CodeSchemaTooNew, "the PostgreSQL schema is at version %d, newer than this duet knows (%d): upgrade duet to the version the other instances run", current, known)
	}
	return nil
}

// Pool returns the underlying connection pool (tests and maintenance).
func (d *DB) Pool() *pgxpool.Pool { return d.pool.Pool }

// Ping checks the database answers. Returns UNAVAILABLE.
func (d *DB) Ping(ctx context.Context) error {
	if err := d.pool.Ping(ctx); err != nil {
		return duet.WrapError(duet.CodeUnavailable, err, "database unavailable")
	}
	return nil
}

// Close closes every connection of the pool.
func (d *DB) Close() error {
	d.pool.Close()
	return nil
}

// querier is what both the pool and a transaction offer.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

var (
	_ querier = (*auditedPool)(nil)
	_ querier = (pgx.Tx)(nil)
)

// tx runs fn in a READ COMMITTED transaction. A deadlock or a serialization
// failure (another instance touched the same rows) runs fn again, up to
// three times: fn must only depend on what it reads inside the transaction.
// The pending audit record of ctx (duet.AuditIntent), if any, is written in
// the same transaction: a governed call's change is never stored without
// it.
func (d *DB) tx(ctx context.Context, fn func(pgx.Tx) error) error {
	in := duet.AuditIntentFrom(ctx)
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		var rec *duet.AuditRecord
		err = pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
			if err := fn(tx); err != nil {
				return err
			}
			if rec = in.Take(); rec != nil {
				return insertAudit(ctx, tx, rec)
			}
			return nil
		})
		if rec != nil {
			if err == nil {
				in.Stored(rec.ID)
			} else {
				in.Released()
			}
		}
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || (pe.Code != "40P01" && pe.Code != "40001") {
			break
		}
	}
	return mapErr(err)
}

// lockKey takes a transaction-scoped advisory lock on name: transactions of
// any instance that create the same object (the same idempotency key, task
// name, asset) take turns instead of racing to a unique violation.
func lockKey(ctx context.Context, tx pgx.Tx, name string) error {
	_, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, name)
	return mapErr(err)
}

// mapErr turns driver errors into *duet.Error where a code is meaningful:
// an unreachable or restarting database is UNAVAILABLE (never INTERNAL), a
// unique violation CONFLICT, a missing reference NOT_FOUND, a value the
// database refuses (a NUL byte, invalid UTF-8) INVALID_ARGUMENT.
func mapErr(err error) error {
	if err == nil {
		return nil
	}
	if coded := storerules.CodedError(err); coded != nil {
		return coded
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case pe.Code == "23505":
			return duet.WrapError(duet.CodeConflict, err, "already exists")
		case pe.Code == "23503":
			return duet.WrapError(duet.CodeNotFound, err, "referenced object not found")
		case strings.HasPrefix(pe.Code, "22"): // data exception
			return duet.WrapError(duet.CodeInvalidArgument, err, "the database refused a value: %s", pe.Message)
		case strings.HasPrefix(pe.Code, "08"), // connection exception
			strings.HasPrefix(pe.Code, "53"), // insufficient resources (too many connections, disk full)
			strings.HasPrefix(pe.Code, "57"), // operator intervention (shutdown, restart, cannot connect now)
			pe.Code == "25006":               // read-only transaction (a standby after a failover)
			return duet.WrapError(duet.CodeUnavailable, err, "database unavailable")
		}
		return fmt.Errorf("postgres: %w", err)
	}
	if unreachable(err) {
		return duet.WrapError(duet.CodeUnavailable, err, "database unavailable")
	}
	return fmt.Errorf("postgres: %w", err)
}

// unreachable reports whether err says the database could not be reached or
// the connection broke.
func unreachable(err error) bool {
	var ce *pgconn.ConnectError
	var ne net.Error
	var oe *net.OpError
	switch {
	case errors.As(err, &ce), errors.As(err, &ne), errors.As(err, &oe),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		pgconn.SafeToRetry(err), pgconn.Timeout(err):
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "conn closed") || strings.Contains(msg, "closed pool") || strings.Contains(msg, "connection reset")
}

// ts converts a time for storage: PostgreSQL keeps microseconds.
func ts(t time.Time) time.Time { return t.Truncate(time.Microsecond) }

// stored is ts as a storerules.StoredTime.
func stored(t time.Time) any { return ts(t) }

// nullTime is a nullable timestamp for storage.
func nullTime(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	v := ts(*t)
	return &v
}

// utc returns a scanned timestamp in UTC, as the SQLite store does.
func utc(t time.Time) time.Time { return t.UTC() }

// utcPtr is utc for a nullable timestamp.
func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	v := t.UTC()
	return &v
}

// args numbers positional parameters as a query is built.
type args []any

// add appends v and returns its placeholder ($n).
func (a *args) add(v any) string {
	*a = append(*a, v)
	return fmt.Sprintf("$%d", len(*a))
}

// row is a storerules.RowFunc.
func (d *DB) row(ctx context.Context, dest []any, q string, args ...any) error {
	return mapErr(d.pool.QueryRow(ctx, q, args...).Scan(dest...))
}

// ChargeLLMUsage adds c to the user's day (storerules.ChargeLLMUsage).
func (d *DB) ChargeLLMUsage(ctx context.Context, c duet.LLMCharge) (duet.LLMUsage, bool, error) {
	return storerules.ChargeLLMUsage(ctx, c, ts(d.now()).UTC(), d.row, d.row)
}

// FindLLMUsage returns the usage of user on day.
func (d *DB) FindLLMUsage(ctx context.Context, userID, day string) (duet.LLMUsage, error) {
	return storerules.FindLLMUsage(ctx, userID, day, d.row)
}

// rowScanner is one row, of a result or of a record (record.go).
type rowScanner = storerules.Row

// rules sets up the stores and writes written in storerules on this
// engine, every statement through the pool.
func (d *DB) rules() {
	e := d.engineOn(d.pool)
	on := func(tx pgx.Tx) storerules.Engine { return d.engineOn(tx) }
	e.Tx = storerules.InTx(d.tx, on)
	d.Stores = storerules.NewStores(e)
	d.Writes = storerules.Writes[pgx.Tx]{
		Tx:         d.tx,
		On:         on,
		Held:       held,
		Lock:       lockKey,
		Run:        func(tx pgx.Tx) storerules.RunTx { return d.runTx(tx) },
		Suite:      func(tx pgx.Tx) storerules.SuiteTx { return d.suiteTx(tx) },
		SaveSource: saveSuiteSource,
		OwnsTask: func(ctx context.Context, tx pgx.Tx, owner, taskID string) error {
			return ownsTask(ctx, tx, owner, taskID)
		},
		ShareTeamID: func(ctx context.Context, tx pgx.Tx, principal string) (any, error) {
			return shareTeamID(ctx, tx, principal)
		},
		Now: func() time.Time { return ts(d.now()) },
	}
}

// found maps the error of a read of the one object kind id: no row is
// NOT_FOUND.
func found(err error, kind, id string) error { return storerules.Found(err, kind, id, mapErr) }

// engineOn is a storerules.Engine whose statements run on q: the pool, or
// a transaction.
func (d *DB) engineOn(q querier) storerules.Engine {
	e := engineOf(q)
	e.Now = func() time.Time { return d.now() }
	return e
}

// anyOf is a storerules.Engine's In: one array parameter.
func anyOf(col string, ids []string) (string, []any) { return col + ` = ANY($1)`, []any{ids} }

// engineOf is engineOn without a clock, for what is given the time.
func engineOf(q querier) storerules.Engine {
	row := func(ctx context.Context, dest []any, sql string, args ...any) error {
		return mapErr(q.QueryRow(ctx, sql, args...).Scan(dest...))
	}
	e := storerules.Engine{Read: row, Write: row, Stored: stored, In: anyOf, VisibleTo: visibleTo, ForUpdate: ` FOR UPDATE`}
	e.Exec = func(ctx context.Context, sql string, args ...any) (int64, error) {
		tag, err := q.Exec(ctx, sql, args...)
		return tag.RowsAffected(), mapErr(err)
	}
	e.Query = func(ctx context.Context, each func(storerules.Row) error, sql string, args ...any) error {
		rows, err := q.Query(ctx, sql, args...)
		if err != nil {
			return mapErr(err)
		}
		defer rows.Close()
		for rows.Next() {
			if err := each(rows); err != nil {
				return mapErr(err)
			}
		}
		return mapErr(rows.Err())
	}
	return e
}

// changed is the outcome of a statement that must change a row: err
// mapped, else none if it changed none.
func changed(tag pgconn.CommandTag, err error, none error) error {
	if err != nil {
		return mapErr(err)
	}
	if tag.RowsAffected() == 0 {
		return none
	}
	return nil
}
