package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/duet-test/duet"
)

// The stdio fast path answers, in Duet's connection wrapper (drainingConn),
// the plain tools/call requests of read-only catalog tools without the
// SDK's session — whose JSON decoding (a 32 KiB decoder per unmarshal,
// _meta decoded twice) and jsonrpc2 machinery were most of the cost of a
// stdio call (docs/performance.md) — as HTTP's fast path does (fastpath.go),
// and with the same shared parts: callEligible's reading of the params,
// fastResult's governed catalog.Call and result, encodeResult's bytes.
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
//   - Of a tool the fast path serves to 2026-07-28 clients in either era
//     (modernTool: read-only, never asks, never streams, never a task), so
//     the session's capabilities — elicitation, the Tasks extension —
//     cannot change the answer.
//
// Anything else — another method, a progress token, other _meta, an
// unknown tool, non-object arguments, an id the SDK still has in flight —
// goes on to the SDK's connection, having run nothing. A fast call runs
// in its own goroutine (the SDK runs calls concurrently too), and its reply
// goes through the IOTransport connection's Write, which serializes
// writers (its writeMu), keeps JSON-RPC batches together and encodes the
// message as the SDK encodes its own replies.
//
// notifications/cancelled naming a fast call cancels its context (the
// notification still goes on to the SDK, as before); the tool's answer to
// a cancelled context is written, as the SDK writes its handler's. The end
// of input waits for fast calls as for the SDK's (drain), and the session
// closing, or its read loop ending, cancels the ones in flight and drops
// their replies (quiet), as the SDK drops its handlers'.

// reply writes a fast call's reply with write, unless the session has gone
// quiet.
func (f *stdioFast) reply(write func()) {
	f.replyMu.Lock()
	defer f.replyMu.Unlock()
	if !f.silent {
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
func (f *stdioFast) quiet() {
	f.replyMu.Lock()
	f.silent = true
	f.replyMu.Unlock()
}

// end stops the fast path and waits for its calls to return.
func (f *stdioFast) end() {
	f.mu.Lock()
	f.done = true
	f.mu.Unlock()
	f.stop()
	f.wg.Wait()
}

// stdioFast is the fast path of one stdio session.
type stdioFast struct {
	s    *Server
	ctx  context.Context // the session's caller; cancelled by stop
	stop context.CancelFunc
	wg   sync.WaitGroup // fast calls running

	mu   sync.Mutex
	done bool // the session is over: no new fast call (wg.Wait has begun)

	replyMu sync.Mutex
	silent  bool // the session's read side ended or it closed: replies are dropped (quiet)

	in    io.Reader      // the client's stream
	pipe  *io.PipeWriter // what the SDK's connection reads: the messages left to it
	out   *replyWriter   // the client's stdout, shared with the SDK's connection
	calls chan func()    // to an idle worker (run)
}

// The client's stream is cut into messages exactly as the SDK's IOTransport
// cuts it (newIOConnLimited in go-sdk v1.8.0 mcp/transport.go): a standard
// library json.Decoder over a reader that bounds a frame to the SDK's
// DefaultMaxLineLength, each value followed by a newline (\n or \r) or the
// end of the stream, or the stream ends with that error. A frame that is a
// JSON object is decoded as the SDK's jsonrpc2.DecodeMessage decodes it
// (decodeMessage) and, if the fast path takes it, never reaches the SDK;
// every other frame — and every error — is handed to the SDK's connection
// unchanged, which reads it again as it always did. Decoding here rather
// than in the SDK spares the SDK's two unmarshals of every message (readBatch
// tries a batch first), each of which builds a 32 KiB decoder.

// errTrailingData is what the SDK reports for bytes after a value on its
// line.
var errTrailingData = errors.New("invalid trailing data at the end of stream")

// frames reads the client's stream until it ends or fails, answering what
// the fast path may and forwarding the rest to the SDK's connection.
func (c *drainingConn) frames() {
	f := c.fast
	limiter := &frameLimiter{r: f.in, limit: mcp.DefaultMaxLineLength}
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
			// everything first (drainingConn.Read).
			if !errors.Is(err, io.EOF) {
				f.quiet()
			}
			f.pipe.CloseWithError(err)
			return
		}
		limiter.count = 0
		if req := decodeMessage(raw); req != nil {
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
		if _, err := f.pipe.Write(append(raw, '\n')); err != nil {
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

// wireMessage is the SDK's decode form of a JSON-RPC message
// (jsonrpc2.wireDecode), field for field.
type wireMessage struct {
	VersionTag string          `json:"jsonrpc"`
	ID         any             `json:"id,omitempty"`
	Method     json.RawMessage `json:"method"`
	Params     json.RawMessage `json:"params,omitempty"`
	Result     json.RawMessage `json:"result,omitempty"`
	Error      *jsonrpc.Error  `json:"error,omitempty"`
}

// decodeMessage reads one frame as the SDK's transport reads it — a frame
// that is not an array (readBatch), decoded by jsonrpc2.DecodeMessage with
// the SDK's internal/json.Unmarshal (its depth check, then its decoder's
// Parse with DontMatchCaseInsensitiveStructFields: sdkUnmarshal) — and
// returns the request it is, or nil for anything else (a batch, a response,
// a message the SDK refuses): the SDK then reads it itself.
func decodeMessage(raw []byte) *jsonrpc.Request {
	if b := bytes.TrimLeft(raw, " \t\r\n"); len(b) == 0 || b[0] != '{' || depthExceeds(raw, maxDepth) {
		return nil
	}
	var msg wireMessage
	if sdkUnmarshal(raw, &msg) != nil || msg.VersionTag != "2.0" || len(msg.Method) == 0 {
		return nil
	}
	id, err := jsonrpc.MakeID(msg.ID)
	if err != nil {
		return nil
	}
	var method string
	if depthExceeds(msg.Method, maxDepth) || sdkUnmarshal(msg.Method, &method) != nil {
		return nil
	}
	return &jsonrpc.Request{ID: id, Method: method, Params: msg.Params}
}

// serveFast answers req if the fast path may, and reports whether it took
// it (then the SDK must not see it). It also follows what the session's
// state depends on, and cancels a fast call a notification names.
func (c *drainingConn) serveFast(req *jsonrpc.Request) bool {
	if !req.IsCall() {
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
	s := c.fast.s
	params, rawMeta, ok := s.decodeCall(req.Params, nil, nil)
	if !ok {
		if !ready {
			c.watchRequest(req)
		}
		return false
	}
	v, _ := params.Meta[mcp.MetaKeyProtocolVersion].(string)
	modern := v >= statelessRevision // as the SDK's validateRequestMeta tells
	if !ready {
		if modern {
			c.watchRequest(req)
		}
		return false
	}
	if !modern && (!fastVersions[handshake] || handshake == modernVersion || !s.modernFast[params.Name]) {
		return false
	}
	meta, ok := s.metaEligible(rawMeta, params, modern)
	if !ok {
		return false
	}
	c.fast.mu.Lock()
	defer c.fast.mu.Unlock()
	if c.fast.done {
		return false
	}
	ctx, cancel := context.WithCancel(c.fast.ctx)
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
	c.fast.run(func() {
		defer cancel()
		// The SDK marks a tool result final (resultType "complete") when
		// the session's recorded version is 2026-07-28 or later
		// (handleMultiRoundTripResult), whatever the request's era; it adds
		// serverInfo to the result of a 2026-07-28 request (handle).
		line, resp := c.fastReply(ctx, req.ID, params, meta, modern, sessionVersion >= statelessRevision)
		// As jsonrpc2 does: the id is free again before the reply is
		// written.
		c.mu.Lock()
		delete(c.inFlight, req.ID)
		c.mu.Unlock()
		c.fast.reply(func() {
			if line != nil {
				c.fast.out.writeLine(line)
			} else {
				c.write(resp)
			}
		})
		c.mu.Lock()
		c.running--
		c.mu.Unlock()
		c.signal()
	})
	return true
}

// run runs a fast call on an idle worker of the session, or a new one. A
// worker waits for the next call until the session ends, so its stack —
// grown to the depth of a catalog call by the first — serves the next
// calls as it is (a goroutine per call grew one every time: a sixth of the
// CPU of a stdio call in the profile). Called with f.mu held.
func (f *stdioFast) run(call func()) {
	select {
	case f.calls <- call:
		return
	default:
	}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		for {
			call()
			select {
			case call = <-f.calls:
			case <-f.ctx.Done():
				return
			}
		}
	}()
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
func (c *drainingConn) fastReply(ctx context.Context, id jsonrpc.ID, params *mcp.CallToolParamsRaw, meta map[string]any, modern, complete bool) ([]byte, *jsonrpc.Response) {
	s := c.fast.s
	tr, caller, err := s.fastResult(ctx, params, meta, modern)
	if err != nil {
		// A protocol error of the call (a client capability it needs):
		// the SDK path's answer, never run twice.
		return nil, &jsonrpc.Response{ID: id, Error: s.callError(err)}
	}
	line, err := encodeReply(id.Raw(), tr, complete)
	if err != nil {
		s.log.ErrorContext(ctx, "encoding a tool result", "traceId", caller.TraceID, "err", err)
		return nil, &jsonrpc.Response{ID: id, Error: s.rpcError(duet.Errorf(duet.CodeInternal, "internal error")).(*jsonrpc.Error)}
	}
	return line, nil
}

// write writes a reply of the fast path through the SDK's connection.
func (c *drainingConn) write(resp *jsonrpc.Response) {
	if err := c.Connection.Write(context.WithoutCancel(c.fast.ctx), resp); err != nil {
		c.fast.s.log.Debug("writing a stdio reply", "err", err)
	}
}

// cancelFast cancels the fast call a notifications/cancelled names, read as
// the SDK reads it (mcp's canceller).
func (c *drainingConn) cancelFast(req *jsonrpc.Request) {
	var p mcp.CancelledParams
	if sdkUnmarshal(req.Params, &p) != nil {
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
func (c *drainingConn) watchRequest(req *jsonrpc.Request) {
	w := watched{initialize: req.Method == "initialize"}
	if len(req.Params) == 0 {
		return
	}
	if w.initialize {
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		if sdkUnmarshal(req.Params, &p) != nil {
			return
		}
		w.version = p.ProtocolVersion
	} else {
		var p struct {
			Meta mcp.Meta `json:"_meta"`
		}
		if sdkUnmarshal(req.Params, &p) != nil {
			return
		}
		if w.version, _ = p.Meta[mcp.MetaKeyProtocolVersion].(string); w.version < statelessRevision {
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
func (c *drainingConn) observe(resp *jsonrpc.Response) {
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
		if sdkUnmarshal(resp.Result, &r) != nil {
			return
		}
		c.handshake = r.ProtocolVersion
	}
	c.sessionVersion = w.version
	c.ready = true
}
