package httpapi

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"
)

// ServerOptions bound Duet's HTTP server. Zero values mean the defaults.
type ServerOptions struct {
	// MaxConns caps the connections open at once; 0 means 1024. At the cap,
	// the server closes the connection idle the longest — a keep-alive
	// connection between requests, or one that has sent nothing for a
	// second — to accept a new one; when every connection is busy, new ones
	// wait in the listen queue.
	MaxConns int
	// ReadHeaderTimeout bounds the time to send a request's headers; 0
	// means 10s.
	ReadHeaderTimeout time.Duration
	// IdleTimeout closes a keep-alive connection idle that long; 0 means
	// 60s.
	IdleTimeout time.Duration
	// BodyTimeout and MinBodyRate bound the time a request body may take:
	// BodyTimeout plus one second for every MinBodyRate bytes received so
	// far. A body that falls behind is cut off (its request fails with
	// TIMEOUT) and its connection closed. 0 means 10s and 8 KiB/s.
	BodyTimeout time.Duration
	MinBodyRate int
	// MaxUnauthenticated caps the requests of one client address (an IPv4
	// address, an IPv6 /64) that read their bodies before presenting valid
	// credentials — sign-in forms, OAuth client registrations and token
	// requests — at once. Another one is refused (RATE_LIMITED) and its
	// connection closed. 0 means 8.
	MaxUnauthenticated int
}

// Server is Duet's HTTP server: read-header and idle timeouts, a deadline
// on request bodies that follows their size (a minimum rate), a cap on
// header size, a cap on open connections, and a per-address budget of
// requests that send bodies before authenticating. (No overall read or
// write timeout: replies may stream for as long as a call runs.)
type Server struct {
	srv    *http.Server
	lim    *limiter
	o      ServerOptions
	mu     sync.Mutex
	unauth map[netip.Prefix]int // requests reading an unauthenticated body, by address
}

// NewServer returns the server for h.
func NewServer(h http.Handler, o ServerOptions) *Server {
	if o.MaxConns <= 0 {
		o.MaxConns = 1024
	}
	if o.ReadHeaderTimeout <= 0 {
		o.ReadHeaderTimeout = 10 * time.Second
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = 60 * time.Second
	}
	if o.BodyTimeout <= 0 {
		o.BodyTimeout = 10 * time.Second
	}
	if o.MinBodyRate <= 0 {
		o.MinBodyRate = 8 << 10
	}
	if o.MaxUnauthenticated <= 0 {
		o.MaxUnauthenticated = 8
	}
	lim := &limiter{max: o.MaxConns, open: map[*limitedConn]*connInfo{}, grace: min(time.Second, o.ReadHeaderTimeout)}
	lim.cond = sync.NewCond(&lim.mu)
	s := &Server{lim: lim, o: o, unauth: map[netip.Prefix]int{}}
	s.srv = &http.Server{
		Handler:           s.guard(h),
		ReadHeaderTimeout: o.ReadHeaderTimeout,
		IdleTimeout:       o.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		ConnState:         lim.setState,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			if lc, ok := c.(*limitedConn); ok {
				return context.WithValue(ctx, connKey{}, lc)
			}
			return ctx
		},
	}
	return s
}

// Serve accepts connections on ln until Shutdown.
func (s *Server) Serve(ln net.Listener) error {
	s.lim.mu.Lock()
	s.lim.Listener = ln
	s.lim.mu.Unlock()
	return s.srv.Serve(s.lim)
}

// Shutdown stops accepting connections and waits for requests in flight
// (see http.Server.Shutdown).
func (s *Server) Shutdown(ctx context.Context) error { return s.srv.Shutdown(ctx) }

// Conns reports the connections open now and the most ever open at once.
func (s *Server) Conns() (open, peak int) {
	s.lim.mu.Lock()
	defer s.lim.mu.Unlock()
	return len(s.lim.open), s.lim.peak
}

// limiter is a listener that keeps at most max connections open.
type limiter struct {
	net.Listener
	max int
	// grace is how long a new connection may stay silent before it can be
	// closed to make room (its request may be on its way).
	grace time.Duration

	mu     sync.Mutex
	cond   *sync.Cond // signalled when a connection closes
	open   map[*limitedConn]*connInfo
	peak   int
	closed bool
}

type connInfo struct {
	state http.ConnState
	since time.Time // when it entered state
}

type limitedConn struct {
	net.Conn
	l    *limiter
	once sync.Once
	body bodyClock
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.mu.Lock()
		delete(c.l.open, c)
		c.l.cond.Broadcast()
		c.l.mu.Unlock()
	})
	return err
}

// Accept waits until a connection may be opened — closing the one idle
// the longest if the cap is reached — and accepts it.
func (l *limiter) Accept() (net.Conn, error) {
	l.mu.Lock()
	for len(l.open) >= l.max && !l.closed {
		v, wait := l.victimLocked(time.Now())
		if v != nil {
			l.mu.Unlock()
			v.Close()
			l.mu.Lock()
			continue
		}
		if wait > 0 {
			// A new connection becomes a candidate then.
			t := time.AfterFunc(wait, func() { l.mu.Lock(); l.cond.Broadcast(); l.mu.Unlock() })
			l.cond.Wait()
			t.Stop()
			continue
		}
		l.cond.Wait()
	}
	closed := l.closed
	l.mu.Unlock()
	if closed {
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	lc := &limitedConn{Conn: c, l: l}
	l.mu.Lock()
	l.open[lc] = &connInfo{state: http.StateNew, since: time.Now()}
	l.peak = max(l.peak, len(l.open))
	l.mu.Unlock()
	return lc, nil
}

// victimLocked picks the connection to close to make room: the one idle
// the longest, else the one silent the longest since it connected (for at
// least the grace period); never one serving a request. With no victim,
// wait is how long until a new connection's grace ends (0: none).
func (l *limiter) victimLocked(now time.Time) (victim *limitedConn, wait time.Duration) {
	var best *limitedConn
	var bestInfo *connInfo
	for c, i := range l.open {
		if i.state == http.StateNew {
			if left := l.grace - now.Sub(i.since); left > 0 {
				if wait == 0 || left < wait {
					wait = left
				}
				continue
			}
		}
		if i.state != http.StateIdle && i.state != http.StateNew {
			continue
		}
		switch {
		case best == nil,
			i.state == http.StateIdle && bestInfo.state == http.StateNew,
			i.state == bestInfo.state && i.since.Before(bestInfo.since):
			best, bestInfo = c, i
		}
	}
	if best != nil {
		// Not a victim twice while it closes.
		bestInfo.state = http.StateClosed
	}
	return best, wait
}

// setState is the http.Server's ConnState hook.
func (l *limiter) setState(c net.Conn, st http.ConnState) {
	lc, ok := c.(*limitedConn)
	if !ok {
		return
	}
	if st != http.StateActive {
		// The request is over (its body, the server's reading of what the
		// handler left of it, the reply): its body deadline no longer
		// applies, and must not cut the next request or an idle wait.
		lc.body.stop()
	}
	l.mu.Lock()
	if i, ok := l.open[lc]; ok && i.state != http.StateClosed {
		i.state, i.since = st, time.Now()
	}
	l.mu.Unlock()
}

// Close closes the listener; an Accept waiting for room returns.
func (l *limiter) Close() error {
	l.mu.Lock()
	l.closed = true
	l.cond.Broadcast()
	l.mu.Unlock()
	return l.Listener.Close()
}
