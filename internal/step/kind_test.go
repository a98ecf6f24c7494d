package step

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/jsonschema-go/jsonschema"

	"github.com/duet-test/duet"
)

var update = flag.Bool("update", false, "rewrite the generated sections of the docs")

// anyServer resolves every server name to a serverKey and knows no catalog.
type anyServer struct{}

func (anyServer) ResolveServer(_ context.Context, ref string) (string, error) {
	return "mcp_" + ref + "_00000000", nil
}

func (anyServer) Tool(context.Context, string, string) (*ToolInfo, bool, error) {
	return nil, false, nil
}

// compileSteps compiles src, a YAML list of steps, as the steps of a case
// of a task with a base URL, after a page was opened and with the variables
// the examples use saved.
func compileSteps(t *testing.T, src string) ([]duet.Step, []*Diagnostic) {
	t.Helper()
	n, d := Parse([]byte(src))
	if d != nil {
		t.Fatalf("%s: %v", src, d)
	}
	c := &Compiler{Ctx: context.Background(), Servers: anyServer{}, Task: &duet.Task{Name: "t", BaseURL: "http://127.0.0.1:8080"}, Flows: exampleFlows{}}
	c.Scope = Scope{Vars: []string{"resp", "orderId", "order"}, PageOpen: true}
	return c.Steps(n), c.Diagnostics()
}

// exampleFlows are the flows the use kind's example uses.
type exampleFlows struct{}

func (exampleFlows) Flow(_ context.Context, ref string) (*FlowDef, error) {
	src := map[string]string{
		"accept-cookies": "steps:\n  - click: \"#cookie-banner .accept\"\n",
		"login":          "params: [user, password]\nsteps:\n  - fill: {selector: \"#user\", value: \"${user}\"}\n",
	}[ref]
	if src == "" {
		return nil, duet.Errorf(duet.CodeNotFound, "no flow %s", ref)
	}
	n, d := Parse([]byte(src))
	if d != nil {
		return nil, d
	}
	def := &FlowDef{Name: ref}
	c := &Compiler{}
	if !c.ReadFlow(n, def) {
		return nil, c.Diagnostics()[0]
	}
	return def, nil
}

// resolvedStep returns the resolved JSON Schema of one step.
func resolvedStep(t *testing.T) *jsonschema.Resolved {
	t.Helper()
	s := &jsonschema.Schema{Schema: "https://json-schema.org/draft/2020-12/schema", Ref: "#/$defs/step", Defs: Definitions()}
	// Through JSON, as an editor reads it.
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var back jsonschema.Schema
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	rs, err := back.Resolve(nil)
	if err != nil {
		t.Fatalf("the step schema does not resolve: %v", err)
	}
	return rs
}

// TestExamples: the example of every kind compiles, to steps of its kind,
// and is valid against the JSON Schema of a step.
func TestExamples(t *testing.T) {
	t.Parallel()
	rs := resolvedStep(t)
	for _, k := range Kinds() {
		t.Run(string(k.Name), func(t *testing.T) {
			steps, diags := compileSteps(t, k.Example)
			if len(diags) > 0 {
				t.Fatalf("the example does not compile: %v\n%s", diags, k.Example)
			}
			for _, st := range steps {
				if st.Kind != k.Name {
					t.Errorf("got a %s step, want %s", st.Kind, k.Name)
				}
			}
			n, _ := Parse([]byte(k.Example))
			for _, item := range n.Items {
				if err := rs.Validate(item.Plain()); err != nil {
					t.Errorf("line %d is not valid against the step schema: %v", item.Line, err)
				}
			}
		})
	}
}

// TestKeysAreWhatCompileAllows: the keys of each kind's schema are exactly
// the keys its compile function allows, in the same order (the schema is
// data the compile function reads only through its own code: this keeps
// the two the same).
func TestKeysAreWhatCompileAllows(t *testing.T) {
	t.Parallel()
	allowed := regexp.MustCompile(`unknown key "zzz" \(allowed: ([^)]*)\)`)
	for _, k := range Kinds() {
		if k.Form.Keys == nil {
			continue
		}
		_, diags := compileSteps(t, "- "+string(k.Name)+": {zzz: 1}\n")
		var got []string
		for _, d := range diags {
			if m := allowed.FindStringSubmatch(d.Message); m != nil {
				got = strings.Split(m[1], ", ")
			}
		}
		if diff := cmp.Diff(k.Form.KeyNames(), got); diff != "" {
			t.Errorf("%s: the schema's keys (-) differ from what compile allows (+):\n%s", k.Name, diff)
		}
	}
}

// TestRegistry: names and orders are unique, and the kinds the compiler
// lists are the registry's.
func TestRegistry(t *testing.T) {
	t.Parallel()
	orders := map[int]duet.StepKind{}
	for _, k := range Kinds() {
		if prev, dup := orders[k.Order]; dup {
			t.Errorf("%s and %s have the same order %d", prev, k.Name, k.Order)
		}
		orders[k.Order] = k.Name
		if Lookup(k.Name) != k {
			t.Errorf("Lookup(%s) is not its entry", k.Name)
		}
	}
	_, diags := compileSteps(t, "- clack: '#x'\n")
	want := "unknown step key \"clack\" (step kinds: http, assert, mcpCall, set, wait, session, open, back, forward, reload, emulate, route, frame, waitForPopup, switchTo, closeTab, " +
		"click, dblclick, check, uncheck, hover, fill, type, clear, press, focus, blur, scrollIntoView, select, upload, dragTo, onDialog, waitFor, waitForResponse, " +
		"assertText, assertValue, assertAttribute, assertCount, assertVisible, assertEnabled, assertDisabled, assertChecked, assertFocused, assertCSS, " +
		"assertURL, assertTitle, assertDialog, expectRequest, extract, evaluate, screenshot, saveSession, assertScreenshot, assertAccessible, assertPerformance, if, repeat, forEach, use, aiAssert, aiQuery, aiWaitFor, aiTap, aiFill, ai; also name, timeout, soft)"
	if len(diags) != 1 || diags[0].Message != want {
		t.Errorf("got %v, want %q", diags, want)
	}
	if Lookup("name") != nil || Lookup("nope") != nil {
		t.Error("Lookup found a kind that is not one")
	}
	if !slices.ContainsFunc(Kinds(), func(k *Kind) bool { return k.NeedsBrowser() }) {
		t.Error("no browser kinds")
	}
}

// TestReference: the step kinds' sections of docs/suite-format.md and of
// the agent's format reference are generated from the registry (refresh
// them with go test ./internal/step -run TestReference -update).
func TestReference(t *testing.T) {
	t.Parallel()
	for _, d := range []struct{ path, text string }{
		{"../../docs/suite-format.md", Reference()},
		{"../agent/format.md", AgentReference()},
	} {
		const begin = "<!-- generated: step kinds (go test ./internal/step -run TestReference -update) -->\n"
		const end = "<!-- end generated: step kinds -->\n"
		src, err := os.ReadFile(d.path)
		if err != nil {
			t.Fatal(err)
		}
		before, rest, ok1 := strings.Cut(string(src), begin)
		old, after, ok2 := strings.Cut(rest, end)
		if !ok1 || !ok2 {
			t.Fatalf("%s lacks the markers %q and %q", d.path, begin, end)
		}
		if *update {
			if err := os.WriteFile(d.path, []byte(before+begin+d.text+end+after), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if diff := cmp.Diff(d.text, old); diff != "" {
			t.Errorf("%s is not current (go test ./internal/step -run TestReference -update) (-want +got):\n%s", d.path, diff)
		}
	}
}
