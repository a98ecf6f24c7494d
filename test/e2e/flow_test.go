package e2e

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type bearer struct {
	token   string
	headers map[string]string
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.token != "" {
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	for k, v := range b.headers {
		r.Header.Set(k, v)
	}
	return http.DefaultTransport.RoundTrip(r)
}

func call(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) map[string]any {
	t.Helper()
	res, err := cs.CallTool(ctxTimeout(t, 30*time.Second), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	b, _ := json.Marshal(res.StructuredContent)
	var out map[string]any
	json.Unmarshal(b, &out)
	if res.IsError {
		t.Fatalf("%s: error result %s", tool, b)
	}
	if len(res.Content) == 0 || res.Content[0].(*mcp.TextContent).Text == "" {
		t.Fatalf("%s: no text content", tool)
	}
	return out
}

// flow is the whole journey of an outside MCP client: list → get →
// start_test_run → poll get_test_run until it ends → get_execution_result.
func flow(t *testing.T, cs *mcp.ClientSession) {
	t.Helper()
	list := call(t, cs, "list_test_tasks", map[string]any{})
	tasks := list["tasks"].([]any)
	if list["total"].(float64) != 1 || len(tasks) != 1 {
		t.Fatalf("list_test_tasks: %v", list)
	}
	taskID := tasks[0].(map[string]any)["id"].(string)
	got := call(t, cs, "get_test_task", map[string]any{"taskId": taskID})
	if got["caseCount"].(float64) != 2 {
		t.Fatalf("get_test_task: %v", got)
	}
	cases := call(t, cs, "list_test_cases", map[string]any{"taskId": taskID})
	caseID := cases["cases"].([]any)[0].(map[string]any)["id"].(string)
	if c := call(t, cs, "get_test_case", map[string]any{"caseId": caseID}); c["case"].(map[string]any)["source"] == "" {
		t.Fatalf("get_test_case: %v", c)
	}
	key := "e2e-" + t.Name()
	start := call(t, cs, "start_test_run", map[string]any{"taskId": taskID, "idempotencyKey": key})
	runID := start["runId"].(string)
	if again := call(t, cs, "start_test_run", map[string]any{"taskId": taskID, "idempotencyKey": key}); again["runId"] != runID || again["replayed"] != true {
		t.Fatalf("retry with the same key: %v, want runId %s replayed", again, runID)
	}
	var run map[string]any
	deadline := time.Now().Add(60 * time.Second)
	for {
		run = call(t, cs, "get_test_run", map[string]any{"runId": runID})
		if run["run"].(map[string]any)["done"] == true {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("run did not finish: %v", run)
		}
		time.Sleep(100 * time.Millisecond)
	}
	r := run["run"].(map[string]any)
	totals := r["totals"].(map[string]any)
	if r["status"] != "failed" || totals["passed"].(float64) != 1 || totals["failed"].(float64) != 1 {
		t.Fatalf("final run: %v", r)
	}
	for _, x := range run["executions"].([]any) {
		x := x.(map[string]any)
		res := call(t, cs, "get_execution_result", map[string]any{"executionId": x["executionId"]})
		e := res["execution"].(map[string]any)
		steps := e["steps"].([]any)
		if len(steps) != 2 {
			t.Fatalf("execution steps: %v", e)
		}
		if x["caseKey"] == "shipped" && (e["errorCode"] != "ASSERTION_FAILED" || !strings.Contains(e["errorMessage"].(string), "A2 should have shipped")) {
			t.Fatalf("failing case: %v", e)
		}
	}
}

func TestStdioFlowFromAnotherDirectory(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	srv := api(t)
	if out, errOut, code := duet(t, home, "apply", "-f", suiteFile(t, srv.URL), "--as", "tester"); code != 0 {
		t.Fatalf("apply: %d %s %s", code, out, errOut)
	}
	cmd := exec.Command(duetBin, "mcp")
	cmd.Dir = "/"
	cmd.Env = minimalEnv("DUET_HOME=" + home) // the identity is the OS user: USER=tester
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
	cs, err := client.Connect(ctxTimeout(t, 30*time.Second), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	flow(t, cs)
}

func TestHTTPFlowWithPersonalToken(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	srv := api(t)
	duet(t, home, "apply", "-f", suiteFile(t, srv.URL), "--as", "alice")
	token, _, code := duet(t, home, "token", "create", "--user", "alice")
	if code != 0 {
		t.Fatalf("token create: %d", code)
	}
	s := serve(t, home, nil)
	for _, version := range []string{"", "2025-11-25", "2025-06-18"} {
		t.Run("version="+version, func(t *testing.T) {
			var opts *mcp.ClientSessionOptions
			if version != "" {
				opts = &mcp.ClientSessionOptions{ProtocolVersion: version}
			}
			client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
			cs, err := client.Connect(ctxTimeout(t, 30*time.Second), &mcp.StreamableClientTransport{
				Endpoint: s.URL + "/mcp/http", HTTPClient: &http.Client{Transport: bearer{token: strings.TrimSpace(token)}}}, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			if got := cs.InitializeResult(); version != "" && got.ProtocolVersion != version {
				t.Fatalf("negotiated %s, want %s", got.ProtocolVersion, version)
			}
			flow(t, cs)
		})
	}
}

func TestStartupErrors(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o600)
	for _, args := range [][]string{{"mcp"}, {"serve", "--addr", "127.0.0.1:0"}, {"task", "list"}} {
		_, stderr, code := duet(t, filepath.Join(file, "home"), args...)
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		if code != 2 || len(lines) != 1 || !strings.Contains(stderr, file) || !strings.Contains(stderr, "DUET_HOME") || strings.Contains(stderr, "goroutine") {
			t.Errorf("%v with an unusable DUET_HOME: exit %d, stderr %q; want exit 2 and one line naming the path and DUET_HOME", args, code, stderr)
		}
	}
}

func TestApplyErrorsAndIdempotence(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	srv := api(t)
	f := suiteFile(t, srv.URL)
	duet(t, home, "apply", "-f", f, "--as", "alice")
	out, _, code := duet(t, home, "apply", "-f", f, "--as", "alice")
	if code != 0 || !strings.Contains(out, "nothing changed") {
		t.Fatalf("re-apply: %d %s", code, out)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("task:\n  name: t\ncases:\n  - title: x\n    steps:\n      - assert: nope ==\n      - clack: '#b'\n"), 0o600)
	_, stderr, code := duet(t, home, "apply", "-f", bad, "--as", "alice")
	if code != 1 || !strings.Contains(stderr, "bad.yaml:6:") || !strings.Contains(stderr, "bad.yaml:7:9:") {
		t.Fatalf("bad suite: exit %d, %s", code, stderr)
	}
}

func TestSIGTERMDuringRunResumes(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	srv := api(t)
	f := filepath.Join(t.TempDir(), "slow.yaml")
	os.WriteFile(f, []byte(`task: {name: slow, baseURL: "`+srv.URL+`"}
cases:
  - key: a
    title: quick
    steps: [{http: {url: /orders/A1, saveAs: o}}, {assert: o.status == 200}]
  - key: b
    title: slow
    steps: [{http: {url: /slow, saveAs: s}, timeout: 1m}, {assert: s.status == 200}]
`), 0o600)
	duet(t, home, "apply", "-f", f, "--as", "alice")
	s := serve(t, home, []string{"DUET_PARALLEL=1"})
	runID, _, code := duet(t, home, "run", "slow", "--as", "alice", "--detach")
	runID = strings.TrimSpace(runID)
	if code != 0 || !strings.HasPrefix(runID, "run_") {
		t.Fatalf("run --detach: %d %q", code, runID)
	}
	waitFor(t, func() bool {
		out, _, _ := duet(t, home, "run", "show", runID, "--as", "alice", "--json")
		return strings.Contains(out, `"status": "running"`) && strings.Contains(out, `"caseKey": "b"`) && strings.Count(out, `"status": "passed"`) >= 1
	})
	firstStart := execStartedAt(t, home, runID, "b")
	s.Stop(t)
	if !strings.Contains(s.Stderr(), "resume on the next start") {
		t.Fatalf("no graceful release in the log:\n%s", s.Stderr())
	}
	out, _, _ := duet(t, home, "run", "show", runID, "--as", "alice", "--json")
	if !strings.Contains(out, `"status": "queued"`) {
		t.Fatalf("after SIGTERM the run is not back in the queue:\n%s", out)
	}
	serve(t, home, nil)
	waitFor(t, func() bool {
		out, _, _ := duet(t, home, "run", "show", runID, "--as", "alice", "--json")
		return !strings.Contains(out, `"status": "running"`) && !strings.Contains(out, `"status": "queued"`)
	})
	// The second instance claimed the run and ran the slow case again.
	if again := execStartedAt(t, home, runID, "b"); again == firstStart || again == "" {
		t.Errorf("the slow case did not start again after the restart (started %q, then %q)", firstStart, again)
	}
	out, _, _ = duet(t, home, "run", "show", runID, "--as", "alice", "--json")
	if !strings.Contains(out, `"status": "passed"`) || strings.Contains(out, `"status": "failed"`) {
		t.Fatalf("resumed run did not pass:\n%s", out)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 60s")
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// execStartedAt is when the case key's execution of the run last started.
func execStartedAt(t *testing.T, home, runID, key string) string {
	t.Helper()
	out, _, _ := duet(t, home, "run", "show", runID, "--as", "alice", "--json")
	var v struct {
		Executions []struct {
			CaseKey   string `json:"caseKey"`
			StartedAt string `json:"startedAt"`
		} `json:"executions"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("run show --json: %v\n%s", err, out)
	}
	for _, e := range v.Executions {
		if e.CaseKey == key {
			return e.StartedAt
		}
	}
	return ""
}
