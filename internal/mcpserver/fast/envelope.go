package fast

import (
	"bytes"

	sjson "github.com/segmentio/encoding/json"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/duet-test/duet/internal/sdkjson"
)

// The envelope reader: how both transports read a JSON-RPC message, as the
// go-sdk reads it.
//
// The go-sdk decodes JSON-RPC with segmentio/encoding/json (sdkjson),
// matching keys case-sensitively, ignoring unknown keys, letting a later
// duplicate key win, reading ids as float64 (so 1.5 becomes 1), accepting
// trailing bytes after the first value, and refusing nesting deeper than
// 1000 — into its decode form of a message (jsonrpc2.wireDecode: jsonrpc,
// id, method, params, result, error), which it then checks
// (jsonrpc2.DecodeMessage: the version tag "2.0", an id that MakeID
// accepts, a method that decodes as a string). Read does the same, so the
// door and the fast paths never take other values from a message than the
// SDK does, and never serve one the SDK would refuse.

// Request is one JSON-RPC request as the SDK reads it, with what the door
// and the fast paths read of its params.
type Request struct {
	ID     jsonrpc.ID // as jsonrpc.MakeID makes it: an int64, a string, or none
	Method string
	Params sjson.RawMessage
	// Name is what the method acts on, read from params as the SDK reads
	// them: params.name (tools/call, prompts/get) or params.uri
	// (resources/read and friends).
	Name string
	// Progress is whether params._meta carries a progressToken.
	Progress bool
	// TaskID is params.taskId (tasks/get, tasks/update, tasks/cancel).
	TaskID string
	// MetaVersion is params._meta["io.modelcontextprotocol/protocolVersion"]:
	// a request of the 2026-07-28 revision or later carries it.
	MetaVersion string
	// call is the params of a tools/call decoded into the SDK's type, when
	// they decode (nil otherwise): the fast paths read them from here, and
	// meta is their _meta's bytes.
	call *mcp.CallToolParamsRaw
	meta sjson.RawMessage
}

// wireMessage is the SDK's decode form of a JSON-RPC message
// (jsonrpc2.wireDecode), field for field: a message whose result or error
// does not decode into it is one the SDK refuses.
type wireMessage struct {
	VersionTag string           `json:"jsonrpc"`
	ID         any              `json:"id,omitempty"`
	Method     sjson.RawMessage `json:"method"`
	Params     sjson.RawMessage `json:"params,omitempty"`
	Result     sjson.RawMessage `json:"result,omitempty"`
	Error      *jsonrpc.Error   `json:"error,omitempty"`
}

// Read reads one JSON-RPC message as the SDK's jsonrpc2.DecodeMessage
// reads it, and returns the request it is, or nil for anything else — a
// batch, a response, a message the SDK refuses: the SDK then reads it
// itself and decides. checked says data passed a check of its nesting
// already (the HTTP door's strict reading of the body), which Read then
// does not repeat. It reads the params of a tools/call into the SDK's
// type, and, with fields, the Name, TaskID, Progress and MetaVersion of any
// other request (what the HTTP door routes and admits by).
func Read(data []byte, checked, fields bool) *Request {
	if b := bytes.TrimLeft(data, " \t\r\n"); len(b) == 0 || b[0] != '{' {
		return nil
	}
	if !checked && sdkjson.DepthExceeds(data, sdkjson.MaxDepth) {
		return nil
	}
	var msg wireMessage
	if sdkjson.Parse(data, &msg, 0) != nil || msg.VersionTag != "2.0" || len(msg.Method) == 0 {
		return nil
	}
	id, err := jsonrpc.MakeID(msg.ID)
	if err != nil {
		return nil
	}
	r := &Request{ID: id, Params: msg.Params}
	if sdkjson.Parse(msg.Method, &r.Method, 0) != nil {
		return nil
	}
	if len(r.Params) == 0 {
		return r
	}
	if r.Method == "tools/call" && r.readCall() || !fields {
		return r
	}
	var p struct {
		Name   string   `json:"name"`
		URI    string   `json:"uri"`
		TaskID string   `json:"taskId"`
		Meta   mcp.Meta `json:"_meta"`
	}
	if sdkjson.Parse(r.Params, &p, 0) == nil {
		r.setFields(p.Name, p.URI, p.TaskID, p.Meta)
	}
	return r
}

// IsCall reports whether r expects a reply: it has a method and an id.
func (r *Request) IsCall() bool { return r != nil && r.Method != "" && r.ID.IsValid() }

func (r *Request) setFields(name, uri, taskID string, meta mcp.Meta) {
	r.Name, r.TaskID = name, taskID
	if r.Name == "" {
		r.Name = uri
	}
	tok, ok := meta["progressToken"]
	r.Progress = ok && tok != nil
	r.MetaVersion, _ = meta[mcp.MetaKeyProtocolVersion].(string)
}

// readCall decodes the params of a tools/call in one pass into the SDK's
// CallToolParamsRaw and the names Read reads of any request (uri, taskId,
// which the SDK's type does not have) — readCallParams. Decoded together
// they succeed exactly when each decode alone would, with the same values
// (the same decoder, the same keys, unknown keys skipped); when they do
// not, it reports false and sets nothing, and the params are read field by
// field as for any method.
func (r *Request) readCall() bool {
	var p callParams
	if !readCallParams(r.Params, &p) {
		return false
	}
	r.setFields(p.Name, p.URI, p.TaskID, p.Meta)
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
	if sdkjson.Parse(data, p, 0) != nil {
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
