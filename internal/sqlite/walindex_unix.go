//go:build unix

package sqlite

import (
	"errors"
	"os"
	"runtime/debug"
	"syscall"
)

// walIndex is a read-only view of the header of a WAL database's
// wal-index, the -shm file every connection of every process maps
// (https://sqlite.org/walformat.html, "The WAL-Index Header"). Every commit
// rewrites that header (mxFrame grows, iChange is incremented, a restarted
// WAL gets new salts), so while its bytes stay as they were, nothing was
// committed to the database, by anyone. The read cache's counter is then
// known without a read transaction (epochConn).
//
// It is opened only beside an open connection of the epochConn: that
// connection holds a shared lock on the -shm file's DMS byte and, in WAL
// mode, a shared lock on the database file for its life, so no process can
// truncate the -shm file (SQLite does that only to the first opener, under
// an exclusive DMS lock) or take the database out of WAL mode while it is
// mapped. A fault reading it anyway is recovered as "changed".
type walIndex struct {
	mem []byte
}

// walHdrSize is the size of one copy of the wal-index header; the first
// copy is what a writer updates last, after its memory barrier.
const walHdrSize = 48

type walHeader [walHdrSize]byte

var errNoWALIndex = errors.New("no wal-index to map")

// openWALIndex maps the first page of path's -shm file read-only.
func openWALIndex(path string) (*walIndex, error) {
	f, err := os.Open(path + "-shm")
	if err != nil {
		return nil, err
	}
	defer f.Close() // the mapping outlives the descriptor
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() < 2*walHdrSize {
		return nil, errNoWALIndex
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, 2*walHdrSize, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, err
	}
	return &walIndex{mem: mem}, nil
}

// header returns the first copy of the header as it is now, or false when
// it cannot be read.
func (w *walIndex) header() (h walHeader, ok bool) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	copy(h[:], w.mem[:walHdrSize])
	return h, true
}

func (w *walIndex) close() {
	syscall.Munmap(w.mem)
}
