package compiler

import (
	"context"
	"slices"
	"strings"
	"testing"
)

// TestRetriesTagsParallel: a task's retries, timeout, tags and parallel,
// and a case's own retries and tags (which win, or add), compiled into
// the cases; and each one's bad values refused at its line and column,
// the deployment's bounds with the variable that sets them.
func TestRetriesTagsParallel(t *testing.T) {
	t.Parallel()
	src := `
task: {name: t, retries: 2, timeout: 90s, tags: [shop], parallel: 3}
cases:
  - {title: a, steps: [{assert: "true"}]}
  - {title: b, retries: 0, tags: [smoke, shop, "@fast"], timeout: 5s, steps: [{assert: "true"}]}
`
	s, err := CompileSuite(context.Background(), []byte(src), "t.yaml", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Task.Retries != 2 || s.Task.CaseTimeoutMs != 90000 || !slices.Equal(s.Task.Tags, []string{"shop"}) || s.Task.Parallel != 3 {
		t.Fatalf("task: %+v", s.Task)
	}
	a, b := s.Cases[0], s.Cases[1]
	if a.Retries != 2 || a.TimeoutMs != 90000 || !slices.Equal(a.Tags, []string{"shop"}) {
		t.Fatalf("case a: retries %d timeout %d tags %v", a.Retries, a.TimeoutMs, a.Tags)
	}
	if b.Retries != 0 || b.TimeoutMs != 5000 || !slices.Equal(b.Tags, []string{"shop", "smoke", "@fast"}) {
		t.Fatalf("case b: retries %d timeout %d tags %v", b.Retries, b.TimeoutMs, b.Tags)
	}
	// Retries and tags are part of a case's version.
	s2, err := CompileSuite(context.Background(), []byte(strings.Replace(src, "retries: 2", "retries: 1", 1)), "t.yaml", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s2.Cases[0].SourceHash == a.SourceHash {
		t.Fatal("changing the task's retries left its cases' versions alone")
	}

	for _, tt := range []struct {
		name, src, want string
		opts            Options
	}{
		{"negative retries", `
task: {name: t}
cases:
  - {title: c, retries: -1, steps: [{assert: "true"}]}
`, "t.yaml:4:25: retries must be a whole number from 0 to 10", Options{}},
		{"retries past the deployment", `
task: {name: t, retries: 4}
cases:
  - {title: c, steps: [{assert: "true"}]}
`, "t.yaml:2:26: retries: 4 is more than this deployment allows (DUET_MAX_RETRIES=3)", Options{MaxRetries: 3}},
		{"parallel past the deployment", `
task: {name: t, parallel: 9}
cases:
  - {title: c, steps: [{assert: "true"}]}
`, "t.yaml:2:27: parallel: 9 is more than this deployment allows (DUET_MAX_PARALLEL=8)", Options{MaxParallel: 8}},
		{"parallel zero", `
task: {name: t, parallel: 0}
cases:
  - {title: c, steps: [{assert: "true"}]}
`, "parallel must be a whole number from 1 to 64", Options{}},
		{"bad tag", `
task: {name: t}
cases:
  - {title: c, tags: [ok, "two words"], steps: [{assert: "true"}]}
`, `t.yaml:4:27: tags: "two words" is not a tag`, Options{}},
		{"task timeout", `
task: {name: t, timeout: forever}
cases:
  - {title: c, steps: [{assert: "true"}]}
`, "t.yaml:2:26: timeout \"forever\"", Options{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := CompileSuite(context.Background(), []byte(tt.src), "t.yaml", tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want %q", err, tt.want)
			}
		})
	}
}

// TestEnvReferences: a step that reads env.NAME that no environment of the
// task declares is refused at its line and column (in a template, an
// expression, a set, a hook, a flow); declared names compile.
func TestEnvReferences(t *testing.T) {
	t.Parallel()
	ok := `
task:
  name: t
  baseURL: "http://a.test"
  environments: {staging: {vars: {currency: EUR}}, prod: {vars: {region: eu}}}
  beforeEach: [{assert: 'env.region != ""'}]
flows:
  check: {steps: [{assert: 'env["currency"] == "EUR"'}]}
cases:
  - {title: c, steps: [{set: {c: env.currency}}, {http: "GET /x?c=${env.currency}"}, {use: check}]}
`
	if _, err := CompileSuite(context.Background(), []byte(ok), "t.yaml", Options{}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ name, src, want string }{
		{"template", `
task: {name: t, baseURL: "http://a.test", environments: {staging: {vars: {currency: EUR}}}}
cases:
  - {title: c, steps: [{http: "GET /x?c=${env.curency}"}]}
`, `t.yaml:4:31: env.curency: none of the task's environments declares it (their vars: currency)`},
		{"expression", `
task: {name: t, baseURL: "http://a.test", environments: {staging: {vars: {currency: EUR}}}}
cases:
  - title: c
    steps:
      - assert: env.region == "eu"
`, `t.yaml:6:17: env.region`},
		{"set in a hook", `
task:
  name: t
  environments: {staging: {}}
  beforeAll: [{set: {r: 'env["region"]'}}]
cases:
  - {title: c, steps: [{assert: "true"}]}
`, `t.yaml:5:25: env.region: none of the task's environments (staging) declares it in its vars`},
		{"no environments", `
task: {name: t}
flows:
  f: {steps: [{assert: "env.x == 1"}]}
cases:
  - {title: c, steps: [{use: f}]}
`, `t.yaml:4:24: env.x: the task declares no environments`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := CompileSuite(context.Background(), []byte(tt.src), "t.yaml", Options{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want %q", err, tt.want)
			}
		})
	}
}
