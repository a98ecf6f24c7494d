package fast

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/duet-test/duet/internal/sdkjson"
)

// The stdio fast path is a transport for the SDK's session: it reads the
// client's stream itself, answers the plain tools/call requests of
// read-only catalog tools without the SDK's session — whose JSON decoding
// (a 32 KiB decoder per unmarshal, _meta decoded twice) and jsonrpc2
// machinery were most of the cost of a stdio call (docs/performance.md) —
// and hands every other message to the SDK's own connection (an
// IOTransport) unchanged, through a pipe. It shares the HTTP fast path's
// parts: the envelope reader, callEligible, the governed call (result) and
// the reply's bytes (encodeReply).
//
// It reads the client's stream as the SDK's transport does (frames, below)
// and serves only what the SDK would answer the same way, in a session
// state where it would:
//
//   - A handshake-era call (no protocol version in _meta) once the SDK has
//     answered initialize with a result, at a version the HTTP fast path
//     serves (the go-sdk v1.8 server serves tools/call as soon as
//     initialize was handled; it does not wait for
//     notifications/initialized: ServerSession.checkInitialized is a
//     no-op).
//   - A 2026-07-28 call (the _meta triple, no initialize) whose _meta is
//     one modernMetaEligible accepts, once the SDK's session is initialized
//     (it answered initialize, or a 2026-07-28 request, with a result: the
//     SDK records the first such request's _meta as the session's
//     parameters, so a call answered here before that would leave the
//     session uninitialized for the requests that follow).
//   - Of a tool the fast paths serve to 2026-07-28 clients in either era
//     (modernTool: read-only, never asks, never streams, never a task), so
//     the session's capabilities — elicitation, the Tasks extension —
//     cannot change the answer.
//
// Anything else — another method, a progress token, other _meta, an
// unknown tool, non-object arguments, an id the SDK still has in flight —
// goes on to the SDK's connection, having run nothing. A fast call runs
// in its own goroutine (the SDK runs calls concurrently too), and its reply
// goes out through the writer the SDK's connection writes with, one
// message per Write, one writer at a time (replyWriter); an error reply
// goes through the SDK's connection itself, which encodes it as the SDK
// encodes its own.
//
// notifications/cancelled naming a fast call cancels its context (the
// notification still goes on to the SDK, as before); the tool's answer to
// a cancelled context is written, as the SDK writes its handler's. The end
// of input returns from Read only once the fast calls are answered (the
// SDK's own requests are the caller's to wait for), and the session
// closing, or its read loop ending, cancels the ones in flight and drops
// their replies (quiet), as the SDK drops its handlers'.

// Stdio is the stdio transport of one session with the fast path (an
// mcp.Transport for the SDK's Server.Run). End must be called once the
// session is over.
type Stdio struct {
	p    *Paths
	ctx  context.Context // the session's caller; cancelled by stop
	stop context.CancelFunc
	in   io.ReadCloser // the client's stream
	out  *replyWriter  // the client's stdout, shared with the SDK's connection

	wg    sync.WaitGroup // fast calls' workers
	calls chan func()    // to an idle worker (run)

	mu   sync.Mutex
	done bool // the session is over: no new fast call (wg.Wait has begun)
}

// Stdio returns the stdio transport of a session on in and out whose
// caller is in ctx. Fast calls live as long as the connection, not ctx: as
// on the SDK path, the end of the read loop and Close cancel them.
func (p *Paths) Stdio(ctx context.Context, in io.ReadCloser, out io.WriteCloser) *Stdio {
	fctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	return &Stdio{p: p, ctx: fctx, stop: stop, in: in, out: &replyWriter{w: out}, calls: make(chan func())}
}

// Connect connects the SDK's IOTransport to what the fast path leaves of
// the client's stream, and starts reading it.
func (t *Stdio) Connect(ctx context.Context) (mcp.Connection, error) {
	pr, pw := io.Pipe()
	inner, err := (&mcp.IOTransport{Reader: bothClose{pr, t.in}, Writer: t.out}).Connect(ctx)
	if err != nil {
		return nil, err
	}
	c := &stdioConn{Connection: inner, t: t, pipe: pw, pending: map[jsonrpc.ID]bool{},
		owed: NewOwed()}
	go c.frames()
	return c, nil
}

// End stops the fast path and waits for its calls to return.
func (t *Stdio) End() {
	t.mu.Lock()
	t.done = true
	t.mu.Unlock()
	t.stop()
	t.wg.Wait()
}

// run runs a fast call on an idle worker of the session, or a new one. A
// worker waits for the next call until the session ends, so its stack —
// grown to the depth of a catalog call by the first — serves the next
// calls as it is (a goroutine per call grew one every time: a sixth of the
// CPU of a stdio call in the profile). Called with t.mu held.
func (t *Stdio) run(call func()) {
	select {
	case t.calls <- call:
		return
	default:
	}
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		for {
			call()
			select {
			case call = <-t.calls:
			case <-t.ctx.Done():
				return
			}
		}
	}()
}

// bothClose reads from the first and closes both.
type bothClose struct {
	io.ReadCloser
	also io.Closer
}

func (b bothClose) Close() error {
	return errors.Join(b.ReadCloser.Close(), b.also.Close())
}

// stdioConn is the SDK's connection with the fast path in front of it.
type stdioConn struct {
	mcp.Connection
	t    *Stdio
	pipe *io.PipeWriter // what the SDK's connection reads: the messages left to it

	mu             sync.Mutex
	pending        map[jsonrpc.ID]bool               // ids of requests handed to the SDK and not yet answered
	inFlight       map[jsonrpc.ID]context.CancelFunc // fast calls not yet answered, by id
	running        int                               // fast calls whose reply is not yet written
	watch          map[jsonrpc.ID]watched            // initialize and 2026-07-28 requests handed to the SDK
	handshake      string                            // the version the SDK negotiated in its answer to initialize
	sessionVersion string                            // the version the SDK recorded for the session (watched)
	ready          bool                              // the SDK's session is initialized (it answered one of watch)

	owed      *Owed // the fast calls whose reply is not yet written (running)
	closeOnce sync.Once

	replyMu sync.Mutex
	silent  bool // the session's read side ended or it closed: replies are dropped (quiet)
}

// Read reads the SDK's next message. At the end of input it first waits
// for the fast calls to be answered; when the stream ends, the fast calls
// still in flight are cancelled and their replies dropped.
func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err != nil {
		if errors.Is(err, io.EOF) {
			c.drain(ctx)
		}
		// As the SDK cancels its requests in flight when its read loop
		// ends, and writes no reply after that.
		c.quiet()
		c.t.stop()
		return nil, err
	}
	return msg, nil
}

// drain waits until every fast call has been answered, the connection is
// closed or ctx ends.
func (c *stdioConn) drain(ctx context.Context) {
	c.owed.Wait(ctx, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.running > 0
	})
}

// Owed lets a stdio connection's end of input wait for the answers it
// still owes: Wait returns once owing reports none, the connection is
// closed (Close) or ctx ends; Answered wakes it after each answer. The
// SDK's connection (mcpserver's drainingConn) and the fast path's use it
// alike. The zero value is not usable: make one with NewOwed.
type Owed struct {
	answered  chan struct{} // an answer was written
	closed    chan struct{}
	closeOnce sync.Once
}

// NewOwed returns an Owed with nothing closed.
func NewOwed() *Owed {
	return &Owed{answered: make(chan struct{}, 1), closed: make(chan struct{})}
}

// Wait waits until owing returns false, Close is called or ctx ends.
// owing is called again after each Answered.
func (o *Owed) Wait(ctx context.Context, owing func() bool) {
	for owing() {
		select {
		case <-o.answered:
		case <-o.closed:
			return
		case <-ctx.Done():
			return
		}
	}
}

// Answered wakes Wait to look again; it never blocks.
func (o *Owed) Answered() {
	select {
	case o.answered <- struct{}{}:
	default:
	}
}

// Close ends Wait, now and for good. It may be called more than once.
func (o *Owed) Close() {
	o.closeOnce.Do(func() { close(o.closed) })
}

// Write writes a message of the SDK, following the session's state in its
// answers (observe) and the ids it has in flight.
func (c *stdioConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	resp, ok := msg.(*jsonrpc.Response)
	if ok {
		// Before the write: the client may send its next request as soon
		// as it has read this answer.
		c.observe(resp)
	}
	err := c.Connection.Write(ctx, msg)
	if ok && resp.ID.IsValid() {
		c.mu.Lock()
		delete(c.pending, resp.ID)
		c.mu.Unlock()
	}
	return err
}

// Close closes the connection; it cancels the fast calls in flight, whose
// replies are dropped: the SDK writes nothing once it is closing.
func (c *stdioConn) Close() error {
	c.closeOnce.Do(func() {
		c.owed.Close()
		c.quiet()
		c.t.stop()
	})
	return c.Connection.Close()
}

// reply writes a fast call's reply with write, unless the session has gone
// quiet.
func (c *stdioConn) reply(write func()) {
	c.replyMu.Lock()
	defer c.replyMu.Unlock()
	if !c.silent {
		write()
	}
}

// quiet drops the replies of the fast calls still in flight, as the SDK's
// JSON-RPC connection writes nothing once its read side has ended — the
// client's stream failed (a frame that is not JSON), or ended before the
// drain could answer everything — or it was closed: such a call's answer,
// CANCELLED by then, is never sent (jsonrpc2's write refuses once
// readErr or connClosing is set). A reply written before is out, as the
// SDK's would be.
func (c *stdioConn) quiet() {
	c.replyMu.Lock()
	c.silent = true
	c.replyMu.Unlock()
}

// The client's stream is cut into messages exactly as the SDK's IOTransport
// cuts it (newIOConnLimited in go-sdk v1.8.0 mcp/transport.go): a standard
// library json.Decoder over a reader that bounds a frame to the SDK's
// DefaultMaxLineLength, each value followed by a newline (\n or \r) or the
// end of the stream, or the stream ends with that error. A frame is read
// by the envelope reader (Read, as the SDK's jsonrpc2.DecodeMessage reads
// it) and, if the fast path takes it, never reaches the SDK; every other
// frame — and every error — is handed to the SDK's connection unchanged,
// which reads it again as it always did. Decoding here rather than in the
// SDK spares the SDK's two unmarshals of every message (readBatch tries a
// batch first), each of which builds a 32 KiB decoder.

// errTrailingData is what the SDK reports for bytes after a value on its
// line.
var errTrailingData = errors.New("invalid trailing data at the end of stream")

// frames reads the client's stream until it ends or fails, answering what
// the fast path may and forwarding the rest to the SDK's connection.
func (c *stdioConn) frames() {
	limiter := &frameLimiter{r: c.t.in, limit: mcp.DefaultMaxLineLength}
	dec := json.NewDecoder(limiter)
	for {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if err == nil {
			var tr [1]byte
			if n, readErr := dec.Buffered().Read(tr[:]); n > 0 {
				if tr[0] != '\n' && tr[0] != '\r' {
					err = errTrailingData
				}
			} else if readErr != nil && readErr != io.EOF {
				err = readErr
			}
		}
		if err != nil {
			// The SDK's connection reads the same error at the same place
			// (after the messages before it), and ends as it would have.
			// A failed stream ends the session here, where the SDK's own
			// reader would have met it: fast calls not answered by now are
			// not answered (quiet), as the SDK's handlers are not once its
			// read side has failed; at the end of input the drain answers
			// everything first (Read).
			if !errors.Is(err, io.EOF) {
				c.quiet()
			}
			c.pipe.CloseWithError(err)
			return
		}
		limiter.count = 0
		if req := Read(raw, false, false); req != nil {
			if c.serveFast(req) {
				continue
			}
			if req.ID.IsValid() {
				// In flight for the SDK from now on (before its Read), so
				// that a later call with this id is the SDK's to refuse.
				c.mu.Lock()
				c.pending[req.ID] = true
				c.mu.Unlock()
			}
		}
		if _, err := c.pipe.Write(append(raw, '\n')); err != nil {
			return // the connection is closed
		}
	}
}

// frameLimiter is the SDK's frameLimitReader: it fails a read once a frame
// has taken limit bytes.
type frameLimiter struct {
	r            io.Reader
	limit, count int
}

var errFrameTooLarge = errors.New("inbound JSON-RPC frame exceeded the configured maximum line length")

func (r *frameLimiter) Read(p []byte) (int, error) {
	if r.count >= r.limit {
		return 0, errFrameTooLarge
	}
	if len(p) > r.limit-r.count {
		p = p[:r.limit-r.count]
	}
	n, err := r.r.Read(p)
	r.count += n
	return n, err
}

// serveFast answers req if the fast path may, and reports whether it took
// it (then the SDK must not see it). It also follows what the session's
// state depends on, and cancels a fast call a notification names.
func (c *stdioConn) serveFast(req *Request) bool {
	if !req.ID.IsValid() {
		if req.Method == "notifications/cancelled" {
			c.cancelFast(req)
		}
		return false
	}
	c.mu.Lock()
	_, dup := c.inFlight[req.ID]
	ready, handshake, sessionVersion := c.ready, c.handshake, c.sessionVersion
	c.mu.Unlock()
	if dup {
		// What the SDK does with an id it has in flight (jsonrpc2's
		// acceptRequest): it drops the request, and the error it makes
		// has no id to be sent with.
		return true
	}
	if req.Method != "tools/call" {
		if !ready {
			c.watchRequest(req)
		}
		return false
	}
	p := c.t.p
	params, ok := p.decodeCall(req)
	if !ok {
		if !ready {
			c.watchRequest(req)
		}
		return false
	}
	v, _ := params.Meta[mcp.MetaKeyProtocolVersion].(string)
	modern := v >= StatelessRevision // as the SDK's validateRequestMeta tells
	if !ready {
		if modern {
			c.watchRequest(req)
		}
		return false
	}
	if !modern && (!fastVersions[handshake] || handshake == modernVersion || !p.modernFast[params.Name]) {
		return false
	}
	meta, ok := p.metaEligible(req.meta, params, modern)
	if !ok {
		return false
	}
	t := c.t
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.done {
		return false
	}
	ctx, cancel := context.WithCancel(t.ctx)
	c.mu.Lock()
	if c.pending[req.ID] {
		// The SDK has this id in flight: it answers the duplicate.
		c.mu.Unlock()
		cancel()
		return false
	}
	if c.inFlight == nil {
		c.inFlight = map[jsonrpc.ID]context.CancelFunc{}
	}
	c.inFlight[req.ID] = cancel
	c.running++
	c.mu.Unlock()
	t.run(func() {
		defer cancel()
		// The SDK marks a tool result final (resultType "complete") when
		// the session's recorded version is 2026-07-28 or later
		// (handleMultiRoundTripResult), whatever the request's era; it adds
		// serverInfo to the result of a 2026-07-28 request (handle).
		line, resp := c.fastReply(ctx, req.ID, params, meta, modern, sessionVersion >= StatelessRevision)
		// As jsonrpc2 does: the id is free again before the reply is
		// written.
		c.mu.Lock()
		delete(c.inFlight, req.ID)
		c.mu.Unlock()
		c.reply(func() {
			if line != nil {
				t.out.writeLine(line)
			} else {
				c.write(resp)
			}
		})
		c.mu.Lock()
		c.running--
		c.mu.Unlock()
		c.owed.Answered()
	})
	return true
}

// replyWriter is the client's stdout shared by the SDK's connection and
// the fast path: one message per Write (the IOTransport connection writes
// each message, newline included, in one Write), one writer at a time.
type replyWriter struct {
	mu sync.Mutex
	w  io.WriteCloser
}

func (r *replyWriter) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.w.Write(p)
}

func (r *replyWriter) Close() error { return r.w.Close() }

// writeLine writes one message and its newline in one Write.
func (r *replyWriter) writeLine(line []byte) {
	r.Write(append(line, '\n'))
}

// fastReply makes the governed call and returns its reply: the line the
// SDK's connection would write for it (encodeReply: the IOTransport
// connection encodes a response with jsonrpc2.EncodeMessage, which
// encodeReply reproduces around the result's bytes; a fast call is never
// part of a batch, which the fast path leaves to the SDK), or, for an
// error, the response for the SDK's connection to write.
func (c *stdioConn) fastReply(ctx context.Context, id jsonrpc.ID, params *mcp.CallToolParamsRaw, meta map[string]any, modern, complete bool) ([]byte, *jsonrpc.Response) {
	p := c.t.p
	tr, traceID, jerr := p.result(ctx, params, meta, modern, nil)
	if jerr != nil {
		// A protocol error of the call (a client capability it needs):
		// the SDK path's answer, never run twice.
		return nil, &jsonrpc.Response{ID: id, Error: jerr}
	}
	line, err := encodeReply(id.Raw(), tr, complete)
	if err != nil {
		p.o.Logger.ErrorContext(ctx, "encoding a tool result", "traceId", traceID, "err", err)
		return nil, &jsonrpc.Response{ID: id, Error: p.internalError()}
	}
	return line, nil
}

// write writes a reply of the fast path through the SDK's connection.
func (c *stdioConn) write(resp *jsonrpc.Response) {
	if err := c.Connection.Write(context.WithoutCancel(c.t.ctx), resp); err != nil {
		c.t.p.o.Logger.Debug("writing a stdio reply", "err", err)
	}
}

// cancelFast cancels the fast call a notifications/cancelled names, read as
// the SDK reads it (mcp's canceller).
func (c *stdioConn) cancelFast(req *Request) {
	var p mcp.CancelledParams
	if sdkjson.Parse(req.Params, &p, 0) != nil {
		return
	}
	id, err := jsonrpc.MakeID(p.RequestID)
	if err != nil {
		return
	}
	c.mu.Lock()
	cancel := c.inFlight[id]
	c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// watched is a request whose successful answer initializes the SDK's
// session, and the protocol version the SDK then records for the session
// (its InitializeParams.ProtocolVersion): the one the client asked for in
// initialize — not the one negotiated — or the 2026-07-28 request's.
type watched struct {
	initialize bool
	version    string
}

// watchRequest remembers a call whose successful answer initializes the
// SDK's session: initialize, or any request of the 2026-07-28 revision.
func (c *stdioConn) watchRequest(req *Request) {
	w := watched{initialize: req.Method == "initialize"}
	if len(req.Params) == 0 {
		return
	}
	if w.initialize {
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		if sdkjson.Parse(req.Params, &p, 0) != nil {
			return
		}
		w.version = p.ProtocolVersion
	} else {
		var p struct {
			Meta mcp.Meta `json:"_meta"`
		}
		if sdkjson.Parse(req.Params, &p, 0) != nil {
			return
		}
		if w.version, _ = p.Meta[mcp.MetaKeyProtocolVersion].(string); w.version < StatelessRevision {
			return
		}
	}
	c.mu.Lock()
	if c.watch == nil {
		c.watch = map[jsonrpc.ID]watched{}
	}
	c.watch[req.ID] = w
	c.mu.Unlock()
}

// observe follows the SDK's answers to the requests watchRequest noted.
func (c *stdioConn) observe(resp *jsonrpc.Response) {
	c.mu.Lock()
	defer c.mu.Unlock()
	w, ok := c.watch[resp.ID]
	if !ok || !resp.ID.IsValid() {
		return
	}
	delete(c.watch, resp.ID)
	if resp.Error != nil || c.ready {
		return
	}
	if w.initialize {
		var r struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		if sdkjson.Parse(resp.Result, &r, 0) != nil {
			return
		}
		c.handshake = r.ProtocolVersion
	}
	c.sessionVersion = w.version
	c.ready = true
}
