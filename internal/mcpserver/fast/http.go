package fast

import (
	"encoding/json"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/catalog"
)

// The HTTP fast path answers the commonest request of a stateless
// deployment — a plain tools/call — without the SDK's per-request session
// (its stateless handler builds a server session per request). It reads
// the request as the SDK does — the body passed the door's strict check,
// the envelope and the parameters are decoded with the SDK's decoder into
// the SDK's own types (envelope.go) — makes the same governed call, and
// encodes the reply with the SDK's result type the way the SDK does (JSON
// without HTML escaping, the id as the SDK re-encodes it; reply.go), so the
// bytes are the same.
//
// It serves the handshake-era protocol versions (2025-03-26, 2025-06-18,
// 2025-11-25), and 2026-07-28 calls the SDK would accept as they are
// (modernEligible: the Mcp-Method and Mcp-Name headers match, _meta decodes
// as the SDK decodes it and its version agrees with the header) of
// read-only tools that answer in the call (modernTool); the reply then
// carries what the SDK adds for that revision (serverInfo in _meta,
// resultType "complete").

// ServeHTTP answers r, a request whose body the door read into req (Read),
// if it is a tools/call the fast path may answer, and reports whether it
// did; when it returns false it has written nothing and run nothing. The
// door calls it only for a stateless tools/call that does not stream, with
// the concurrency slot it took for the request (catalog.Admit).
func (p *Paths) ServeHTTP(w http.ResponseWriter, r *http.Request, req *Request, slot *catalog.Slot) bool {
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
	if !req.IsCall() || req.Method != "tools/call" || len(req.Params) == 0 {
		return false
	}
	params, meta, ok := p.callEligible(req, modern)
	if !ok || modern && !modernEligible(r, params) {
		return false
	}
	tr, traceID, jerr := p.result(r.Context(), params, meta, modern, slot)
	if jerr != nil {
		// A protocol error of the call (a client capability it needs,
		// CAPABILITY_REQUIRED): answered as the SDK answers the handler's
		// protocolError, never run twice.
		p.writeCallError(w, r, req.ID, jerr, modern)
		return true
	}
	out, err := encodeReply(req.ID.Raw(), tr, modern)
	if err != nil {
		p.o.Logger.ErrorContext(r.Context(), "encoding a tool result", "traceId", traceID, "err", err)
		p.o.WriteError(w, RawID(req.ID), duet.Errorf(duet.CodeInternal, "internal error"))
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

// RawID is the JSON of an id for an error reply (nil, written null, when
// there is none): the id as the SDK writes it back (jsonrpc.MakeID: an
// integer, a string).
func RawID(id jsonrpc.ID) json.RawMessage {
	if !id.IsValid() {
		return nil
	}
	b, err := json.Marshal(id.Raw())
	if err != nil {
		return nil
	}
	return b
}

// modernEligible reports whether a 2026-07-28 tools/call is one the SDK
// would accept and answer with the tool's result: the headers it requires
// (Mcp-Method, Mcp-Name) match the body, and no Mcp-Param-* header or
// session is named. Its _meta is judged by modernMetaEligible.
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

// acceptsBoth reports whether the Accept values take both a JSON reply and
// an event stream, as the SDK's handler requires of a POST.
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

// writeCallError answers a fast call whose governed call failed with a
// protocol error as the SDK's stateless JSON handler answers it: the
// JSON-RPC error encoded by the SDK's encoder, with the HTTP status the SDK
// gives a 2026-07-28 protocol error (SEP-2575: 404 for an unknown method,
// 400 for invalid parameters, an unsupported version or a missing client
// capability), 200 otherwise.
func (p *Paths) writeCallError(w http.ResponseWriter, r *http.Request, id jsonrpc.ID, jerr *jsonrpc.Error, modern bool) {
	out, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: jerr})
	if err != nil {
		p.o.Logger.ErrorContext(r.Context(), "encoding a call's error", "err", err)
		p.o.WriteError(w, RawID(id), duet.Errorf(duet.CodeInternal, "internal error"))
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
