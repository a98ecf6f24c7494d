package compiler

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/jsonschema-go/jsonschema"

	"github.com/duet-test/duet/internal/step"
)

const schemaFile = "../../docs/suite.schema.json"

// TestSuiteSchemaIsCurrent: docs/suite.schema.json is the schema the
// compiler generates (refresh it with go test ./internal/compiler -run
// TestSuiteSchemaIsCurrent -update).
func TestSuiteSchemaIsCurrent(t *testing.T) {
	t.Parallel()
	got := SuiteSchemaJSON()
	if *update {
		if err := os.WriteFile(schemaFile, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Fatalf("%s is not current (go test ./internal/compiler -run TestSuiteSchemaIsCurrent -update) (-file +generated):\n%s", schemaFile, diff)
	}
}

// committedSchema reads docs/suite.schema.json — what editors read — and
// resolves it with a JSON Schema validator (draft 2020-12).
func committedSchema(tb testing.TB) *jsonschema.Resolved {
	tb.Helper()
	b, err := os.ReadFile(schemaFile)
	if err != nil {
		tb.Fatal(err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		tb.Fatal(err)
	}
	if s.Schema != "https://json-schema.org/draft/2020-12/schema" {
		tb.Fatalf("$schema is %q, want draft 2020-12", s.Schema)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		tb.Fatalf("%s does not resolve: %v", schemaFile, err)
	}
	return rs
}

// instance is the value a suite's YAML stands for, as the compiler reads
// it (and as an editor's YAML language server hands it to the schema).
func instance(tb testing.TB, src []byte) any {
	tb.Helper()
	n, d := step.Parse(src)
	if d != nil {
		tb.Fatalf("not YAML: %v", d)
	}
	return n.Plain()
}

// validSuites are suites the compiler accepts: the examples, this
// package's test suites, and one suite with the example of every step kind.
func validSuites(t *testing.T) map[string][]byte {
	t.Helper()
	out := map[string][]byte{
		"good":           []byte(good),
		"postRunSuite":   []byte(postRunSuite),
		"all step kinds": []byte(everyKind()),
		"segmentSuite":   []byte(segmentSuite),
		"schedules":      []byte("task:\n  name: t\n  schedule:\n    - {name: nightly, cron: '0 2 * * *', timeZone: Europe/Paris, missed: runOnce, overlap: queue}\n    - every: 90m\ncases:\n  - {title: c, steps: [{assert: 'true'}]}\n"),
		"one schedule":   []byte("task:\n  name: t\n  schedule: {every: 1h}\ncases:\n  - {title: c, steps: [{assert: 'true'}]}\n"),
	}
	files, _ := filepath.Glob("../../examples/*.yaml")
	if len(files) == 0 {
		t.Fatal("no examples")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[f] = b
	}
	seeds, _ := filepath.Glob("testdata/fuzz/FuzzCompileSuite/*")
	for _, f := range seeds {
		src := fuzzSeed(t, f)
		if _, err := CompileSuite(context.Background(), src, f, Options{}); err == nil {
			out[f] = src
		}
	}
	return out
}

// everyKind is a suite whose one case holds the example of every kind.
func everyKind() string {
	var b strings.Builder
	b.WriteString("task: {name: every-kind, baseURL: http://127.0.0.1:8080}\n")
	b.WriteString(exampleFlows)
	b.WriteString("cases:\n  - title: every kind\n    steps:\n")
	b.WriteString("      - open: /\n      - http: {url: /seed, saveAs: resp}\n      - set: {orderId: \"'A1'\", order: \"resp\"}\n")
	for _, k := range step.Kinds() {
		for _, line := range strings.SplitAfter(k.Example, "\n") {
			if line != "" {
				b.WriteString("      " + line)
			}
		}
	}
	return b.String()
}

// exampleFlows are the flows the examples of the use kind use.
const exampleFlows = `flows:
  accept-cookies:
    steps:
      - if: {visible: "#cookie-banner", then: [{click: "#cookie-banner .accept"}]}
  login:
    params: {user: null, password: null}
    steps:
      - fill: {selector: "#user", value: "${user}"}
      - fill: {selector: "#password", value: "${password}"}
`

// fuzzSeed reads a file of the fuzz corpus (go test fuzz v1, one []byte).
func fuzzSeed(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, arg, ok := strings.Cut(string(b), "[]byte(")
	if !ok {
		t.Fatalf("%s: not a []byte seed", path)
	}
	arg = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(arg), ")"))
	var s string
	if err := json.Unmarshal([]byte(arg), &s); err != nil {
		// Go quoting beyond JSON's: leave that seed out.
		return nil
	}
	return []byte(s)
}

// TestSchemaValidatesValidSuites: every suite the compiler accepts — the
// examples, the test suites, every kind's example — is valid against the
// published schema.
func TestSchemaValidatesValidSuites(t *testing.T) {
	t.Parallel()
	rs := committedSchema(t)
	for name, src := range validSuites(t) {
		// An example's data files and uploads read its folder.
		if _, err := CompileSuite(context.Background(), src, name, Options{Servers: anyServer{}, Files: os.DirFS(filepath.Dir(name)), Flows: exampleFlowAssets}); err != nil {
			t.Errorf("%s does not compile: %v", name, err)
			continue
		}
		if err := rs.Validate(instance(t, src)); err != nil {
			t.Errorf("%s: the compiler accepts it, the schema refuses it: %v", name, err)
		}
	}
}

// TestSchemaRefusesBrokenSuites: a suite with a mistake an editor can see
// (a key that does not exist, a value of the wrong type, two kinds in one
// step) is refused by the schema, as by the compiler.
func TestSchemaRefusesBrokenSuites(t *testing.T) {
	t.Parallel()
	rs := committedSchema(t)
	head := "task:\n  name: t\n  baseURL: http://h\ncases:\n  - title: c\n    steps:\n      - open: /\n"
	for name, src := range map[string]string{
		"unknown top key":        "task: {name: t}\ncases: []\nextra: 1\n",
		"missing task":           "cases: []\n",
		"unknown task key":       "task: {name: t, owner: bob}\ncases: []\n",
		"unknown schedule key":   "task: {name: t, schedule: {every: 1h, at: noon}}\ncases: []\n",
		"unknown missed policy":  "task: {name: t, schedule: [{every: 1h, missed: always}]}\ncases: []\n",
		"case without title":     "task: {name: t}\ncases:\n  - steps: [{assert: 'true'}]\n",
		"empty steps":            "task: {name: t}\ncases:\n  - title: c\n    steps: []\n",
		"unknown step kind":      head + "      - clack: '#x'\n",
		"two kinds":              head + "      - click: '#x'\n        hover: '#y'\n",
		"no kind":                head + "      - name: nothing\n",
		"unknown key of a kind":  head + "      - click: {selector: '#x', force: true}\n",
		"fill without value":     head + "      - fill: {selector: '#x'}\n",
		"fill shorthand":         head + "      - fill: '#x'\n",
		"boolean of wrong type":  head + "      - screenshot: {fullPage: 'yes'}\n",
		"two comparisons":        head + "      - assertText: {selector: '#x', equals: a, contains: b}\n",
		"extract attr sans attr": head + "      - extract: {from: attr, selector: '#x', as: v}\n",
		"extract from nowhere":   head + "      - extract: {from: cookie, as: v}\n",
		"bad failure policy":     head + "      - mcpCall: {server: s, tool: t, failurePolicy: maybe}\n",
		"bad timeout":            head + "        timeout: forever\n",
		"bad saveAs":             head + "      - http: {url: /x, saveAs: 'my var'}\n",
		"post-run on what":       "task:\n  name: t\n  postRun: [{on: sometimes, server: s, tool: t}]\ncases: []\n",
	} {
		if _, err := CompileSuite(context.Background(), []byte(src), name, Options{Servers: anyServer{}}); err == nil {
			t.Errorf("%s: the compiler accepts it; want a broken suite", name)
		}
		if err := rs.Validate(instance(t, []byte(src))); err == nil {
			t.Errorf("%s: the schema accepts it, want it refused:\n%s", name, src)
		}
	}
}

// FuzzSchemaAcceptsWhatCompiles: whatever the compiler accepts, the
// schema accepts, so an editor never marks a suite that applies.
func FuzzSchemaAcceptsWhatCompiles(f *testing.F) {
	for _, src := range []string{good, postRunSuite, everyKind(), segmentSuite} {
		f.Add([]byte(src))
	}
	files, _ := filepath.Glob("../../examples/*.yaml")
	for _, file := range files {
		b, _ := os.ReadFile(file)
		f.Add(b)
	}
	rs := committedSchema(f)
	f.Fuzz(func(t *testing.T, src []byte) {
		if _, err := CompileSuite(context.Background(), src, "f", Options{Servers: anyServer{}}); err != nil {
			return
		}
		if err := rs.Validate(instance(t, src)); err != nil {
			t.Fatalf("the compiler accepts it, the schema refuses it: %v\n%s", err, src)
		}
	})
}
