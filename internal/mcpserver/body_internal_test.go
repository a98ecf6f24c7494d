package mcpserver

import (
	"bytes"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/duet-test/duet"
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
