package mcpserver

import (
	"context"
	"errors"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/duet-test/duet"
)

// ServeStdio serves one client over newline-delimited JSON-RPC on r and w
// (stdin and stdout) as caller until the client disconnects or ctx ends.
// Nothing but JSON-RPC is ever written to w. A client may write its
// requests and close its end at once: every request read before the end
// of input is answered before ServeStdio returns.
func (s *Server) ServeStdio(ctx context.Context, caller duet.Caller, r io.ReadCloser, w io.WriteCloser) error {
	caller.Source = duet.SourceStdio
	ctx = duet.NewContextWithCaller(ctx, caller)
	err := s.srv.Run(ctx, drainingTransport{&mcp.IOTransport{Reader: r, Writer: w}})
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// drainingTransport connects like the transport it wraps, but its
// connection reports the end of input only once every request it read has
// been answered. The SDK ends a session at the end of input and cancels
// the requests still in flight, so without it a client that pipes its
// requests and closes stdin gets no answers.
type drainingTransport struct{ mcp.Transport }

func (t drainingTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &drainingConn{Connection: c, pending: map[any]bool{}, answered: make(chan struct{}, 1), closed: make(chan struct{})}, nil
}

type drainingConn struct {
	mcp.Connection
	mu        sync.Mutex
	pending   map[any]bool  // ids of requests read and not yet answered
	answered  chan struct{} // a response was written
	closed    chan struct{}
	closeOnce sync.Once
}

func (c *drainingConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err == nil {
		if req, ok := msg.(*jsonrpc.Request); ok && req.ID.IsValid() {
			c.mu.Lock()
			c.pending[req.ID.Raw()] = true
			c.mu.Unlock()
		}
		return msg, nil
	}
	if errors.Is(err, io.EOF) {
		c.drain(ctx)
	}
	return nil, err
}

// drain waits until every request read has been answered, the connection
// is closed or ctx ends.
func (c *drainingConn) drain(ctx context.Context) {
	for {
		c.mu.Lock()
		n := len(c.pending)
		c.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-c.answered:
		case <-c.closed:
			return
		case <-ctx.Done():
			return
		}
	}
}

func (c *drainingConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	err := c.Connection.Write(ctx, msg)
	if resp, ok := msg.(*jsonrpc.Response); ok && resp.ID.IsValid() {
		c.mu.Lock()
		delete(c.pending, resp.ID.Raw())
		c.mu.Unlock()
		select {
		case c.answered <- struct{}{}:
		default:
		}
	}
	return err
}

func (c *drainingConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return c.Connection.Close()
}
