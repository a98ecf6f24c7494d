package interop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// activeServerScenarios are the server scenarios of the pinned suite
// (@modelcontextprotocol/conformance 0.1.16, --suite active). A suite that
// runs another set fails the test: upgrade the list and the targets together.
var activeServerScenarios = []string{
	"server-initialize", "logging-set-level", "ping", "completion-complete", "tools-list",
	"tools-call-simple-text", "tools-call-image", "tools-call-audio", "tools-call-embedded-resource",
	"tools-call-mixed-content", "tools-call-with-logging", "tools-call-error", "tools-call-with-progress",
	"tools-call-sampling", "tools-call-elicitation", "elicitation-sep1034-defaults", "server-sse-multiple-streams",
	"elicitation-sep1330-enums", "resources-list", "resources-read-text", "resources-read-binary",
	"resources-templates-read", "resources-subscribe", "resources-unsubscribe", "prompts-list",
	"prompts-get-simple", "prompts-get-with-args", "prompts-get-embedded-resource", "prompts-get-with-image",
	"dns-rebinding-protection",
}

// notStateless are the scenarios a stateless server cannot pass, and why.
// Every other scenario must pass in stateless mode too (25 of 30): logging
// and progress included, because their replies stream.
var notStateless = map[string]string{
	"tools-call-sampling":          "needs a server-to-client request (sampling/createMessage): no session to answer on",
	"tools-call-elicitation":       "needs a server-to-client request (elicitation/create): no session to answer on",
	"elicitation-sep1034-defaults": "needs a server-to-client request (elicitation/create): no session to answer on",
	"elicitation-sep1330-enums":    "needs a server-to-client request (elicitation/create): no session to answer on",
	"server-sse-multiple-streams":  "needs an Mcp-Session-Id; the suite reports only a warning (skipped) without one",
}

// TestConformanceServer runs the official suite's server scenarios against
// `duet serve --conformance-fixtures`, with sessions and stateless. Targets:
// 30/30 with --sessions; stateless, every scenario outside notStateless.
func TestConformanceServer(t *testing.T) {
	nt := requireNode(t)
	for _, mode := range []struct {
		name string
		args []string
	}{
		{"sessions", []string{"--sessions"}},
		{"stateless", nil},
	} {
		t.Run(mode.name, func(t *testing.T) {
			srv := startServe(t, []string{"DUET_HOME=" + t.TempDir()}, append([]string{"--conformance-fixtures"}, mode.args...)...)
			got := runSuite(t, nt, "server", "--url", srv.url, "--suite", "active")
			var names []string
			for n := range got {
				names = append(names, n)
			}
			sort.Strings(names)
			want := slices.Sorted(slices.Values(activeServerScenarios))
			if !slices.Equal(names, want) {
				t.Fatalf("the suite ran scenarios\n%v\nwant\n%v\n(a new suite version? update activeServerScenarios and the targets)", names, want)
			}
			passed := 0
			for _, n := range names {
				o := got[n]
				if o.status == "pass" {
					passed++
				}
				why, exempt := notStateless[n]
				switch {
				case o.status == "pass":
				case mode.name == "stateless" && exempt:
					t.Logf("%s: %s (expected in stateless mode: %s)", n, o.status, why)
				default:
					t.Errorf("%s: %s: %s", n, o.status, o.detail)
				}
			}
			t.Logf("conformance server (%s): %d of %d scenarios passed", mode.name, passed, len(names))
		})
	}
}

// clientMustPass are the core client scenarios Duet's client path passes:
// all of them, the auth/* ones through Duet's OAuth client (docs/interop.md).
var clientMustPass = []string{
	"initialize", "tools_call", "sse-retry", "elicitation-sep1034-client-defaults",
	"auth/metadata-default", "auth/metadata-var1", "auth/metadata-var2", "auth/metadata-var3",
	"auth/basic-cimd", "auth/scope-from-www-authenticate", "auth/scope-from-scopes-supported",
	"auth/scope-omitted-when-undefined", "auth/scope-step-up", "auth/scope-retry-limit",
	"auth/token-endpoint-auth-basic", "auth/token-endpoint-auth-post", "auth/token-endpoint-auth-none",
	"auth/pre-registration",
}

// TestConformanceClient runs the suite's core client scenarios through
// `duet conformance-client` (a hidden command: Duet's own client path —
// registration, catalog sync, Invoke) and fails when a scenario it passes
// today stops passing.
func TestConformanceClient(t *testing.T) {
	nt := requireNode(t)
	got := runSuite(t, nt, "client", "--command", duetBin+" conformance-client", "--suite", "core")
	if len(got) == 0 {
		t.Fatal("the suite ran no client scenario")
	}
	passed := 0
	for n, o := range got {
		if o.status == "pass" {
			passed++
		} else if !slices.Contains(clientMustPass, n) {
			t.Logf("%s: %s (not in clientMustPass)", n, o.status)
		}
	}
	for _, n := range clientMustPass {
		if o, ok := got[n]; !ok || o.status != "pass" {
			t.Errorf("%s: %s: %s", n, o.status, o.detail)
		}
	}
	t.Logf("conformance client (core): %d of %d scenarios passed", passed, len(got))
}

type outcome struct {
	status string // pass, fail, skipped
	detail string
}

// resultDirRe matches a scenario's result folder: "server-NAME-TIME" for
// server scenarios, "NAME-TIME" (under "auth/" for the OAuth ones) for
// client scenarios.
var resultDirRe = regexp.MustCompile(`^(?:server-)?(.+)-\d{4}-\d{2}-\d{2}T[0-9-]+Z$`)

// runSuite runs the pinned conformance suite with args and returns each
// scenario's outcome: pass when it has a SUCCESS check and no FAILURE,
// skipped when it has neither, fail otherwise.
func runSuite(t *testing.T, nt nodeTools, args ...string) map[string]outcome {
	t.Helper()
	return runSuiteOf(t, nt, filepath.Join("@modelcontextprotocol", "conformance"), args...)
}

// runSuiteOf is runSuite with the suite installed in node_modules/pkg.
func runSuiteOf(t *testing.T, nt nodeTools, pkg string, args ...string) map[string]outcome {
	t.Helper()
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, nt.node22, append([]string{
		filepath.Join(nt.dir, "node_modules", pkg, "dist", "index.js")},
		append(args, "-o", out)...)...)
	cmd.Dir = out
	cmd.Env = append(baseEnv(t), "NO_COLOR=1")
	log, err := cmd.CombinedOutput()
	// The suite exits 1 when a check fails; its results are in out.
	if ctx.Err() != nil {
		t.Fatalf("conformance suite timed out:\n%s", log)
	}
	entries, rerr := os.ReadDir(out)
	if rerr != nil || len(entries) == 0 {
		t.Fatalf("conformance suite produced no results (%v):\n%s", err, log)
	}
	res := map[string]outcome{}
	var dirs []string
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if resultDirRe.MatchString(e.Name()) {
			dirs = append(dirs, e.Name())
			continue
		}
		// A group of scenarios (auth/...).
		sub, _ := os.ReadDir(filepath.Join(out, e.Name()))
		for _, se := range sub {
			if se.IsDir() && resultDirRe.MatchString(se.Name()) {
				dirs = append(dirs, e.Name()+"/"+se.Name())
			}
		}
	}
	for _, d := range dirs {
		m := resultDirRe.FindStringSubmatch(filepath.Base(d))
		if g := filepath.Dir(d); g != "." {
			m[1] = g + "/" + m[1]
		}
		m = append([]string{m[0]}, m...) // keep the name at index 2
		b, err := os.ReadFile(filepath.Join(out, d, "checks.json"))
		if err != nil {
			res[m[2]] = outcome{"fail", "no checks.json"}
			continue
		}
		var checks []struct {
			ID, Status, ErrorMessage string
		}
		if err := json.Unmarshal(b, &checks); err != nil {
			res[m[2]] = outcome{"fail", "checks.json: " + err.Error()}
			continue
		}
		var ok int
		var failures []string
		for _, c := range checks {
			switch c.Status {
			case "SUCCESS":
				ok++
			case "FAILURE":
				failures = append(failures, fmt.Sprintf("%s: %s", c.ID, c.ErrorMessage))
			}
		}
		switch {
		case len(failures) > 0:
			res[m[2]] = outcome{"fail", strings.Join(failures, "; ")}
		case ok == 0:
			res[m[2]] = outcome{"skipped", "no SUCCESS check"}
		default:
			res[m[2]] = outcome{"pass", ""}
		}
	}
	return res
}
