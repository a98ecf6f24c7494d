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
	"github.com/duet-test/duet/internal/mcpserver/fast"
)

// StdioOptions configure ServeStdioWith.
type StdioOptions struct {
	// NoFastPath sends every request of this session through the SDK's
	// session; otherwise the stdio fast path (package fast) answers plain
	// tools/call requests of read-only tools without it, byte for byte as
	// the SDK would, when the server's fast paths are on
	// (Options.FastPath).
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
	var fastStdio *fast.Stdio
	if s.fast != nil && !o.NoFastPath {
		// The fast path reads the client's stream and hands the SDK's
		// connection the messages it does not answer; at the end of input
		// it answers its own calls before the drain waits for the SDK's.
		fastStdio = s.fast.Stdio(ctx, r, w)
		t.Transport = fastStdio
	}
	err := s.srv.Run(ctx, t)
	if fastStdio != nil {
		fastStdio.End()
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
// requests and closes stdin gets no answers. The transport it wraps is the
// SDK's IOTransport, or the stdio fast path's in front of it.
type drainingTransport struct {
	mcp.Transport
}

func (t drainingTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &drainingConn{Connection: c, pending: map[jsonrpc.ID]bool{}, owed: fast.NewOwed()}, nil
}

type drainingConn struct {
	mcp.Connection
	mu      sync.Mutex
	pending map[jsonrpc.ID]bool // ids of requests the SDK read and has not yet answered
	owed    *fast.Owed          // waits for pending to empty
}

func (c *drainingConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err != nil {
		if errors.Is(err, io.EOF) {
			c.drain(ctx)
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

// drain waits until every request read has been answered, the connection
// is closed or ctx ends.
func (c *drainingConn) drain(ctx context.Context) {
	c.owed.Wait(ctx, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.pending) > 0
	})
}

func (c *drainingConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	resp, ok := msg.(*jsonrpc.Response)
	if ok {
		if r := codedBeforeInitialize(resp); r != resp {
			resp, msg = r, r
		}
	}
	err := c.Connection.Write(ctx, msg)
	if ok && resp.ID.IsValid() {
		c.mu.Lock()
		delete(c.pending, resp.ID)
		c.mu.Unlock()
		c.owed.Answered()
	}
	return err
}

func (c *drainingConn) Close() error {
	c.owed.Close()
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
