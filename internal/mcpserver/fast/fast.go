// Package fast holds the MCP server's fast paths: code that answers the
// commonest request — a plain tools/call of a catalog tool — without the
// go-sdk's per-request machinery, byte for byte as the SDK would answer it,
// on Streamable HTTP (http.go) and on stdio (stdio.go). They exist for
// speed only: the SDK's session setup, its JSON decoding (a 32 KiB decoder
// per unmarshal, _meta decoded twice) and its reflection over result types
// were most of the CPU of a call (docs/performance.md).
//
// To answer as the SDK does they reproduce some of its behaviour, which an
// SDK upgrade may change: how it reads a message (envelope.go, sdkjson),
// which requests it answers with the tool's result and in which session
// state (eligibility below, http.go, stdio.go), and the bytes of its reply
// (reply.go). docs/architecture.md lists what is copied, function by
// function, and how an upgrade is checked: the byte-equivalence tests and
// the differential fuzz targets of this package send every request both
// ways and compare the bytes.
//
// Anything the fast paths do not take — other methods, protocol versions
// or session states, requests the SDK would refuse, progress tokens,
// streaming tools, batches, unknown tools — goes to the SDK before anything
// ran; once a tool has run, the fast path answers, whatever happens: a
// call is never run twice. mcpserver.Options.FastPath (DUET_MCP_FAST_PATH)
// turns them off: the SDK then answers every request. The envelope reader
// (Read) also serves the HTTP door with them off: it is how the door reads
// what it admits and routes, once, as the SDK reads it.
package fast

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/catalog"
	"github.com/duet-test/duet/internal/sdkjson"
)

// Env is the setting that turns the fast paths off ("off"; docs/configuration.md).
const Env = "DUET_MCP_FAST_PATH"

// OffInTests reports whether this process is a test binary run with
// DUET_MCP_FAST_PATH=off: how `DUET_MCP_FAST_PATH=off go test ./...` turns
// the fast paths off in every MCP server the tests build, with the
// application's configuration or without it. Anywhere else only the
// configuration decides (config.Load), and this reads nothing.
func OffInTests() bool { return testing.Testing() && os.Getenv(Env) == "off" }

// Options are what the fast paths need of the MCP server they serve.
type Options struct {
	// Catalog is the server's catalog: the tools it knows, and which of
	// them the fast paths serve to 2026-07-28 clients (modernTool).
	Catalog *catalog.Catalog
	// ServerInfo is the server's self-description as given to the SDK,
	// which it adds to 2026-07-28 results.
	ServerInfo *mcp.Implementation
	// Call makes the governed call of an eligible tools/call — what the
	// SDK path's tool handler does: the same catalog.Call, with the caller
	// of ctx and a trace id from meta's traceparent or a new one — and
	// returns its result and trace id, or the JSON-RPC error the SDK path
	// answers for it (a protocol error of the call). slot is the
	// concurrency slot the HTTP door took for the request (nil over
	// stdio: the call takes one).
	Call func(ctx context.Context, params *mcp.CallToolParamsRaw, meta map[string]any, slot *catalog.Slot) (*mcp.CallToolResult, string, *jsonrpc.Error)
	// RPCError is the JSON-RPC error a client gets for err (a result that
	// cannot be encoded: INTERNAL).
	RPCError func(err error) *jsonrpc.Error
	// WriteError answers an HTTP request with err as the door's JSON-RPC
	// error reply, id its id (nil for none).
	WriteError func(w http.ResponseWriter, id json.RawMessage, err error)
	Logger     *slog.Logger
}

// Paths are the fast paths of one MCP server.
type Paths struct {
	o          Options
	served     atomic.Int64
	implJSON   preEncoded      // ServerInfo encoded once, for 2026-07-28 results
	modernFast map[string]bool // tools served to 2026-07-28 clients
	metaSeen   metaVerdicts    // 2026-07-28 _meta bytes already judged (modernMetaEligible)
}

// New returns the fast paths of the server o describes.
func New(o Options) *Paths {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	p := &Paths{o: o, modernFast: map[string]bool{}}
	var err error
	if p.implJSON, err = encodeOnce(o.ServerInfo); err != nil {
		panic("fast: encoding serverInfo: " + err.Error()) // strings only: it cannot fail
	}
	for _, t := range o.Catalog.Tools() {
		p.modernFast[t.Name] = modernTool(t)
	}
	return p
}

// Served returns how many requests the fast paths have answered (for
// tests that must prove they served, and for metrics).
func (p *Paths) Served() int64 {
	if p == nil {
		return 0
	}
	return p.served.Load()
}

// fastVersions are the protocol versions the fast paths serve: the
// handshake era and the stateless revision.
var fastVersions = map[string]bool{"2025-03-26": true, "2025-06-18": true, "2025-11-25": true, modernVersion: true}

// modernVersion is the stateless revision the fast paths serve (SEP-2575):
// no session, and the SDK's checks of its requests are made before
// anything runs (modernEligible, modernMetaEligible).
const modernVersion = "2026-07-28"

// StatelessRevision is the first protocol revision without sessions or an
// initialize handshake (SEP-2575).
const StatelessRevision = "2026-07-28"

// modernMeta is the _meta of a 2026-07-28 call decoded into the types the
// SDK decodes it into (validateRequestMeta: the client's capabilities as
// its clientCapabilitiesV2, the optional self-description as an
// Implementation), so that what the SDK would refuse fails here too. The
// fast paths never look inside the self-description: they only require
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

// modernTool reports whether the fast paths may answer a 2026-07-28 call
// of t: a read-only tool that answers in the call — it never asks its
// caller (multi-round requests), never streams, never becomes a task — and
// whose schema maps no argument to an Mcp-Param-* header. Over stdio these
// are the only tools they serve, in either era.
func modernTool(t *catalog.Tool) bool {
	if !t.Annotations.ReadOnly || t.Tasks != catalog.TaskNever || t.Asks() || t.Streams() {
		return false
	}
	b, err := json.Marshal(t.InputSchema)
	return err == nil && !bytes.Contains(b, []byte("x-mcp-header"))
}

// callEligible reads the params of a tools/call as the SDK reads them and
// reports whether a fast path may answer it, on either transport: a known
// tool, object arguments (or none), no multi-round fields, and in _meta
// nothing but a traceparent — or, for a 2026-07-28 request (modern), what
// modernMetaEligible accepts. It returns the params and the _meta the call
// keeps (the traceparent). It runs nothing.
func (p *Paths) callEligible(req *Request, modern bool) (*mcp.CallToolParamsRaw, map[string]any, bool) {
	params, ok := p.decodeCall(req)
	if !ok {
		return nil, nil, false
	}
	meta, ok := p.metaEligible(req.meta, params, modern)
	return params, meta, ok
}

// decodeCall is the first half of callEligible: the params as the SDK
// reads them (as Read decoded them), a known tool, object arguments (or
// none), no multi-round fields.
func (p *Paths) decodeCall(req *Request) (*mcp.CallToolParamsRaw, bool) {
	params := req.call
	if params == nil {
		return nil, false
	}
	if params.InputResponses != nil || params.RequestState != "" {
		return nil, false
	}
	if _, ok := p.o.Catalog.Tool(params.Name); !ok {
		return nil, false
	}
	if a := bytes.TrimSpace(params.Arguments); len(a) > 0 && a[0] != '{' {
		return nil, false
	}
	return params, true
}

// metaEligible is the second half of callEligible: the _meta of the call.
func (p *Paths) metaEligible(rawMeta []byte, params *mcp.CallToolParamsRaw, modern bool) (map[string]any, bool) {
	var meta map[string]any
	if modern {
		m, eligible := p.modernMetaEligible(rawMeta, params)
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

// modernMetaEligible reports whether a 2026-07-28 tools/call of a tool the
// fast paths serve to that revision (modernTool) carries in _meta the
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
func (p *Paths) modernMetaEligible(rawMeta []byte, params *mcp.CallToolParamsRaw) (modernMeta, bool) {
	var m modernMeta
	if !p.modernFast[params.Name] || len(rawMeta) == 0 {
		return m, false
	}
	if eligible, ok := p.metaSeen.get(rawMeta); ok {
		return m, eligible // judged before, without a traceparent (see metaVerdicts)
	}
	eligible := judgeModernMeta(rawMeta, params, &m)
	if m.Traceparent == nil {
		p.metaSeen.put(rawMeta, eligible)
	}
	return m, eligible
}

// judgeModernMeta is modernMetaEligible's reading of rawMeta into m.
func judgeModernMeta(rawMeta []byte, params *mcp.CallToolParamsRaw, m *modernMeta) bool {
	if sdkjson.Parse(rawMeta, m, 0) != nil || m.ProtocolVersion != modernVersion || m.Capabilities == nil || m.Capabilities.Extensions != nil {
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

// result makes the governed call of an eligible tools/call (Options.Call)
// and adds what the SDK adds to a 2026-07-28 result (annotateServerInfo):
// the server's self-description, encoded once (preEncoded: the same bytes
// as the SDK's encoding of it). It errs only with the SDK path's answer to
// a protocol error of the call.
func (p *Paths) result(ctx context.Context, params *mcp.CallToolParamsRaw, meta map[string]any, modern bool, slot *catalog.Slot) (*mcp.CallToolResult, string, *jsonrpc.Error) {
	p.served.Add(1)
	tr, traceID, jerr := p.o.Call(ctx, params, meta, slot)
	if jerr != nil {
		return nil, traceID, jerr
	}
	if modern {
		if tr.Meta == nil {
			tr.Meta = mcp.Meta{}
		}
		tr.Meta[mcp.MetaKeyServerInfo] = p.implJSON
	}
	return tr, traceID, nil
}

// internalError is the JSON-RPC error of a result that cannot be encoded.
func (p *Paths) internalError() *jsonrpc.Error {
	return p.o.RPCError(duet.Errorf(duet.CodeInternal, "internal error"))
}
