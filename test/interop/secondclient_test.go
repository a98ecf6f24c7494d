package interop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The contract every client gets, fixed before any client runs (seed 003):
// one launch command and one environment for stdio, one URL and one set of
// headers for HTTP. A test that had to change any of these for one client
// would have found a client-specific adapter; none may exist.
type stdioLaunch struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
}

type httpTarget struct {
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
}

type call struct {
	Name      string         `json:"name"`
	Arguments map[string]any `json:"arguments"`
}

// observed is what a client saw: the tools (name → definition) and, per
// call, the result without _meta (which carries a per-call trace id).
type observed struct {
	Tools   map[string]json.RawMessage
	Results []json.RawMessage
}

// fixture is a Duet home with alice's tasks, a server over it, and the calls
// to make.
type fixture struct {
	home  string
	stdio stdioLaunch
	http  httpTarget
	calls []call
}

const gatewayKey = "interop-gateway-key"

func newFixture(t *testing.T) *fixture {
	t.Helper()
	home := t.TempDir()
	env := []string{"DUET_HOME=" + home}
	duet(t, env, "apply", "-f", filepath.Join(repoRoot, "examples", "api-smoke.yaml"), "--as", "alice")
	srv := startServe(t, append(env, "DUET_GATEWAY_API_KEYS="+gatewayKey))
	f := &fixture{
		home:  home,
		stdio: stdioLaunch{Command: duetBin, Args: []string{"mcp"}, Env: map[string]string{"DUET_HOME": home, "DUET_USER": "alice"}},
		http:  httpTarget{URL: srv.url, Headers: map[string]string{"X-Api-Key": gatewayKey, "SSO-Emp-Id": "alice"}},
	}
	if v := os.Getenv("DUET_MCP_FAST_PATH"); v != "" {
		f.stdio.Env["DUET_MCP_FAST_PATH"] = v // the same launch for every client, in a run without the fast paths
	}
	// Find the ids the calls need with the go-sdk client.
	cs := goConnectHTTP(t, f.http, nil)
	var tasks struct {
		Tasks []struct{ ID string } `json:"tasks"`
	}
	callJSON(t, cs, "list_test_tasks", map[string]any{}, &tasks)
	if len(tasks.Tasks) != 1 {
		t.Fatalf("alice sees %d tasks, want 1", len(tasks.Tasks))
	}
	taskID := tasks.Tasks[0].ID
	var cases struct {
		Cases []struct{ ID string } `json:"cases"`
	}
	callJSON(t, cs, "list_test_cases", map[string]any{"taskId": taskID}, &cases)
	if len(cases.Cases) == 0 {
		t.Fatal("no cases")
	}
	f.calls = []call{
		{"list_test_tasks", map[string]any{}},
		{"get_test_task", map[string]any{"taskId": taskID}},
		{"list_test_cases", map[string]any{"taskId": taskID}},
		{"get_test_case", map[string]any{"caseId": cases.Cases[0].ID}},
		{"get_test_task", map[string]any{"taskId": "task_does_not_exist"}}, // an error result has a shape too
	}
	return f
}

type headerTransport struct{ headers map[string]string }

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.headers {
		r.Header.Set(k, v)
	}
	return http.DefaultTransport.RoundTrip(r)
}

func goConnectHTTP(t *testing.T, target httpTarget, opts *mcp.ClientSessionOptions) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "duet-interop-go-sdk", Version: "1.0.0"}, nil)
	cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: target.URL,
		HTTPClient: &http.Client{Transport: headerTransport{target.Headers}}, MaxRetries: -1}, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func goConnectStdio(t *testing.T, l stdioLaunch) *mcp.ClientSession {
	t.Helper()
	cmd := exec.Command(l.Command, l.Args...)
	cmd.Env = baseEnv(t)
	for k, v := range l.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Dir = t.TempDir() // not the repository, not DUET_HOME
	c := mcp.NewClient(&mcp.Implementation{Name: "duet-interop-go-sdk", Version: "1.0.0"}, nil)
	cs, err := c.Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func callJSON(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any, v any) {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil || res.IsError {
		t.Fatalf("%s: %+v %v", name, res, err)
	}
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
}

// normalize re-encodes v as canonical JSON without _meta (it carries a
// per-call trace id) and resultType (the 2026-07-28 revision's marker of a
// complete result, absent from the older revisions' results; which revision
// a client negotiates is the client's choice, not a shape of ours).
func normalize(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "_meta")
	delete(m, "resultType")
	b, _ = json.Marshal(m)
	return b
}

func goObserve(t *testing.T, cs *mcp.ClientSession, calls []call) observed {
	t.Helper()
	o := observed{Tools: map[string]json.RawMessage{}}
	for tool, err := range cs.Tools(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		o.Tools[tool.Name] = normalize(t, tool)
	}
	for _, c := range calls {
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: c.Name, Arguments: c.Arguments})
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		o.Results = append(o.Results, normalize(t, res))
	}
	return o
}

// sdkOutput is what test/node/sdk-client.mjs prints.
type sdkOutput struct {
	Tools      []map[string]any `json:"tools"`
	Results    []map[string]any `json:"results"`
	Iterations int              `json:"iterations"`
	Samples    []struct {
		T          float64 `json:"t"`
		Iterations int     `json:"iterations"`
		RSSKB      int     `json:"rssKB"`
		Threads    int     `json:"threads"`
	} `json:"samples"`
}

// tsClient runs the TypeScript SDK client with plan.
func tsClient(t *testing.T, nt nodeTools, plan map[string]any) sdkOutput {
	t.Helper()
	b, _ := json.Marshal(plan)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, nt.node, filepath.Join(nt.dir, "sdk-client.mjs"), string(b))
	cmd.Env = baseEnv(t)
	cmd.Dir = t.TempDir()
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("TS SDK client: %v\n%s", err, stderr)
	}
	var o sdkOutput
	if err := json.Unmarshal(out, &o); err != nil {
		t.Fatalf("TS SDK client output: %v\n%s", err, out)
	}
	return o
}

func tsPlan(f *fixture, transport string, calls []call) map[string]any {
	p := map[string]any{"transport": transport, "list": true, "calls": calls}
	if transport == "stdio" {
		p["command"], p["args"], p["env"] = f.stdio.Command, f.stdio.Args, f.stdio.Env
		p["cwd"] = os.TempDir() // started from another working directory
	} else {
		p["url"], p["headers"] = f.http.URL, f.http.Headers
	}
	return p
}

func (o sdkOutput) observed(t *testing.T) observed {
	ob := observed{Tools: map[string]json.RawMessage{}}
	for _, tool := range o.Tools {
		ob.Tools[tool["name"].(string)] = normalize(t, tool)
	}
	for _, r := range o.Results {
		ob.Results = append(ob.Results, normalize(t, r))
	}
	return ob
}

// inspector runs @modelcontextprotocol/inspector-cli once (it makes one
// request per process) and returns the JSON it prints.
func inspector(t *testing.T, nt nodeTools, f *fixture, transport string, method string, extra ...string) json.RawMessage {
	t.Helper()
	// inspector-cli 1.0.3 looks for ../package.json from its working
	// directory before it starts: give it a folder that has one.
	parent := t.TempDir()
	os.WriteFile(filepath.Join(parent, "package.json"), []byte(`{"name":"x","version":"0.0.0"}`), 0o644)
	cwd := filepath.Join(parent, "run")
	os.Mkdir(cwd, 0o755)
	args := []string{filepath.Join(nt.dir, "node_modules", "@modelcontextprotocol", "inspector-cli", "build", "index.js")}
	env := baseEnv(t)
	if transport == "stdio" {
		// inspector-cli's command-line mode has no option for the server's
		// environment: the server inherits the client's (its way of writing
		// down the same contract).
		args = append(args, f.stdio.Command, "--transport", "stdio")
		for _, k := range slices.Sorted(mapsKeys(f.stdio.Env)) {
			env = append(env, k+"="+f.stdio.Env[k])
		}
	} else {
		args = append(args, f.http.URL, "--transport", "http")
		for _, k := range slices.Sorted(mapsKeys(f.http.Headers)) {
			args = append(args, "--header", k+": "+f.http.Headers[k])
		}
	}
	args = append(args, "--method", method)
	args = append(args, extra...)
	if transport == "stdio" {
		args = append(args, "--")
		args = append(args, f.stdio.Args...)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, nt.node, args...)
	cmd.Env = env
	cmd.Dir = cwd
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("inspector-cli %s: %v\n%s\n%s", method, err, out, stderr)
	}
	return out
}

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func inspectorObserve(t *testing.T, nt nodeTools, f *fixture, transport string) observed {
	t.Helper()
	o := observed{Tools: map[string]json.RawMessage{}}
	var list struct {
		Tools []map[string]any `json:"tools"`
	}
	if err := json.Unmarshal(inspector(t, nt, f, transport, "tools/list"), &list); err != nil {
		t.Fatal(err)
	}
	for _, tool := range list.Tools {
		o.Tools[tool["name"].(string)] = normalize(t, tool)
	}
	for _, c := range f.calls {
		extra := []string{"--tool-name", c.Name}
		for _, k := range slices.Sorted(mapsKeys(c.Arguments)) {
			extra = append(extra, "--tool-arg", fmt.Sprintf("%s=%v", k, c.Arguments[k]))
		}
		var res map[string]any
		if err := json.Unmarshal(inspector(t, nt, f, transport, "tools/call", extra...), &res); err != nil {
			t.Fatal(err)
		}
		o.Results = append(o.Results, normalize(t, res))
	}
	return o
}

func compareObserved(t *testing.T, who string, got, want observed) {
	t.Helper()
	if d := cmp.Diff(keys(want.Tools), keys(got.Tools)); d != "" {
		t.Errorf("%s: tool list differs from the go-sdk client's (-want +got):\n%s", who, d)
	}
	for name, w := range want.Tools {
		if g, ok := got.Tools[name]; ok && !jsonEqual(g, w) {
			t.Errorf("%s: tool %s differs:\n got %s\nwant %s", who, name, g, w)
		}
	}
	if len(got.Results) != len(want.Results) {
		t.Fatalf("%s: %d results, want %d", who, len(got.Results), len(want.Results))
	}
	for i := range want.Results {
		if !jsonEqual(got.Results[i], want.Results[i]) {
			t.Errorf("%s: result %d differs:\n got %s\nwant %s", who, i, got.Results[i], want.Results[i])
		}
	}
}

func keys(m map[string]json.RawMessage) []string {
	var k []string
	for n := range m {
		k = append(k, n)
	}
	sort.Strings(k)
	return k
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return cmp.Equal(x, y)
}

// TestSecondClients: the TypeScript SDK client and inspector-cli, over stdio
// (launched from another working directory with the one launch contract)
// and over /mcp/http (with the one set of headers), see the same tools and
// the same results as the go-sdk client. Falsified by any difference.
func TestSecondClients(t *testing.T) {
	nt := requireNode(t)
	t.Parallel()
	f := newFixture(t)
	want := goObserve(t, goConnectHTTP(t, f.http, nil), f.calls)
	if len(want.Tools) != 7 {
		t.Fatalf("go-sdk client sees %d tools, want the 7 of the product catalog", len(want.Tools))
	}
	compareObserved(t, "go-sdk/stdio", goObserve(t, goConnectStdio(t, f.stdio), f.calls), want)
	for _, transport := range []string{"stdio", "http"} {
		t.Run("ts-sdk/"+transport, func(t *testing.T) {
			t.Parallel()
			compareObserved(t, "ts-sdk/"+transport, tsClient(t, nt, tsPlan(f, transport, f.calls)).observed(t), want)
		})
		t.Run("inspector-cli/"+transport, func(t *testing.T) {
			t.Parallel()
			compareObserved(t, "inspector-cli/"+transport, inspectorObserve(t, nt, f, transport), want)
		})
	}
}

// soakDuration is how long the long-lived session keeps calling:
// DUET_INTEROP_SOAK (a Go duration), default 30s.
func soakDuration(t *testing.T) time.Duration {
	if v := os.Getenv("DUET_INTEROP_SOAK"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("DUET_INTEROP_SOAK: %v", err)
		}
		return d
	}
	return 30 * time.Second
}

// TestLifecycles: a desktop-style client holds one stdio session and keeps
// calling (the server's memory and threads stay flat), and a CLI-style
// client starts a fresh `duet mcp` per call (nothing is assumed from an
// earlier process): both get the same results as the go-sdk client.
func TestLifecycles(t *testing.T) {
	nt := requireNode(t)
	t.Parallel()
	f := newFixture(t)
	want := goObserve(t, goConnectStdio(t, f.stdio), f.calls)

	t.Run("fresh-process-per-call", func(t *testing.T) {
		t.Parallel()
		for i, c := range f.calls {
			plan := tsPlan(f, "stdio", []call{c})
			plan["list"] = false
			got := tsClient(t, nt, plan)
			if r := normalize(t, got.Results[0]); !jsonEqual(r, want.Results[i]) {
				t.Errorf("fresh process, %s: got %s, want %s", c.Name, r, want.Results[i])
			}
		}
	})

	t.Run("long-lived-session", func(t *testing.T) {
		t.Parallel()
		d := soakDuration(t)
		plan := tsPlan(f, "stdio", f.calls)
		plan["soakSeconds"] = d.Seconds()
		got := tsClient(t, nt, plan)
		compareObserved(t, "ts-sdk/stdio long session", got.observed(t), want)
		s := got.Samples
		if len(s) < 4 {
			t.Fatalf("only %d samples in %s", len(s), d)
		}
		// Skip the first quarter (warm-up), then compare the medians of the
		// two halves of the rest.
		s = s[len(s)/4:]
		med := func(xs []int) int { xs = slices.Clone(xs); slices.Sort(xs); return xs[len(xs)/2] }
		var rss1, rss2, th1, th2 []int
		for i, x := range s {
			if i < len(s)/2 {
				rss1, th1 = append(rss1, x.RSSKB), append(th1, x.Threads)
			} else {
				rss2, th2 = append(rss2, x.RSSKB), append(th2, x.Threads)
			}
		}
		calls := got.Iterations * len(f.calls)
		t.Logf("long-lived session: %d calls in %s; server RSS median %d KiB then %d KiB, threads %d then %d (first sample %d KiB, last %d KiB)",
			calls, d, med(rss1), med(rss2), med(th1), med(th2), got.Samples[0].RSSKB, got.Samples[len(got.Samples)-1].RSSKB)
		if grow := med(rss2) - med(rss1); grow > 8*1024+med(rss1)/10 {
			t.Errorf("server memory grew by %d KiB within one session (%d → %d KiB median)", grow, med(rss1), med(rss2))
		}
		if med(th2) > med(th1)+4 {
			t.Errorf("server threads grew: %d → %d", med(th1), med(th2))
		}
	})
}

// TestLongSessionGoroutines holds one Streamable HTTP session against the
// real binary's handler in this process and keeps calling: goroutines and
// the live heap stay flat (what the stdio test cannot see from outside).
func TestLongSessionGoroutines(t *testing.T) {
	f := newInProcess(t)
	d := min(soakDuration(t), 10*time.Second)
	calls := f.calls
	var first, last struct{ goroutines, heapKB int }
	sample := func() (int, int) {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return runtime.NumGoroutine(), int(ms.HeapAlloc / 1024)
	}
	start := time.Now()
	n := 0
	for time.Since(start) < d {
		for _, c := range calls {
			res, err := f.cs.CallTool(t.Context(), &mcp.CallToolParams{Name: c.Name, Arguments: c.Arguments})
			if err != nil || res.IsError {
				t.Fatalf("%s: %+v %v", c.Name, res, err)
			}
			n++
		}
		if n == len(calls)*50 {
			first.goroutines, first.heapKB = sample()
		}
	}
	last.goroutines, last.heapKB = sample()
	t.Logf("in-process long session: %d calls in %s; goroutines %d → %d, live heap %d → %d KiB",
		n, d, first.goroutines, last.goroutines, first.heapKB, last.heapKB)
	if last.goroutines > first.goroutines+5 {
		t.Errorf("goroutines grew from %d to %d", first.goroutines, last.goroutines)
	}
	if last.heapKB > first.heapKB*2+4096 {
		t.Errorf("live heap grew from %d to %d KiB", first.heapKB, last.heapKB)
	}
}
