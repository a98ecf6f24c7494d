package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/catalog"
)

// The fast path answers the commonest request of a stateless deployment — a
// plain tools/call from a client of a handshake-era protocol version
// (2025-03-26, 2025-06-18, 2025-11-25) — without the SDK's per-request
// session machinery, whose allocations dominated the CPU cost of a call (see
// docs/performance.md). It reads the request as the SDK does — the body
// passed checkBody, the envelope and the parameters are decoded with the
// SDK's decoder into the SDK's own types (envelope.go) — makes the same
// catalog.Call, and encodes the reply with the SDK's result type the way the
// SDK does (JSON without HTML escaping, the id as the SDK re-encodes it), so
// the bytes are the same: fastpath_test.go sends every request both ways and
// compares them, and FuzzFastPathMatchesSDK does so with generated bodies.
// 2026-07-28 calls are served too when they are ones the SDK would accept
// as they are (modernEligible: the Mcp-Method and Mcp-Name headers match,
// _meta decodes as the SDK decodes it and its version agrees with the
// header) of read-only
// tools that answer in the call (modernTool); the reply carries what the
// SDK adds for that revision (serverInfo in _meta, resultType "complete").
// Anything else — other methods, other protocol versions, requests the
// SDK would refuse, progress tokens, streaming tools, batches, unknown
// tools, parameters beyond name, arguments and _meta.traceparent (and, for
// 2026-07-28, the version, capabilities and self-description) — is left to
// the SDK, before anything ran.
// Once the tool has run, the fast path answers, whatever happens: a call is
// never run twice.

// fastVersions are the protocol versions the fast path serves.
var fastVersions = map[string]bool{"2025-03-26": true, "2025-06-18": true, "2025-11-25": true, modernVersion: true}

// modernVersion is the stateless revision the fast path serves (SEP-2575):
// no session, and the SDK checks of its requests are made before anything
// runs (modernEligible).
const modernVersion = "2026-07-28"

// modernMeta is the _meta of a 2026-07-28 call decoded into the types the
// SDK decodes it into (validateRequestMeta: the client's capabilities as
// its clientCapabilitiesV2, the optional self-description as an
// Implementation), so that what the SDK would refuse fails here too. The
// fast path never looks inside the self-description: it only requires
// that it decodes, as the SDK does.
type modernMeta struct {
	ProtocolVersion string `json:"io.modelcontextprotocol/protocolVersion"`
	Capabilities    *struct {
		mcp.ClientCapabilities
		//lint:ignore SA1019 the SDK decodes roots into this type (clientCapabilitiesV2); decoding into the same type refuses what it refuses
		Roots *mcp.RootCapabilities `json:"roots,omitempty"`
	} `json:"io.modelcontextprotocol/clientCapabilities"`
	Described   *mcp.Implementation `json:"io.modelcontextprotocol/clientInfo"`
	Traceparent *string             `json:"traceparent"`
}

// modernTool reports whether the fast path may answer a 2026-07-28 call of
// t: a read-only tool that answers in the call — it never asks its caller
// (multi-round requests), never streams, never becomes a task — and whose
// schema maps no argument to an Mcp-Param-* header.
func modernTool(t *catalog.Tool) bool {
	if !t.Annotations.ReadOnly || t.Tasks != catalog.TaskNever || t.Asks() || t.Streams() {
		return false
	}
	b, err := json.Marshal(t.InputSchema)
	return err == nil && !bytes.Contains(b, []byte("x-mcp-header"))
}

// modernEligible reports whether a 2026-07-28 tools/call is one the SDK
// would accept and answer with the tool's result: the headers it requires
// (Mcp-Method, Mcp-Name) match the body, no Mcp-Param-* header or session
// is named, and its _meta is one modernMetaEligible accepts.
func modernEligible(r *http.Request, params *mcp.CallToolParamsRaw) bool {
	h := r.Header
	if h.Get("Mcp-Session-Id") != "" || h.Get("Mcp-Method") != "tools/call" || h.Get("Mcp-Name") != params.Name {
		return false
	}
	for k := range h {
		if hasPrefixFold(k, "mcp-param-") {
			return false
		}
	}
	return true
}

// hasPrefixFold reports whether s begins with prefix, a lower-case ASCII
// string, in any case — strings.HasPrefix(strings.ToLower(s), prefix)
// without a lowered copy of every header name (names are ASCII tokens:
// net/http refuses any other).
func hasPrefixFold(s, prefix string) bool {
	if len(s) < len(prefix) {
		return false
	}
	for i := 0; i < len(prefix); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != prefix[i] {
			return false
		}
	}
	return true
}

// modernMetaEligible reports whether a 2026-07-28 tools/call of a tool the
// fast path serves to that revision (modernTool) carries in _meta the
// protocol version, the client's capabilities without extensions,
// optionally the client's self-description and a traceparent, and nothing
// else — each decoding as the SDK decodes it. Anything else goes to the
// SDK, which answers it — refusals included — as it always did. It returns
// the decoded _meta. Both transports use it (HTTP adds its headers,
// modernEligible).
//
// rawMeta is the bytes of _meta the params were read with
// (readCallParams): only they are decoded again, into the SDK's types, not
// the whole params.
func (s *Server) modernMetaEligible(rawMeta []byte, params *mcp.CallToolParamsRaw) (modernMeta, bool) {
	var m modernMeta
	if !s.modernFast[params.Name] || len(rawMeta) == 0 {
		return m, false
	}
	if eligible, ok := s.metaSeen.get(rawMeta); ok {
		return m, eligible // judged before, without a traceparent (see metaVerdicts)
	}
	eligible := s.judgeModernMeta(rawMeta, params, &m)
	if m.Traceparent == nil {
		s.metaSeen.put(rawMeta, eligible)
	}
	return m, eligible
}

// judgeModernMeta is modernMetaEligible's reading of rawMeta into m.
func (s *Server) judgeModernMeta(rawMeta []byte, params *mcp.CallToolParamsRaw, m *modernMeta) bool {
	if sdkUnmarshal(rawMeta, m) != nil || m.ProtocolVersion != modernVersion || m.Capabilities == nil || m.Capabilities.Extensions != nil {
		return false // the Tasks extension changes what a call answers
	}
	known := 2 // the version and the capabilities
	if m.Described != nil {
		known++
	}
	if m.Traceparent != nil {
		known++
	}
	return len(params.Meta) == known
}

// metaVerdicts remembers modernMetaEligible's verdicts on the _meta bytes
// of 2026-07-28 calls without a traceparent. A client sends the same bytes
// on every call (its version, capabilities and self-description), and the
// verdict is a function of the bytes alone: params.Meta, the other thing it
// reads, is the SDK's decode of the same bytes (readCallParams). So the
// second call of a client is judged without decoding its capabilities and
// self-description again into the SDK's types; the bytes are compared
// whole, and a verdict only ever chooses between two paths that answer
// alike. A _meta with a traceparent differs on every call and is not kept.
// At most metaVerdictsMax entries of at most metaVerdictMaxBytes each are
// kept, the first ones seen; later ones are judged every time.
type metaVerdicts struct {
	mu sync.RWMutex
	m  map[string]bool
}

const (
	metaVerdictsMax     = 256
	metaVerdictMaxBytes = 1024
)

func (v *metaVerdicts) get(raw []byte) (eligible, ok bool) {
	v.mu.RLock()
	eligible, ok = v.m[string(raw)]
	v.mu.RUnlock()
	return eligible, ok
}

func (v *metaVerdicts) put(raw []byte, eligible bool) {
	if len(raw) > metaVerdictMaxBytes {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.m == nil {
		v.m = map[string]bool{}
	}
	if len(v.m) < metaVerdictsMax {
		v.m[string(raw)] = eligible
	}
}

func acceptsBoth(values []string) bool {
	jsonOK, streamOK := false, false
	for _, v := range values {
		for raw := range strings.SplitSeq(v, ",") {
			base, _, _ := strings.Cut(strings.TrimSpace(raw), ";")
			switch strings.ToLower(strings.TrimSpace(base)) {
			case "application/json", "application/*":
				jsonOK = true
			case "text/event-stream", "text/*":
				streamOK = true
			case "*/*":
				jsonOK, streamOK = true, true
			}
		}
	}
	return jsonOK && streamOK
}

// FastPathServed returns how many requests the fast path has answered (for
// tests that must prove it served, and for metrics).
func (s *Server) FastPathServed() int64 { return s.fastServed.Load() }

// fastCall answers r if it is eligible and reports whether it did; when it
// returns false it has written nothing and run nothing.
func (s *Server) fastCall(w http.ResponseWriter, r *http.Request, req *request) bool {
	version := r.Header.Get("Mcp-Protocol-Version")
	if !fastVersions[version] || !acceptsBoth(r.Header.Values("Accept")) {
		return false
	}
	modern := version == modernVersion
	if ct := r.Header.Get("Content-Type"); ct != "application/json" { // what clients send; parsed, it is itself
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			return false
		}
	}
	if !req.isCall() || req.method != "tools/call" || len(req.params) == 0 {
		return false
	}
	params, meta, ok := s.callEligible(req.params, req.call, req.meta, modern)
	if !ok || modern && !modernEligible(r, params) {
		return false
	}
	tr, caller, err := s.fastResult(r.Context(), params, meta, modern)
	if err != nil {
		// A protocol error of the call (a client capability it needs,
		// CAPABILITY_REQUIRED): answered as the SDK answers the handler's
		// protocolError, never run twice.
		s.writeCallError(w, r, req.id, err, modern)
		return true
	}
	out, err := encodeReply(replyID(req.id), tr, modern)
	if err != nil {
		s.log.ErrorContext(r.Context(), "encoding a tool result", "traceId", caller.TraceID, "err", err)
		s.writeError(w, rawID(req.id), duet.Errorf(duet.CodeInternal, "internal error"))
		return true
	}
	h := w.Header()
	h.Set("Cache-Control", "no-cache, no-transform")
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(out)))
	w.WriteHeader(http.StatusOK)
	w.Write(out)
	return true
}

// callEligible reads the params of a tools/call as the SDK reads them and
// reports whether the fast path may answer it, on either transport: a known
// tool, object arguments (or none), no multi-round fields, and in _meta
// nothing but a traceparent — or, for a 2026-07-28 request (modern), what
// modernMetaEligible accepts. It returns the params and the _meta the call
// keeps (the traceparent). It runs nothing.
func (s *Server) callEligible(rawParams []byte, decoded *mcp.CallToolParamsRaw, rawMeta []byte, modern bool) (*mcp.CallToolParamsRaw, map[string]any, bool) {
	params, rawMeta, ok := s.decodeCall(rawParams, decoded, rawMeta)
	if !ok {
		return nil, nil, false
	}
	meta, ok := s.metaEligible(rawMeta, params, modern)
	return params, meta, ok
}

// decodeCall is the first half of callEligible: the params as the SDK reads
// them (decoded, with their _meta's bytes rawMeta, when the envelope's
// reading already decoded them so: readCall; otherwise readCallParams),
// a known tool, object arguments (or none), no multi-round fields. It
// returns the params and their _meta's bytes.
func (s *Server) decodeCall(rawParams []byte, decoded *mcp.CallToolParamsRaw, rawMeta []byte) (*mcp.CallToolParamsRaw, []byte, bool) {
	if len(rawParams) == 0 {
		return nil, nil, false
	}
	params := decoded
	if params == nil {
		var p callParams
		if !readCallParams(rawParams, &p) {
			return nil, nil, false
		}
		params, rawMeta = &p.CallToolParamsRaw, p.RawMeta
	}
	if params.InputResponses != nil || params.RequestState != "" {
		return nil, nil, false
	}
	if _, ok := s.cat.Tool(params.Name); !ok {
		return nil, nil, false
	}
	if a := bytes.TrimSpace(params.Arguments); len(a) > 0 && a[0] != '{' {
		return nil, nil, false
	}
	return params, rawMeta, true
}

// metaEligible is the second half of callEligible: the _meta of the call.
func (s *Server) metaEligible(rawMeta []byte, params *mcp.CallToolParamsRaw, modern bool) (map[string]any, bool) {
	var meta map[string]any
	if modern {
		m, eligible := s.modernMetaEligible(rawMeta, params)
		if !eligible {
			return nil, false
		}
		if m.Traceparent != nil {
			meta = map[string]any{"traceparent": *m.Traceparent}
		}
		return meta, true
	}
	for k, v := range params.Meta {
		tp, ok := v.(string)
		if k != "traceparent" || !ok {
			return nil, false // progress tokens and anything else: the SDK path
		}
		meta = map[string]any{"traceparent": tp}
	}
	return meta, true
}

// fastResult makes the governed call of an eligible tools/call — the same
// catalog.Call as the SDK path's handler, with the caller of ctx and a
// trace id from meta's traceparent or a new one — and assembles its result
// as the SDK path does. It errs only when the catalog does not know the
// tool (then nothing ran).
func (s *Server) fastResult(ctx context.Context, params *mcp.CallToolParamsRaw, meta map[string]any, modern bool) (*mcp.CallToolResult, duet.Caller, error) {
	caller := callerOf(ctx, meta)
	// Tools may replace their content blocks (SetContent) as on the SDK
	// path; tools that talk back to the client through the session are
	// declared streaming and never come here.
	call := &callState{}
	ctx = context.WithValue(ctx, callKey{}, call)
	s.fastServed.Add(1)
	res, err := s.cat.Call(ctx, catalog.Request{Caller: caller, Tool: params.Name, Args: params.Arguments})
	if err != nil {
		return nil, caller, err
	}
	tr := ToolResult(res, caller.TraceID)
	if call.content != nil && !res.IsError {
		tr.Content = call.content
	}
	if modern {
		// What the SDK adds to a 2026-07-28 result (annotateServerInfo),
		// encoded once (preEncoded: the same bytes as s.impl's).
		tr.Meta[mcp.MetaKeyServerInfo] = s.implJSON
	}
	return tr, caller, nil
}

// encodeReply encodes a JSON-RPC result message as the SDK does
// (jsonrpc2.EncodeMessage: the result marshalled without HTML escaping,
// then the message). The message is assembled around the result's bytes
// rather than marshalled again: encoding/json would only copy them
// (compacting JSON that is already compact, escaping nothing), and that
// second pass over every result was a tenth of the CPU of a call. The
// result is written straight into the message's buffer.
//
// complete marks the result final, as the SDK does for a 2026-07-28 client
// (its resultType "complete", which the SDK's marshalling writes last, after
// the result's own fields; the field is the SDK's own and cannot be set
// from outside).
func encodeReply(id any, result *mcp.CallToolResult, complete bool) ([]byte, error) {
	out := make([]byte, 0, replySize(result))
	out = append(out, `{"jsonrpc":"2.0"`...)
	if id != nil {
		var err error
		out = append(out, `,"id":`...)
		if out, err = appendID(out, id); err != nil {
			return nil, err
		}
	}
	start := len(out)
	out = append(out, `,"result":`...)
	out, err := appendResult(out, result, complete)
	if err != nil {
		return nil, err
	}
	if len(out) == start+len(`,"result":`) {
		out = out[:start] // an empty result is left out, as the SDK leaves it out
	}
	return append(out, '}'), nil
}

// replySize is a guess of the size of result's reply, to allocate it once.
func replySize(result *mcp.CallToolResult) int {
	n := 512
	if raw, ok := result.StructuredContent.(json.RawMessage); ok {
		n += 2 * len(raw)
	}
	if t, ok := plainText(result); ok {
		n += len(t.Text) + len(t.Text)/8
	}
	return n
}

// errNotObject: a tool result whose marshalling is not a JSON object
// cannot be marked final.
var errNotObject = errors.New("a tool result that is not a JSON object")

// encodeNoEscape marshals v as the SDK does: without HTML escaping, and
// without the encoder's trailing newline.
func encodeNoEscape(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// callError is the JSON-RPC error the SDK path answers for an error of
// catalog.Call: the tool handler returns protocolError's, which the SDK
// sends as it is.
func (s *Server) callError(err error) *jsonrpc.Error {
	var jerr *jsonrpc.Error
	if errors.As(protocolError(err), &jerr) {
		return jerr
	}
	return s.rpcError(duet.Errorf(duet.CodeInternal, "internal error")).(*jsonrpc.Error)
}

// writeCallError answers a fast call whose catalog.Call failed with a
// protocol error as the SDK's stateless JSON handler answers it: the
// JSON-RPC error encoded by the SDK's encoder, with the HTTP status the SDK
// gives a 2026-07-28 protocol error (SEP-2575: 404 for an unknown method,
// 400 for invalid parameters, an unsupported version or a missing client
// capability), 200 otherwise.
func (s *Server) writeCallError(w http.ResponseWriter, r *http.Request, rawReqID any, err error, modern bool) {
	jerr := s.callError(err)
	id, idErr := jsonrpc.MakeID(rawReqID)
	out, encErr := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: jerr})
	if idErr != nil || encErr != nil {
		s.log.ErrorContext(r.Context(), "encoding a call's error", "err", errors.Join(idErr, encErr))
		s.writeError(w, rawID(rawReqID), duet.Errorf(duet.CodeInternal, "internal error"))
		return
	}
	status := http.StatusOK
	if modern {
		switch jerr.Code {
		case jsonrpc.CodeMethodNotFound:
			status = http.StatusNotFound
		case jsonrpc.CodeInvalidParams, mcp.CodeUnsupportedProtocolVersion, mcp.CodeMissingRequiredClientCapabilities:
			status = http.StatusBadRequest
		}
	}
	h := w.Header()
	h.Set("Cache-Control", "no-cache, no-transform")
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(out)))
	w.WriteHeader(status)
	w.Write(out)
}
