package compiler

import (
	"context"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/duet-test/duet"
)

// TestCompileLanguageErrors: every key of the flow, data, hook and
// environment language is checked when the suite is compiled, the error
// at its line and column.
func TestCompileLanguageErrors(t *testing.T) {
	t.Parallel()
	files := fstest.MapFS{
		"rows.csv":  {Data: []byte("user,pw\nalice,1\nbob\n")},
		"rows.json": {Data: []byte(`{"user": "alice"}`)},
		"big.csv":   {Data: []byte("user\n" + strings.Repeat("x\n", MaxEachFileBytes/2+1))},
	}
	for _, tt := range []struct{ name, src, want string }{
		{"flow cycle", `
task: {name: t}
flows:
  a: {steps: [{use: b}]}
  b: {steps: [{use: c}]}
  c: {steps: [{use: a}]}
cases:
  - {title: c, steps: [{use: a}]}
`, "a → b → c → a"},
		{"unknown flow", `
task: {name: t}
cases:
  - {title: c, steps: [{use: nope}]}
`, `t.yaml:4:30: unknown flow "nope"`},
		{"missing parameter", `
task: {name: t}
flows:
  login: {params: [user], steps: [{set: {u: user}}]}
cases:
  - {title: c, steps: [{use: login}]}
`, "user"},
		{"unknown parameter", `
task: {name: t}
flows:
  login: {params: [user], steps: [{set: {u: user}}]}
cases:
  - {title: c, steps: [{use: {flow: login, with: {user: a, pasword: b}}}]}
`, "pasword"},
		{"unknown default environment", `
task: {name: t, baseURL: "http://a.test", defaultEnvironment: prod, environments: {staging: {baseURL: "http://s.test"}}}
cases:
  - {title: c, steps: [{assert: "true"}]}
`, "prod"},
		{"environment key", `
task: {name: t, environments: {staging: {baseUrl: "http://s.test", varz: {}}}}
cases:
  - {title: c, steps: [{assert: "true"}]}
`, `t.yaml:2:68: unknown key "varz"`},
		{"each file missing", `
task: {name: t}
cases:
  - {title: "c ${row.user}", each: {file: nope.csv}, steps: [{assert: "true"}]}
`, "nope.csv does not exist"},
		{"each file outside the folder", `
task: {name: t}
cases:
  - {title: "c ${row.user}", each: {file: ../etc/passwd.csv}, steps: [{assert: "true"}]}
`, "passwd"},
		{"each csv short row", `
task: {name: t}
cases:
  - {title: "c ${row.user}", each: {file: rows.csv}, steps: [{assert: "true"}]}
`, "rows.csv"},
		{"each json not a list", `
task: {name: t}
cases:
  - {title: "c ${row.user}", each: {file: rows.json}, steps: [{assert: "true"}]}
`, "must hold a list"},
		{"each file too big", `
task: {name: t}
cases:
  - {title: "c ${row.user}", each: {file: big.csv}, steps: [{assert: "true"}]}
`, "larger than"},
		{"each title the same for every row", `
task: {name: t}
cases:
  - {title: "c", each: [{user: a}, {user: b}], steps: [{assert: "true"}]}
`, "row"},
		{"loop bound too high", `
task: {name: t}
cases:
  - {title: c, steps: [{repeat: {while: "true", max: 1000000, steps: [{assert: "true"}]}}]}
`, "max"},
		{"repeat two modes", `
task: {name: t}
cases:
  - {title: c, steps: [{repeat: {times: 2, until: "true", steps: [{assert: "true"}]}}]}
`, "exactly one"},
		{"forEach without as", `
task: {name: t}
cases:
  - {title: c, steps: [{forEach: {in: "[1, 2]", steps: [{assert: "true"}]}}]}
`, "as"},
		{"if without then", `
task: {name: t}
cases:
  - {title: c, steps: [{if: {expr: "true"}}]}
`, "then"},
		{"hook of an unknown kind", `
task: {name: t, beforeAll: [{assert: "true"}], afterEverything: []}
cases:
  - {title: c, steps: [{assert: "true"}]}
`, "afterEverything"},
		{"secret name", `
task: {name: t}
cases:
  - {title: c, steps: [{set: {x: "secrets['not a name']"}}]}
`, "secret"},
	} {
		_, err := CompileSuite(context.Background(), []byte(tt.src), "t.yaml", Options{Files: files})
		if err == nil || !strings.Contains(duet.ErrorMessage(err), tt.want) || !strings.Contains(duet.ErrorMessage(err), "t.yaml:") {
			t.Errorf("%s: got %v, want %q at a line and column", tt.name, err, tt.want)
		}
	}
}

// TestCompileLanguage: what the language compiles to — a case per data
// row (inline, CSV, JSON) named from its row, hooks stored on the task
// and in each case, flows copied into use steps, the secrets steps read.
func TestCompileLanguage(t *testing.T) {
	t.Parallel()
	files := fstest.MapFS{
		"rows.csv":  {Data: []byte("user,pw\nalice,1\n\"bob, jr\",2\n")},
		"rows.json": {Data: []byte(`[{"user": "carol", "n": 3}]`)},
	}
	s, err := CompileSuite(context.Background(), []byte(`
task:
  name: t
  baseURL: http://a.test
  defaultEnvironment: staging
  environments:
    staging: {baseURL: "http://s.test", vars: {tier: s}}
  beforeAll: [{set: {ready: "true"}}]
  beforeEach: [{assert: ready}]
  afterEach: [{assert: "true"}]
  afterAll: [{assert: "true"}]
flows:
  login:
    params: {user: null, pw: "x"}
    steps: [{use: {flow: inner, with: {v: "${user}"}}}]
  inner:
    params: [v]
    steps: [{set: {got: v}}]
cases:
  - title: "csv ${row.user}"
    each: {file: rows.csv}
    steps: [{use: {flow: login, with: {user: "${row.user}", pw: "${secrets.PW}"}}}, {assert: 'got == row.user && env.tier == "s"'}]
  - title: "json ${row.user}"
    each: {file: rows.json}
    steps: [{assert: row.n == 3}]
  - title: "inline ${row.user}"
    each: [{user: dave}]
    steps: [{assert: 'row.user == "dave"'}]
`), "t.yaml", Options{Files: files})
	if err != nil {
		t.Fatal(err)
	}
	var titles []string
	for _, c := range s.Cases {
		titles = append(titles, c.Title)
	}
	if got := strings.Join(titles, "|"); got != "csv alice|csv bob, jr|json carol|inline dave" {
		t.Fatalf("titles: got %q", got)
	}
	if s.Cases[1].Row["user"] != "bob, jr" || s.Cases[2].Row["n"] != float64(3) && s.Cases[2].Row["n"] != int64(3) && s.Cases[2].Row["n"] != uint64(3) {
		t.Errorf("rows: got %v %v", s.Cases[1].Row, s.Cases[2].Row)
	}
	task := s.Task
	if len(task.BeforeAll) != 1 || len(task.AfterAll) != 1 || task.DefaultEnvironment != "staging" || task.Environments["staging"].BaseURL != "http://s.test" {
		t.Errorf("task: got %+v", task)
	}
	c := s.Cases[0]
	if len(c.Steps) != 4 || c.Steps[0].Hook != duet.HookBeforeEach || c.Steps[3].Hook != duet.HookAfterEach {
		t.Fatalf("case steps: got %+v", c.Steps)
	}
	use := c.Steps[1]
	if use.Use == nil || len(use.Use.Steps) != 1 || use.Use.Steps[0].Use == nil || use.Use.Steps[0].Use.Flow != "inner" || len(use.Secrets) != 1 || use.Secrets[0] != "PW" {
		t.Errorf("use: got %+v", use)
	}
}
