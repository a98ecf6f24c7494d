// Package sqlite implements duet.Store on an embedded SQLite database
// (modernc.org/sqlite, pure Go) in WAL mode with foreign keys and a busy
// timeout. Migrations are embedded and applied, forward only, at Open.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"syscall"
	"time"

	sqlite3 "modernc.org/sqlite"
	sqlite3lib "modernc.org/sqlite/lib"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/storerules"
)

//go:embed migrations/*.sql
var migrations embed.FS

// DB is a Duet store on one SQLite database file.
type DB struct {
	db *sql.DB
	q  *stmtCache // reads and single statements outside transactions
	// writers queues this handle's writers for the write lock (writers.go).
	writers *writerQueue
	cache   *readCache // cached reads (cache.go)
	path    string
	now     func() time.Time
	mcp     mcpStmts // prepared statements of mcpclient.go

	readOnly bool // opened by Options.ReadOnlyFallback

	// The stores and writes written once, in storerules, on this engine
	// (rules).
	storerules.Stores
	storerules.Writes[*cachedTx]
}

var _ duet.Store = (*DB)(nil)

// Options tune Open. The zero value is fine.
type Options struct {
	// MaxOpenConns limits connections; 0 means 8. SQLite has one writer at a
	// time whatever this says; readers run in parallel in WAL mode.
	MaxOpenConns int
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// ReadOnlyFallback, for commands that only read, opens an existing
	// database that cannot be written — its file or directory is
	// read-only, or on a read-only file system — read-only instead of
	// failing (mode=ro; immutable=1 when SQLite cannot even create its
	// shared-memory file there, which assumes nobody writes it meanwhile).
	// Nothing is migrated then: a schema behind this duet is UNAVAILABLE
	// naming `duet migrate up`, and writes fail.
	ReadOnlyFallback bool
}

// Open opens (creating if needed) the SQLite database at path and applies
// pending migrations. The directory is created with mode 0700 when missing.
// Errors name the path; they are *duet.Error with CodeUnavailable, or
// CodeSchemaTooNew for a file migrated by a newer duet.
func Open(ctx context.Context, path string, opts *Options) (*DB, error) {
	if opts == nil {
		opts = &Options{}
	}
	d, err := openWritable(ctx, path, opts)
	if err == nil || !opts.ReadOnlyFallback || !unwritable(err) {
		return d, err
	}
	abs, aerr := filepath.Abs(path)
	if st, serr := os.Stat(abs); aerr != nil || serr != nil || st.Size() == 0 {
		return nil, err // nothing to read
	}
	ro, rerr := openReadOnly(ctx, abs, opts)
	if rerr != nil {
		if errors.Is(rerr, errSchemaMismatch) {
			return nil, rerr // readable, but behind or ahead of this duet
		}
		return nil, err
	}
	return ro, nil
}

// unwritable reports whether err says the database cannot be written.
func unwritable(err error) bool {
	if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS) {
		return true
	}
	var se *sqlite3.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3lib.SQLITE_READONLY, sqlite3lib.SQLITE_CANTOPEN, sqlite3lib.SQLITE_PERM:
			return true
		}
	}
	return false
}

// openReadOnly opens the existing database at abs read-only: mode=ro, or
// immutable when SQLite could not read it that way — a WAL database in a
// directory where it cannot create its -wal and -shm files, which also
// means no writer has it open (a writer keeps a -wal file beside it). It
// applies no migration and refuses a schema this duet does not match
// (errSchemaMismatch).
func openReadOnly(ctx context.Context, abs string, opts *Options) (*DB, error) {
	modes := []bool{false, true} // immutable?
	if _, err := os.Stat(abs + "-wal"); errors.Is(err, fs.ErrNotExist) && !writableDir(filepath.Dir(abs)) {
		// mode=ro would retry for seconds before it gives up.
		modes = []bool{true}
	}
	var err error
	for _, immutable := range modes {
		q := url.Values{}
		q.Set("mode", "ro")
		if immutable {
			q.Set("immutable", "1")
		}
		q.Add("_pragma", "busy_timeout(10000)")
		q.Add("_pragma", "foreign_keys(1)")
		var sdb *sql.DB
		if sdb, err = sql.Open("sqlite", "file:"+abs+"?"+q.Encode()); err != nil {
			return nil, duet.WrapError(duet.CodeUnavailable, err, "cannot open database %s: %v", abs, err)
		}
		if err = checkCurrent(ctx, sdb, abs); err == nil {
			n := max(opts.MaxOpenConns, 8)
			sdb.SetMaxOpenConns(n)
			sdb.SetMaxIdleConns(n)
			return newDB(sdb, "file:"+abs+"?"+q.Encode(), abs, opts, true), nil
		}
		sdb.Close()
		if errors.Is(err, errSchemaMismatch) {
			return nil, err
		}
	}
	return nil, duet.WrapError(duet.CodeUnavailable, err, "cannot open database %s read-only: %v", abs, storerules.RootCause(err))
}

// writableDir reports whether a file can be created in dir.
func writableDir(dir string) bool {
	f, err := os.CreateTemp(dir, ".duet-probe-*")
	if err != nil {
		return false
	}
	f.Close()
	os.Remove(f.Name())
	return true
}

// ReadOnly reports whether the database was opened read-only
// (Options.ReadOnlyFallback).
func (d *DB) ReadOnly() bool { return d.readOnly }

func openWritable(ctx context.Context, path string, opts *Options) (*DB, error) {
	if path == "" {
		return nil, duet.Errorf(duet.CodeUnavailable, "empty database path")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, duet.WrapError(duet.CodeUnavailable, err, "database path %s: %v", path, err)
	}
	dir := filepath.Dir(abs)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, duet.WrapError(duet.CodeUnavailable, err, "cannot create database directory %s: %v", dir, storerules.RootCause(err))
	}
	// Probe writability up front: SQLite would otherwise fail later, on the
	// first write, with a less helpful message.
	if f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE, 0o600); err != nil {
		return nil, duet.WrapError(duet.CodeUnavailable, err, "cannot open database %s for writing: %v", abs, storerules.RootCause(err))
	} else {
		f.Close()
	}
	q := url.Values{}
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Set("_txlock", "immediate")
	dsn := "file:" + abs + "?" + q.Encode()
	sdb, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, duet.WrapError(duet.CodeUnavailable, err, "cannot open database %s: %v", abs, err)
	}
	n := opts.MaxOpenConns
	if n <= 0 {
		n = 8
	}
	sdb.SetMaxOpenConns(n)
	sdb.SetMaxIdleConns(n)
	sdb.SetConnMaxIdleTime(0)
	if err := sdb.PingContext(ctx); err != nil {
		sdb.Close()
		return nil, duet.WrapError(duet.CodeUnavailable, err, "cannot open database %s: %v", abs, err)
	}
	if err := migrate(ctx, sdb); err != nil {
		sdb.Close()
		if de := (*duet.Error)(nil); errors.As(err, &de) {
			code := duet.CodeUnavailable
			if de.Code == duet.CodeSchemaTooNew {
				code = de.Code
			}
			return nil, duet.WrapError(code, err, "database %s: %s", abs, de.Message)
		}
		return nil, duet.WrapError(duet.CodeUnavailable, err, "cannot prepare database %s: %v", abs, storerules.RootCause(err))
	}
	return newDB(sdb, dsn, abs, opts, false), nil
}

// newDB is the store on sdb, opened with dsn, of the file at abs.
func newDB(sdb *sql.DB, dsn, abs string, opts *Options, readOnly bool) *DB {
	w := newWriterQueue()
	d := &DB{db: sdb, q: &stmtCache{db: sdb, stmts: map[string]*sql.Stmt{}, writers: w}, writers: w,
		cache: newReadCache(sdb, dsn, !readOnly), path: abs, now: opts.Now, readOnly: readOnly}
	d.q.tx = d.tx
	d.rules()
	if d.now == nil {
		d.now = time.Now
	}
	return d
}

func migrate(ctx context.Context, db *sql.DB) error {
	return migrateFrom(ctx, db, schemaSnapshot)
}

// migrateFrom brings db to the embedded migrations' schema: an empty
// database from snapshot first (snapshot.go), then goose for what is left.
func migrateFrom(ctx context.Context, db *sql.DB, snapshot string) error {
	if schemaCurrent(ctx, db) {
		return nil // what goose would conclude, without building it (a cold start)
	}
	if err := createFromSnapshot(ctx, db, snapshot); err != nil {
		return err
	}
	if schemaCurrent(ctx, db) {
		return nil
	}
	p, err := provider(db)
	if err != nil {
		return err
	}
	if err := checkNotNewer(ctx, p); err != nil {
		return err
	}
	_, err = p.Up(ctx)
	return err
}

// Path returns the database file's absolute path.
func (d *DB) Path() string { return d.path }

// SQL returns the underlying *sql.DB (for tests and maintenance).
func (d *DB) SQL() *sql.DB { return d.db }

// Ping checks the database answers.
func (d *DB) Ping(ctx context.Context) error {
	if err := d.db.PingContext(ctx); err != nil {
		return duet.WrapError(duet.CodeUnavailable, err, "database unavailable")
	}
	return nil
}

// Close closes the database.
func (d *DB) Close() error {
	d.q.close()
	d.cache.close()
	return d.db.Close()
}

// tx runs fn in a transaction: BEGIN IMMEDIATE, so that it never fails on
// upgrading a read lock, taken in turn with the process's other writers
// (writerQueue). The pending audit record of
// ctx (duet.AuditIntent), if any, is written in the same transaction: a
// governed call's change is never stored without it.
func (d *DB) tx(ctx context.Context, fn func(*cachedTx) error) error {
	// Deferred first, run last: the statements the transaction found
	// unprepared are prepared once its connection is back, after the
	// write is counted.
	defer d.q.prepareWanted(ctx)
	defer d.q.writes.Add(1) // after the commit (cache.go)
	in := duet.AuditIntentFrom(ctx)
	var ins *sql.Stmt
	if in.Pending() {
		// Prepared before the transaction (see AppendAudit).
		var err error
		if ins, err = d.q.stmt(ctx, logInsert(auditInto, 1)); err != nil {
			return mapErr(err)
		}
	}
	release, err := d.writers.wait(ctx)
	if err != nil {
		return mapErr(err)
	}
	defer release() // deferred after prepareWanted: run before it
	sqlTx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return mapErr(err)
	}
	// A panic in fn must give the connection back before prepareWanted
	// takes one (a no-op after Commit).
	defer sqlTx.Rollback()
	tx := &cachedTx{Tx: sqlTx, c: d.q}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	var rec *duet.AuditRecord
	if ins != nil {
		rec = in.Take()
	}
	if rec != nil {
		if err := insertAudit(ctx, tx.StmtContext(ctx, ins), rec); err != nil {
			tx.Rollback()
			in.Released()
			return err
		}
	}
	err = mapErr(tx.Commit())
	if rec != nil {
		if err == nil {
			in.Stored(rec.ID)
		} else {
			in.Released()
		}
	}
	return err
}

// mapErr turns driver errors into *duet.Error where a code is meaningful.
func mapErr(err error) error {
	if err == nil {
		return nil
	}
	if coded := storerules.CodedError(err); coded != nil {
		return coded
	}
	var se *sqlite3.Error
	if errors.As(err, &se) {
		switch se.Code() {
		case sqlite3lib.SQLITE_CONSTRAINT_UNIQUE, sqlite3lib.SQLITE_CONSTRAINT_PRIMARYKEY:
			return duet.WrapError(duet.CodeConflict, err, "already exists")
		case sqlite3lib.SQLITE_CONSTRAINT_FOREIGNKEY:
			return duet.WrapError(duet.CodeNotFound, err, "referenced object not found")
		}
		switch se.Code() & 0xff {
		case sqlite3lib.SQLITE_BUSY, sqlite3lib.SQLITE_LOCKED:
			return duet.WrapError(duet.CodeUnavailable, err, "database busy")
		case sqlite3lib.SQLITE_READONLY, sqlite3lib.SQLITE_CANTOPEN, sqlite3lib.SQLITE_FULL, sqlite3lib.SQLITE_IOERR:
			return duet.WrapError(duet.CodeUnavailable, err, "database unavailable")
		}
	}
	return fmt.Errorf("sqlite: %w", err)
}

func micros(t time.Time) int64 { return t.UnixMicro() }

// stored is micros as a storerules.StoredTime.
func stored(t time.Time) any { return micros(t) }

func fromMicros(v int64) time.Time { return time.UnixMicro(v).UTC() }

func nullMicros(t *time.Time) sql.NullInt64 {
	if t == nil {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: t.UnixMicro(), Valid: true}
}

func ptrTime(v sql.NullInt64) *time.Time {
	if !v.Valid {
		return nil
	}
	t := fromMicros(v.Int64)
	return &t
}

// readRow is a storerules.RowFunc that reads.
func (d *DB) readRow(ctx context.Context, dest []any, q string, args ...any) error {
	return mapErr(d.q.QueryRowContext(ctx, q, args...).Scan(dest...))
}

// writeRow is a storerules.RowFunc that writes, in a transaction (tx).
func (d *DB) writeRow(ctx context.Context, dest []any, q string, args ...any) error {
	return d.tx(ctx, func(tx *cachedTx) error {
		return mapErr(tx.QueryRowContext(ctx, q, args...).Scan(dest...))
	})
}

// ChargeLLMUsage adds c to the user's day (storerules.ChargeLLMUsage).
func (d *DB) ChargeLLMUsage(ctx context.Context, c duet.LLMCharge) (duet.LLMUsage, bool, error) {
	return storerules.ChargeLLMUsage(ctx, c, micros(d.now()), d.writeRow, d.readRow)
}

// FindLLMUsage returns the usage of user on day.
func (d *DB) FindLLMUsage(ctx context.Context, userID, day string) (duet.LLMUsage, error) {
	return storerules.FindLLMUsage(ctx, userID, day, d.readRow)
}

// rules sets up the stores and writes written in storerules on this
// engine: reads and single statements through the statement cache,
// row-returning writes in a transaction (tx).
func (d *DB) rules() {
	e := d.engineOn(d.q)
	e.Write = d.writeRow
	on := func(tx *cachedTx) storerules.Engine { return d.engineOn(tx) }
	e.Tx = storerules.InTx(d.tx, on)
	d.Stores = storerules.NewStores(e)
	d.Writes = storerules.Writes[*cachedTx]{
		Tx:         d.tx,
		On:         on,
		Held:       held,
		Run:        func(tx *cachedTx) storerules.RunTx { return d.runTx(tx) },
		Suite:      func(tx *cachedTx) storerules.SuiteTx { return d.suiteTx(tx) },
		SaveSource: saveSuiteSource,
		OwnsTask: func(ctx context.Context, tx *cachedTx, owner, taskID string) error {
			return ownsTask(ctx, tx, owner, taskID)
		},
		ShareTeamID: func(ctx context.Context, tx *cachedTx, principal string) (any, error) {
			return shareTeamID(ctx, tx, principal)
		},
		Now: func() time.Time { return d.now() },
	}
}

// found maps the error of a read of the one object kind id: no row is
// NOT_FOUND.
func found(err error, kind, id string) error { return storerules.Found(err, kind, id, mapErr) }

// engineOn is a storerules.Engine whose statements run on q: the
// statement cache, or a transaction.
func (d *DB) engineOn(q querier) storerules.Engine {
	e := engineOf(q)
	e.Now = func() time.Time { return d.now() }
	return e
}

// inList is a storerules.Engine's In: a parameter for each id.
func inList(col string, ids []string) (string, []any) {
	return col + ` IN (` + placeholders(len(ids)) + `)`, anys(ids)
}

// engineOf is engineOn without a clock, for what is given the time.
func engineOf(q querier) storerules.Engine {
	row := func(ctx context.Context, dest []any, query string, args ...any) error {
		return mapErr(q.QueryRowContext(ctx, query, args...).Scan(dest...))
	}
	e := storerules.Engine{Read: row, Write: row, Stored: stored, In: inList, VisibleTo: visibleTo}
	e.Exec = func(ctx context.Context, query string, args ...any) (int64, error) {
		res, err := q.ExecContext(ctx, query, args...)
		if err != nil {
			return 0, mapErr(err)
		}
		n, _ := res.RowsAffected()
		return n, nil
	}
	e.Query = func(ctx context.Context, each func(storerules.Row) error, query string, args ...any) error {
		_, err := all(ctx, q, func(r rowScanner) (struct{}, error) { return struct{}{}, each(r) }, query, args...)
		return err
	}
	return e
}
