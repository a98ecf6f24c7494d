package mcpserver

import (
	"bytes"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
	sjson "github.com/segmentio/encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/sdkjson"
)

// How a request body is read on /mcp/http.
//
// The go-sdk decodes JSON-RPC with segmentio/encoding/json, matching keys
// case-sensitively (DontMatchCaseInsensitiveStructFields), ignoring unknown
// keys, letting a later duplicate key win, reading ids as float64 (so 1.5
// becomes 1 and 2^53+1 becomes 2^53 in the reply), accepting trailing bytes
// after the first value, and refusing nesting deeper than 1000.
// (internal/json and internal/jsonrpc2 of go-sdk v1.8.0.)
//
// Every body of a POST passes checkBody first, on both paths — the fast path
// and the SDK: it must be exactly one JSON value that RFC 7493 accepts (valid
// UTF-8, no lone surrogates, no duplicate key at any depth), nested at most
// 1000 deep, and every message's id must come back exactly as it was sent (a
// string, or an integer of at most 2^53−1 in magnitude written without
// fraction or exponent). What passes is then read by both paths with the
// SDK's own decoder and rules (decodeEnvelope), so they cannot disagree on
// what a request says.

// maxDepth is the SDK's nesting limit (internal/json.defaultMaxDepth).
const maxDepth = 1000

// maxExactID is the largest id magnitude a float64 — how the SDK reads a
// numeric id — holds exactly (JavaScript's Number.MAX_SAFE_INTEGER).
const maxExactID = 1<<53 - 1

var integerRe = regexp.MustCompile(`^-?(?:0|[1-9][0-9]*)$`)

// checkBody is the strict reading every body passes before either path
// sees it. Returns PARSE_ERROR or INVALID_REQUEST.
//
// It is one pass of jsontext's decoder (which checks RFC 7493 as it reads:
// UTF-8, duplicate names, the grammar) reading the body's one value to its
// end and the id of every message on the way, then the SDK's depth count.
// When a body has several faults the first of these wins, as when each
// was a pass of its own: not valid JSON, then too deep, then a bad id.
func checkBody(body []byte) error {
	d := decoders.Get().(*bodyDecoder)
	defer d.put()
	d.buf = *bytes.NewBuffer(body) // a bytes.Buffer: the decoder reads body in place, without a copy
	d.dec.Reset(&d.buf)
	idErr, ok := readBody(&d.dec)
	switch {
	case !ok:
		return duet.Errorf(duet.CodeParseError, "the body is not one valid JSON value (RFC 7493: UTF-8, no duplicate keys)")
	case depthExceeds(body, maxDepth):
		return duet.Errorf(duet.CodeParseError, "the body nests deeper than %d levels", maxDepth)
	}
	return idErr
}

// bodyDecoder is checkBody's decoder and the buffer it reads, reused.
type bodyDecoder struct {
	buf bytes.Buffer
	dec jsontext.Decoder
}

var decoders = sync.Pool{New: func() any { return new(bodyDecoder) }}

func (d *bodyDecoder) put() {
	d.buf = bytes.Buffer{} // keep no body alive
	d.dec.Reset(&d.buf)
	decoders.Put(d)
}

// readBody reads one JSON value and the end of the input from dec,
// checking the id of the message it is, or of each message of the batch
// it is. ok is whether the input is exactly one valid value; idErr the
// first id that cannot be echoed exactly.
func readBody(dec *jsontext.Decoder) (idErr error, ok bool) {
	tok, err := dec.ReadToken()
	if err != nil {
		return nil, false
	}
	switch tok.Kind() {
	case '{':
		if idErr, ok = readMessage(dec); !ok {
			return nil, false
		}
	case '[':
		for dec.PeekKind() != ']' {
			if dec.PeekKind() != '{' {
				if dec.SkipValue() != nil {
					return nil, false
				}
				continue
			}
			if _, err := dec.ReadToken(); err != nil {
				return nil, false
			}
			e, ok := readMessage(dec)
			if !ok {
				return nil, false
			}
			if idErr == nil {
				idErr = e
			}
		}
		if _, err := dec.ReadToken(); err != nil {
			return nil, false
		}
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return nil, false
	}
	return idErr, true
}

// readMessage reads the members of one message object (its '{' already
// read) and its '}', and checks its id.
func readMessage(dec *jsontext.Decoder) (idErr error, ok bool) {
	for dec.PeekKind() != '}' {
		name, err := dec.ReadToken()
		if err != nil {
			return nil, false
		}
		if name.String() != "id" {
			if dec.SkipValue() != nil {
				return nil, false
			}
			continue
		}
		v, err := dec.ReadValue()
		if err != nil {
			return nil, false
		}
		if e := checkID(v); idErr == nil {
			idErr = e
		}
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, false
	}
	return idErr, true
}

// checkID accepts the ids the reply can echo exactly: null (no id), a
// string, or an integer of at most 2^53−1 in magnitude in plain notation.
func checkID(v jsontext.Value) error {
	switch v.Kind() {
	case 'n', '"':
		return nil
	case '0':
		s := string(v)
		if integerRe.MatchString(s) && s != "-0" {
			if n, err := strconv.ParseInt(s, 10, 64); err == nil && n >= -maxExactID && n <= maxExactID {
				return nil
			}
		}
		return duet.Errorf(duet.CodeInvalidRequest, "the request id %.40s cannot be echoed exactly: use a string, or an integer of at most 2^53-1 without fraction or exponent", s)
	}
	return duet.Errorf(duet.CodeInvalidRequest, "the request id must be a string or an integer")
}

// depthExceeds is the SDK's own nesting check (sdkjson), so that both
// paths refuse exactly the bodies the SDK refuses.
func depthExceeds(data []byte, max int) bool { return sdkjson.DepthExceeds(data, max) }

// envelope is the SDK's decode form of a JSON-RPC message
// (jsonrpc2.wireDecode).
type envelope struct {
	JSONRPC string           `json:"jsonrpc"`
	ID      any              `json:"id,omitempty"`
	Method  sjson.RawMessage `json:"method"`
	Params  sjson.RawMessage `json:"params,omitempty"`
}

// request is one JSON-RPC request as the SDK reads it.
type request struct {
	id     any    // float64, string or nil, as the SDK decodes it
	method string // "" for a response
	params sjson.RawMessage
	// name is what the method acts on, read from params as the SDK reads
	// them: params.name (tools/call, prompts/get) or params.uri
	// (resources/read and friends).
	name string
	// progress is whether params._meta carries a progressToken.
	progress bool
	// taskID is params.taskId (tasks/get, tasks/update, tasks/cancel).
	taskID string
	// metaVersion is params._meta["io.modelcontextprotocol/protocolVersion"]:
	// a request of the 2026-07-28 revision or later carries it.
	metaVersion string
	// call is the params of a tools/call decoded into the SDK's type, when
	// they decode (nil otherwise): the fast path reads them from here, and
	// meta is their _meta's bytes.
	call *mcp.CallToolParamsRaw
	meta sjson.RawMessage
}

// statelessRevision is the first protocol revision without sessions or an
// initialize handshake (SEP-2575).
const statelessRevision = "2026-07-28"

// modern reports whether r, with HTTP headers h, is a request of the
// stateless revisions (2026-07-28 and later): one that names no session and
// carries such a version in its MCP-Protocol-Version header or its _meta,
// or a server/discover (the first request of such a client). Everything
// else — initialize, and the requests of a handshake-era session — is not.
// The stateless handler serves the modern ones (and refuses a version it
// does not know, as it must).
func (r *request) modern(h http.Header) bool {
	if h.Get("Mcp-Session-Id") != "" {
		return false
	}
	if v := h.Get("Mcp-Protocol-Version"); v >= statelessRevision {
		return true
	}
	return r != nil && (r.metaVersion >= statelessRevision || r.method == "server/discover")
}

// isCall reports whether r expects a reply (it has an id the SDK accepts).
func (r *request) isCall() bool { return r != nil && r.method != "" && r.id != nil }

// sdkUnmarshal decodes data exactly as the SDK does: its internal/json
// runs a segmentio Decoder with DontMatchCaseInsensitiveStructFields, whose
// Decode is Parse of the first value with that flag. Parse directly spares
// the Decoder's 32 KiB buffer; data passed checkBody (one value).
func sdkUnmarshal(data []byte, v any) error { return sdkjson.Parse(data, v, 0) }

// decodeEnvelope reads a body that passed checkBody as the SDK does; it
// returns nil for anything but a single request object (a batch, a
// response, a message the SDK would refuse): the SDK then decides.
func decodeEnvelope(body []byte) *request {
	b := bytes.TrimLeft(body, " \t\r\n")
	if len(b) == 0 || b[0] != '{' {
		return nil
	}
	var env envelope
	if err := sdkUnmarshal(body, &env); err != nil || env.JSONRPC != "2.0" || len(env.Method) == 0 {
		return nil
	}
	r := &request{params: env.Params}
	switch id := env.ID.(type) {
	case nil, string:
		r.id = id
	case float64:
		r.id = id
	default:
		return nil
	}
	if err := sdkUnmarshal(env.Method, &r.method); err != nil {
		return nil
	}
	if len(env.Params) > 0 {
		if r.method == "tools/call" && r.readCall() {
			return r
		}
		var p struct {
			Name   string   `json:"name"`
			URI    string   `json:"uri"`
			TaskID string   `json:"taskId"`
			Meta   mcp.Meta `json:"_meta"`
		}
		if sdkUnmarshal(env.Params, &p) == nil {
			r.name, r.taskID = p.Name, p.TaskID
			if r.name == "" {
				r.name = p.URI
			}
			tok, ok := p.Meta["progressToken"]
			r.progress = ok && tok != nil
			r.metaVersion, _ = p.Meta[mcp.MetaKeyProtocolVersion].(string)
		}
	}
	return r
}

// readCall decodes the params of a tools/call in one pass into the SDK's
// CallToolParamsRaw and the names decodeEnvelope reads (uri, taskId, which
// the SDK's type does not have) — readCallParams. Decoded together they
// succeed exactly when each decode alone would, with the same values (the
// same decoder, the same keys, unknown keys skipped); when they do not, it
// reports false and sets nothing, and the params are read field by field
// as for any method.
func (r *request) readCall() bool {
	var p callParams
	if !readCallParams(r.params, &p) {
		return false
	}
	r.name, r.taskID = p.Name, p.TaskID
	if r.name == "" {
		r.name = p.URI
	}
	tok, ok := p.Meta["progressToken"]
	r.progress = ok && tok != nil
	r.metaVersion, _ = p.Meta[mcp.MetaKeyProtocolVersion].(string)
	r.call, r.meta = &p.CallToolParamsRaw, p.RawMeta
	return true
}

// callParams is the params of a tools/call as readCallParams reads them.
type callParams struct {
	mcp.CallToolParamsRaw
	// RawMeta is _meta's bytes (it shadows CallToolParamsRaw.Meta, which
	// readCallParams decodes from them).
	RawMeta sjson.RawMessage `json:"_meta"`
	URI     string           `json:"uri"`
	TaskID  string           `json:"taskId"`
}

// readCallParams decodes data, a tools/call's params, into p as the SDK
// decodes them into its CallToolParamsRaw, keeping _meta's bytes beside
// the SDK's map of them (for the 2026-07-28 reading of the same bytes,
// modernMetaEligible, which needs no second pass over the params). The map
// is decoded by the SDK's decoder from the same bytes into the same type,
// so it fails and succeeds with the SDK's decode of the whole; its decoder
// is handed a small map to fill, where it would make one of 64 slots
// (segmentio: a fresh map[string]any is made with room for 64) — a
// request's _meta has a few keys, and those slots were most of the
// allocation of a 2026-07-28 request.
func readCallParams(data []byte, p *callParams) bool {
	if sdkUnmarshal(data, p) != nil {
		return false
	}
	if len(p.RawMeta) > 0 {
		m := make(mcp.Meta, 4)
		if sdkjson.Parse(p.RawMeta, &m, 0) != nil {
			return false // "null" sets m to nil, as the SDK's decode sets Meta
		}
		p.Meta = m
	}
	return true
}

// replyID is the id of the reply as the SDK writes it (jsonrpc2.MakeID):
// an int64 for a numeric id — exactly the id sent, as checkBody admitted
// only integers a float64 holds — a string, or nil.
func replyID(id any) any {
	if f, ok := id.(float64); ok {
		return int64(f)
	}
	return id
}
