package app_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/app"
	"github.com/duet-test/duet/internal/browser"
	"github.com/duet-test/duet/internal/compiler"
	"github.com/duet-test/duet/internal/mcpclient"
	"github.com/duet-test/duet/internal/sample"
)

// TestAcceptanceStoryMCPClient is steps 2 to 4 of the acceptance story with
// the real pieces: alice registers the sample order MCP server with a token;
// examples/shop.yaml opens the shop's order page in Chromium, takes orderId
// from the page URL, calls query_order through the MCP client and asserts
// the page shows the status the tool returns — the run passes. bob, with
// whom the task is shared, runs it without having registered the server:
// the run starts and the mcpCall step fails with MCP_SERVER_NOT_CONFIGURED.
func TestAcceptanceStoryMCPClient(t *testing.T) {
	t.Parallel()
	if err := browser.NewPool(browser.Options{}).Available(); err != nil {
		if os.Getenv("DUET_REQUIRE_BROWSER") == "1" {
			t.Fatalf("DUET_REQUIRE_BROWSER=1 but no Chromium: %v", err)
		}
		t.Skipf("skipping: %v", err)
	}
	ctx := t.Context()
	orders := sample.NewOrders()
	shop, stopShop, err := sample.StartShop(context.Background(), "127.0.0.1:0", orders)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stopShop)
	const token = "story-token-3b1f"
	orderURL, stopOrders, err := sample.StartOrderServer(context.Background(), "127.0.0.1:0", orders, token)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stopOrders)
	a := openAppEnv(t, map[string]string{"DUET_MCP_ALLOW_LOOPBACK": "true", "DUET_LOG_LEVEL": "error", "DUET_BROWSERS": "1"})

	if _, err := a.MCPClient.Register(ctx, mcpclient.Registration{Owner: "alice", Name: "order-query", URL: orderURL,
		Headers: map[string]string{"Authorization": "Bearer " + token}}); err != nil {
		t.Fatal(err)
	}
	if s, err := a.MCPClient.Sync(ctx, "alice", "order-query"); err != nil || s.ToolCount != 3 {
		t.Fatalf("sync: %+v, %v", s, err)
	}
	src, err := duet.Examples.ReadFile("examples/shop.yaml")
	if err != nil {
		t.Fatal(err)
	}
	suite, err := compiler.CompileSuite(ctx, src, "examples/shop.yaml", a.CompilerOptions(ctx, "alice"))
	if err != nil {
		t.Fatal(err)
	}
	suite.Task.BaseURL = shop
	res, err := a.Store.ApplySuite(ctx, "alice", suite)
	if err != nil {
		t.Fatal(err)
	}
	var mcpCase *duet.Case
	for _, c := range res.Cases {
		if c.Key == "order-status-matches-service" {
			mcpCase, _ = a.Store.FindCaseByID(ctx, "alice", c.ID)
		}
	}
	if mcpCase == nil {
		t.Fatalf("no order-status case in %+v", res.Cases)
	}

	run := func(user string) (*duet.Run, *duet.Execution) {
		t.Helper()
		r := &duet.Run{TaskID: res.Task.ID, TriggeredBy: user, CallSource: duet.SourceCLI, TraceID: duet.NewTraceID()}
		x := &duet.Execution{CaseID: mcpCase.ID, CaseKey: mcpCase.Key, CaseTitle: mcpCase.Title, CaseVersion: mcpCase.Version, Steps: mcpCase.Steps}
		if _, _, err := a.Store.CreateRun(ctx, duet.StartRunParams{Run: r, Executions: []*duet.Execution{x}}); err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		if ok, err := a.Worker.ExecuteRun(wctx, r.ID); !ok || err != nil {
			t.Fatalf("ExecuteRun: %v, %v", ok, err)
		}
		final, err := a.Store.FindRunByID(ctx, user, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		execs, err := a.Store.FindExecutions(ctx, r.ID)
		if err != nil || len(execs) != 1 {
			t.Fatalf("executions: %v, %v", execs, err)
		}
		return final, execs[0]
	}

	final, x := run("alice")
	if final.Status != duet.StatusPassed {
		for _, r := range x.Results {
			t.Logf("step %d %s: %s %s %s", r.Index, r.Name, r.Status, r.ErrorCode, r.ErrorMessage)
		}
		t.Fatalf("alice's run: got %s, want passed", final.Status)
	}

	final, x = run("bob")
	if final.Status != duet.StatusFailed || final.StartedAt == nil {
		t.Fatalf("bob's run: got %s, want failed after starting", final.Status)
	}
	var mcpStep *duet.StepResult
	for _, r := range x.Results {
		if r.Kind == duet.StepMCPCall {
			mcpStep = r
		}
	}
	if mcpStep == nil || mcpStep.ErrorCode != duet.CodeMCPServerNotConfigured {
		t.Fatalf("bob's mcpCall step: got %+v, want MCP_SERVER_NOT_CONFIGURED", mcpStep)
	}
	if x.Results[0].Status != duet.StatusPassed {
		t.Errorf("bob's first step (open the page) should have run: %+v", x.Results[0])
	}
	a.MCPClient.Flush()
	recs, err := a.Store.FindInvocations(ctx, duet.InvocationFilter{Source: duet.SourceEngine})
	if err != nil || len(recs) != 2 || recs[0].Executor != "bob" || recs[1].Executor != "alice" || recs[1].Outcome != duet.OutcomeOK {
		t.Fatalf("invocation records: got %+v, %v", recs, err)
	}
	if recs[1].TraceID != final.TraceID && recs[0].TraceID != final.TraceID {
		t.Errorf("no record carries bob's run trace id %s", final.TraceID)
	}
	_ = app.Version
}
