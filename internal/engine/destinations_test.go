package engine_test

import (
	"slices"
	"testing"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/engine"
)

// TestDestinationsOf: every place a case can send data to — the base URL's
// host, the literal hosts of open and http steps, "any host" for a URL whose
// host is built at run time (or that a browser would read differently),
// the MCP tools it calls and the task's post-run actions — and a hash that
// moves with the hosts and tools, not with paths or display names.
func TestDestinationsOf(t *testing.T) {
	t.Parallel()
	httpStep := func(u string) duet.Step {
		return duet.Step{Kind: duet.StepHTTP, HTTP: &duet.HTTPStep{Method: "POST", URL: u}}
	}
	open := func(u string) duet.Step { return duet.Step{Kind: duet.StepOpen, Browser: &duet.BrowserStep{URL: u}} }
	task := &duet.Task{BaseURL: "https://Shop.example/app"}
	for _, tc := range []struct {
		url     string
		host    string
		anyHost bool
	}{
		{"/orders/${id}", "shop.example", false},
		{"/${path}", "shop.example", false}, // a rendered "//evil" is refused
		{"https://collector.example/in?d=${x}", "collector.example", false},
		{"https://user@collector.example:8443/${p}", "collector.example:8443", false},
		{"HTTPS://Collector.Example", "collector.example", false},
		{"https://a.example/$${x}", "a.example", false},
		{"${target}", "", true},
		{"https://${host}/x", "", true},
		{"https://collector.example${suffix}/x", "", true},
		{"https://collector.example", "collector.example", false},
		{"https://evil.example\\@shop.example/", "", true},
		{"https://shop%2eexample/", "", true},
		{"ftp://files.example/", "", false}, // refused when it runs
		{"not a url", "", false},
	} {
		for _, st := range []duet.Step{httpStep(tc.url), open(tc.url)} {
			d := engine.DestinationsOf(task, []duet.Step{st})
			want := []string{"shop.example"}
			if tc.host != "" && tc.host != "shop.example" {
				want = append(want, tc.host)
				slices.Sort(want)
			}
			if !slices.Equal(d.Hosts, want) || d.AnyHost != tc.anyHost || d.BaseHost != "shop.example" {
				t.Errorf("%s %q: got hosts %v any %v, want %v any %v", st.Kind, tc.url, d.Hosts, d.AnyHost, want, tc.anyHost)
			}
		}
	}
	// Other browser steps reach no new host; a relative URL without a base
	// URL reaches nothing (the step fails).
	if d := engine.DestinationsOf(&duet.Task{}, []duet.Step{httpStep("/x"), {Kind: duet.StepFill, Browser: &duet.BrowserStep{Selector: "#q", Value: "${secret}"}}}); len(d.Hosts) != 0 || d.AnyHost {
		t.Errorf("no base URL: got %+v", d)
	}

	mcp := func(key, name, tool string) duet.Step {
		return duet.Step{Kind: duet.StepMCPCall, MCP: &duet.MCPCallStep{ServerKey: key, ServerName: name, ToolName: tool}}
	}
	steps := []duet.Step{mcp("mcp_orders_1", "orders", "list_orders"), mcp("mcp_orders_1", "orders", "list_orders"), httpStep("https://collector.example/in")}
	withPost := &duet.Task{BaseURL: "https://shop.example", PostRun: []*duet.PostRunAction{{Name: "ticket", ServerKey: "mcp_tickets_2", ToolName: "file_ticket"}}}
	d := engine.DestinationsOf(withPost, steps)
	if len(d.Tools) != 1 || d.Tools[0].Tool != "list_orders" || len(d.PostRun) != 1 || d.PostRun[0].Tool != "file_ticket" {
		t.Fatalf("tools: got %+v", d)
	}
	h := d.Hash()
	same := func(task *duet.Task, steps []duet.Step) bool { return engine.DestinationsOf(task, steps).Hash() == h }
	renamed := []duet.Step{mcp("mcp_orders_1", "my orders", "list_orders"), httpStep("https://collector.example/other/path")}
	if !same(&duet.Task{BaseURL: "https://shop.example/v2", PostRun: withPost.PostRun}, renamed) {
		t.Error("the hash moved with a path or a display name")
	}
	for name, other := range map[string]func() bool{
		"base URL host": func() bool {
			return same(&duet.Task{BaseURL: "https://shop2.example", PostRun: withPost.PostRun}, steps)
		},
		"http host": func() bool { return same(withPost, []duet.Step{steps[0], httpStep("https://collector2.example/in")}) },
		"any host":  func() bool { return same(withPost, []duet.Step{steps[0], steps[2], httpStep("${u}")}) },
		"tool": func() bool {
			return same(withPost, []duet.Step{mcp("mcp_orders_1", "orders", "query_order"), steps[2]})
		},
		"post-run action": func() bool { return same(&duet.Task{BaseURL: "https://shop.example"}, steps) },
	} {
		if other() {
			t.Errorf("the hash did not move with the %s", name)
		}
	}
}
