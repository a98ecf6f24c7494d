package mcpserver

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/catalog"
)

// checkBodyPasses is checkBody as it was before it became one pass: a
// validity pass, the depth count, then a pass reading the ids. The one
// pass must refuse exactly what it refused, with the same code and message.
func checkBodyPasses(body []byte) error {
	if !jsontext.Value(body).IsValid() {
		return duet.Errorf(duet.CodeParseError, "the body is not one valid JSON value (RFC 7493: UTF-8, no duplicate keys)")
	}
	if depthExceeds(body, maxDepth) {
		return duet.Errorf(duet.CodeParseError, "the body nests deeper than %d levels", maxDepth)
	}
	dec := jsontext.NewDecoder(bytes.NewReader(body))
	tok, err := dec.ReadToken()
	if err != nil {
		return duet.Errorf(duet.CodeParseError, "the body is not valid JSON")
	}
	check := func() error {
		for dec.PeekKind() != '}' {
			name, err := dec.ReadToken()
			if err != nil {
				return duet.Errorf(duet.CodeParseError, "the body is not valid JSON")
			}
			if name.String() != "id" {
				if err := dec.SkipValue(); err != nil {
					return duet.Errorf(duet.CodeParseError, "the body is not valid JSON")
				}
				continue
			}
			v, err := dec.ReadValue()
			if err != nil {
				return duet.Errorf(duet.CodeParseError, "the body is not valid JSON")
			}
			if err := checkID(v); err != nil {
				return err
			}
		}
		if _, err := dec.ReadToken(); err != nil {
			return duet.Errorf(duet.CodeParseError, "the body is not valid JSON")
		}
		return nil
	}
	switch tok.Kind() {
	case '{':
		return check()
	case '[':
		for dec.PeekKind() != ']' {
			if dec.PeekKind() != '{' {
				if err := dec.SkipValue(); err != nil {
					return duet.Errorf(duet.CodeParseError, "the body is not valid JSON")
				}
				continue
			}
			if _, err := dec.ReadToken(); err != nil {
				return duet.Errorf(duet.CodeParseError, "the body is not valid JSON")
			}
			if err := check(); err != nil {
				return err
			}
		}
	}
	return nil
}

func sameRefusal(a, b error) bool {
	return duet.ErrorCode(a) == duet.ErrorCode(b) && duet.ErrorMessage(a) == duet.ErrorMessage(b) && (a == nil) == (b == nil)
}

// checkBodySeeds are bodies with one fault, several, or none.
var checkBodySeeds = []string{
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_test_task","arguments":{"taskId":"x"}}}`,
	`{"jsonrpc":"2.0","id":"a","method":"tools/list"}`,
	`{"jsonrpc":"2.0","id":null,"method":"tools/list"}`,
	`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
	`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]`,
	`[1,"x",{"id":3},[],null]`,
	`[]`, `{}`, `"x"`, `1`, `null`, ``, ` `, `{`, `[`, `}`, `{"id":1}{"id":2}`, `{"id":1} x`, `{"id":1}  `, ` {"id":1}`,
	`{"id":1.5}`, `{"id":1e2}`, `{"id":-0}`, `{"id":9007199254740991}`, `{"id":-9007199254740991}`, `{"id":9007199254740992}`,
	`{"id":true}`, `{"id":{}}`, `{"id":[]}`, `[{"id":1.5},{"id":true}]`, `[{"id":1},{"id":1.5}]`,
	// Several faults: the first of invalid, too deep, bad id wins.
	`{"id":1.5,"a":1,"a":2}`,
	`{"id":1.5,"x":"\xff"}`,
	`{"id":1.5,"x":` + strings.Repeat("[", 1001) + strings.Repeat("]", 1001) + `}`,
	`{"id":1.5,"x":` + strings.Repeat("[", 1001) + strings.Repeat("]", 1001) + `,"x":1}`,
	`[{"id":1.5},` + strings.Repeat("[", 1001) + strings.Repeat("]", 1001) + `]`,
	`[{"id":1.5},{"a":1,"a":1}]`,
	`{"id":1.5} {}`,
	`{"id":true,"id":1}`,
	`{"a":"\ud800"}`, `{"a":"\ud800\udc00"}`, `{"a":"é"}`, "{\"a\":\"\xc3\"}",
	`{"x":` + strings.Repeat("[", 1000) + strings.Repeat("]", 1000) + `}`,
	strings.Repeat("[", 1001) + strings.Repeat("]", 1001),
	strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
	`{"x":"` + strings.Repeat("[", 2000) + `"}`,
	`{"x":"\"[[["}`,
}

// TestCheckBodyIsOnePassOfTheSame: the one pass refuses exactly what the
// passes refused, with the same code and message (FuzzCheckBody goes on
// with generated bodies).
func TestCheckBodyIsOnePassOfTheSame(t *testing.T) {
	t.Parallel()
	for _, body := range checkBodySeeds {
		got, want := checkBody([]byte(body)), checkBodyPasses([]byte(body))
		if !sameRefusal(got, want) {
			t.Errorf("%.80q: got %v, want %v", body, got, want)
		}
	}
}

func FuzzCheckBody(f *testing.F) {
	for _, s := range checkBodySeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		got, want := checkBody([]byte(body)), checkBodyPasses([]byte(body))
		if !sameRefusal(got, want) {
			t.Errorf("%q: got %v, want %v", body, got, want)
		}
	})
}

// BenchmarkCheckBody: the strict reading of a get_test_task call's body.
func BenchmarkCheckBody(b *testing.B) {
	body := []byte(`{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"get_test_task","arguments":{"taskId":"task_01h8x2k3m4n5p6q7r8s9t0v1w2"}}}`)
	for _, f := range []struct {
		name  string
		check func([]byte) error
	}{{"one-pass", checkBody}, {"passes", checkBodyPasses}} {
		b.Run(f.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := f.check(body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
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
		if checkBody([]byte(params)) != nil {
			return // decodeEnvelope reads only what checkBody passed
		}
		checkReadCall(t, params)
	})
}

func checkReadCall(t *testing.T, params string) {
	t.Helper()
	r := &request{method: "tools/call", params: []byte(params)}
	if !r.readCall() {
		if r.call != nil || r.name != "" || r.taskID != "" || r.progress || r.metaVersion != "" {
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
	if err := sdkUnmarshal([]byte(params), &p); err != nil {
		t.Fatalf("%s: readCall decoded what the envelope's decode refuses: %v", params, err)
	}
	name := p.Name
	if name == "" {
		name = p.URI
	}
	tok, ok := p.Meta["progressToken"]
	version, _ := p.Meta[mcp.MetaKeyProtocolVersion].(string)
	if r.name != name || r.taskID != p.TaskID || r.progress != (ok && tok != nil) || r.metaVersion != version {
		t.Errorf("%s: readCall got name %q task %q progress %v version %q, the envelope's decode %q %q %v %q",
			params, r.name, r.taskID, r.progress, r.metaVersion, name, p.TaskID, ok && tok != nil, version)
	}
	// The fast path's decode into the SDK's type.
	var c mcp.CallToolParamsRaw
	if err := sdkUnmarshal([]byte(params), &c); err != nil {
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
	s := New(catalog.New(nil, catalog.Options{}), Options{})
	body := []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"get_test_task","arguments":{"taskId":"task_01h8x2k3m4n5p6q7r8s9t0v1w2"},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"}}}}`)
	b.ReportAllocs()
	for b.Loop() {
		req := decodeEnvelope(body)
		if _, _, ok := s.callEligible(req.params, req.call, req.meta, true); !ok {
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
	s := New(catalog.New(nil, catalog.Options{}), Options{})
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
			want := s.judgeModernMeta(p.RawMeta, &p.CallToolParamsRaw, &fresh)
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
