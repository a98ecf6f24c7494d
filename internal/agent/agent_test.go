package agent_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/agent"
	"github.com/duet-test/duet/internal/compiler"
	"github.com/duet-test/duet/internal/engine"
	"github.com/duet-test/duet/internal/llm"
	"github.com/duet-test/duet/internal/llm/llmtest"
	"github.com/duet-test/duet/internal/sample"
	"github.com/duet-test/duet/internal/sqlite"
)

// The credentials of alice's registration of the order server: they must
// never reach the model.
const (
	canaryToken  = "canary-token-5b1d0e6f9a"
	canaryHeader = "canary-header-83c2aa17"
)

type fixture struct {
	db       *sqlite.DB
	task     *duet.Task
	reg      *registry
	shopURL  string
	orderKey string
}

// newFixture starts the sample shop and the sample order MCP server over
// one order book, registers the order server for alice (with a bearer token
// and a custom header as credentials), and applies alice's task "shop"
// with one case.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	orders := sample.NewOrders()
	shopURL, stopShop, err := sample.StartShop(context.Background(), "127.0.0.1:0", orders)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stopShop)
	mcpURL, stopMCP, err := sample.StartOrderServer(context.Background(), "127.0.0.1:0", orders, canaryToken)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stopMCP)

	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "duet.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	f := &fixture{db: db, reg: newRegistry(), shopURL: shopURL}
	f.orderKey = f.reg.register(t, "alice", "orders", mcpURL, canaryToken, map[string]string{"X-Canary": canaryHeader})

	suite, err := compiler.CompileSuite(t.Context(), []byte(`
task:
  name: shop
  description: The sample H5 shop and its JSON API.
  baseURL: `+shopURL+`
cases:
  - key: order-api
    title: The order API returns a known order
    steps:
      - http: {url: /api/orders/A1001, saveAs: order}
      - assert: order.status == 200
`), "shop.yaml", compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := db.ApplySuite(t.Context(), "alice", suite)
	if err != nil {
		t.Fatal(err)
	}
	f.task = res.Task
	return f
}

func (f *fixture) deps() agent.Deps {
	return agent.Deps{Cases: f.db, Assets: f.db, Generations: f.db, Invoker: f.reg, Servers: f.reg}
}

func newAgent(t *testing.T, srv *llmtest.Server, deps agent.Deps, opts agent.Options) *agent.Agent {
	t.Helper()
	a, err := agent.New(srv.Config(), deps, opts)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// metered makes a turn report token usage estimated from the request it
// answers (4 bytes of messages and tool declarations per prompt token), so
// the generation records show what the agent's prompts really cost.
func metered(completion string, f func(req llm.Request) llmtest.Turn) llmtest.Turn {
	return llmtest.Func(func(req llm.Request) llmtest.Turn {
		body, _ := json.Marshal(struct {
			M []llm.Message `json:"messages"`
			T []llm.Tool    `json:"tools"`
		}{req.Messages, req.Tools})
		p, c := len(body)/4, len(completion)/4+1
		return f(req).WithUsage(llm.Usage{PromptTokens: p, CompletionTokens: c, TotalTokens: p + c})
	})
}

func lastMessage(req llm.Request) llm.Message { return req.Messages[len(req.Messages)-1] }

// toolResults returns the tool messages after the last assistant message.
func toolResults(req llm.Request) []llm.Message {
	var out []llm.Message
	for i := len(req.Messages) - 1; i >= 0 && req.Messages[i].Role == llm.RoleTool; i-- {
		out = append([]llm.Message{req.Messages[i]}, out...)
	}
	return out
}

func submit(yaml string) llm.ToolCall {
	args, _ := json.Marshal(map[string]string{"yaml": yaml})
	return llmtest.Call(agent.ToolSubmitCase, string(args))
}

const malformedCase = `title: Order A1001 shows the status the order service returns
key: order-a1001-status
steps:
  - http: {url: /api/orders/A1001, saveAs: shop}
  - assert: shop.status == 200
  - mcpCall:
      server: orders
      tool: query_order
      input:
        id: {var: shop.body.id}
      saveAs: order
  - assert: order.structuredContent.order.status == shopStatus
`

const goodCase = `title: Order A1001 shows the status the order service returns
key: order-a1001-status
steps:
  - http: {url: /api/orders/A1001, saveAs: shop}
  - assert: shop.status == 200
  - mcpCall:
      server: orders
      tool: query_order
      input:
        orderId: {var: shop.body.id}
      saveAs: order
  - assert: order.structuredContent.order.status == shop.body.status
`

// TestGenerateStory drives the agent with recorded turns: it reads the
// task and its cases, calls the user's MCP tool (a real MCP server on
// loopback, through the Invoker), survives a 429, submits a case that does
// not compile, repairs it from the compiler's errors, and the saved draft
// compiles and its run passes in the engine. No request to the model holds
// the registration's credentials.
func TestGenerateStory(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := t.Context()
	if _, err := f.db.SaveAsset(ctx, &duet.Asset{Kind: duet.AssetSkill, Name: "order-status", Owner: "alice",
		Description: "compare the shop with the order service", Body: "Read the order through the shop API, then ask the order service for the same order and compare statuses."}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.db.SaveAsset(ctx, &duet.Asset{Kind: duet.AssetRule, Name: "no-sleeps", Owner: "carol",
		Body: "Never wait a fixed time; wait for a condition.", SharedWith: []string{duet.Everyone}}); err != nil {
		t.Fatal(err)
	}

	srv := llmtest.New(t,
		metered("get_task list_cases", func(req llm.Request) llmtest.Turn {
			sys := req.Messages[0].Content
			for _, want := range []string{"# Duet case format", "Rule carol/no-sleeps", "Never wait a fixed time",
				"Skill alice/order-status", "compare statuses", "- orders — registered in a test: tools list_orders, query_order, set_order_status"} {
				if !strings.Contains(sys, want) {
					t.Errorf("system prompt: want it to contain %q", want)
				}
			}
			if user := req.Messages[1].Content; !strings.Contains(user, "Goal of the new case: the order page status matches the order service") ||
				!strings.Contains(user, "- order-api: The order API returns a known order (active)") {
				t.Errorf("user prompt: got %q", user)
			}
			var names []string
			for _, tool := range req.Tools {
				names = append(names, tool.Function.Name)
			}
			// set_order_status changes data: it is described for mcpCall
			// steps, not offered as a function.
			want := "get_task list_cases list_assets get_asset orders__list_orders orders__query_order submit_case"
			if !strings.Contains(sys, "- set_order_status (changes data: NOT callable now") {
				t.Errorf("system prompt: want set_order_status described as an mcpCall target")
			}
			if got := strings.Join(names, " "); got != want {
				t.Errorf("tools: got %s, want %s", got, want)
			}
			return llmtest.ToolCalls(llmtest.Call(agent.ToolGetTask, `{}`), llmtest.Call(agent.ToolListCases, `{}`))
		}),
		metered("query_order A1001", func(req llm.Request) llmtest.Turn {
			res := toolResults(req)
			if len(res) != 2 || !strings.Contains(res[0].Content, f.shopURL) || !strings.Contains(res[1].Content, "http: {url: /api/orders/A1001, saveAs: order}") &&
				!strings.Contains(res[1].Content, "/api/orders/A1001") {
				t.Errorf("platform tool results: got %+v", res)
			}
			return llmtest.ToolCalls(llmtest.Call("orders__query_order", `{"orderId":"A1001"}`))
		}),
		llmtest.RateLimited(""),
		metered(malformedCase, func(req llm.Request) llmtest.Turn {
			res := toolResults(req)
			if len(res) != 1 || !strings.Contains(res[0].Content, `"status":"paid"`) || !strings.Contains(res[0].Content, `"isError":false`) {
				t.Errorf("MCP tool result: got %+v, want the order A1001 (paid)", res)
			}
			return llmtest.ToolCalls(submit(malformedCase))
		}),
		metered(goodCase, func(req llm.Request) llmtest.Turn {
			res := toolResults(req)
			if len(res) != 1 || !strings.Contains(res[0].Content, "does not compile") ||
				!strings.Contains(res[0].Content, `requires argument "orderId"`) || !strings.Contains(res[0].Content, "unknown name shopStatus") {
				t.Errorf("compiler feedback: got %+v", res)
			}
			return llmtest.Reply("Here is the corrected case:\n\n```yaml\n" + goodCase + "```\n")
		}),
	)
	a := newAgent(t, srv, f.deps(), agent.Options{})
	res, err := a.Generate(ctx, agent.Request{User: "alice", Task: f.task, Goal: "the order page status matches the order service", Skills: []string{"order-status"}})
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	srv.AssertNotSent(canaryToken, canaryHeader)
	if srv.Remaining() != 0 {
		t.Errorf("%d scripted turns left", srv.Remaining())
	}

	g := res.Generation
	t.Logf("generation: %s", agent.Summary(g))
	if g.Turns != 4 || g.Attempts != 5 || g.ToolCalls != 4 || g.Repairs != 1 || g.Outcome != duet.OutcomeOK ||
		g.TotalTokens == 0 || g.TotalTokens != g.PromptTokens+g.CompletionTokens || g.Model != llmtest.Model {
		t.Errorf("generation record: got %+v", g)
	}
	stored, err := f.db.FindGenerations(ctx, duet.GenerationFilter{User: "alice"})
	if err != nil || len(stored) != 1 || stored[0].CaseID != res.Case.ID || stored[0].TotalTokens != g.TotalTokens {
		t.Fatalf("stored generation: got %+v, %v", stored, err)
	}
	if want := []string{"skill:alice/order-status@1", "rule:carol/no-sleeps@1"}; strings.Join(g.Assets, ",") != strings.Join(want, ",") {
		t.Errorf("assets used: got %v, want %v", g.Assets, want)
	}

	c, err := f.db.FindCaseByID(ctx, "alice", res.Case.ID)
	if err != nil {
		t.Fatal(err)
	}
	if c.Status != duet.CaseDraft || c.Key != "order-a1001-status" || c.CreatedBy != "alice" || len(c.Steps) != 4 {
		t.Fatalf("saved case: got %+v", c)
	}
	if m := c.Steps[2].MCP; m == nil || m.ServerKey != f.orderKey || m.ToolName != "query_order" {
		t.Fatalf("mcpCall step: got %+v", c.Steps[2])
	}
	// The saved source compiles again to the same steps.
	again, err := compiler.CompileCase(ctx, []byte(c.Source), f.task, compiler.Options{Servers: agent.ServerResolver(mustAssets(t, f.reg, "alice"))})
	if err != nil || again.SourceHash != c.SourceHash {
		t.Fatalf("recompiling the saved source: %v (hash %s, want %s)", err, again.SourceHash, c.SourceHash)
	}

	// Its run passes, calling the tool live as the executor.
	run := runCase(t, f, c, "alice")
	if run.Status != duet.StatusPassed {
		execs, _ := f.db.FindExecutions(ctx, run.ID)
		t.Fatalf("run: got %s (%s: %s), executions %+v", run.Status, run.ErrorCode, run.ErrorMessage, execs)
	}
	var sources []string
	for _, call := range f.reg.Calls() {
		if call.Executor != "alice" || call.ServerKey != f.orderKey || call.Tool != "query_order" {
			t.Errorf("invocation: got %+v", call)
		}
		sources = append(sources, string(call.Source))
	}
	if got := strings.Join(sources, ","); got != "agent,engine" {
		t.Errorf("invocation sources: got %s, want agent,engine", got)
	}
}

func mustAssets(t *testing.T, g *registry, user string) []*duet.MCPServerAsset {
	t.Helper()
	s, err := g.MCPAssets(t.Context(), user)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// runCase runs one case of the fixture's task through the engine, as user.
func runCase(t *testing.T, f *fixture, c *duet.Case, user string) *duet.Run {
	t.Helper()
	run := &duet.Run{TaskID: f.task.ID, TriggeredBy: user, CallSource: duet.SourceCLI, TraceID: duet.NewTraceID()}
	x := &duet.Execution{CaseID: c.ID, CaseKey: c.Key, CaseTitle: c.Title, CaseVersion: c.Version, Steps: c.Steps, TimeoutMs: c.TimeoutMs}
	if _, _, err := f.db.CreateRun(t.Context(), duet.StartRunParams{Run: run, Executions: []*duet.Execution{x}}); err != nil {
		t.Fatal(err)
	}
	claimed, err := f.db.ClaimRunByID(t.Context(), run.ID, "test", time.Minute)
	if err != nil || claimed == nil {
		t.Fatalf("claim: %v", err)
	}
	e := engine.New(f.db, engine.Options{Invoker: f.reg})
	if err := e.Execute(t.Context(), duet.LeaseOf(claimed, "test"), claimed, nil); err != nil {
		t.Fatal(err)
	}
	got, err := f.db.FindRunByID(t.Context(), "", run.ID)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestGenerateLimits checks that every bound ends a generation with
// GENERATION_FAILED and a stored record.
func TestGenerateLimits(t *testing.T) {
	t.Parallel()
	loop := func() llmtest.Turn { return llmtest.ToolCalls(llmtest.Call(agent.ToolGetTask, `{}`)) }
	bad := func() llmtest.Turn { return llmtest.ToolCalls(submit("title: x\nsteps: []\n")) }
	tests := []struct {
		name  string
		opts  agent.Options
		turns []llmtest.Turn
		want  string
	}{
		{"turns", agent.Options{MaxTurns: 3}, []llmtest.Turn{loop(), loop(), loop()}, "no valid case within 3 turns"},
		{"repairs", agent.Options{MaxRepairs: 2}, []llmtest.Turn{bad(), bad(), bad()}, "no valid case after 2 repairs"},
		{"no repairs", agent.Options{MaxRepairs: -1}, []llmtest.Turn{bad()}, "no valid case after 0 repairs"},
		{"tokens", agent.Options{MaxTokens: 1000}, []llmtest.Turn{loop().WithUsage(llm.Usage{PromptTokens: 900, CompletionTokens: 200, TotalTokens: 1100})},
			"the token budget is spent (1100 of 1000)"},
		{"time", agent.Options{Timeout: 200 * time.Millisecond}, []llmtest.Turn{loop().WithDelay(5 * time.Second)}, "time limit of 200ms"},
		// The limit can end the generation before the model's first turn
		// (a loaded machine reading the task): the same code.
		{"time before the first turn", agent.Options{Timeout: time.Nanosecond}, nil, "time limit of 1ns"},
		{"no case in the answer", agent.Options{MaxRepairs: 1}, []llmtest.Turn{llmtest.Reply("I would test the login."), llmtest.Reply("Done.")}, "no valid case after 1 repairs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			srv := llmtest.New(t, tt.turns...)
			a := newAgent(t, srv, f.deps(), tt.opts)
			res, err := a.Generate(t.Context(), agent.Request{User: "alice", Task: f.task})
			if duet.ErrorCode(err) != duet.CodeGenerationFailed || !strings.Contains(duet.ErrorMessage(err), tt.want) {
				t.Fatalf("got %v, want GENERATION_FAILED: %s", err, tt.want)
			}
			if res == nil || res.Case != nil || res.Generation.Outcome != duet.CodeGenerationFailed {
				t.Fatalf("result: got %+v", res)
			}
			stored, _ := f.db.FindGenerations(t.Context(), duet.GenerationFilter{User: "alice"})
			if len(stored) != 1 || stored[0].Outcome != duet.CodeGenerationFailed || stored[0].CaseID != "" {
				t.Fatalf("stored record: got %+v", stored)
			}
			cases, _, _, _ := f.db.FindCases(t.Context(), duet.CaseFilter{TaskID: f.task.ID, IncludeDrafts: true})
			if len(cases) != 1 {
				t.Fatalf("a failed generation saved a case: %d cases", len(cases))
			}
			// Every scripted turn was asked for — except that the time
			// limit may end a generation before its request reached the
			// model, on a machine slow enough.
			if n := srv.Remaining(); n != 0 && !(tt.name == "time" && n == 1) {
				t.Errorf("%d scripted turns left", n)
			}
		})
	}
}

// TestGenerateErrors checks the failures that are not the model's fault.
func TestGenerateErrors(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	if _, err := agent.New(llm.Config{}, f.deps(), agent.Options{}); duet.ErrorCode(err) != duet.CodeLLMNotConfigured ||
		!strings.Contains(duet.ErrorMessage(err), "DUET_LLM_BASE_URL") || !strings.Contains(duet.ErrorMessage(err), "DUET_LLM_MODEL") {
		t.Fatalf("unconfigured: got %v, want LLM_NOT_CONFIGURED naming the variables", err)
	}
	srv := llmtest.New(t, llmtest.Error(401, "bad key"))
	a := newAgent(t, srv, f.deps(), agent.Options{})
	res, err := a.Generate(t.Context(), agent.Request{User: "alice", Task: f.task, Skills: []string{"nope"}})
	if duet.ErrorCode(err) != duet.CodeNotFound || len(srv.Requests()) != 0 {
		t.Fatalf("unknown skill: got %v after %d requests, want NOT_FOUND before any", err, len(srv.Requests()))
	}
	if res == nil || res.Generation.Outcome != duet.CodeNotFound {
		t.Fatalf("unknown skill: result %+v", res)
	}
	_, err = a.Generate(t.Context(), agent.Request{User: "alice", Task: f.task})
	if duet.ErrorCode(err) != duet.CodeLLMError || !strings.Contains(duet.ErrorMessage(err), "401") {
		t.Fatalf("endpoint error: got %v, want LLM_ERROR with the status", err)
	}
	if _, err := a.Generate(t.Context(), agent.Request{User: "alice"}); duet.ErrorCode(err) != duet.CodeInvalidArgument {
		t.Fatalf("no task: got %v", err)
	}
}

// TestGenerateKeyInUse: a key used by an active case goes back to the model
// like a compile error.
func TestGenerateKeyInUse(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	taken := "title: Again\nkey: order-api\nsteps:\n  - http: GET /api/orders/A1002\n"
	srv := llmtest.New(t,
		llmtest.ToolCalls(submit(taken)),
		llmtest.Func(func(req llm.Request) llmtest.Turn {
			if got := lastMessage(req).Content; !strings.Contains(got, `key "order-api" is already used by the active case`) {
				t.Errorf("feedback: got %q", got)
			}
			return llmtest.ToolCalls(submit(strings.Replace(taken, "order-api", "order-api-a1002", 1)))
		}),
	)
	res, err := newAgent(t, srv, f.deps(), agent.Options{}).Generate(t.Context(), agent.Request{User: "alice", Task: f.task})
	if err != nil {
		t.Fatal(err)
	}
	if res.Case.Key != "order-api-a1002" || res.Generation.Repairs != 1 {
		t.Fatalf("got key %q after %d repairs", res.Case.Key, res.Generation.Repairs)
	}
	// A second generation of the same key makes a new version of the draft.
	srv.Add(llmtest.ToolCalls(submit(strings.Replace(taken, "order-api", "order-api-a1002", 1) + "  - assert: 'true'\n")))
	res2, err := newAgent(t, srv, f.deps(), agent.Options{}).Generate(t.Context(), agent.Request{User: "alice", Task: f.task})
	if err != nil {
		t.Fatal(err)
	}
	if res2.Case.ID != res.Case.ID || res2.Case.Version != 2 {
		t.Fatalf("regenerated draft: got id %s v%d, want %s v2", res2.Case.ID, res2.Case.Version, res.Case.ID)
	}
}

// TestGenerateWithoutMCP: without an Invoker no MCP tool is offered, and
// an mcpCall of an unknown server is a compile error.
func TestGenerateWithoutMCP(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	srv := llmtest.New(t,
		llmtest.Func(func(req llm.Request) llmtest.Turn {
			for _, tool := range req.Tools {
				if strings.Contains(tool.Function.Name, "__") {
					t.Errorf("MCP tool %s offered without an invoker", tool.Function.Name)
				}
			}
			return llmtest.ToolCalls(submit(goodCase))
		}),
		llmtest.Func(func(req llm.Request) llmtest.Turn {
			if got := lastMessage(req).Content; !strings.Contains(got, `unknown MCP server "orders"`) {
				t.Errorf("feedback: got %q", got)
			}
			return llmtest.ToolCalls(submit("title: API only\nsteps:\n  - http: GET /api/orders/A1001\n"))
		}),
	)
	deps := agent.Deps{Cases: f.db}
	res, err := newAgent(t, srv, deps, agent.Options{}).Generate(t.Context(), agent.Request{User: "alice", Task: f.task})
	if err != nil {
		t.Fatal(err)
	}
	if res.Case.Key != "api-only" {
		t.Fatalf("got %+v", res.Case)
	}
}

// TestShareeDraftIsAProposal: bob, with whom alice shared her task,
// generates a case in it. His case is saved as a draft of her task marked
// with him as its author; it cannot replace her draft of the same key (the
// model is told to choose another key), and it stays a draft: only alice
// makes it a case of her suite.
func TestShareeDraftIsAProposal(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := t.Context()
	const apiCase = "title: Order A1002 through the API\nkey: order-a1002\nsteps:\n  - http: GET /api/orders/A1002\n"
	mine := llmtest.New(t, llmtest.ToolCalls(submit(apiCase)))
	hers, err := newAgent(t, mine, f.deps(), agent.Options{}).Generate(ctx, agent.Request{User: "alice", Task: f.task})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.db.ShareTask(ctx, "alice", f.task.ID, "bob"); err != nil {
		t.Fatal(err)
	}
	shared, err := f.db.FindTaskByID(ctx, "bob", f.task.ID)
	if err != nil {
		t.Fatal(err)
	}
	bobs := strings.Replace(apiCase, "A1002 through", "A1002 (bob) through", 1)
	srv := llmtest.New(t,
		llmtest.Func(func(req llm.Request) llmtest.Turn {
			if user := req.Messages[1].Content; !strings.Contains(user, "- order-a1002: Order A1002 through the API (draft by alice)") {
				t.Errorf("user prompt: want alice's draft with its author; got %s", user)
			}
			return llmtest.ToolCalls(submit(bobs))
		}),
		llmtest.Func(func(req llm.Request) llmtest.Turn {
			if got := lastMessage(req).Content; !strings.Contains(got, `key "order-a1002" is already used by a draft of alice`) {
				t.Errorf("feedback: got %q", got)
			}
			return llmtest.ToolCalls(submit(strings.Replace(bobs, "key: order-a1002", "key: order-a1002-bob", 1)))
		}),
	)
	res, err := newAgent(t, srv, f.deps(), agent.Options{}).Generate(ctx, agent.Request{User: "bob", Task: shared})
	if err != nil {
		t.Fatalf("bob's generation: %v", err)
	}
	if c := res.Case; c.TaskID != f.task.ID || c.Status != duet.CaseDraft || c.CreatedBy != "bob" || c.Key != "order-a1002-bob" {
		t.Fatalf("bob's case: got %+v, want a draft of alice's task by bob", c)
	}
	if c, err := f.db.FindCaseByID(ctx, "alice", hers.Case.ID); err != nil || c.Version != 1 || c.CreatedBy != "alice" || c.Source != hers.Case.Source {
		t.Fatalf("alice's draft after bob's generation: got %+v %v, want it unchanged", c, err)
	}
	// The store refuses it too, whoever calls it.
	again := *res.Case
	again.Key, again.CreatedBy = hers.Case.Key, "bob"
	if err := f.db.SaveDraftCase(ctx, &again); duet.ErrorCode(err) != duet.CodeConflict {
		t.Fatalf("bob's draft over alice's: got %v, want CONFLICT", err)
	}
	// Bob's suite of the same name is his own task: only alice applies hers.
	if _, err := f.db.ApplySuite(ctx, "bob", &duet.Suite{Task: duet.Task{Name: "shop"}, Cases: []*duet.Case{{Key: "order-a1002-bob", Title: "promoted?", Source: "s", SourceHash: "h"}}}); err != nil {
		t.Fatal(err)
	}
	if c, err := f.db.FindCaseByID(ctx, "alice", res.Case.ID); err != nil || c.Status != duet.CaseDraft || c.CreatedBy != "bob" {
		t.Fatalf("bob's draft after bob applied a suite: got %+v %v, want still a draft by bob", c, err)
	}
}
