package cli_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/duet-test/duet/internal/llm"
	"github.com/duet-test/duet/internal/llm/llmtest"
	"github.com/duet-test/duet/internal/sample/sampletest"
)

// TestCaseFreezeAndPlans: after a run of a case with an aiTap step, `duet
// case plans CASE` shows the step's cached plan and `duet case freeze
// CASE` proposes the draft KEY-frozen with the step written out as a
// click, and `duet case plans CASE --clear` removes the plan — on this
// machine and against a server, through the service's listCaseAIPlans,
// freezeCase and clearAIPlans.
func TestCaseFreezeAndPlans(t *testing.T) {
	t.Parallel()
	requireBrowser(t)
	subscribe := regexp.MustCompile(`(?m)^\[(e\d+)\] button "Subscribe"`)
	model := llmtest.Func(func(req llm.Request) llmtest.Turn {
		page := ""
		for _, m := range req.Messages {
			if m.Role == llm.RoleUser {
				page = m.Content
				break
			}
		}
		m := subscribe.FindStringSubmatch(page)
		if m == nil {
			t.Errorf("no Subscribe button listed:\n%.2000s", page)
			return llmtest.Reply(`{}`)
		}
		return llmtest.Reply(`{"ref": "` + m[1] + `", "reason": "the button"}`)
	})
	turns := make([]llmtest.Turn, 10)
	for i := range turns {
		turns[i] = model
	}
	srv := llmtest.New(t, turns...)
	suite := filepath.Join(t.TempDir(), "suite.yaml")
	os.WriteFile(suite, []byte(`
task: {name: frozen, baseURL: `+sampletest.Shop(t)+`}
cases:
  - key: sub
    title: subscribes
    steps:
      - open: /lab/store
      - aiTap: the Subscribe button
`), 0o600)

	withModel := func(h *duetHome) *duetHome {
		h.env["DUET_LLM_BASE_URL"], h.env["DUET_LLM_MODEL"] = srv.URL(), llmtest.Model
		return h
	}
	local := withModel(newHome(t))
	server := withModel(newHome(t))
	url := serveFor(t, server)
	token := strings.TrimSpace(server.must(0, "token", "create", "--as", "alice", "--name", "cli"))
	remote := &duetHome{t: t, env: map[string]string{
		"DUET_HOME": filepath.Join(t.TempDir(), "unused"), "XDG_CONFIG_HOME": t.TempDir(),
		"DUET_SERVER_URL": url, "DUET_TOKEN": token, "DUET_LOG_LEVEL": "warn",
	}}
	caseRe := regexp.MustCompile(`case (\S+) "sub"`)
	for _, mode := range []struct {
		name string
		h    *duetHome
	}{{"local", local}, {"remote", remote}} {
		m := caseRe.FindStringSubmatch(mode.h.must(0, "apply", "-f", suite))
		if m == nil {
			t.Fatalf("%s: no case id", mode.name)
		}
		id := m[1]
		if out := mode.h.must(0, "case", "plans", id); !strings.Contains(out, "has no cached AI plans") {
			t.Errorf("%s: plans before a run: %s", mode.name, out)
		}
		if code, _, errOut := mode.h.duet(t.Context(), "case", "freeze", id); code != 1 || !strings.Contains(errOut, "no cached AI plan to freeze: run it first") {
			t.Errorf("%s: freeze before a run: exit %d %s", mode.name, code, errOut)
		}
		mode.h.must(0, "run", "frozen")
		if out := mode.h.must(0, "case", "plans", id); !strings.Contains(out, "step 2 (version 1): 1 action(s)") || !strings.Contains(out, `click {"role":"button","name":"Subscribe"`) {
			t.Errorf("%s: plans after a run: %s", mode.name, out)
		}
		out := mode.h.must(0, "case", "freeze", id)
		if !strings.Contains(out, "(key sub-frozen) of task") || !strings.Contains(out, "1 AI step(s) written out") || strings.Contains(out, "aiTap") || !strings.Contains(out, "click") {
			t.Errorf("%s: freeze: %s", mode.name, out)
		}
		if out := mode.h.must(0, "case", "plans", id, "--clear"); !strings.Contains(out, "cleared 1 cached plan(s)") {
			t.Errorf("%s: plans --clear: %s", mode.name, out)
		}
		if out := mode.h.must(0, "case", "plans", id); !strings.Contains(out, "has no cached AI plans") {
			t.Errorf("%s: plans after --clear: %s", mode.name, out)
		}
	}
}
