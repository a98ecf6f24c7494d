package app_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/app"
	"github.com/duet-test/duet/internal/catalog"
	"github.com/duet-test/duet/internal/compiler"
	"github.com/duet-test/duet/internal/mcpclient"
	"github.com/duet-test/duet/internal/sample"
)

// collector is an HTTP server that records every request body it gets: a
// place outside the executor's control that a case posts to.
type collector struct {
	*httptest.Server
	mu     sync.Mutex
	bodies []string
}

func newCollector(t *testing.T) *collector {
	c := &collector{}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		c.mu.Lock()
		c.bodies = append(c.bodies, string(b))
		c.mu.Unlock()
		w.Write([]byte("ok"))
	}))
	t.Cleanup(c.Close)
	return c
}

func (c *collector) got() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.bodies...)
}

func (c *collector) host() string {
	u, _ := url.Parse(c.URL)
	return u.Host
}

const leakSuite = `
task: {name: order-digest, baseURL: BASE, sharedWith: [bob]}
cases:
  - key: digest
    title: post the order digest
    steps:
      - mcpCall: {server: orders, tool: list_orders, input: {limit: 5}, saveAs: orders}
      - http: {method: POST, url: "COLLECT/collect", json: {digest: "${orders.text}"}}
`

// TestSharedReadOnlyResultNeedsApproval is the review's reproduction: alice
// shares a task whose case calls list_orders — read-only — on bob's
// registration of a real MCP server and posts the result with an http step
// to a collector of hers. bob's run sends nothing there: the call fails
// APPROVAL_REQUIRED before it uses his credentials, naming every place the
// case can send data to. After bob approves that version for those places
// it runs (the collector gets his orders, as he agreed). When alice changes
// the task's base URL (the case's version stays), bob's approval no longer
// holds: his run fails APPROVAL_REQUIRED again, and start_test_run asks him
// again with the new host. An empty accept approves nothing. alice's own
// runs need no approval.
func TestSharedReadOnlyResultNeedsApproval(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	const token = "share-token-7c2e"
	orderURL, stopOrders, err := sample.StartOrderServer(context.Background(), "127.0.0.1:0", sample.NewOrders(), token)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stopOrders)
	collect, shop, shop2 := newCollector(t), newCollector(t), newCollector(t)
	a := openAppEnv(t, map[string]string{"DUET_MCP_ALLOW_LOOPBACK": "true", "DUET_LOG_LEVEL": "error"})
	for _, user := range []string{"alice", "bob"} {
		if _, err := a.MCPClient.Register(ctx, mcpclient.Registration{Owner: user, Name: "orders", URL: orderURL,
			Headers: map[string]string{"Authorization": "Bearer " + token}}); err != nil {
			t.Fatal(err)
		}
		if _, err := a.MCPClient.Sync(ctx, user, "orders"); err != nil {
			t.Fatal(err)
		}
	}
	apply := func(base string) *duet.ApplyResult {
		t.Helper()
		src := strings.NewReplacer("BASE", base, "COLLECT", collect.URL).Replace(leakSuite)
		s, err := compiler.CompileSuite(ctx, []byte(src), "digest.yaml", a.CompilerOptions(ctx, "alice"))
		if err != nil {
			t.Fatal(err)
		}
		res, err := a.Store.ApplySuite(ctx, "alice", s)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	res := apply(shop.URL)
	task, caseID := res.Task, res.Cases[0].ID

	run := func(user string) *duet.Execution {
		t.Helper()
		out, err := a.Catalog.StartRun(ctx, duet.Caller{UserID: user, Source: duet.SourceCLI}, catalog.StartRunIn{TaskID: task.ID, IdempotencyKey: duet.NewID("k")})
		if err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		if ok, err := a.Worker.ExecuteRun(wctx, out.RunID); !ok || err != nil {
			t.Fatalf("ExecuteRun: %v, %v", ok, err)
		}
		execs, err := a.Store.FindExecutions(ctx, out.RunID)
		if err != nil || len(execs) != 1 {
			t.Fatalf("executions: %v, %v", execs, err)
		}
		return execs[0]
	}

	// bob's first run: nothing reaches the collector.
	x := run("bob")
	if r := x.Results[0]; r.ErrorCode != duet.CodeApprovalRequired || x.Status != duet.StatusFailed {
		t.Fatalf("bob's read-only call without his approval: got %s %q (case %s)", r.ErrorCode, r.ErrorMessage, x.Status)
	}
	if got := collect.got(); len(got) != 0 {
		t.Fatalf("the collector received bob's data without his approval: %q", got)
	}
	if r := x.Results[1]; r.Status != duet.StatusSkipped {
		t.Fatalf("the http step after the refused call: got %s", r.Status)
	}
	msg := x.Results[0].ErrorMessage
	for _, want := range []string{"alice", "list_orders", collect.host(), shop.host(), "duet case approve " + caseID + " --as bob"} {
		if !strings.Contains(msg, want) {
			t.Errorf("APPROVAL_REQUIRED message %q does not name %q", msg, want)
		}
	}

	// bob reviews what the version can reach, and approves it.
	cs, err := a.Store.FindCaseByID(ctx, "bob", caseID)
	if err != nil {
		t.Fatal(err)
	}
	review, err := a.Catalog.ReviewCase(ctx, "bob", task, cs)
	if err != nil {
		t.Fatal(err)
	}
	d := review.Destinations
	if !review.Needed() || d.BaseHost != shop.host() || len(d.Hosts) != 2 || d.AnyHost || len(d.Tools) != 1 || d.Tools[0].Tool != "list_orders" {
		t.Fatalf("bob's review: %+v", review)
	}
	if err := a.Store.ApproveCase(ctx, &duet.CaseApproval{User: "bob", CaseID: caseID, Version: cs.Version, DestinationsHash: review.DestinationsHash}); err != nil {
		t.Fatal(err)
	}
	if x := run("bob"); x.Status != duet.StatusPassed {
		t.Fatalf("bob's approved run: got %s %s %q", x.Status, x.ErrorCode, x.ErrorMessage)
	}
	if got := collect.got(); len(got) != 1 || !strings.Contains(got[0], "A1001") {
		t.Fatalf("the collector after bob approved: %q", got)
	}

	// alice moves the task to another host; the case's version stays.
	moved := apply(shop2.URL)
	if moved.Cases[0].Version != cs.Version {
		t.Fatalf("changing the base URL made a new case version (%d → %d): the test would not show the binding", cs.Version, moved.Cases[0].Version)
	}
	task = moved.Task
	x = run("bob")
	if r := x.Results[0]; r.ErrorCode != duet.CodeApprovalRequired || !strings.Contains(r.ErrorMessage, "changed") || !strings.Contains(r.ErrorMessage, shop2.host()) {
		t.Fatalf("bob's run after the base URL changed: got %s %q", r.ErrorCode, r.ErrorMessage)
	}
	if got := collect.got(); len(got) != 1 {
		t.Fatalf("the collector got more after the destinations changed: %d bodies", len(got))
	}

	// Over MCP, start_test_run asks bob again, showing the new host; an
	// empty accept approves nothing and starts nothing; approve: true does.
	elicit := func(m string) bool { return m == catalog.AskElicit }
	args, _ := json.Marshal(map[string]any{"taskId": task.ID, "idempotencyKey": "mcp-1"})
	call := func(in *catalog.Input) (*catalog.Result, error) {
		return a.Catalog.Call(ctx, catalog.Request{Caller: duet.Caller{UserID: "bob", Source: duet.SourceMCP}, Tool: catalog.ToolStartRun, Args: args, Input: in})
	}
	q, err := call(&catalog.Input{Can: elicit})
	if err != nil {
		t.Fatal(err)
	}
	ir, ok := q.InputRequests["approve_shared_cases"]
	if !ok {
		t.Fatalf("start_test_run did not ask bob again: %s", q.Text)
	}
	question := ir.Params.(map[string]any)["message"].(string)
	for _, want := range []string{"list_orders", shop2.host(), collect.host()} {
		if !strings.Contains(question, want) {
			t.Errorf("the question %q does not show %q", question, want)
		}
	}
	if strings.Contains(question, shop.host()) {
		t.Errorf("the question shows the old host %s: %q", shop.host(), question)
	}
	answer := func(content map[string]any) map[string]json.RawMessage {
		b, _ := json.Marshal(map[string]any{"action": "accept", "content": content})
		return map[string]json.RawMessage{"approve_shared_cases": b}
	}
	empty, err := call(&catalog.Input{Can: elicit, State: q.RequestState, Responses: answer(map[string]any{})})
	if err != nil || empty.Code != duet.CodeApprovalRequired {
		t.Fatalf("an empty accept: got %v %+v", err, empty)
	}
	if ap, err := a.Store.FindCaseApproval(ctx, "bob", caseID, cs.Version); err != nil || ap.DestinationsHash != review.DestinationsHash {
		t.Fatalf("an empty accept changed bob's approval: %+v", ap)
	}
	yes, err := call(&catalog.Input{Can: elicit, State: q.RequestState, Responses: answer(map[string]any{"approve": true})})
	if err != nil || yes.IsError {
		t.Fatalf("bob approves over MCP: %v %+v", err, yes)
	}
	ap, err := a.Store.FindCaseApproval(ctx, "bob", caseID, cs.Version)
	if err != nil || ap.DestinationsHash == review.DestinationsHash {
		t.Fatalf("bob's approval after he approved the new destinations: %+v %v", ap, err)
	}

	// alice's own case needs nothing of her.
	if x := run("alice"); x.Status != duet.StatusPassed {
		t.Fatalf("alice's run of her own case: got %s %s %q", x.Status, x.ErrorCode, x.ErrorMessage)
	}
	_ = app.Version
}
