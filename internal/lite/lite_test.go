package lite_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/auth"
	"github.com/duet-test/duet/internal/lite"
)

func TestParseCall(t *testing.T) {
	t.Parallel()
	tests := []struct {
		body string
		name string // want; "" = refused
		user string // want user.empId ("-" = no user field)
	}{
		{`{"name":"list_test_tasks","arguments":{}}`, "list_test_tasks", "-"},
		{`{"name":"t","arguments":{"a":1},"user":{"empId":"E1","name":"Ada","dept":"QA"},"traceId":"x"}`, "t", "E1"},
		{`{"name":"t","user":null}`, "t", "-"},
		{`{"name":"t","user":{}}`, "t", ""},
		// Duplicate keys, at any depth.
		{`{"name":"t","user":{"empId":"alice"},"user":{"empId":"bob"}}`, "", ""},
		{`{"name":"t","user":{"empId":"alice","empId":"bob"}}`, "", ""},
		{`{"name":"a","name":"b"}`, "", ""},
		{`{"name":"t","arguments":{"taskId":"a","taskId":"b"}}`, "", ""},
		{`{"name":"t","arguments":{"x":[{"k":1,"k":2}]}}`, "", ""},
		{`{"name":"t","\u0075ser":{"empId":"a"},"user":{"empId":"b"}}`, "", ""},
		// Keys are exact: a case variant of a known key is refused.
		{`{"name":"t","USER":{"empId":"bob"}}`, "", ""},
		{`{"name":"t","User":{"empId":"bob"}}`, "", ""},
		{`{"name":"t","user":{"EMPID":"bob"}}`, "", ""},
		{`{"name":"t","user":{"empid":"bob","empId":"alice"}}`, "", ""},
		{`{"Name":"t"}`, "", ""},
		{`{"name":"t","Arguments":{}}`, "", ""},
		// Not one valid JSON object.
		{"{\"name\":\"t\",\"user\":{\"empId\":\"a\xffb\"}}", "", ""},
		{`{"name":"t","user":{"empId":"\ud800"}}`, "", ""},
		{`{"name":"t"} {"name":"u"}`, "", ""},
		{`["name"]`, "", ""},
		{`{"name":""}`, "", ""},
		{`{"name":7}`, "", ""},
		{`{"name":"t","user":"alice"}`, "", ""},
		{`{"name":"t","user":{"empId":7}}`, "", ""},
	}
	for _, tt := range tests {
		req, err := lite.ParseCall([]byte(tt.body))
		if tt.name == "" {
			if duet.ErrorCode(err) != duet.CodeInvalidArgument {
				t.Errorf("%s: got %+v %v, want INVALID_ARGUMENT", tt.body, req, err)
			}
			continue
		}
		if err != nil || req.Name != tt.name {
			t.Errorf("%s: got %+v %v, want name %s", tt.body, req, err, tt.name)
			continue
		}
		switch {
		case tt.user == "-" && req.User != nil, tt.user != "-" && (req.User == nil || req.User.EmpID != tt.user):
			t.Errorf("%s: got user %+v, want %s", tt.body, req.User, tt.user)
		}
	}
}

func TestIdentify(t *testing.T) {
	t.Parallel()
	gw := func(user string) auth.Identity {
		return auth.Identity{UserID: user, Method: auth.MethodGateway, ViaGateway: true}
	}
	u := func(id string) *lite.User { return &lite.User{EmpID: id} }
	tests := []struct {
		name string
		id   auth.Identity
		user *lite.User
		want string
		code duet.Code
	}{
		{"header only", gw("alice"), nil, "alice", ""},
		{"body only", auth.Identity{ViaGateway: true}, u("bob"), "bob", ""},
		{"both, the same", gw("alice"), u("alice"), "alice", ""},
		{"both, different", gw("alice"), u("bob"), "", duet.CodeIdentityMismatch},
		{"body over the fixed user", auth.Identity{UserID: "debug", Method: auth.MethodGatewayFixed, ViaGateway: true}, u("bob"), "bob", ""},
		{"empty empId counts as absent", gw("alice"), u(""), "alice", ""},
		{"neither", auth.Identity{ViaGateway: true}, nil, "", duet.CodeUnauthenticated},
		{"newline", auth.Identity{ViaGateway: true}, u("bob\nalice"), "", duet.CodeUnauthenticated},
		{"NUL", gw("alice"), u("alice\x00"), "", duet.CodeUnauthenticated},
		{"10,000 characters", auth.Identity{ViaGateway: true}, u(strings.Repeat("a", 10000)), "", duet.CodeUnauthenticated},
		{"a token ignores the body", auth.Identity{UserID: "carol", Method: auth.MethodToken}, u("alice"), "carol", ""},
		{"a token ignores an invalid body", auth.Identity{UserID: "carol", Method: auth.MethodToken}, u("a\nb"), "carol", ""},
	}
	for _, tt := range tests {
		got, err := lite.Identify(tt.id, tt.user)
		if got != tt.want || duet.ErrorCode(err) != tt.code {
			t.Errorf("%s: got %q %v, want %q %s", tt.name, got, err, tt.want, tt.code)
		}
		if err != nil && tt.user != nil && len(tt.user.EmpID) > 3 && strings.Contains(err.Error(), tt.user.EmpID) {
			t.Errorf("%s: the error quotes the value: %v", tt.name, err)
		}
	}
}

// FuzzParseCall: ParseCall never panics, and what it accepts is what a
// strict, case-sensitive reader sees in the body — a valid RFC 7493 object
// whose exact keys name, arguments and user.empId hold the values parsed.
func FuzzParseCall(f *testing.F) {
	for _, s := range []string{
		`{"name":"list_test_tasks","arguments":{}}`,
		`{"name":"t","arguments":{"a":[1,{"b":null}]},"user":{"empId":"E1","x":1}}`,
		`{"name":"t","user":{"empId":"alice"},"user":{"empId":"bob"}}`,
		`{"name":"t","USER":{"EMPID":"bob"}}`,
		`{"name":"t","user":{"empId":"a\u0000b"}}`,
		`{"name":"t","\u0075ser":{"empId":"a"}}`,
		`{"name":"t","arguments":{"k":"\ud83d\ude00"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := lite.ParseCall(body)
		if err != nil {
			if duet.ErrorCode(err) != duet.CodeInvalidArgument {
				t.Fatalf("%q: %v, want INVALID_ARGUMENT", body, err)
			}
			return
		}
		if !jsontext.Value(body).IsValid() {
			t.Fatalf("%q: accepted, but not valid RFC 7493 JSON", body)
		}
		var top map[string]json.RawMessage
		if err := json.Unmarshal(body, &top); err != nil {
			t.Fatalf("%q: accepted, but not an object: %v", body, err)
		}
		for k := range top {
			for _, known := range []string{"name", "arguments", "user"} {
				if k != known && strings.EqualFold(k, known) {
					t.Fatalf("%q: accepted the key %q", body, k)
				}
			}
		}
		var name string
		if json.Unmarshal(top["name"], &name) != nil || name != req.Name || name == "" {
			t.Fatalf("%q: name %q, the body says %s", body, req.Name, top["name"])
		}
		if string(top["arguments"]) != string(req.Arguments) {
			t.Fatalf("%q: arguments %s, the body says %s", body, req.Arguments, top["arguments"])
		}
		raw, ok := top["user"]
		if !ok || string(raw) == "null" {
			if req.User != nil {
				t.Fatalf("%q: a user %+v without a user field", body, req.User)
			}
			return
		}
		var u map[string]json.RawMessage
		if json.Unmarshal(raw, &u) != nil || req.User == nil {
			t.Fatalf("%q: user field %s, parsed %+v", body, raw, req.User)
		}
		var emp string
		if e, ok := u["empId"]; ok {
			if json.Unmarshal(e, &emp) != nil {
				t.Fatalf("%q: empId %s accepted", body, e)
			}
		}
		if emp != req.User.EmpID {
			t.Fatalf("%q: empId %q, the body says %q", body, req.User.EmpID, emp)
		}
	})
}
