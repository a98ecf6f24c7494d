package recorder

import "github.com/duet-test/duet/internal/browser"

// TestSession is the live session's browser session, for a test that
// reads the page as a person looking at the live view would.
func (l *Live) TestSession() *browser.Session { return l.s }

// TestWorld is the recorder's world in the current document (0 before
// the page's script said hello).
func (l *Live) TestWorld() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.world
}

// Lit is lit.
var Lit = lit
