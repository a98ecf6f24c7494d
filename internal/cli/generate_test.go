package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/agent"
	"github.com/duet-test/duet/internal/cli"
	"github.com/duet-test/duet/internal/llm"
	"github.com/duet-test/duet/internal/llm/llmtest"
	"github.com/duet-test/duet/internal/sample/sampletest"
)

// duetCLI runs the duet command line in-process with an environment.
type duetCLI struct {
	t   *testing.T
	env map[string]string
}

func (d *duetCLI) run(stdin string, args ...string) (code int, stdout, stderr string) {
	d.t.Helper()
	var out, errb bytes.Buffer
	code = cli.Main(context.Background(), args, cli.Env{
		Getenv: func(k string) string { return d.env[k] },
		Stdin:  io.NopCloser(strings.NewReader(stdin)),
		Stdout: &out,
		Stderr: &errb,
	})
	return code, out.String(), errb.String()
}

func (d *duetCLI) ok(args ...string) string {
	d.t.Helper()
	code, out, errs := d.run("", args...)
	if code != 0 {
		d.t.Fatalf("duet %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, out, errs)
	}
	return out
}

func chromium() bool {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if _, err := exec.LookPath(name); err == nil {
			return true
		}
	}
	return false
}

// TestGenerateThenRun is the agent end to end through the command line: a
// task applied from a suite file, assets added, `duet generate` against a
// scripted OpenAI-compatible server (which looks at the page under test in
// a real browser when Chromium is installed, meets a 429, and answers with
// a case), and `duet run` passes the draft it saved.
func TestGenerateThenRun(t *testing.T) {
	t.Parallel()
	shopURL := sampletest.Shop(t)
	browser := chromium()

	const yamlCase = `title: Order A1002 can be read through the shop API
key: order-a1002-api
steps:
  - http: {url: /api/orders/A1002, saveAs: order}
  - assert: order.status == 200 && order.body.id == "A1002"
`
	first := []llm.ToolCall{llmtest.Call(agent.ToolGetTask, `{}`), llmtest.Call(agent.ToolListCases, `{}`)}
	if browser {
		first = append(first, llmtest.Call(agent.ToolInspectPage, `{"path":"/order?orderId=A1002"}`))
	}
	srv := llmtest.New(t,
		llmtest.Func(func(req llm.Request) llmtest.Turn {
			if sys := req.Messages[0].Content; !strings.Contains(sys, "Skill alice/api-first") || !strings.Contains(sys, "Rule alice/ids-only") {
				t.Errorf("system prompt lacks the skill or the rule")
			}
			return llmtest.ToolCalls(first...)
		}),
		llmtest.RateLimited("0"),
		llmtest.Func(func(req llm.Request) llmtest.Turn {
			var results []string
			for _, m := range req.Messages {
				if m.Role == llm.RoleTool {
					results = append(results, m.Content)
				}
			}
			if len(results) != len(first) || !strings.Contains(results[0], shopURL) || !strings.Contains(results[1], "smoke") {
				t.Errorf("tool results: got %q", results)
			}
			if browser && (len(results) < 3 || !strings.Contains(results[2], "A1002") || !strings.Contains(results[2], "css=")) {
				t.Errorf("inspect_page: got %q, want a summary of the order page with selectors", results[len(results)-1])
			}
			return llmtest.Reply("```yaml\n" + yamlCase + "```")
		}),
	)

	home := t.TempDir()
	d := &duetCLI{t: t, env: map[string]string{
		"DUET_HOME": home, "DUET_LLM_BASE_URL": srv.URL(), "DUET_LLM_MODEL": llmtest.Model,
	}}
	suite := filepath.Join(home, "shop.yaml")
	if err := os.WriteFile(suite, []byte("task:\n  name: shop\n  baseURL: "+shopURL+"\ncases:\n  - key: smoke\n    title: The shop answers\n    steps:\n      - http: GET /api/orders\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d.ok("apply", "-f", suite, "--as", "alice")
	d.ok("asset", "add", "skill", "api-first", "--text", "Check the JSON API before the page.", "--description", "API first", "--as", "alice")
	if code, out, _ := d.run("Use ids in selectors.\n", "asset", "add", "rule", "ids-only", "-f", "-", "--as", "alice"); code != 0 || !strings.Contains(out, "rule alice/ids-only v1: created (private)") {
		t.Fatalf("asset add from stdin: exit %d, %q", code, out)
	}

	code, out, errs := d.run("", "generate", "--task", "shop", "--as", "alice", "--goal", "order A1002 is readable", "--skill", "api-first")
	if code != 0 {
		t.Fatalf("generate: exit %d\n%s\n%s", code, out, errs)
	}
	if !strings.Contains(out, "key: order-a1002-api") || !strings.Contains(out, "url: /api/orders/A1002") {
		t.Errorf("generate printed:\n%s\nwant the case YAML", out)
	}
	m := regexp.MustCompile(`draft case (case_\w+) \(key order-a1002-api, v1\)`).FindStringSubmatch(errs)
	if m == nil {
		t.Fatalf("generate stderr:\n%s\nwant the draft case id", errs)
	}
	t.Logf("generate stderr:\n%s", errs)

	run := d.ok("run", "shop", "--case", m[1], "--as", "alice")
	if !strings.Contains(run, "PASSED") {
		t.Errorf("duet run:\n%s\nwant PASSED", run)
	}

	var gens []duet.Generation
	if err := json.Unmarshal([]byte(d.ok("generate", "list", "--as", "alice", "--json")), &gens); err != nil {
		t.Fatal(err)
	}
	if len(gens) != 1 || gens[0].CaseID != m[1] || gens[0].Turns != 2 || gens[0].Attempts != 3 || gens[0].TotalTokens != 2*(llmtest.DefaultPromptTokens+llmtest.DefaultCompletionTokens) ||
		strings.Join(gens[0].Assets, ",") != "skill:alice/api-first@1,rule:alice/ids-only@1" {
		t.Errorf("generation record: got %+v", gens)
	}
	if list := d.ok("asset", "list", "--as", "alice"); !strings.Contains(list, "skill  alice/api-first  v1") || !strings.Contains(list, "rule   alice/ids-only") {
		t.Errorf("asset list:\n%s", list)
	}
	if audit := d.ok("audit", "--as", "alice", "--method", "generateCase"); !strings.Contains(audit, "generateCase") || !strings.Contains(audit, "OK") {
		t.Errorf("audit:\n%s", audit)
	}
}

func TestGenerateNotConfigured(t *testing.T) {
	t.Parallel()
	d := &duetCLI{t: t, env: map[string]string{"DUET_HOME": t.TempDir()}}
	suite := filepath.Join(d.env["DUET_HOME"], "t.yaml")
	os.WriteFile(suite, []byte("task: {name: t}\ncases: []\n"), 0o600)
	d.ok("apply", "-f", suite, "--as", "alice")
	code, _, errs := d.run("", "generate", "--task", "t", "--as", "alice")
	if code != 2 || !strings.Contains(errs, "error: LLM_NOT_CONFIGURED") || !strings.Contains(errs, "DUET_LLM_BASE_URL") || !strings.Contains(errs, "DUET_LLM_MODEL") {
		t.Fatalf("got exit %d, %q; want 2 and LLM_NOT_CONFIGURED naming the variables", code, errs)
	}
	if code, _, errs := d.run("", "generate", "--as", "alice"); code != 2 || !strings.Contains(errs, "--task") {
		t.Fatalf("no task: got exit %d, %q", code, errs)
	}
}

func TestAssetCommands(t *testing.T) {
	t.Parallel()
	d := &duetCLI{t: t, env: map[string]string{"DUET_HOME": t.TempDir()}}
	d.ok("asset", "add", "skill", "login", "--text", "v1", "--share-with", "bob", "--as", "alice")
	if out := d.ok("asset", "add", "skill", "login", "--text", "v2", "--as", "alice"); !strings.Contains(out, "skill alice/login v2: updated (shared with bob)") {
		t.Errorf("new version: got %q", out)
	}
	if out := d.ok("asset", "show", "skill", "alice/login", "--version", "1", "--as", "bob"); !strings.Contains(out, "skill alice/login v1 (shared with bob)") || !strings.HasSuffix(out, "\nv1\n") {
		t.Errorf("show v1 as bob: got %q", out)
	}
	if code, _, errs := d.run("", "asset", "show", "skill", "login", "--as", "carol"); code != 1 || !strings.Contains(errs, "error: NOT_FOUND") {
		t.Errorf("carol: got exit %d, %q", code, errs)
	}
	if code, _, errs := d.run("", "asset", "rm", "skill", "login", "--as", "bob"); code != 1 || !strings.Contains(errs, "NOT_FOUND") {
		t.Errorf("bob removes alice's skill: exit %d, %q", code, errs)
	}
	if code, _, errs := d.run("", "asset", "add", "tool", "x", "--text", "y"); code != 2 || !strings.Contains(errs, "unknown asset kind") {
		t.Errorf("bad kind: exit %d, %q", code, errs)
	}
	if code, _, errs := d.run("", "asset", "add", "rule", "x"); code != 2 || !strings.Contains(errs, "needs the text") {
		t.Errorf("no text: exit %d, %q", code, errs)
	}
	d.ok("asset", "rm", "skill", "login", "--as", "alice")
	var got struct {
		Assets     []duet.Asset          `json:"assets"`
		MCPServers []duet.MCPServerAsset `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(d.ok("asset", "list", "--json", "--as", "alice")), &got); err != nil || len(got.Assets) != 0 || got.MCPServers == nil {
		t.Errorf("after rm: got %+v, %v", got, err)
	}
}
