package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// nodeDir returns test/node with its installed packages, or skips (fails
// under DUET_REQUIRE_NODE=1).
func nodeDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("DUET_TEST_NODE_DIR")
	if dir == "" {
		dir, _ = filepath.Abs("../node")
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk")); err != nil {
		if os.Getenv("DUET_REQUIRE_NODE") == "1" {
			t.Fatalf("DUET_REQUIRE_NODE=1 but the Node test packages are not installed in %s (scripts/deps.sh node)", dir)
		}
		t.Skipf("the Node test packages are not installed in %s (scripts/deps.sh node)", dir)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatalf("node: %v", err)
	}
	return dir
}

// TestTypeScriptClientFlow runs the whole client journey with the
// TypeScript SDK, launching `duet mcp` exactly as the go-sdk test does: the
// same command, from /, with only DUET_HOME added to a minimal environment.
func TestTypeScriptClientFlow(t *testing.T) {
	t.Parallel()
	dir := nodeDir(t)
	home := t.TempDir()
	srv := api(t)
	if _, stderr, code := duet(t, home, "apply", "-f", suiteFile(t, srv.URL), "--as", "tester"); code != 0 {
		t.Fatalf("apply: %s", stderr)
	}
	plan, _ := json.Marshal(map[string]any{"command": duetBin, "args": []string{"mcp"}, "cwd": "/",
		"env": map[string]string{"DUET_HOME": home, "USER": "tester"}})
	cmd := exec.CommandContext(ctxTimeout(t, 120e9), "node", filepath.Join(dir, "sdk-flow.mjs"), string(plan))
	cmd.Dir = t.TempDir() // the client itself runs from yet another directory
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("TypeScript SDK client: %v\n%s", err, stderr.String())
	}
	var got struct {
		Tasks         int
		RunID         string
		ReplayedRunID string
		Run           struct {
			Status string
			Totals map[string]int
		}
		Executions []struct {
			CaseTitle string
			Status    string
			ErrorCode string
			Steps     []any
		}
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got.Tasks != 1 || got.ReplayedRunID != got.RunID || got.Run.Status != "failed" || got.Run.Totals["passed"] != 1 || got.Run.Totals["failed"] != 1 {
		t.Fatalf("TypeScript client flow: %s", out)
	}
	for _, x := range got.Executions {
		if len(x.Steps) != 2 || (x.Status == "failed") != (x.ErrorCode == "ASSERTION_FAILED") {
			t.Fatalf("execution: %+v", x)
		}
	}
}
