package httpapi

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/auth"
)

// connKey keys the *limitedConn of a request in its context.
type connKey struct{}

// guard bounds the request bodies of next: each has a deadline that
// follows what it has sent (BodyTimeout plus a second per MinBodyRate
// bytes), and a request that reads its body before presenting valid
// credentials takes one of its address's MaxUnauthenticated places while it
// runs. Every request carries an auth mark (auth.WithRequestMark) that tells
// the two apart.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := auth.WithRequestMark(r.Context())
		lc, _ := ctx.Value(connKey{}).(*limitedConn)
		r = r.WithContext(ctx)
		if lc == nil || r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		b := &guardedBody{ReadCloser: r.Body, s: s, w: w, ctx: ctx, clock: &lc.body, start: time.Now(), addr: clientPrefix(r.RemoteAddr)}
		// The clock runs until the connection leaves the request (setState):
		// it also bounds what the server reads of a body the handler left.
		b.gen = lc.body.start(lc.Conn, b.start.Add(s.o.BodyTimeout))
		r.Body = b
		defer func() {
			b.release()
			if strings.EqualFold(w.Header().Get("Connection"), "close") {
				// The reply closes the connection: what is left of the
				// body is not read (the server would read up to 256 KiB
				// of it, at the client's pace, to keep the connection).
				lc.body.cutNow(b.gen)
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// clientPrefix is the address a per-address budget counts: the client's
// IPv4 address, or the /64 of its IPv6 address (what one host is usually
// given).
func clientPrefix(remoteAddr string) netip.Prefix {
	ap, err := netip.ParseAddrPort(remoteAddr)
	if err != nil {
		return netip.Prefix{}
	}
	a := ap.Addr().Unmap().WithZone("")
	if a.Is4() {
		return netip.PrefixFrom(a, 32)
	}
	p, _ := a.Prefix(64)
	return p
}

// take takes one of addr's places for a request without credentials;
// false when they are all taken.
func (s *Server) take(addr netip.Prefix) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.unauth[addr] >= s.o.MaxUnauthenticated {
		return false
	}
	s.unauth[addr]++
	return true
}

func (s *Server) give(addr netip.Prefix) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.unauth[addr]--; s.unauth[addr] <= 0 {
		delete(s.unauth, addr)
	}
}

// guardedBody is a request body under guard.
type guardedBody struct {
	io.ReadCloser
	s     *Server
	w     http.ResponseWriter
	ctx   context.Context
	clock *bodyClock
	gen   uint64
	start time.Time
	addr  netip.Prefix

	// Read and release run on the handler's goroutine.
	received int64
	checked  bool // the per-address budget was consulted
	slot     bool // holds one of addr's places
	err      error
}

func (b *guardedBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if !b.checked {
		b.checked = true
		if !auth.Authenticated(b.ctx) {
			if !b.s.take(b.addr) {
				b.err = duet.Errorf(duet.CodeRateLimited, "too many requests without credentials are sending their bodies from your address at once (%d); try again shortly",
					b.s.o.MaxUnauthenticated)
				b.w.Header().Set("Connection", "close")
				b.clock.cutNow(b.gen) // not a byte more of it is read
				return 0, b.err
			}
			b.slot = true
		}
	}
	n, err := b.ReadCloser.Read(p)
	b.received += int64(n)
	switch {
	case err == io.EOF:
		// All of it arrived in time. The server now waits for the client's
		// next bytes in the background (to see it go away): no deadline
		// may cut that wait.
		b.clock.stop()
	case err != nil && b.clock.wasCut(b.gen):
		b.err = duet.WrapError(duet.CodeTimeout, err, "the request body arrived slower than %d bytes a second (after the first %s); the connection is closed",
			b.s.o.MinBodyRate, b.s.o.BodyTimeout)
		b.w.Header().Set("Connection", "close")
		return n, b.err
	case n > 0:
		b.clock.extend(b.gen, b.start.Add(b.s.o.BodyTimeout+time.Duration(b.received)*time.Second/time.Duration(b.s.o.MinBodyRate)))
	}
	return n, err
}

// release gives back the address's place when the handler is done.
func (b *guardedBody) release() {
	if b.slot {
		b.slot = false
		b.s.give(b.addr)
	}
}

// bodyClock is the deadline of the request body a connection is reading.
// When it passes, the connection's reads are cut (a read deadline in the
// past), whoever reads: the handler, or the server reading what the handler
// left of the body.
type bodyClock struct {
	mu       sync.Mutex
	conn     net.Conn
	gen      uint64 // one per request; stop moves it on
	timer    *time.Timer
	deadline time.Time
	cut      bool
}

// start starts the clock of a new request body on conn, due at deadline,
// and returns the request's generation.
func (c *bodyClock) start(conn net.Conn, deadline time.Time) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopLocked()
	c.conn, c.deadline, c.cut = conn, deadline, false
	g := c.gen
	c.timer = time.AfterFunc(time.Until(deadline), func() { c.fire(g) })
	return g
}

// extend moves the deadline of generation g later.
func (c *bodyClock) extend(g uint64, deadline time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if g == c.gen && deadline.After(c.deadline) {
		c.deadline = deadline
	}
}

func (c *bodyClock) fire(g uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if g != c.gen || c.timer == nil {
		return // stopped
	}
	if left := time.Until(c.deadline); left > 0 {
		c.timer.Reset(left) // extended since
		return
	}
	c.timer, c.cut = nil, true
	c.conn.SetReadDeadline(time.Now())
}

// cutNow cuts the reads of generation g at once (a refused request: the
// rest of its body is not read).
func (c *bodyClock) cutNow(g uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if g != c.gen || c.timer == nil {
		return
	}
	c.timer.Stop()
	c.timer, c.cut = nil, true
	c.conn.SetReadDeadline(time.Now())
}

// wasCut reports whether the clock of generation g passed its deadline.
func (c *bodyClock) wasCut(g uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return g == c.gen && c.cut
}

// stop stops the clock: the body is read, or the request is over.
func (c *bodyClock) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopLocked()
}

func (c *bodyClock) stopLocked() {
	c.gen++
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
}
