package api_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/duet-test/duet/internal/app/apptest"
	"github.com/duet-test/duet/internal/mcpclient/mcptest"
)

// typedUses are, per operation, expressions a client writes with the
// operation's typed result d (its 2xx JSON) and the type each has: they
// compile only when the generated client knows d's shape. An operation
// answering 204 has none; followRun's events are Progress (p).
var typedUses = map[string][]string{
	"getMe":                 {"d.user: string", "d.admin: boolean"},
	"getPostRun":            {"d.taskId: string", "d.approved: boolean", "d.actions.length: number"},
	"approvePostRun":        {"d.taskId: string", "d.approved: boolean"},
	"listApprovals":         {"d.cases[0].caseId: string", "d.cases[0].version: number"},
	"listStopRequests":      {"d.requests[0].id: string", "d.requests[0].runId: string"},
	"decideStop":            {"d.run.status: string", "d.run.done: boolean"},
	"listDevices":           {"d.devices[0].device: string", "d.devices[0].state: string"},
	"listGenerations":       {"d.generations[0].id: string", "d.generations[0].taskId: string"},
	"generateCase":          {"d.flagged.length: number", "d.refused.length: number"},
	"listCaseSources":       {"d.taskId: string", "d.cases[0].source: string", "d.total: number"},
	"listTaskServers":       {"d.taskName: string", "d.servers[0].serverKey: string"},
	"loginServer":           {"d.server.name: string", "d.tools[0].name: string"},
	"getRunExit":            {"d.code: number"},
	"listSecrets":           {"d.secrets[0].name: string", "d.secrets[0].updatedAt: string"},
	"setSecret":             {"d.name: string", "d.action: string"},
	"listTasks":             {"d.tasks[0].id: string", "d.tasks[0].name: string", "d.total: number"},
	"createOrUpdateTasks":   {"d.task.id: string", "d.cases[0].key: string"},
	"validateSuite":         {"d.valid: boolean", "d.problems[0].line: number", "d.problems[0].message: string"},
	"getSuiteSource":        {"d.source: string", "d.changedSince.length: number"},
	"getTask":               {"d.task.name: string", "d.caseCount: number"},
	"shareTask":             {"d.sharedWith[0]: string"},
	"transferTask":          {"d.to: string"},
	"listTransfers":         {"d.transfers[0].to: string"},
	"listCases":             {"d.cases[0].id: string", "d.total: number"},
	"getTrends":             {"d.runs[0].passRate: number", "d.cases[0].points[0].status: string"},
	"getCase":               {"d.case.source: string", "d.case.steps[0].kind: string"},
	"getCaseApproval":       {"d.needed: boolean", "d.calls[0].tool: string"},
	"listCaseVersions":      {"d.versions[0].version: number", "d.versions[0].via: string", "d.diff!.lines[0].op: string", "d.diff!.added: number"},
	"getCaseVersion":        {"d.source!: string", "d.savedBy: string", "d.version: number"},
	"createCaseApproval":    {"d.version: number"},
	"listRuns":              {"d.runs[0].taskName: string", "d.total: number"},
	"createRun":             {"d.runId: string", "d.replayed: boolean"},
	"getRun":                {"d.run.status: string", "d.executions[0].executionId: string"},
	"cancelRun":             {"d.status: string", "d.done: boolean"},
	"followRun":             {"p.run.taskName: string", "p.executions[0].status: string"},
	"getReport":             {"html: string"},
	"getExecution":          {"d.execution.steps[0].status: string"},
	"listServers":           {"d.servers[0].serverKey: string"},
	"createServer":          {"d.server.serverKey: string", "d.tools[0].name: string"},
	"getServer":             {"d.tools[0].name: string"},
	"syncServer":            {"d.server.status: string"},
	"callTool":              {"d.invocation!.outcome: string"},
	"listInvocations":       {"d.records[0].tool: string"},
	"listAssets":            {"d.assets[0].name: string", "d.mcpServers[0].tools[0].name: string"},
	"createAsset":           {"d.asset.version: number"},
	"getAsset":              {"d.body: string"},
	"shareAsset":            {"d.asset.sharedWith[0]: string"},
	"listTeams":             {"d.teams[0].name: string"},
	"createTeam":            {"d.name: string", "d.members[0]: string"},
	"getTeam":               {"d.team.members[0]: string", "d.servers[0].serverKey: string"},
	"addTeamMember":         {"d.team.name: string"},
	"setTeamRole":           {"d.team.name: string"},
	"addTeamServer":         {"d.serverKey: string"},
	"registerTeamServer":    {"d.server.name: string"},
	"listTokens":            {"d.tokens[0].id: string"},
	"createToken":           {"d.secret: string"},
	"listAudit":             {"d.records[0].method: string"},
	"listBaselines":         {"d.baselines[0].id: string"},
	"getBaseline":           {"d.baseline.id: string"},
	"getBaselineImage":      {"png: string"},
	"approveBaseline":       {"d.id: string"},
	"rejectBaseline":        {"d.id: string"},
	"getTrace":              {"zip: string"},
	"getTraceVideo":         {"video: string"},
	"listCaseAIPlans":       {"d.plans[0].id: string", "d.plans[0].fingerprint: string"},
	"freezeCase":            {"d.replaced: number"},
	"clearAIPlans":          {"d.cleared: number"},
	"listSchedules":         {"d.schedules[0].id: string"},
	"createSchedule":        {"d.id: string", "d.timing: string"},
	"getSchedule":           {"d.timing: string", "d.paused: boolean"},
	"pauseSchedule":         {"d.paused: boolean"},
	"resumeSchedule":        {"d.paused: boolean"},
	"listContractAlerts":    {"d.broken: number"},
	"diffServer":            {"d.server: string", "d.history[0]: string"},
	"listWebhooks":          {"d.webhooks[0].id: string"},
	"createWebhook":         {"d.id: string", "d.secret: string | undefined"},
	"getWebhook":            {"d.url: string"},
	"updateWebhook":         {"d.disabled: boolean"},
	"rotateWebhookSecret":   {"d.secret: string | undefined"},
	"listWebhookDeliveries": {"d.deliveries[0].status: string", "d.deliveries[0].attempts: number"},
	"redeliverWebhook":      {"d.id: string"},
}

// TestTypeScriptClient generates a TypeScript client from the OpenAPI
// document with openapi-typescript and compiles, with tsc --strict, a
// program that uses every operation's typed result — its 2xx JSON is
// neither unknown nor never, reads the fields a client reads (typedUses),
// and its 4XX/5XX are the Error — and the same program, broken, does not
// compile (so the check can fail). Both tools are pinned in test/node.
func TestTypeScriptClient(t *testing.T) {
	t.Parallel()
	node, dir := nodeTools(t, "openapi-typescript", "typescript")
	e := apptest.New(t, nil)
	status, body, _ := e.Call("", "GET", "/api/v1/openapi.json", nil)
	if status != 200 {
		t.Fatalf("openapi.json: %d", status)
	}
	var doc struct {
		Paths map[string]map[string]struct {
			OperationID string                     `json:"operationId"`
			Responses   map[string]json.RawMessage `json:"responses"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	if err := os.WriteFile(filepath.Join(work, "openapi.json"), body, 0o644); err != nil {
		t.Fatal(err)
	}
	runNode(t, node, work, filepath.Join(dir, "node_modules", "openapi-typescript", "bin", "cli.js"), "openapi.json", "-o", "api.ts")

	var prog strings.Builder
	prog.WriteString(`import type { operations, components } from "./api.js";
type Res<Op extends keyof operations> = operations[Op]["responses"];
type JSONOf<R> = R extends { content: { "application/json": infer T } } ? T : never;
type Typed<T> = unknown extends T ? "unknown" : [T] extends [never] ? "never" : "typed";
type Empty<R> = R extends { content?: never } ? "empty" : "content";
`)
	var ids []string
	for _, methods := range doc.Paths {
		for _, op := range methods {
			ids = append(ids, op.OperationID)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		var op struct{ Responses map[string]json.RawMessage }
		for _, methods := range doc.Paths {
			for _, o := range methods {
				if o.OperationID == id {
					op.Responses = o.Responses
				}
			}
		}
		var ok string
		for code := range op.Responses {
			if code[0] == '2' {
				ok = code
			}
		}
		fmt.Fprintf(&prog, "function err_%s(e: JSONOf<Res<%q>[\"4XX\"]>, f: JSONOf<Res<%q>[\"5XX\"]>): string { return e.error.code + f.error.message; }\n", id, id, id)
		switch {
		case ok == "204":
			fmt.Fprintf(&prog, "const empty_%s: Empty<Res<%q>[204]> = \"empty\";\n", id, id)
			continue
		case id == "followRun":
			fmt.Fprintf(&prog, "const stream_%s: string = ({} as Res<%q>[200])[\"content\"][\"text/event-stream\"];\nfunction use_%s(p: components[\"schemas\"][\"Progress\"]) {\n", id, id, id)
		case id == "getReport":
			fmt.Fprintf(&prog, "function use_%s(html: Res<%q>[200][\"content\"][\"text/html\"]) {\n", id, id)
		case id == "getBaselineImage":
			fmt.Fprintf(&prog, "function use_%s(png: Res<%q>[200][\"content\"][\"image/png\"]) {\n", id, id)
		case id == "getTrace":
			fmt.Fprintf(&prog, "function use_%s(zip: Res<%q>[200][\"content\"][\"application/zip\"]) {\n", id, id)
		case id == "getTraceVideo":
			fmt.Fprintf(&prog, "function use_%s(video: Res<%q>[200][\"content\"][\"video/webm\"]) {\n", id, id)
		default:
			fmt.Fprintf(&prog, "const typed_%s: Typed<JSONOf<Res<%q>[%s]>> = \"typed\";\nfunction use_%s(d: JSONOf<Res<%q>[%s]>) {\n", id, id, ok, id, id, ok)
		}
		uses := typedUses[id]
		if len(uses) == 0 {
			t.Errorf("operation %s: no typed use of its result in typedUses (add what a client reads)", id)
		}
		for i, u := range uses {
			expr, typ, _ := strings.Cut(u, ": ")
			fmt.Fprintf(&prog, "\tconst v%d: %s = %s;\n", i, typ, expr)
		}
		prog.WriteString("}\n")
	}
	for id := range typedUses {
		if !slices.Contains(ids, id) {
			t.Errorf("typedUses names %s, which the document lacks", id)
		}
	}
	tsc := func(src string) (string, error) {
		if err := os.WriteFile(filepath.Join(work, "main.ts"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.CommandContext(t.Context(), node, filepath.Join(dir, "node_modules", "typescript", "bin", "tsc"), "--strict", "--noEmit",
			"--noUnusedLocals", "false", "--target", "es2022", "--module", "nodenext", "--moduleResolution", "nodenext", "--skipLibCheck", "main.ts")
		cmd.Dir = work
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := tsc(prog.String()); err != nil {
		t.Fatalf("the typed client program does not compile: %v\n%s\n--- main.ts:\n%s", err, out, prog.String())
	}
	// A field no result has does not compile: the check can fail.
	if out, err := tsc(prog.String() + "function broken(d: JSONOf<Res<\"listTasks\">[200]>) { const x: string = d.tasks[0].nosuchfield; }\n"); err == nil || !strings.Contains(out, "nosuchfield") {
		t.Fatalf("tsc accepted a field no task has: %v %s", err, out)
	}
}

// nodeTools returns the pinned Node binary and test/node, with the
// packages named installed there (else the test is skipped, or fails
// under DUET_REQUIRE_NODE=1).
func nodeTools(t *testing.T, pkgs ...string) (node, dir string) {
	t.Helper()
	dir = mcptest.NodeDir(t)
	for _, p := range pkgs {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", p, "package.json")); err != nil {
			if os.Getenv("DUET_REQUIRE_NODE") == "1" {
				t.Fatalf("DUET_REQUIRE_NODE=1 but %s is not installed in %s (scripts/deps.sh node)", p, dir)
			}
			t.Skipf("%s is not installed in %s (scripts/deps.sh node)", p, dir)
		}
	}
	return mcptest.Node(t, dir), dir
}

// runNode runs a Node script in dir and fails the test if it fails.
func runNode(t *testing.T, node, dir string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), node, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestRedoclyLint: the document passes every rule of Redocly's
// recommended set with no error and no warning — offline: the linter
// runs with its telemetry off and test/node/no-network.cjs preloaded,
// which turns any DNS lookup or connection into a failure the test sees.
func TestRedoclyLint(t *testing.T) {
	t.Parallel()
	node, dir := nodeTools(t, "@redocly/cli")
	e := apptest.New(t, nil)
	status, body, _ := e.Call("", "GET", "/api/v1/openapi.json", nil)
	if status != 200 {
		t.Fatalf("openapi.json: %d", status)
	}
	work := t.TempDir()
	if err := os.WriteFile(filepath.Join(work, "openapi.json"), body, 0o644); err != nil {
		t.Fatal(err)
	}
	lint := func(env ...string) (string, error) {
		cmd := exec.CommandContext(t.Context(), node, "--require", filepath.Join(dir, "no-network.cjs"),
			filepath.Join(dir, "node_modules", "@redocly", "cli", "bin", "cli.js"), "lint", "--extends", "recommended", "--format", "stylish", "openapi.json")
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "HOME="+work, "NO_COLOR=1")
		cmd.Env = append(cmd.Env, env...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := lint(redoclyOffline...)
	if err != nil || !strings.Contains(out, "Your API description is valid") || strings.Contains(out, "warning") || strings.Contains(out, "no-network:") {
		t.Fatalf("redocly lint (recommended): %v\n%s", err, out)
	}
	// The guard sees the network: a fetch under it is refused, in words.
	guard := exec.CommandContext(t.Context(), node, "--require", filepath.Join(dir, "no-network.cjs"), "-e",
		`fetch("https://registry.example/x").then(() => console.log("reached"), () => console.log("refused"))`)
	if out, _ := guard.CombinedOutput(); !strings.Contains(string(out), "no-network:") || !strings.Contains(string(out), "refused") {
		t.Fatalf("no-network.cjs let a fetch through: %s", out)
	}
	// A document with a warning of the recommended set fails the check.
	var d map[string]any
	json.Unmarshal(body, &d)
	delete(d["info"].(map[string]any), "license")
	b, _ := json.Marshal(d)
	os.WriteFile(filepath.Join(work, "openapi.json"), b, 0o644)
	if out, _ := lint(redoclyOffline...); !strings.Contains(out, "warning") {
		t.Fatalf("redocly lint saw no warning in a document without a license:\n%s", out)
	}
}

// redoclyOffline is the environment under which the Redocly CLI neither
// sends telemetry nor looks for a newer version of itself.
var redoclyOffline = []string{"REDOCLY_TELEMETRY=off", "REDOCLY_SUPPRESS_UPDATE_NOTICE=true", "DO_NOT_TRACK=1"}
