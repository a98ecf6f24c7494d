package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/duet-test/duet/internal/conformance"
	"github.com/duet-test/duet/internal/mcpclient/mcptest"
)

// driverEnv marks a run of this test binary as the conformance suite's
// client: it then runs the driver (conformance.RunClient, what a
// conformance build's `duet conformance-client URL` runs).
const driverEnv = "DUET_TEST_CONFORMANCE_DRIVER"

func TestMain(m *testing.M) {
	if os.Getenv(driverEnv) == "1" {
		if len(os.Args) != 2 {
			fmt.Fprintln(os.Stderr, "usage: conformance-client URL")
			os.Exit(2)
		}
		if err := conformance.RunClient(context.Background(), os.Getenv, os.Stdout, os.Stderr, os.Args[1]); err != nil {
			fmt.Fprintln(os.Stderr, "error:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// coreClientScenarios is the suite's core client set: every one passes.
// The auth/* scenarios run Duet's OAuth client against the suite's
// authorization servers (they approve without a person: the driver follows
// their redirect).
var coreClientScenarios = []string{
	"initialize", "tools_call", "sse-retry", "elicitation-sep1034-client-defaults",
	"auth/metadata-default", "auth/metadata-var1", "auth/metadata-var2", "auth/metadata-var3",
	"auth/basic-cimd", "auth/scope-from-www-authenticate", "auth/scope-from-scopes-supported",
	"auth/scope-omitted-when-undefined", "auth/scope-step-up", "auth/scope-retry-limit",
	"auth/token-endpoint-auth-basic", "auth/token-endpoint-auth-post", "auth/token-endpoint-auth-none",
	"auth/pre-registration",
}

// moreClientScenarios are scenarios of the suite's "all" set beyond core
// that pass too (docs/interop.md lists the two that do not, and why).
var moreClientScenarios = []string{
	"auth/2025-03-26-oauth-endpoint-fallback", "auth/resource-mismatch", "auth/offline-access-scope",
	"auth/offline-access-not-supported", "auth/client-credentials-jwt", "auth/client-credentials-basic",
	"auth/cross-app-access-complete-flow", // SEP-990: enterprise-managed authorization
}

// TestConformanceClient runs the official MCP conformance suite (pinned in
// test/node) in client mode against Duet's client path: the suite starts a
// test server per scenario and runs `duet conformance-client URL`, which
// registers it, syncs its catalog and calls its tools through Invoke.
func TestConformanceClient(t *testing.T) {
	dir := mcptest.NodeDir(t)
	node := mcptest.Node(t, dir)
	suite := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")
	if _, err := os.Stat(suite); err != nil {
		t.Fatalf("conformance suite missing: %v", err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(self, " ") {
		t.Skipf("the suite splits its command on spaces; the test binary's path has one: %s", self)
	}
	for _, scenario := range append(coreClientScenarios, moreClientScenarios...) {
		t.Run(scenario, func(t *testing.T) {
			t.Parallel()
			out := t.TempDir()
			ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, suite, "client", "--command", self, "--scenario", scenario, "-o", out)
			cmd.Dir = out
			cmd.Env = append(os.Environ(), driverEnv+"=1", "DUET_LOG_LEVEL=warn")
			log, runErr := cmd.CombinedOutput()
			var success, failure int
			var failures []string
			filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
				if err != nil || d.Name() != "checks.json" {
					return nil
				}
				b, _ := os.ReadFile(p)
				var checks []struct {
					ID, Status, ErrorMessage string
				}
				json.Unmarshal(b, &checks)
				for _, c := range checks {
					switch c.Status {
					case "SUCCESS":
						success++
					case "FAILURE":
						failure++
						failures = append(failures, c.ID+": "+c.ErrorMessage)
					}
				}
				return nil
			})
			if success == 0 || failure > 0 {
				t.Fatalf("scenario %s: %d checks passed, %d failed %v (suite: %v)\n%s", scenario, success, failure, failures, runErr, log)
			}
			t.Logf("scenario %s: %d checks passed", scenario, success)
		})
	}
}
