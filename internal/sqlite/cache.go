package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/storerules"
)

// readCache keeps the results of the reads every governed call repeats —
// a personal token by hash (auth), a task as its viewer sees it (the
// ownership check), a task's case count, latest run, contract alerts and
// schedules (its overview) — for as long as nothing they depend on has
// changed.
//
// Invalidation is by the database itself: migration 00013 keeps one
// counter, cache_epoch.n, that triggers on tokens, tasks, task_shares,
// teams, team_members, cases, runs and executions (and, since 00015 and
// 00038, mcp_servers, mcp_tools, contract_alerts and schedules) increment
// on every insert, update and delete, by whoever writes — this process, another
// `duet` on the same file (a CLI revoking a token, a worker) or a
// hand-written statement. Every cached read first reads the counter (one
// single-row lookup by primary key, far cheaper than the reads it saves)
// and is served from memory only when the counter still holds the value it
// had before the entry was read; otherwise the whole cache is dropped. So
// a revoked token or an unshared task takes effect at the next request,
// with no time bound to document.
//
// Entries are copied on the way out (callers may change what they get);
// failures and misses are never cached.
type readCache struct {
	mu    sync.RWMutex
	epoch int64
	m     map[string]any
	// counter reads cache_epoch.n on a connection of its own.
	counter *epochConn
}

// newReadCache makes the cache of the handle db (opened with dsn); wal
// is true when it is opened for writing in WAL mode (the counter is then
// read only after the wal-index header moved), false for a read-only or
// immutable handle.
func newReadCache(db *sql.DB, dsn string, wal bool) *readCache {
	return &readCache{m: map[string]any{}, counter: &epochConn{db: db, dsn: dsn, wal: wal}}
}

func (c *readCache) close() {
	if c != nil {
		c.counter.close()
	}
}

// epochQuery reads the counter.
const epochQuery = `SELECT n FROM cache_epoch WHERE id = 1`

// epochConn reads the counter on one connection of its own, opened from
// the driver with the pool's DSN and used through the driver's interfaces:
// the pooled statement spent two thirds of its time in database/sql (taking
// and returning a connection, rows, scanning) around a read that SQLite
// answers in a few microseconds. Each read is a statement of its own (a read
// transaction of its own in WAL mode), so it sees every commit before it, by
// any connection of any process, exactly as the pooled read does. One
// caller at a time: another that finds it busy reads through the pool
// rather than wait, and any failure closes it and falls back to the pool
// (a failure to open it, for good).
//
// Through its connection it watches the wal-index header (walIndex): a read
// transaction, even of one row, cost 5–16 µs of every invoke() (the WAL
// read lock, its system calls). When the header has not moved since the
// counter was last read, no commit happened since, by anyone, and the
// counter is what it was; otherwise it is read, the header having been
// taken first, so the value read is never older than the header kept.
type epochConn struct {
	db     *sql.DB
	dsn    string
	wal    bool // a WAL database: the wal-index header may be watched
	mu     sync.Mutex
	conn   driver.Conn
	stmt   driver.Stmt
	dest   []driver.Value
	failed bool // cannot be opened: the pool reads the counter
	closed bool

	index     *walIndex // nil until found, or when it cannot be
	walFailed bool      // the wal-index cannot be found: every read queries
	last      walHeader // the header taken before the last query
	lastN     int64     // what that query read
	haveLast  bool
	queries   atomic.Int64 // counter reads by statement (tests)
}

// read returns the counter, or false when the caller should read it
// through the pool.
func (e *epochConn) read() (int64, bool) {
	if !e.mu.TryLock() {
		return 0, false
	}
	defer e.mu.Unlock()
	if e.failed || e.closed {
		return 0, false
	}
	ctx := context.Background() // nothing for the driver to watch
	if e.conn == nil {
		conn, err := e.db.Driver().Open(e.dsn)
		if err != nil {
			e.failed = true
			return 0, false
		}
		pc, ok := conn.(driver.ConnPrepareContext)
		if !ok {
			conn.Close()
			e.failed = true
			return 0, false
		}
		stmt, err := pc.PrepareContext(ctx, epochQuery)
		if err != nil {
			conn.Close()
			e.failed = true
			return 0, false
		}
		if _, ok := stmt.(driver.StmtQueryContext); !ok {
			stmt.Close()
			conn.Close()
			e.failed = true
			return 0, false
		}
		e.conn, e.stmt, e.dest = conn, stmt, make([]driver.Value, 1)
	}
	var hdr walHeader
	hdrOK := false
	if e.index != nil {
		if hdr, hdrOK = e.index.header(), true; e.haveLast && hdr == e.last {
			return e.lastN, true
		}
	}
	e.haveLast = false
	e.queries.Add(1)
	rows, err := e.stmt.(driver.StmtQueryContext).QueryContext(ctx, nil)
	if err != nil {
		e.reset()
		return 0, false
	}
	err = rows.Next(e.dest)
	if cerr := rows.Close(); err == nil {
		err = cerr
	}
	n, ok := e.dest[0].(int64)
	if err != nil || !ok {
		e.reset()
		return 0, false
	}
	switch {
	case hdrOK:
		e.last, e.lastN, e.haveLast = hdr, n, true
	case e.index == nil && e.wal && !e.walFailed:
		// Found once the connection has read: its wal-index is then open
		// and mapped (walIndex), if it may be watched (watchable).
		if !watchable(ctx, e.conn) {
			e.walFailed = true
		} else if e.index, err = openWALIndex(e.conn); err != nil {
			e.index, e.walFailed = nil, true
		}
	}
	return n, true
}

// watchable reports whether conn's wal-index may be watched: its database
// is in WAL mode with the normal locking mode. In another journal mode,
// asking the VFS for the wal-index would create one; with exclusive
// locking the wal-index is in the heap, and the VFS would open a -shm
// file (and lock it) for the asking.
func watchable(ctx context.Context, conn driver.Conn) bool {
	return pragma(ctx, conn, "journal_mode") == "wal" && pragma(ctx, conn, "locking_mode") == "normal"
}

// pragma returns the value of PRAGMA name on conn, in lower case; "" when
// it cannot be read.
func pragma(ctx context.Context, conn driver.Conn, name string) string {
	stmt, err := conn.(driver.ConnPrepareContext).PrepareContext(ctx, "PRAGMA "+name)
	if err != nil {
		return ""
	}
	defer stmt.Close()
	q, ok := stmt.(driver.StmtQueryContext)
	if !ok {
		return ""
	}
	rows, err := q.QueryContext(ctx, nil)
	if err != nil {
		return ""
	}
	defer rows.Close()
	dest := make([]driver.Value, 1)
	if rows.Next(dest) != nil {
		return ""
	}
	v, _ := dest[0].(string)
	return strings.ToLower(v)
}

// reset closes the connection after a failure; the next read opens
// another.
func (e *epochConn) reset() {
	e.index = nil // before the connection that keeps it mapped
	e.haveLast = false
	if e.stmt != nil {
		e.stmt.Close()
	}
	if e.conn != nil {
		e.conn.Close()
	}
	e.conn, e.stmt = nil, nil
}

func (e *epochConn) close() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.closed = true
	e.reset()
}

// maxCacheEntries bounds the cache; reaching it drops every entry.
const maxCacheEntries = 10000

// epoch returns the current value of the counter, or false when it cannot
// be read (a database behind migration 00013, a closed handle): the caller
// then reads without the cache.
//
// Inside a duet.ReadScope the counter is read once for the scope's reads,
// and again only after this handle wrote something (d.q.writes).
func (d *DB) epoch(ctx context.Context) (int64, bool) {
	if d.cache == nil {
		return 0, false
	}
	scope := duet.ReadScopeFrom(ctx)
	writes := d.q.writes.Load()
	if scope != nil {
		if v, ok := scope.Load(d); ok {
			if m := v.(scopedEpoch); m.writes == writes {
				return m.epoch, true
			}
		}
	}
	n, ok := d.cache.counter.read()
	if !ok {
		// Without the request's cancellation: the driver watches a
		// cancellable context with a goroutine of its own per statement,
		// which cost more than this one-row lookup itself.
		if err := d.q.QueryRowContext(context.WithoutCancel(ctx), epochQuery).Scan(&n); err != nil {
			return 0, false
		}
	}
	if scope != nil {
		scope.Store(d, scopedEpoch{epoch: n, writes: writes})
	}
	return n, true
}

// scopedEpoch is the counter as read in a duet.ReadScope, and this
// handle's write count when it was read.
type scopedEpoch struct {
	epoch  int64
	writes uint64
}

func (c *readCache) get(epoch int64, key string) (any, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.epoch != epoch {
		return nil, false
	}
	v, ok := c.m[key]
	return v, ok
}

// put stores v, read after the counter was seen at epoch.
func (c *readCache) put(epoch int64, key string, v any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case epoch < c.epoch:
		return // read before a change this cache has already seen
	case epoch > c.epoch || len(c.m) >= maxCacheEntries:
		clear(c.m)
		c.epoch = epoch
	}
	c.m[key] = v
}

// cached runs read through the cache under key; clone copies a value on
// its way out of the cache.
func cached[T any](ctx context.Context, d *DB, key string, read func() (T, error), clone func(T) T) (T, error) {
	epoch, ok := d.epoch(ctx)
	if !ok {
		return read()
	}
	if v, hit := d.cache.get(epoch, key); hit {
		return clone(v.(T)), nil
	}
	v, err := read()
	if err != nil {
		return v, err
	}
	d.cache.put(epoch, key, clone(v))
	return v, nil
}

// cachedTask is a task as cached: its post-run actions are kept as stored
// (JSON), so that every copy handed out gets its own.
type cachedTask struct {
	task      duet.Task
	postRun   string
	runConfig string
}

func cloneToken(t *duet.Token) *duet.Token {
	c := *t
	c.ExpiresAt, c.LastUsedAt = clonePtr(t.ExpiresAt), clonePtr(t.LastUsedAt)
	return &c
}

// clonePtr returns a pointer to a copy of *p, or nil.
func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	c := *p
	return &c
}

func cloneRuns(runs []*duet.Run) []*duet.Run {
	out := make([]*duet.Run, len(runs))
	for i, r := range runs {
		c := *r
		c.StartedAt, c.FinishedAt = clonePtr(r.StartedAt), clonePtr(r.FinishedAt)
		if r.PostRun != nil {
			c.PostRun = make([]*duet.PostRunResult, len(r.PostRun))
			for j, p := range r.PostRun {
				c.PostRun[j] = clonePtr(p)
			}
		}
		out[i] = &c
	}
	return out
}

func cloneTask(c cachedTask) (*duet.Task, error) {
	t := c.task
	t.SharedWith = slices.Clone(c.task.SharedWith)
	if t.SharedWith == nil {
		t.SharedWith = []string{}
	}
	var err error
	if t.PostRun, err = storerules.DecodePostRun(t.ID, c.postRun); err != nil {
		return nil, err
	}
	return &t, storerules.DecodeRunConfig(&t, c.runConfig)
}

func cloneExtras(x overviewExtras) overviewExtras {
	var c overviewExtras
	if x.alerts != nil {
		c.alerts = make([]*duet.ContractAlert, len(x.alerts))
		for i, a := range x.alerts {
			ac := *a
			ac.Problems, ac.Changes = slices.Clone(a.Problems), slices.Clone(a.Changes)
			c.alerts[i] = &ac
		}
	}
	if x.schedules != nil {
		c.schedules = make([]*duet.Schedule, len(x.schedules))
		for i, sc := range x.schedules {
			scc := *sc
			scc.LastFireAt = clonePtr(sc.LastFireAt)
			scc.Tags = slices.Clone(sc.Tags)
			c.schedules[i] = &scc
		}
	}
	return c
}
