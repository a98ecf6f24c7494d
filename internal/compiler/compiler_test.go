package compiler

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/duet-test/duet"
)

var update = flag.Bool("update", false, "rewrite golden files")

const good = `
task:
  name: shop
  description: The sample shop
  baseURL: http://127.0.0.1:8080/
  sharedWith: [bob]
cases:
  - title: Order status matches the order service
    timeout: 2m
    steps:
      - open: /order?orderId=A1001
      - waitFor: "#status"
      - extract: {from: url.query, param: orderId, as: orderId}
      - extract: {from: text, selector: "#status", as: shownStatus}
      - mcpCall:
          serverKey: mcp_order-query_7f3a2c91
          tool: query_order
          input:
            orderId: {source: page.url, path: orderId}
            verbose: true
            label: "order ${orderId}"
          saveAs: order
      - assertText: {selector: "#status", equals: "${order.structuredContent.status}"}
      - http: {method: post, url: "/api/orders/${orderId}/cancel", json: {reason: "test ${orderId}"}, saveAs: resp}
        timeout: 5s
      - assert: resp.status == 200 && shownStatus != ""
      - set: {total: "resp.body.totalCents / 100"}
      - screenshot: after cancel
  - key: api
    title: API only
    steps:
      - http: GET https://example.test/health
`

func TestCompileSuiteGolden(t *testing.T) {
	t.Parallel()
	s, err := CompileSuite(context.Background(), []byte(good), "good.yaml", Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.MarshalIndent(s, "", "  ")
	golden := filepath.Join("testdata", "good.golden.json")
	if *update {
		os.MkdirAll("testdata", 0o755)
		os.WriteFile(golden, got, 0o644)
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Fatalf("compiled suite (-want +got):\n%s", diff)
	}
	// Deterministic: the same source compiles to the same hash.
	again, _ := CompileSuite(context.Background(), []byte(good), "good.yaml", Options{})
	if again.Cases[0].SourceHash != s.Cases[0].SourceHash {
		t.Fatal("same source, different hash")
	}
	if s.Cases[0].Key != "order-status-matches-the-order-service" || s.Task.BaseURL != "http://127.0.0.1:8080" {
		t.Fatalf("key/baseURL: got %q %q", s.Cases[0].Key, s.Task.BaseURL)
	}
	// The canonical source of a case compiles on its own to the same steps.
	c, err := CompileCase(context.Background(), []byte(s.Cases[0].Source), &s.Task, Options{})
	if err != nil {
		t.Fatalf("CompileCase(source): %v", err)
	}
	ignoreLine := cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Line" }, cmp.Ignore())
	if diff := cmp.Diff(s.Cases[0].Steps, c.Steps, ignoreLine); diff != "" || c.SourceHash != s.Cases[0].SourceHash {
		t.Fatalf("recompiled source differs (-suite +case):\n%s", diff)
	}
}

func TestCompileErrors(t *testing.T) {
	t.Parallel()
	head := "task:\n  name: t\n  baseURL: http://h\ncases:\n  - title: c\n    steps:\n"
	tests := []struct {
		name string
		src  string
		want []string // "line:col: substring"
	}{
		{"yaml syntax", "task: [unclosed\n", []string{"1:"}},
		{"not a mapping", "- a\n", []string{"1:1: a suite file is a mapping"}},
		{"missing task", "cases: []\n", []string{"1:1: missing key task"}},
		{"unknown top key", "task: {name: t}\ncases: []\nextra: 1\n", []string{"3:1: unknown key \"extra\""}},
		{"bad baseURL", "task: {name: t, baseURL: ftp://x}\ncases: []\n", []string{"1:26: baseURL must be an absolute http(s) URL"}},
		{"unknown step kind", head + "      - clack: '#x'\n", []string{"7:9: unknown step key \"clack\""}},
		{"two kinds", head + "      - open: /\n        click: '#x'\n", []string{"8:9: a step has exactly one kind"}},
		{"unknown variable", head + "      - assert: resp.status == 200\n", []string{"7:17: assert: unknown name resp"}},
		{"variable used before saved", head + "      - assert: order != nil\n      - http: {url: /x, saveAs: order}\n", []string{"7:17: assert: unknown name order"}},
		{"bad expression", head + "      - assert: 'x =='\n", []string{"7:17: assert:"}},
		{"not boolean", head + "      - assert: '1 + 1'\n", []string{"7:17:"}},
		{"relative url without base", "task: {name: t}\ncases:\n  - title: c\n    steps:\n      - open: /x\n", []string{"5:15: open \"/x\" is relative but the task has no baseURL"}},
		{"page binding without page", head + "      - mcpCall: {serverKey: mcp_a_0123abcd, tool: t, input: {id: {from: page.url, param: id}}}\n", []string{"needs a page"}},
		{"unknown server name", head + "      - mcpCall: {server: orders, tool: t}\n", []string{"7:27: unknown MCP server \"orders\""}},
		{"bad failure policy", head + "      - mcpCall: {serverKey: mcp_a_0123abcd, tool: t, failurePolicy: maybe}\n", []string{"failurePolicy must be required or optional"}},
		{"bad template", head + "      - open: /x/${nope}\n", []string{"7:15: open: in ${nope}: unknown name nope"}},
		{"click before open", head + "      - click: '#x'\n", []string{"7:16: click needs a page"}},
		{"bad regexp", head + "      - open: /\n      - assertURL: {matches: '('}\n", []string{"8:30: matches: invalid regular expression"}},
		{"duplicate case key", "task: {name: t}\ncases:\n  - {title: a, steps: [{assert: 'true'}]}\n  - {title: A, steps: [{assert: 'true'}]}\n", []string{"4:5: case key \"a\" is already used"}},
		{"duplicate mapping key", "task: {name: t, name: u}\ncases: []\n", []string{"1:17:", "already defined"}},
		{"bad timeout", head + "      - assert: 'true'\n        timeout: forever\n", []string{"8:18: timeout \"forever\""}},
		{"empty steps", "task: {name: t}\ncases:\n  - title: c\n    steps: []\n", []string{"4:12: steps must be a non-empty list"}},
		{"builtin saveAs", head + "      - http: {url: /x, saveAs: task}\n", []string{"is a built-in variable"}},
		// A variable named like an expression function is hidden by it
		// ("type func(...) has no field status" was all the user got).
		{"function saveAs", head + "      - http: {url: /x, saveAs: first}\n      - assert: first.status == 200\n", []string{`7:33: "first" is the name of an expression function (first(...))`}},
		{"function set", head + "      - set: {len: '1'}\n", []string{`7:15: "len" is the name of an expression function`}},
		{"known names once", head + "      - assert: nope\n", []string{"unknown name nope (known: task, run, env, secrets)"}},
		{"several errors", head + "      - assert: a\n      - assert: b\n", []string{"7:17:", "8:17:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := CompileSuite(context.Background(), []byte(tt.src), "s.yaml", Options{})
			if duet.ErrorCode(err) != duet.CodeInvalidArgument {
				t.Fatalf("got %v, want INVALID_ARGUMENT", err)
			}
			var errs *Errors
			if !errors.As(err, &errs) {
				t.Fatalf("got %T, want *Errors inside", err)
			}
			msg := errs.Error()
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("got\n%s\nwant it to contain %q", msg, w)
				}
			}
			if !strings.HasPrefix(msg, "s.yaml:") {
				t.Errorf("got %q, want the file name first", msg)
			}
		})
	}
}

type fakeServers struct{}

func (fakeServers) ResolveServer(_ context.Context, ref string) (string, error) {
	if ref == "orders" {
		return "mcp_orders_0badcafe", nil
	}
	return "", duet.Errorf(duet.CodeNotFound, "you have not registered an MCP server named %q", ref)
}

func (fakeServers) Tool(_ context.Context, key, tool string) (*ToolInfo, bool, error) {
	if tool != "query_order" {
		return nil, true, duet.Errorf(duet.CodeMCPToolNotFound, "server %s has no tool %q", key, tool)
	}
	return &ToolInfo{Name: tool, InputSchema: json.RawMessage(`{"type":"object","properties":{"orderId":{"type":"string"}},"required":["orderId"],"additionalProperties":false}`)}, true, nil
}

func TestCompileServers(t *testing.T) {
	t.Parallel()
	head := "task:\n  name: t\ncases:\n  - title: c\n    steps:\n"
	opts := Options{Servers: fakeServers{}}
	s, err := CompileSuite(context.Background(), []byte(head+"      - mcpCall: {server: orders, tool: query_order, input: {orderId: A1}}\n"), "", opts)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Cases[0].Steps[0].MCP; got.ServerKey != "mcp_orders_0badcafe" || got.ServerName != "orders" {
		t.Fatalf("got %+v", got)
	}
	for src, want := range map[string]string{
		"      - mcpCall: {server: orders, tool: nope}\n":                                       "has no tool \"nope\"",
		"      - mcpCall: {server: orders, tool: query_order}\n":                                "requires argument \"orderId\"",
		"      - mcpCall: {server: orders, tool: query_order, input: {orderId: A, extra: 1}}\n": "has no argument \"extra\"",
		"      - mcpCall: {server: other, tool: query_order}\n":                                 "not registered an MCP server named \"other\"",
	} {
		_, err := CompileSuite(context.Background(), []byte(head+src), "", opts)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", src, err, want)
		}
	}
}

func TestExamplesCompile(t *testing.T) {
	t.Parallel()
	files, _ := filepath.Glob("../../examples/*.yaml")
	if len(files) == 0 {
		t.Fatal("no examples")
	}
	for _, f := range files {
		src, _ := os.ReadFile(f)
		// The examples name MCP servers as their users register them;
		// their data files and uploads read their folder, as duet apply -f
		// does.
		if _, err := CompileSuite(context.Background(), src, f, Options{Servers: anyServer{}, Files: os.DirFS(filepath.Dir(f)), Flows: exampleFlowAssets}); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

func FuzzCompileSuite(f *testing.F) {
	f.Add([]byte(good))
	f.Add([]byte("task: {name: t}\ncases: [{title: a, steps: [{assert: 'true'}]}]\n"))
	f.Add([]byte("&a [*a]"))
	f.Add([]byte("task: !!binary x"))
	f.Add([]byte(bomb(9, 9)))
	f.Add([]byte("title: a\nsteps: [&s {assert: 'true'}, *s, *s]\n"))
	f.Add([]byte("task: {name: t}\ncases: [{title: a, steps: [{set: {x: \"repeat('a', 9)\"}}, {http: {method: POST, url: 'http://x.test/${x}', json: {a: [1, {b: '${x}'}]}}}]}]\n"))
	f.Add([]byte(postRunSuite))
	f.Fuzz(func(t *testing.T, src []byte) {
		start := time.Now()
		s, err := CompileSuite(context.Background(), src, "f", Options{})
		if err == nil && s == nil {
			t.Fatal("nil suite without error")
		}
		if err != nil && duet.ErrorCode(err) != duet.CodeInvalidArgument {
			t.Fatalf("got code %s, want INVALID_ARGUMENT: %v", duet.ErrorCode(err), err)
		}
		// The agent's path: one case.
		c, err := CompileCase(context.Background(), src, &duet.Task{Name: "t", BaseURL: "http://x.test"}, Options{})
		if err == nil && c == nil {
			t.Fatal("nil case without error")
		}
		if err != nil && duet.ErrorCode(err) != duet.CodeInvalidArgument {
			t.Fatalf("CompileCase: got code %s, want INVALID_ARGUMENT: %v", duet.ErrorCode(err), err)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Fatalf("compiling %d bytes took %s", len(src), d)
		}
	})
}

// anyServer resolves every server name to a serverKey and knows no catalog.
type anyServer struct{}

func (anyServer) ResolveServer(_ context.Context, ref string) (string, error) {
	return "mcp_" + ref + "_00000000", nil
}

func (anyServer) Tool(context.Context, string, string) (*ToolInfo, bool, error) {
	return nil, false, nil
}
