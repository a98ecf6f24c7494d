package sqlite

import (
	"database/sql/driver"
	"errors"
	"reflect"
	"sync/atomic"
	"unsafe"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// walIndex is a read-only view of the header of a WAL database's
// wal-index (https://sqlite.org/walformat.html, "The WAL-Index Header"), as
// SQLite itself maps it for one connection. Every commit rewrites that
// header (mxFrame grows, iChange is incremented, a restarted WAL gets new
// salts), and a reader's snapshot is whatever the header says when its
// read transaction starts; so while the header's bytes stay as they were,
// nothing was committed to the database, by anyone, and the read cache's
// counter is known without a read transaction (epochConn).
//
// The view is the region SQLite has already mapped for the connection,
// asked of the connection's own file (SQLITE_FCNTL_FILE_POINTER, then the
// VFS's xShmMap without extending). Nothing here opens, maps or closes a
// file of the database: POSIX locks belong to the process, and closing any
// descriptor of a file drops every lock the process holds on it — SQLite's
// DMS lock and read marks on the -shm file among them (an earlier version
// that mapped the -shm file itself did exactly that; see
// docs/architecture.md).
//
// The region stays mapped for as long as the connection is open (SQLite
// unmaps it when the connection's wal-index is closed), so a walIndex is
// dropped before its connection is closed. An open WAL-mode connection
// keeps a shared lock on the database file, so no process can take the
// database out of WAL mode (and write without the wal-index) while the
// view is used.
type walIndex struct {
	hdr *[walHdrWords]uint32
}

// walHdrSize is the size of one copy of the wal-index header; the first
// copy is what a writer updates last, after its memory barrier.
const (
	walHdrSize  = 48
	walHdrWords = walHdrSize / 4
	// walIndexPage is the size of a wal-index region (WALINDEX_PGSZ).
	walIndexPage = 32768
)

type walHeader [walHdrWords]uint32

var errNoWALIndex = errors.New("the connection has no wal-index mapped")

// openWALIndex returns the view of the wal-index header SQLite maps for
// conn, a connection of modernc.org/sqlite in WAL mode that has already
// read (so its wal-index is open); an error when conn is of another driver
// or version, or has no wal-index mapped.
func openWALIndex(conn driver.Conn) (*walIndex, error) {
	db, tls, err := sqliteHandle(conn)
	if err != nil {
		return nil, err
	}
	p := tls.Alloc(8)
	defer tls.Free(8)
	*(*uintptr)(ptr(p)) = 0
	// A NULL name is the main database.
	if rc := sqlite3.Xsqlite3_file_control(tls, db, 0, sqlite3.SQLITE_FCNTL_FILE_POINTER, p); rc != sqlite3.SQLITE_OK {
		return nil, errNoWALIndex
	}
	file := *(*uintptr)(ptr(p))
	if file == 0 {
		return nil, errNoWALIndex
	}
	methods := (*sqlite3.Tsqlite3_io_methods)(ptr((*sqlite3.Tsqlite3_file)(ptr(file)).FpMethods))
	if methods == nil || methods.FiVersion < 2 || methods.FxShmMap == 0 {
		return nil, errNoWALIndex
	}
	// xShmMap(file, region 0, WALINDEX_PGSZ, bExtend=0, &region): the
	// region already mapped, or NULL; with bExtend=0 it never grows the
	// -shm file.
	*(*uintptr)(ptr(p)) = 0
	shmMap := *(*func(*libc.TLS, uintptr, int32, int32, int32, uintptr) int32)(unsafe.Pointer(&struct{ uintptr }{methods.FxShmMap}))
	if rc := shmMap(tls, file, 0, walIndexPage, 0, p); rc != sqlite3.SQLITE_OK {
		return nil, errNoWALIndex
	}
	region := *(*uintptr)(ptr(p))
	if region == 0 {
		return nil, errNoWALIndex
	}
	return &walIndex{hdr: (*[walHdrWords]uint32)(ptr(region))}, nil
}

// header returns the first copy of the header as it is now; a commit that
// is being published while it is read may be seen or not, as by any
// reader, and is seen by the next call.
func (w *walIndex) header() walHeader {
	var h walHeader
	for i := range h {
		h[i] = atomic.LoadUint32(&w.hdr[i])
	}
	return h
}

// sqliteHandle returns the sqlite3* and the C thread state of a
// modernc.org/sqlite connection. The driver does not export them: they
// are read from its connection's fields db and tls, and an upgrade that
// renames them makes this fail, so the counter is read by statement again
// (TestEpochFromWALIndex fails).
func sqliteHandle(conn driver.Conn) (uintptr, *libc.TLS, error) {
	v := reflect.ValueOf(conn)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct || v.Elem().Type().PkgPath() != "modernc.org/sqlite" {
		return 0, nil, errNoWALIndex
	}
	db, tls := v.Elem().FieldByName("db"), v.Elem().FieldByName("tls")
	if db.Kind() != reflect.Uintptr || tls.Kind() != reflect.Pointer || tls.Type() != reflect.TypeFor[*libc.TLS]() || db.Uint() == 0 || tls.IsNil() {
		return 0, nil, errNoWALIndex
	}
	return uintptr(db.Uint()), (*libc.TLS)(tls.UnsafePointer()), nil
}

// ptr turns an address SQLite handed out (C memory, outside Go's heap)
// into a pointer.
func ptr(addr uintptr) unsafe.Pointer {
	return *(*unsafe.Pointer)(unsafe.Pointer(&addr))
}
