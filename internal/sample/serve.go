package sample

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"syscall"
	"time"

	"github.com/duet-test/duet"
)

// shutdownTimeout bounds a graceful shutdown; connections still open after it
// are closed.
const shutdownTimeout = 5 * time.Second

// StartOrderServer serves [OrderServerHandler] over orders on addr (for
// example "127.0.0.1:0") and returns the MCP endpoint URL, like
// "http://127.0.0.1:41234/mcp". The server runs until ctx is done or stop is
// called; stop shuts it down gracefully (closing open MCP sessions), waits for
// it and may be called more than once.
// It returns INVALID_ARGUMENT when addr is not a loopback address and
// UNAVAILABLE when it cannot listen.
func StartOrderServer(ctx context.Context, addr string, orders *Orders, token string, opts ...OrderServerOption) (url string, stop func(), err error) {
	h, srv := orderServerHandler(orders, token, opts...)
	rs, err := startServer(ctx, addr, h, func() {
		for ss := range srv.Sessions() {
			_ = ss.Close() // ends hanging SSE streams so Shutdown need not wait for them
		}
	})
	if err != nil {
		return "", nil, err
	}
	return rs.baseURL() + "/mcp", func() { _ = rs.stop() }, nil
}

// RunOrderServer serves a freshly seeded order book ([NewOrders]) over MCP on
// addr, prints "order MCP server listening on http://HOST:PORT/mcp" to out
// and serves until ctx is done, then shuts down gracefully and returns nil.
// It returns INVALID_ARGUMENT when addr is not a loopback address,
// UNAVAILABLE when it cannot listen, and the server's error if serving fails.
func RunOrderServer(ctx context.Context, addr, token string, out io.Writer, opts ...OrderServerOption) error {
	h, srv := orderServerHandler(NewOrders(), token, opts...)
	rs, err := startServer(ctx, addr, h, func() {
		for ss := range srv.Sessions() {
			_ = ss.Close()
		}
	})
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(out, "order MCP server listening on %s/mcp\n", rs.baseURL()); err != nil {
		return errors.Join(fmt.Errorf("sample.RunOrderServer: %w", err), rs.stop())
	}
	return rs.wait()
}

// runningServer is an http.Server serving on a loopback listener.
type runningServer struct {
	srv      *http.Server
	addr     net.Addr
	ctx      context.Context
	served   chan struct{} // closed when Serve has returned
	serveErr error         // Serve's error other than ErrServerClosed; read after served
	stopOnce sync.Once
	stopErr  error
}

// startServer listens on the loopback address addr and serves h until ctx is
// done or stop is called. onShutdown, if not nil, runs when shutdown starts.
func startServer(ctx context.Context, addr string, h http.Handler, onShutdown func()) (*runningServer, error) {
	ln, err := listenLoopback(ctx, addr)
	if err != nil {
		return nil, err
	}
	rs := &runningServer{
		srv:    &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second},
		addr:   ln.Addr(),
		ctx:    ctx,
		served: make(chan struct{}),
	}
	if onShutdown != nil {
		rs.srv.RegisterOnShutdown(onShutdown)
	}
	go func() {
		defer close(rs.served)
		if err := rs.srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			rs.serveErr = err
		}
	}()
	go func() {
		select {
		case <-ctx.Done():
			_ = rs.stop()
		case <-rs.served:
		}
	}()
	return rs, nil
}

// baseURL is "http://HOST:PORT" of the listener.
func (rs *runningServer) baseURL() string { return "http://" + rs.addr.String() }

// stop shuts the server down gracefully, closing connections that outlive
// shutdownTimeout, and waits until it has stopped.
func (rs *runningServer) stop() error {
	rs.stopOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(rs.ctx), shutdownTimeout)
		defer cancel()
		if err := rs.srv.Shutdown(ctx); err != nil {
			_ = rs.srv.Close()
		}
		<-rs.served
		if rs.serveErr != nil {
			rs.stopErr = fmt.Errorf("sample: serving %s: %w", rs.addr, rs.serveErr)
		}
	})
	return rs.stopErr
}

// wait blocks until ctx is done (then stops gracefully) or serving fails.
func (rs *runningServer) wait() error {
	select {
	case <-rs.ctx.Done():
	case <-rs.served:
	}
	return rs.stop()
}

// listenLoopback listens on addr, which must name a loopback host
// ("127.0.0.1", "::1" or "localhost"); an empty host means 127.0.0.1 and an
// empty addr means "127.0.0.1:0".
func listenLoopback(ctx context.Context, addr string) (net.Listener, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, duet.WrapError(duet.CodeInvalidArgument, err, "invalid listen address %q: want HOST:PORT", addr)
	}
	switch host {
	case "", "localhost":
		host = "127.0.0.1"
	default:
		if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
			return nil, duet.Errorf(duet.CodeInvalidArgument, "listen address %q is not a loopback address; sample servers bind 127.0.0.1 only", addr)
		}
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", net.JoinHostPort(host, port))
	if err != nil {
		cause := err
		if oe := (*net.OpError)(nil); errors.As(err, &oe) && oe.Err != nil {
			cause = oe.Err
		}
		if errors.Is(err, syscall.EADDRINUSE) {
			return nil, duet.WrapError(duet.CodeUnavailable, err, "cannot listen on %s: the address is in use by another process", addr)
		}
		return nil, duet.WrapError(duet.CodeUnavailable, err, "cannot listen on %s: %v", addr, cause)
	}
	return ln, nil
}
