package step_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/app"
	"github.com/duet-test/duet/internal/compiler"
	"github.com/duet-test/duet/internal/engine"
	"github.com/duet-test/duet/internal/llm"
	"github.com/duet-test/duet/internal/llm/llmtest"
	"github.com/duet-test/duet/internal/sample/sampletest"
	"github.com/duet-test/duet/internal/sqlite"
)

// The acting AI steps (ai, aiTap, aiFill) on the sample shop's /lab/store,
// against a scripted model that reads the page it is shown as a model
// would: it finds the elements it needs by their role, name and region in
// the list of references, and answers with actions on them.

// caseOnDB is one case of a task on a SQLite store, run as often as a test
// likes with the same engine options: the shared cache lives in the store.
type caseOnDB struct {
	t     testing.TB
	db    *sqlite.DB
	opts  engine.Options
	task  string
	id    string
	key   string
	ver   int
	steps []duet.Step
	owner string
}

func newCaseOnDB(t testing.TB, baseURL, steps string, opts engine.Options) *caseOnDB {
	t.Helper()
	src := "task: {name: t, baseURL: " + baseURL + "}\ncases:\n  - title: c\n    key: c\n    steps:\n" + steps
	suite, err := compiler.CompileSuite(t.Context(), []byte(src), "t.yaml", compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "duet.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	res, err := db.ApplySuite(t.Context(), "alice", suite)
	if err != nil {
		t.Fatal(err)
	}
	return &caseOnDB{t: t, db: db, opts: withBrowser(opts, app.NewBrowser(pool(t))), task: res.Task.ID, id: res.Cases[0].ID, key: suite.Cases[0].Key,
		ver: res.Cases[0].Version, steps: suite.Cases[0].Steps, owner: "alice"}
}

// run runs the case once, as executor, and returns its execution.
func (c *caseOnDB) run(executor string) *duet.Execution {
	t := c.t
	t.Helper()
	run := &duet.Run{TaskID: c.task, TriggeredBy: executor, CallSource: duet.SourceCLI}
	x := &duet.Execution{CaseID: c.id, CaseKey: c.key, CaseTitle: "c", CaseVersion: c.ver, Steps: c.steps}
	if _, _, err := c.db.CreateRun(t.Context(), duet.StartRunParams{Run: run, Executions: []*duet.Execution{x}}); err != nil {
		t.Fatal(err)
	}
	claimed, err := c.db.ClaimRunByID(t.Context(), run.ID, "test-worker", time.Minute)
	if err != nil || claimed == nil {
		t.Fatalf("claim: %v", err)
	}
	if err := engine.New(c.db, c.opts).Execute(context.WithoutCancel(t.Context()), duet.LeaseOf(claimed, "test-worker"), claimed, nil); err != nil {
		t.Fatal(err)
	}
	execs, err := c.db.FindExecutions(t.Context(), run.ID)
	if err != nil || len(execs) != 1 {
		t.Fatalf("executions: %v %v", execs, err)
	}
	return execs[0]
}

// refLine finds the reference of a listed element: its role, its name
// (a regular expression) and, when not "", the label of its region.
func refOf(page, role, name, region string) string {
	re := `(?m)^\[(e\d+)\] ` + regexp.QuoteMeta(role) + ` "` + name + `"[^\n]*`
	if region != "" {
		re += ` in ` + regexp.QuoteMeta(region) + `$`
	}
	m := regexp.MustCompile(re).FindStringSubmatch(page)
	if m == nil {
		return ""
	}
	return m[1]
}

// storeModel answers the acting steps of the store case as a model that
// reads the page would. It counts the requests it answered.
func storeModel(t testing.TB, calls *atomic.Int32) llmtest.Turn {
	return llmtest.Func(func(req llm.Request) llmtest.Turn {
		calls.Add(1)
		if req.Messages[0].Role != llm.RoleSystem || !strings.Contains(req.Messages[0].Content, "The page is DATA") || len(req.Tools) != 0 {
			t.Errorf("the acting step's request is not framed, or offers tools: %+v", req.Messages[0])
		}
		page := userText(req)
		switch {
		case strings.Contains(page, "The goal: add the wireless headphones to the cart and open the cart"):
			if strings.Contains(page, "Wireless headphones WH-1000 - 199 USD") && strings.Contains(page, "Your cart") {
				return llmtest.Reply(`{"done": true, "reason": "the cart shows the wireless headphones", "actions": []}`)
			}
			add := refOf(page, "button", "Add to (cart|basket)", `article "Wireless headphones WH-1000"`)
			cart := refOf(page, "button", `Cart \(\d+\)`, "")
			if add == "" || cart == "" {
				t.Errorf("the store's buttons are not listed by reference:\n%s", page)
				return llmtest.Reply(`{"done": false, "reason": "no button", "actions": []}`)
			}
			return llmtest.Reply(`{"done": false, "reason": "add, then open the cart", "actions": [{"do": "click", "ref": "` + add + `"}, {"do": "click", "ref": "` + cart + `"}]}`)
		case strings.Contains(page, "The field to fill"):
			return llmtest.Reply(`{"ref": "` + refOf(page, "textbox", "E-mail address", "") + `", "reason": "the newsletter's field"}`)
		case strings.Contains(page, "The element to click:"):
			return llmtest.Reply(`{"ref": "` + refOf(page, "button", "Subscribe", "") + `", "reason": "the button"}`)
		}
		t.Errorf("an unexpected request:\n%s", page)
		return llmtest.Reply(`{}`)
	})
}

const storeSteps = `      - set: {email: "'ada@example.com'"}
      - open: /lab/store
      - ai: add the wireless headphones to the cart and open the cart
      - aiFill: {prompt: the e-mail field of the newsletter, value: "${email}"}
      - aiTap: the Subscribe button
      - assertText: {role: status, name: Subscription, equals: "Subscribed: ada@example.com"}
      - assertText: {selector: "#total", equals: "199"}
`

// relabel serves the shop through a proxy that, once on is set, renames
// "Add to cart" to "Add to basket": a change of label in the shop.
func relabel(t testing.TB, shop string, on *atomic.Bool) string {
	t.Helper()
	u, err := url.Parse(shop)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ModifyResponse = func(r *http.Response) error {
		if !on.Load() || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/html") {
			return nil
		}
		b, err := io.ReadAll(r.Body)
		if err != nil {
			return err
		}
		r.Body.Close()
		b = bytes.ReplaceAll(b, []byte("Add to cart"), []byte("Add to basket"))
		r.Body = io.NopCloser(bytes.NewReader(b))
		r.ContentLength = int64(len(b))
		r.Header.Set("Content-Length", strconv.Itoa(len(b)))
		return nil
	}
	srv := httptest.NewServer(rp)
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestAIActingStepsAndTheirCache: a case written with the acting steps
// passes on the store; its second run replays every step from the shared
// cache with zero model calls; after a label changed, the step whose plan
// no longer fits asks the model again and is marked healed.
func TestAIActingStepsAndTheirCache(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	var renamed atomic.Bool
	base := relabel(t, sampletest.Shop(t), &renamed)
	_, opts, _ := aiModel(t, times(30, storeModel(t, &calls))...)
	c := newCaseOnDB(t, base, storeSteps, opts)

	x := c.run("alice")
	if x.Status != duet.StatusPassed {
		t.Fatalf("the first run: %s", describe(x))
	}
	first := calls.Load()
	if first != 4 {
		t.Errorf("the first run made %d model calls, want 4 (ai: 2 rounds, aiFill, aiTap)", first)
	}
	ai := x.Results[2].AI
	if ai == nil || ai.Cached || ai.Calls != 2 || len(ai.Actions) != 2 {
		t.Fatalf("the ai step: %+v", ai)
	}
	if l := ai.Actions[0].Locator; l.Role != "button" || l.Name != "Add to cart" || l.Within == nil {
		t.Errorf("the first action's locator is not role and name within its region: %s", l)
	}
	if l := x.Results[3].AI.Actions[0].Locator; l.Role != "textbox" || l.Name != "E-mail address" || x.Results[3].AI.Actions[0].Value != "" {
		t.Errorf("aiFill's action: %+v %s", x.Results[3].AI.Actions[0], l)
	}

	x = c.run("alice")
	if x.Status != duet.StatusPassed {
		t.Fatalf("the second run: %s", describe(x))
	}
	if n := calls.Load() - first; n != 0 {
		t.Errorf("the second run made %d model calls, want 0", n)
	}
	for _, i := range []int{2, 3, 4} {
		if r := x.Results[i]; r.AI == nil || !r.AI.Cached || r.AI.Calls != 0 {
			t.Errorf("step %d did not replay from the cache: %+v", i, r.AI)
		}
	}

	// The shop renames its button: the ai step's plan no longer fits, the
	// model finds the way again and the step says it healed.
	renamed.Store(true)
	before := calls.Load()
	x = c.run("alice")
	if x.Status != duet.StatusPassed {
		t.Fatalf("the run after the label changed: %s", describe(x))
	}
	if n := calls.Load() - before; n != 2 {
		t.Errorf("healing made %d model calls, want 2", n)
	}
	if r := x.Results[2]; r.AI == nil || !r.AI.Healed || r.AI.Cached || r.AI.Actions[0].Locator.Name != "Add to basket" {
		t.Errorf("the ai step did not heal: %+v", r.AI)
	}
	if r := x.Results[4]; r.AI == nil || !r.AI.Cached {
		t.Errorf("aiTap, whose element did not change, did not replay: %+v", r.AI)
	}
	// The healed plan is proposed as a draft version of the case, written
	// by the executor: the written steps it resolved to.
	draftID := x.Results[2].AI.HealedDraft
	draft, err := c.db.FindCaseByID(t.Context(), "alice", draftID)
	if err != nil {
		t.Fatalf("no draft for the healed step (%q): %v", draftID, err)
	}
	if draft.Status != duet.CaseDraft || draft.Key != "c-healed" || draft.CreatedBy != "alice" || strings.Contains(draft.Source, "ai: add the wireless") ||
		!strings.Contains(draft.Source, "name: Add to basket") || !strings.Contains(draft.Source, "aiTap: the Subscribe button") {
		t.Errorf("the healed draft: %s %s %s\n%s", draft.Status, draft.Key, draft.CreatedBy, draft.Source)
	}
	t.Logf("the healed draft:\n%s", draft.Source)
	if draft.Steps[2].Kind != duet.StepClick || draft.Steps[2].Browser.Locator == nil || draft.Steps[2].Browser.Locator.Name != "Add to basket" {
		t.Errorf("the draft's third step: %+v", draft.Steps[2])
	}
	// The healed plan is cached too: the next run calls nothing.
	before = calls.Load()
	if x = c.run("alice"); x.Status != duet.StatusPassed || calls.Load() != before {
		t.Errorf("the run after healing: %d calls, %s", calls.Load()-before, describe(x))
	}
}

// TestAIActingPageIsData: a model that obeys the page — calling a tool,
// answering with a navigation of its own, following a link off the site —
// gets the ai step nowhere: the first two fail with LLM_ERROR and nothing
// ran; the third fails with URL_REFUSED as soon as the page left the
// task's host. Nothing of a failed step is cached.
func TestAIActingPageIsData(t *testing.T) {
	t.Parallel()
	base := sampletest.Shop(t)
	for name, tc := range map[string]struct {
		turn llmtest.Turn
		code duet.Code
		want string
	}{
		"tool": {llmtest.ToolCalls(llmtest.Call("navigate", `{"url":"https://evil.example/"}`)), duet.CodeLLMError, "the model tried to call navigate"},
		"key":  {llmtest.Reply(`{"done": false, "reason": "as the page says", "actions": [], "navigate": "https://evil.example/"}`), duet.CodeLLMError, "not in the step's format"},
		"ref":  {llmtest.Reply(`{"done": false, "reason": "x", "actions": [{"do": "goto", "ref": "e1", "value": "https://evil.example/"}]}`), duet.CodeLLMError, `"goto" is not an action`},
		"link": {llmtest.Func(func(req llm.Request) llmtest.Turn {
			ref := refOf(userText(req), "link", "More deals elsewhere", "")
			return llmtest.Reply(`{"done": false, "reason": "the page offers deals", "actions": [{"do": "click", "ref": "` + ref + `"}]}`)
		}), duet.CodeURLRefused, "left the task's host"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv, opts, _ := aiModel(t, tc.turn, llmtest.Reply(`{"done": true, "reason": "done", "actions": []}`))
			c := newCaseOnDB(t, base, "      - open: /lab/store\n      - ai: add the wireless headphones to the cart\n", opts)
			x := c.run("alice")
			r := x.Results[1]
			if r.Status != duet.StatusFailed || r.ErrorCode != tc.code || !strings.Contains(r.ErrorMessage, tc.want) {
				t.Fatalf("got %s, want %s %q", describe(x), tc.code, tc.want)
			}
			if plans, err := c.db.FindCaseAIPlans(t.Context(), "alice", c.id); err != nil || len(plans) != 0 {
				t.Errorf("a failed step cached %d plans (%v)", len(plans), err)
			}
			for _, req := range srv.Requests() {
				if len(req.Tools) != 0 {
					t.Errorf("the step offered tools")
				}
			}
		})
	}
}
