package mcpserver

import (
	"context"
	"errors"
	"io"
	"regexp"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/duet-test/duet"
)

// StdioOptions configure ServeStdioWith.
type StdioOptions struct {
	// NoFastPath sends every request through the SDK's session (see
	// stdiofast.go); false means plain tools/call requests of read-only
	// tools are answered without it, byte for byte as the SDK would.
	NoFastPath bool
}

// ServeStdio serves one client over newline-delimited JSON-RPC on r and w
// (stdin and stdout) as caller until the client disconnects or ctx ends.
// Nothing but JSON-RPC is ever written to w. A client may write its
// requests and close its end at once: every request read before the end
// of input is answered before ServeStdio returns.
func (s *Server) ServeStdio(ctx context.Context, caller duet.Caller, r io.ReadCloser, w io.WriteCloser) error {
	return s.ServeStdioWith(ctx, caller, r, w, StdioOptions{})
}

// ServeStdioWith is ServeStdio with options.
func (s *Server) ServeStdioWith(ctx context.Context, caller duet.Caller, r io.ReadCloser, w io.WriteCloser, o StdioOptions) error {
	caller.Source = duet.SourceStdio
	ctx = duet.NewContextWithCaller(ctx, caller)
	t := drainingTransport{Transport: &mcp.IOTransport{Reader: r, Writer: w}}
	if !o.NoFastPath {
		// The fast path reads the client's stream (stdiofast.go) and hands
		// the SDK's connection the messages it does not answer, through a
		// pipe; closing the connection closes both.
		pr, pw := io.Pipe()
		out := &replyWriter{w: w}
		t.Transport = &mcp.IOTransport{Reader: bothClose{pr, r}, Writer: out}
		// Fast calls live as long as the connection, not ctx: as on the
		// SDK path, the end of the read loop and Close cancel them.
		fctx, stop := context.WithCancel(context.WithoutCancel(ctx))
		t.fast = &stdioFast{s: s, ctx: fctx, stop: stop, in: r, pipe: pw, out: out, calls: make(chan func())}
	}
	err := s.srv.Run(ctx, t)
	if t.fast != nil {
		t.fast.end()
	}
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// drainingTransport connects like the transport it wraps, but its
// connection reports the end of input only once every request it read has
// been answered. The SDK ends a session at the end of input and cancels
// the requests still in flight, so without it a client that pipes its
// requests and closes stdin gets no answers. With fast set, the connection
// also answers plain tools/call requests itself (stdiofast.go).
type drainingTransport struct {
	mcp.Transport
	fast *stdioFast
}

func (t drainingTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	dc := &drainingConn{Connection: c, fast: t.fast, pending: map[jsonrpc.ID]bool{}, answered: make(chan struct{}, 1), closed: make(chan struct{})}
	if t.fast != nil {
		go dc.frames()
	}
	return dc, nil
}

type drainingConn struct {
	mcp.Connection
	fast      *stdioFast // nil: every request goes to the SDK
	mu        sync.Mutex
	pending   map[jsonrpc.ID]bool // ids of requests handed to the SDK and not yet answered
	answered  chan struct{}       // a response was written
	closed    chan struct{}
	closeOnce sync.Once

	// The fast path's view of the session, under mu (stdiofast.go).
	inFlight       map[jsonrpc.ID]context.CancelFunc // fast calls not yet answered, by id
	running        int                               // fast calls whose reply is not yet written
	watch          map[jsonrpc.ID]watched            // initialize and 2026-07-28 requests handed to the SDK
	handshake      string                            // the version the SDK negotiated in its answer to initialize
	sessionVersion string                            // the version the SDK recorded for the session (watched)
	ready          bool                              // the SDK's session is initialized (it answered one of watch)
}

func (c *drainingConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err != nil {
		if errors.Is(err, io.EOF) {
			c.drain(ctx)
		}
		if c.fast != nil {
			// As the SDK cancels its requests in flight when its read
			// loop ends, and writes no reply after that.
			c.fast.quiet()
			c.fast.stop()
		}
		return nil, err
	}
	if req, ok := msg.(*jsonrpc.Request); ok && req.ID.IsValid() {
		c.mu.Lock()
		c.pending[req.ID] = true
		c.mu.Unlock()
	}
	return msg, nil
}

// bothClose reads from the first and closes both.
type bothClose struct {
	io.ReadCloser
	also io.Closer
}

func (b bothClose) Close() error {
	return errors.Join(b.ReadCloser.Close(), b.also.Close())
}

// drain waits until every request read has been answered, the connection
// is closed or ctx ends.
func (c *drainingConn) drain(ctx context.Context) {
	for {
		c.mu.Lock()
		n := len(c.pending) + c.running
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

// signal wakes drain.
func (c *drainingConn) signal() {
	select {
	case c.answered <- struct{}{}:
	default:
	}
}

func (c *drainingConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	resp, ok := msg.(*jsonrpc.Response)
	if ok {
		if r := codedBeforeInitialize(resp); r != resp {
			resp, msg = r, r
		}
	}
	if ok && c.fast != nil {
		// Before the write: the client may send its next request as soon as
		// it has read this answer.
		c.observe(resp)
	}
	err := c.Connection.Write(ctx, msg)
	if ok && resp.ID.IsValid() {
		c.mu.Lock()
		delete(c.pending, resp.ID)
		c.mu.Unlock()
		c.signal()
	}
	return err
}

func (c *drainingConn) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		if c.fast != nil {
			// The session closing cancels fast calls in flight; the SDK
			// writes nothing once it is closing.
			c.fast.quiet()
			c.fast.stop()
		}
	})
	return c.Connection.Close()
}

// sdkBeforeInitialize is how the go-sdk (v1.8.0, ServerSession.handle)
// words its refusal of a request that comes before initialize: a plain
// error, which its jsonrpc2 layer sends with code 0 — a JSON-RPC error
// without a code.
var sdkBeforeInitialize = regexp.MustCompile(`^method "[^"]*" is invalid during session initialization$`)

// codedBeforeInitialize gives the SDK's refusal of a request before
// initialize the code the SDK's own JSON-RPC layer has for a request that
// is not valid (jsonrpc.CodeInvalidRequest, -32600: what it answers a call
// of a notification, or a duplicate request id in flight), its message
// unchanged. Every reply of a stdio session goes through here, with the
// fast path and without, so both answer alike. Any other response is
// returned as it is.
func codedBeforeInitialize(resp *jsonrpc.Response) *jsonrpc.Response {
	var coded *jsonrpc.Error
	if resp.Error == nil || errors.As(resp.Error, &coded) || !sdkBeforeInitialize.MatchString(resp.Error.Error()) {
		return resp
	}
	r := *resp
	r.Error = &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: resp.Error.Error()}
	return &r
}
