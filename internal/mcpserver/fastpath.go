package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"mime"
	"net/http"
	"strconv"
	"strings"

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
// Anything else — other methods, other protocol versions (2026-07-28 goes
// through the SDK's validation of _meta and the Mcp-* headers), progress
// tokens, streaming tools, batches, unknown tools, parameters beyond name,
// arguments and _meta.traceparent — is left to the SDK, before anything ran.
// Once the tool has run, the fast path answers, whatever happens: a call is
// never run twice.

// fastVersions are the protocol versions the fast path serves.
var fastVersions = map[string]bool{"2025-03-26": true, "2025-06-18": true, "2025-11-25": true}

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

// FastPathServed returns how many requests the fast path has answered (for
// tests that must prove it served, and for metrics).
func (s *Server) FastPathServed() int64 { return s.fastServed.Load() }

// fastCall answers r if it is eligible and reports whether it did; when it
// returns false it has written nothing and run nothing.
func (s *Server) fastCall(w http.ResponseWriter, r *http.Request, req *request) bool {
	if !fastVersions[r.Header.Get("Mcp-Protocol-Version")] || !acceptsBoth(r.Header.Values("Accept")) {
		return false
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return false
	}
	if !req.isCall() || req.method != "tools/call" || len(req.params) == 0 {
		return false
	}
	var params mcp.CallToolParamsRaw
	if sdkUnmarshal(req.params, &params) != nil || params.InputResponses != nil || params.RequestState != "" {
		return false
	}
	if _, ok := s.cat.Tool(params.Name); !ok {
		return false
	}
	if a := bytes.TrimSpace(params.Arguments); len(a) > 0 && a[0] != '{' {
		return false
	}
	var meta map[string]any
	for k, v := range params.Meta {
		tp, ok := v.(string)
		if k != "traceparent" || !ok {
			return false // progress tokens and anything else: the SDK path
		}
		meta = map[string]any{"traceparent": tp}
	}
	caller := callerOf(r.Context(), meta)
	// Tools may replace their content blocks (SetContent) as on the SDK
	// path; tools that talk back to the client through the session are
	// declared streaming and never come here.
	call := &callState{}
	ctx := context.WithValue(r.Context(), callKey{}, call)
	s.fastServed.Add(1)
	res, err := s.cat.Call(ctx, catalog.Request{Caller: caller, Tool: params.Name, Args: params.Arguments})
	if err != nil {
		// The tool vanished between the check and the call (it cannot:
		// the catalog is fixed); answer as the SDK would, never run twice.
		s.writeError(w, rawID(req.id), duet.Errorf(duet.CodeNotFound, "unknown tool %q", params.Name))
		return true
	}
	tr := ToolResult(res, caller.TraceID)
	if call.content != nil && !res.IsError {
		tr.Content = call.content
	}
	out, err := encodeReply(replyID(req.id), tr)
	if err != nil {
		s.log.ErrorContext(ctx, "encoding a tool result", "traceId", caller.TraceID, "err", err)
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

// encodeReply encodes a JSON-RPC result message as the SDK does
// (jsonrpc2.EncodeMessage: the result marshalled without HTML escaping,
// then the message). The message is assembled around the result's bytes
// rather than marshalled again: encoding/json would only copy them
// (compacting JSON that is already compact, escaping nothing), and that
// second pass over every result was a tenth of the CPU of a call.
func encodeReply(id any, result *mcp.CallToolResult) ([]byte, error) {
	// What an Encoder without HTML escaping writes for a json.Marshaler:
	// its MarshalJSON output (json.Marshal's, compact) unchanged.
	res, err := result.MarshalJSON()
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(res)+64)
	out = append(out, `{"jsonrpc":"2.0"`...)
	if id != nil {
		idb, err := encodeNoEscape(id)
		if err != nil {
			return nil, err
		}
		out = append(out, `,"id":`...)
		out = append(out, idb...)
	}
	if len(res) > 0 {
		out = append(out, `,"result":`...)
		out = append(out, res...)
	}
	return append(out, '}'), nil
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
