package interop_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestTasksClient: the official MCP Tasks client
// (@modelcontextprotocol/ext-tasks, pinned in test/node, on the TypeScript
// SDK v2 client) runs tools of `duet serve` as tasks over 2026-07-28 and
// accepts what Duet answers: a task that completes (a fixture, a tool error,
// and the product's own start_test_run, whose run is the task) settles
// completed with the tool's result, one that fails settles failed. The
// client validates every tasks/get with its own schemas: a completed task's
// inlined result must be a complete CallToolResult (resultType "complete").
// Falsified by: any call the client rejects, a wrong outcome, or a
// completed tasks/get whose result is not marked complete.
func TestTasksClient(t *testing.T) {
	nt := requireNode(t)
	if _, err := os.Stat(filepath.Join(nt.dir, "node_modules", "@modelcontextprotocol", "ext-tasks", "package.json")); err != nil {
		msg := "@modelcontextprotocol/ext-tasks is not installed in " + nt.dir + " (run scripts/deps.sh node)"
		if os.Getenv("DUET_REQUIRE_NODE") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	home := t.TempDir()
	env := []string{"DUET_HOME=" + home}
	suite := filepath.Join(home, "suite.yaml")
	if err := os.WriteFile(suite, []byte("task:\n  name: tasks-client-check\ncases:\n  - title: always passes\n    steps:\n      - assert: 'true'\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	duet(t, env, "apply", "-f", suite, "--as", "conformance")
	var tasks []struct{ ID string }
	if err := json.Unmarshal([]byte(duet(t, env, "task", "list", "--as", "conformance", "--json")), &tasks); err != nil || len(tasks) != 1 {
		t.Fatalf("task list: %v %+v", err, tasks)
	}
	srv := startServe(t, env, "--conformance-fixtures")

	plan, _ := json.Marshal(map[string]any{"url": srv.url, "headers": map[string]string{}, "calls": []map[string]any{
		{"name": "slow_compute", "arguments": map[string]any{"seconds": 0.1, "label": "x"}},
		{"name": "failing_job"},
		{"name": "protocol_error_job"},
		{"name": "start_test_run", "arguments": map[string]any{"taskId": tasks[0].ID, "idempotencyKey": "tasks-client-1"}},
	}})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, nt.node, filepath.Join(nt.dir, "ext-tasks-client.mjs"), string(plan))
	cmd.Dir = nt.dir
	cmd.Env = baseEnv(t)
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("ext-tasks client: %v\n%s%s", err, out, stderr)
	}
	type callResult struct {
		IsError           bool            `json:"isError"`
		StructuredContent json.RawMessage `json:"structuredContent"`
		ResultType        string          `json:"resultType"`
	}
	var got []struct {
		Name, TaskID, Status, Error string
		Result                      callResult
		CompletedGet                struct {
			Status string
			Result *callResult
		}
	}
	if err := json.Unmarshal(out, &got); err != nil || len(got) != 4 {
		t.Fatalf("client output %s: %v", out, err)
	}
	want := []struct {
		status, structured string
		isError            bool
	}{
		{"completed", `"message":"computed x after 0.1s"`, false},
		{"completed", `"code":"INVALID_ARGUMENT"`, true},
		{"failed", "", false},
		{"completed", `"status":"passed"`, false},
	}
	for i, g := range got {
		w := want[i]
		if g.TaskID == "" || g.Status != w.status {
			t.Errorf("%s: task %q settled %s (%s), want a task settled %s", g.Name, g.TaskID, g.Status, g.Error, w.status)
			continue
		}
		if w.status != "completed" {
			continue
		}
		if g.Result.IsError != w.isError || !strings.Contains(string(g.Result.StructuredContent), w.structured) {
			t.Errorf("%s: result %+v (%s), want isError %v with %s", g.Name, g.Result, g.Result.StructuredContent, w.isError, w.structured)
		}
		if g.CompletedGet.Status != "completed" || g.CompletedGet.Result == nil || g.CompletedGet.Result.ResultType != "complete" {
			t.Errorf("%s: the completed tasks/get %+v does not inline a result marked complete", g.Name, g.CompletedGet)
		}
	}
}
