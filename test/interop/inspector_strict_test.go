package interop_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/duet-test/duet/internal/scan"
)

// strictResult is what `inspector --cli --method tools/list --strict
// --format json` reports: its exit code, the tools it listed and the schema
// findings (one object on stdout), and its report for people (stderr).
type strictResult struct {
	exit     int
	tools    []scan.Tool
	errors   int
	warnings int
	findings []string // "tool rule schema.path"
	stderr   string
}

// inspectorStrict runs MCP Inspector's command-line mode (the pinned
// @modelcontextprotocol/inspector, on the Node 22 it requires) with --strict
// against a stdio server: command args..., with env (KEY=VALUE) given with
// -e (the inspector starts the server with a default environment of its
// own, PATH and HOME among it, plus those).
func inspectorStrict(t *testing.T, nt nodeTools, env []string, command string, args ...string) strictResult {
	t.Helper()
	launcher := filepath.Join(nt.dir, "node_modules", "@modelcontextprotocol", "inspector", "clients", "launcher", "build", "index.js")
	if _, err := os.Stat(launcher); err != nil {
		msg := "@modelcontextprotocol/inspector is not installed in " + nt.dir + " (run scripts/deps.sh node)"
		if os.Getenv("DUET_REQUIRE_NODE") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	argv := []string{launcher, "--cli", "--method", "tools/list", "--strict", "--format", "json"}
	for _, kv := range env {
		argv = append(argv, "-e", kv)
	}
	argv = append(append(argv, command), args...)
	cmd := exec.CommandContext(ctx, nt.node22, argv...)
	cmd.Env = baseEnv(t)
	cmd.Dir = t.TempDir()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	r := strictResult{stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.exit = ee.ExitCode()
	case err != nil:
		t.Fatalf("inspector: %v\n%s", err, r.stderr)
	}
	// --format json prints one JSON object per line: the result (with
	// schemaFindings when there are any), then an error object when it
	// exits non-zero.
	var got struct {
		Result struct {
			Tools []scan.Tool `json:"tools"`
		} `json:"result"`
		SchemaFindings []struct {
			ToolName string `json:"toolName"`
			Findings []struct {
				Rule, Severity, Schema, Path string
			} `json:"findings"`
		} `json:"schemaFindings"`
	}
	line, _, _ := strings.Cut(string(out), "\n")
	if err := json.Unmarshal([]byte(line), &got); err != nil || got.Result.Tools == nil {
		t.Fatalf("inspector: exit %d, stdout is not a tools/list result (%v)\n%s\n%s", r.exit, err, out, r.stderr)
	}
	r.tools = got.Result.Tools
	for _, tf := range got.SchemaFindings {
		for _, f := range tf.Findings {
			if f.Severity == "error" {
				r.errors++
			} else {
				r.warnings++
			}
			r.findings = append(r.findings, tf.ToolName+" "+f.Rule+" "+f.Schema+"."+f.Path)
		}
	}
	return r
}

// TestInspectorStrict: MCP Inspector's --strict tools/list on `duet mcp`
// (stdio, with every tool released, stop_test_run included) reports 0
// errors and 0 warnings and exits 0 — and on a server whose catalog has a
// ["null","string"] type union and a bare true schema it reports both and
// exits 6, so the check is able to fail. `duet scan` finds the same two
// problems in that catalog (the scan applies the same schema rules).
func TestInspectorStrict(t *testing.T) {
	t.Parallel()
	nt := requireNode(t)

	t.Run("duet", func(t *testing.T) {
		t.Parallel()
		home := t.TempDir()
		r := inspectorStrict(t, nt, []string{"DUET_HOME=" + home, "DUET_USER=alice", "DUET_STOP_TOOL_USERS=*"}, duetBin, "mcp")
		if r.exit != 0 || r.errors != 0 || r.warnings != 0 || strings.Contains(r.stderr, "Warning:") || strings.Contains(r.stderr, "Error:") {
			t.Errorf("inspector --strict on duet mcp: exit %d, %d errors, %d warnings %q\n%s", r.exit, r.errors, r.warnings, r.findings, r.stderr)
		}
		var names []string
		for _, tl := range r.tools {
			names = append(names, tl.Name)
		}
		if len(names) < 8 || !slices.Contains(names, "start_test_run") || !slices.Contains(names, "stop_test_run") {
			t.Errorf("inspector listed %q: want Duet's whole catalog, stop_test_run included", names)
		}
	})

	t.Run("fixture", func(t *testing.T) {
		t.Parallel()
		r := inspectorStrict(t, nt, nil, nt.node22, filepath.Join(nt.dir, "lint-fixture-server.mjs"))
		want := []string{"lookup type-union inputSchema.properties.note", "lookup boolean-schema inputSchema.properties.extra"}
		if r.exit != 6 || r.errors != 1 || r.warnings != 1 || !slices.Equal(r.findings, want) ||
			!strings.Contains(r.stderr, "1 error, 1 warning across 1 tool.") {
			t.Fatalf("inspector --strict on the fixture: exit %d, findings %q; want exit 6 and %q\n%s", r.exit, r.findings, want, r.stderr)
		}
		rep := scan.Scan([]scan.Source{{Name: "fixture", Tools: r.tools}})
		var got []string
		for _, f := range rep.Sources[0].Findings {
			if slices.Contains([]string{scan.RuleTypeUnion, scan.RuleBooleanSchema}, f.Rule) {
				got = append(got, f.Tool+" "+f.Rule+" "+f.Path)
			}
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("duet scan on the same catalog: got %q, want %q", got, want)
		}
	})
}
