package fast

import (
	"bytes"
	"fmt"
	"reflect"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/duet-test/duet/internal/catalog"
	"github.com/duet-test/duet/internal/sdkjson"
)

// testPaths are the fast paths of a server of the product catalog, for
// what runs no call.
func testPaths() *Paths {
	return New(Options{Catalog: catalog.New(nil, catalog.Options{}), ServerInfo: &mcp.Implementation{Name: "duet", Version: "test"}})
}

// readCallSeeds are params of tools/call requests, well and badly typed.
var readCallSeeds = []string{
	`{"name":"get_test_task","arguments":{"taskId":"t"}}`,
	`{"name":"get_test_task","arguments":{"taskId":"t"},"_meta":{"progressToken":1}}`,
	`{"name":"get_test_task","_meta":{"progressToken":null,"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`,
	`{"name":"x","_meta":{"io.modelcontextprotocol/protocolVersion":5}}`,
	`{"uri":"file:///a","taskId":"k"}`, `{"name":"","uri":"u"}`, `{"Name":"x","name":"y","NAME":"z"}`,
	`{"name":5}`, `{"uri":5,"name":"x"}`, `{"taskId":[],"name":"x"}`, `{"_meta":[],"name":"x"}`, `{"_meta":null,"name":"x"}`,
	// _meta read beside its bytes (readCallParams): empty, not an object, a
	// value the SDK's map refuses, nesting, more keys than the map's room, a
	// name that differs only in case.
	`{"name":"x","_meta":{}}`, `{"name":"x","_meta":5}`, `{"name":"x","_meta":"s"}`, `{"name":"x","_meta":{"a":1e400}}`,
	`{"name":"x","_meta":{"a":{"b":[1,{},null,"<&>"]},"c":true}}`, `{"name":"x","_meta":{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9}}`,
	`{"name":"x","_Meta":{"a":1}}`, `{"name":"x","_meta":{"a":1},"_META":{"b":2}}`,
	`{"name":"x","arguments":[1]}`, `{"name":"x","arguments":null}`, `{"name":"x","requestState":"s"}`, `{"name":"x","requestState":1}`,
	`{"name":"x","inputResponses":{}}`, `{"name":"x","inputResponses":{"a":{"action":"accept"}}}`, `{"name":"x","inputResponses":5}`,
	`{"name":"x","task":{"ttl":1}}`, `[]`, `"x"`, `null`, `{}`,
}

// TestReadCallReadsAsTheDecodesItReplaces: the one decode of a tools/call's
// params gives what the envelope's field-by-field decode and the fast
// path's decode into the SDK's type gave, or steps aside.
func TestReadCallReadsAsTheDecodesItReplaces(t *testing.T) {
	t.Parallel()
	for _, params := range readCallSeeds {
		checkReadCall(t, params)
	}
}

func FuzzReadCall(f *testing.F) {
	for _, s := range readCallSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, params string) {
		if !jsontext.Value(params).IsValid() || sdkjson.DepthExceeds([]byte(params), sdkjson.MaxDepth) {
			return // the HTTP door hands Read only what passed its strict check
		}
		checkReadCall(t, params)
	})
}

func checkReadCall(t *testing.T, params string) {
	t.Helper()
	r := &Request{Method: "tools/call", Params: []byte(params)}
	if !r.readCall() {
		if r.call != nil || r.Name != "" || r.TaskID != "" || r.Progress || r.MetaVersion != "" {
			t.Errorf("%s: readCall stepped aside but set %+v", params, r)
		}
		return
	}
	// The envelope's field-by-field decode.
	var p struct {
		Name   string   `json:"name"`
		URI    string   `json:"uri"`
		TaskID string   `json:"taskId"`
		Meta   mcp.Meta `json:"_meta"`
	}
	if err := sdkjson.Unmarshal([]byte(params), &p); err != nil {
		t.Fatalf("%s: readCall decoded what the envelope's decode refuses: %v", params, err)
	}
	name := p.Name
	if name == "" {
		name = p.URI
	}
	tok, ok := p.Meta["progressToken"]
	version, _ := p.Meta[mcp.MetaKeyProtocolVersion].(string)
	if r.Name != name || r.TaskID != p.TaskID || r.Progress != (ok && tok != nil) || r.MetaVersion != version {
		t.Errorf("%s: readCall got name %q task %q progress %v version %q, the envelope's decode %q %q %v %q",
			params, r.Name, r.TaskID, r.Progress, r.MetaVersion, name, p.TaskID, ok && tok != nil, version)
	}
	// The fast path's decode into the SDK's type.
	var c mcp.CallToolParamsRaw
	if err := sdkjson.Unmarshal([]byte(params), &c); err != nil {
		t.Fatalf("%s: readCall decoded what the SDK's type refuses: %v", params, err)
	}
	if !reflect.DeepEqual(*r.call, c) {
		t.Errorf("%s: readCall got %+v, the SDK's type %+v", params, *r.call, c)
	}
}

// BenchmarkReadModernCall: the reading of a 2026-07-28 get_test_task body
// the fast path serves — the envelope, the params and their _meta — up to
// the call (nothing runs).
func BenchmarkReadModernCall(b *testing.B) {
	s := testPaths()
	body := []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"get_test_task","arguments":{"taskId":"task_01h8x2k3m4n5p6q7r8s9t0v1w2"},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"}}}}`)
	b.ReportAllocs()
	for b.Loop() {
		req := Read(body, true, true)
		if _, _, ok := s.callEligible(req, true); !ok {
			b.Fatal("not eligible")
		}
	}
}

// TestMetaVerdictsAreTheDecodes: a 2026-07-28 _meta judged from the
// remembered verdict gets the verdict its decode gives, the first time and
// every later time; a traceparent is never served from memory (it differs
// per call and is handed to the call), and the memory stays bounded.
func TestMetaVerdictsAreTheDecodes(t *testing.T) {
	t.Parallel()
	s := testPaths()
	const v, caps, info = `"io.modelcontextprotocol/protocolVersion":"2026-07-28"`, `"io.modelcontextprotocol/clientCapabilities":{}`, `"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}`
	metas := []string{
		v + "," + caps + "," + info, v + "," + caps, caps + "," + info, v + "," + info,
		v + `,"io.modelcontextprotocol/clientCapabilities":{"roots":5}`, v + `,"io.modelcontextprotocol/clientCapabilities":{"extensions":{}}`,
		v + "," + caps + `,"io.modelcontextprotocol/clientInfo":null`, v + "," + caps + `,"io.modelcontextprotocol/clientInfo":{"name":5}`,
		v + "," + caps + "," + info + `,"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"`,
		v + "," + caps + "," + info + `,"traceparent":null`, v + "," + caps + "," + info + `,"traceparent":5`,
		v + "," + caps + "," + info + `,"progressToken":1`, `"io.modelcontextprotocol/protocolVersion":"2025-11-25",` + caps,
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28 ",` + caps, ` ` + v + " , " + caps + " ",
	}
	for round := range 3 {
		for _, meta := range metas {
			var p callParams
			if !readCallParams([]byte(`{"name":"get_test_task","_meta":{`+meta+`}}`), &p) {
				t.Fatalf("%s: the params do not read", meta)
			}
			var fresh modernMeta
			want := judgeModernMeta(p.RawMeta, &p.CallToolParamsRaw, &fresh)
			got, eligible := s.modernMetaEligible(p.RawMeta, &p.CallToolParamsRaw)
			if eligible != want || (got.Traceparent == nil) != (fresh.Traceparent == nil) || got.Traceparent != nil && *got.Traceparent != *fresh.Traceparent {
				t.Errorf("round %d, %s: got %v %+v, the decode's %v %+v", round, meta, eligible, got, want, fresh)
			}
			if _, kept := s.metaSeen.get(p.RawMeta); kept == (fresh.Traceparent != nil) {
				t.Errorf("round %d, %s: kept %v with traceparent %v", round, meta, kept, fresh.Traceparent)
			}
		}
	}
	if eligible, ok := s.metaSeen.get([]byte(`{` + v + "," + caps + "," + info + `}`)); !ok || !eligible {
		t.Errorf("the plain triple: remembered %v, eligible %v", ok, eligible)
	}
	for i := range 2 * metaVerdictsMax {
		s.metaSeen.put([]byte(fmt.Sprint(i)), false)
	}
	s.metaSeen.put(bytes.Repeat([]byte{' '}, metaVerdictMaxBytes+1), false)
	if n := len(s.metaSeen.m); n > metaVerdictsMax {
		t.Errorf("%d verdicts kept, at most %d", n, metaVerdictsMax)
	}
}
