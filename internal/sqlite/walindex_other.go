//go:build !unix

package sqlite

import "errors"

// walIndex is not mapped on this system: the read cache's counter is read
// by a statement every time (epochConn).
type walIndex struct{}

const walHdrSize = 48

type walHeader [walHdrSize]byte

var errNoWALIndex = errors.New("the wal-index is not mapped on this system")

func openWALIndex(string) (*walIndex, error) { return nil, errNoWALIndex }

func (*walIndex) header() (walHeader, bool) { return walHeader{}, false }

func (*walIndex) close() {}
