package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/duet-test/duet/internal/catalog"
)

// The fast path answers the commonest request of a stateless deployment — a
// plain tools/call from a client of a handshake-era protocol version
// (2025-03-26, 2025-06-18, 2025-11-25) — without the SDK's per-request
// session machinery, whose allocations dominated the CPU cost of a call (see
// docs/performance.md). It makes the same catalog.Call as the SDK path and
// encodes the reply with the SDK's own result type, the way the SDK does
// (JSON without HTML escaping, the id echoed as parsed), so the bytes are the
// same: fastpath_test.go sends every request both ways and compares them.
// Anything else — other methods, other protocol versions (2026-07-28 goes
// through the SDK's validation of _meta and the Mcp-* headers), progress
// tokens, streaming tools, batches, unusual ids, unknown tools, malformed
// parameters — is left to the SDK.

// fastVersions are the protocol versions the fast path serves.
var fastVersions = map[string]bool{"2025-03-26": true, "2025-06-18": true, "2025-11-25": true}

type fastRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  *struct {
		Name      string                     `json:"name"`
		Arguments json.RawMessage            `json:"arguments"`
		Meta      map[string]json.RawMessage `json:"_meta"`
	} `json:"params"`
}

// progress reports whether the request carries a progress token (its reply
// must stream).
func (r *fastRequest) progress() bool {
	if r.Params == nil {
		return false
	}
	tok, ok := r.Params.Meta["progressToken"]
	return ok && string(tok) != "null"
}

// fastID returns the request id as the SDK would re-encode it: an int64 or a
// string; ok is false for any other id.
func fastID(raw json.RawMessage) (any, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil, false
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return nil, false
		}
		return s, true
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil || n > 1<<53 || n < -(1<<53) {
		// The SDK reads numeric ids as float64: beyond 2^53 it rounds them,
		// and only the SDK path reproduces that.
		return nil, false
	}
	return n, true
}

func acceptsBoth(values []string) bool {
	jsonOK, streamOK := false, false
	for _, v := range values {
		for _, raw := range strings.Split(v, ",") {
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

// fastCall answers r if it is eligible and reports whether it did; when it
// returns false it has written nothing.
func (s *Server) fastCall(w http.ResponseWriter, r *http.Request, req *fastRequest) bool {
	if !fastVersions[r.Header.Get("Mcp-Protocol-Version")] || !acceptsBoth(r.Header.Values("Accept")) {
		return false
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return false
	}
	if req.JSONRPC != "2.0" || req.Method != "tools/call" || req.Params == nil {
		return false
	}
	id, ok := fastID(req.ID)
	if !ok {
		return false
	}
	if _, ok := s.cat.Tool(req.Params.Name); !ok {
		return false
	}
	if a := bytes.TrimSpace(req.Params.Arguments); len(a) > 0 && a[0] != '{' {
		return false
	}
	var meta map[string]any
	for k, v := range req.Params.Meta {
		if k != "traceparent" {
			return false // progress tokens and anything else: the SDK path
		}
		var tp string
		if json.Unmarshal(v, &tp) != nil {
			return false
		}
		meta = map[string]any{"traceparent": tp}
	}
	caller := callerOf(r.Context(), meta)
	// Tools may replace their content blocks (SetContent) as on the SDK
	// path; tools that talk back to the client through the session are
	// declared streaming and never come here.
	call := &callState{}
	ctx := context.WithValue(r.Context(), callKey{}, call)
	res, err := s.cat.Call(ctx, catalog.Request{Caller: caller, Tool: req.Params.Name, Args: req.Params.Arguments})
	if err != nil {
		return false
	}
	tr := ToolResult(res, caller.TraceID)
	if call.content != nil && !res.IsError {
		tr.Content = call.content
	}
	result, err := encodeNoEscape(tr)
	if err != nil {
		s.log.Error("encoding a tool result", "traceId", caller.TraceID, "err", err)
		return false
	}
	out, err := encodeNoEscape(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      any             `json:"id,omitempty"`
		Result  json.RawMessage `json:"result,omitempty"`
	}{"2.0", id, result})
	if err != nil {
		return false
	}
	h := w.Header()
	h.Set("Cache-Control", "no-cache, no-transform")
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(out)))
	w.WriteHeader(http.StatusOK)
	w.Write(out)
	return true
}

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
