package webui

import (
	"encoding/json"
	"net/url"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/duet-test/duet"
)

const toolSchema = `{"type":"object","required":["orderId","count"],"properties":{
	"orderId":{"type":"string","description":"the order"},
	"count":{"type":"integer"},
	"ratio":{"type":["number","null"]},
	"dryRun":{"type":"boolean","default":true},
	"status":{"type":"string","enum":["paid","shipped"]},
	"filter":{"type":"object"}}}`

// TestToolForm: the manual call form is made from the input schema —
// required fields first, a field per type — and turns what was posted
// into typed arguments.
func TestToolForm(t *testing.T) {
	f := buildForm(json.RawMessage(toolSchema), nil)
	var kinds []string
	for _, fd := range f.Fields {
		kinds = append(kinds, fd.Name+":"+fd.Kind)
	}
	want := []string{"count:integer", "orderId:text", "dryRun:checkbox", "filter:json", "ratio:number", "status:select"}
	if d := cmp.Diff(want, kinds); d != "" {
		t.Fatalf("fields (-want +got):\n%s", d)
	}
	if !f.Fields[2].Checked {
		t.Errorf("dryRun's default true does not check the box")
	}
	args, err := f.arguments(url.Values{"arg.orderId": {" A1001 "}, "arg.count": {"3"}, "arg.ratio": {"0.5"}, "arg.dryRun": {"true"},
		"arg.status": {"paid"}, "arg.filter": {`{"a":[1]}`}})
	if err != nil {
		t.Fatal(err)
	}
	wantArgs := map[string]any{"orderId": "A1001", "count": int64(3), "ratio": 0.5, "dryRun": true, "status": "paid", "filter": map[string]any{"a": []any{1.0}}}
	if d := cmp.Diff(wantArgs, args); d != "" {
		t.Errorf("arguments (-want +got):\n%s", d)
	}
	for name, posted := range map[string]url.Values{
		"a required field missing": {"arg.count": {"3"}},
		"not a whole number":       {"arg.orderId": {"x"}, "arg.count": {"3.5"}},
		"not a number":             {"arg.orderId": {"x"}, "arg.count": {"3"}, "arg.ratio": {"NaN"}},
		"not JSON":                 {"arg.orderId": {"x"}, "arg.count": {"3"}, "arg.filter": {"{"}},
	} {
		if _, err := f.arguments(posted); duet.ErrorCode(err) != duet.CodeInvalidArgument {
			t.Errorf("%s: got %v, want INVALID_ARGUMENT", name, err)
		}
	}
	raw := buildForm(json.RawMessage(`{"type":"object"}`), nil)
	if !raw.Raw {
		t.Fatal("a schema without properties should take the arguments as JSON")
	}
	if args, err := raw.arguments(url.Values{"arguments": {`{"q": 1}`}}); err != nil || args["q"] != 1.0 {
		t.Errorf("raw arguments: %v %v", args, err)
	}
	if _, err := raw.arguments(url.Values{"arguments": {`[1]`}}); duet.ErrorCode(err) != duet.CodeInvalidArgument {
		t.Errorf("raw arguments that are not an object: %v", err)
	}
	// Read as the REST API reads a body (RFC 7493): a duplicate key or
	// invalid UTF-8 is refused, not read one way here and another there.
	for name, posted := range map[string]url.Values{
		"a duplicate key":            {"arguments": {`{"q": 1, "q": 2}`}},
		"invalid UTF-8":              {"arguments": {"{\"q\": \"\xff\"}"}},
		"a duplicate key in a field": {"arg.orderId": {"x"}, "arg.count": {"3"}, "arg.filter": {`{"a": 1, "a": 2}`}},
	} {
		form := raw
		if posted.Has("arg.orderId") {
			form = f
		}
		if args, err := form.arguments(posted); duet.ErrorCode(err) != duet.CodeInvalidArgument {
			t.Errorf("%s: got %v %v, want INVALID_ARGUMENT", name, args, err)
		}
	}
}

// FuzzToolForm: any schema and any posted values make a form and either
// arguments or INVALID_ARGUMENT, never a panic.
func FuzzToolForm(f *testing.F) {
	f.Add(toolSchema, "arg.count", "3")
	f.Add(`{"properties":{"x":{"type":["null"]}}}`, "arg.x", "{}")
	f.Add(`{"properties":{"x":{"enum":[null,1,{"a":2}]}}}`, "arguments", "{")
	f.Fuzz(func(t *testing.T, schema, key, value string) {
		form := buildForm(json.RawMessage(schema), url.Values{key: {value}})
		if _, err := form.arguments(url.Values{key: {value}}); err != nil && duet.ErrorCode(err) != duet.CodeInvalidArgument {
			t.Fatalf("error %v, want INVALID_ARGUMENT", err)
		}
	})
}

// FuzzParseHeaders: header lines from a form either parse or are refused
// with a message that never quotes a value.
func FuzzParseHeaders(f *testing.F) {
	f.Add("X-Api-Key: s3cret\nAuthorization: Bearer tok")
	f.Add(":\n\n a")
	f.Fuzz(func(t *testing.T, s string) {
		h, err := parseHeaders(s)
		if err != nil {
			if duet.ErrorCode(err) != duet.CodeInvalidArgument {
				t.Fatalf("error %v, want INVALID_ARGUMENT", err)
			}
			return
		}
		for k := range h {
			if k == "" {
				t.Fatal("an empty header name")
			}
		}
	})
}
