package catalog_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/catalog"
)

type echoOut struct {
	State  string `json:"state"`
	Answer string `json:"answer"`
}

func (o echoOut) Text() string { return o.State + " " + o.Answer }

// askTool asks once, with state "round-1", then echoes the state and answer.
func askTool() *catalog.Tool {
	return catalog.Define("ask", "", "asks once", catalog.Annotations{ReadOnly: true}, nil,
		func(ctx context.Context, env *catalog.Env, in struct {
			N int `json:"n,omitempty"`
		}) (echoOut, error) {
			if env.State() == nil {
				return echoOut{}, env.Ask(map[string]catalog.InputRequest{"q": {Method: catalog.AskElicit, Params: map[string]any{"message": "?"}}}, []byte("round-1"))
			}
			var e catalog.Elicitation
			env.Answer("q", &e)
			a, _ := e.Content["a"].(string)
			return echoOut{State: string(env.State()), Answer: a}, nil
		}).WithInput()
}

func canAll(string) bool { return true }

func ask(t *testing.T, c *catalog.Catalog, user string, args string, in *catalog.Input) (*catalog.Result, error) {
	t.Helper()
	return c.Call(t.Context(), catalog.Request{Caller: duet.Caller{UserID: user, Source: duet.SourceMCP}, Tool: "ask", Args: json.RawMessage(args), Input: in})
}

// TestRequestStateIsSealed: the state of a multi-round call comes back to
// the tool only as it was issued — to the same caller, for the same tool and
// arguments, before it expires; anything else is ErrBadState, a protocol
// error, and the tool does not run.
func TestRequestStateIsSealed(t *testing.T) {
	t.Parallel()
	now := time.Now()
	clock := func() time.Time { return now }
	c, _, _, _ := setup(t, catalog.Options{Extra: []*catalog.Tool{askTool()}, Now: clock})
	first, err := ask(t, c, "alice", `{"n":1}`, &catalog.Input{Can: canAll})
	if err != nil || len(first.InputRequests) != 1 || first.RequestState == "" || first.Text != "" {
		t.Fatalf("round 1: got %+v, %v; want an input-required result", first, err)
	}
	if strings.Contains(first.RequestState, "round-1") {
		t.Errorf("the state is readable as sent: %s", first.RequestState)
	}
	answer := map[string]json.RawMessage{"q": json.RawMessage(`{"action":"accept","content":{"a":"yes"}}`)}
	ok, err := ask(t, c, "alice", `{ "n" : 1 }`, &catalog.Input{Can: canAll, Responses: answer, State: first.RequestState})
	if err != nil || ok.IsError || !strings.Contains(string(ok.Structured), `"state":"round-1","answer":"yes"`) {
		t.Fatalf("round 2: got %+v, %v", ok, err)
	}
	// Tampering: flip one character of the payload and of the MAC.
	payload, mac, _ := strings.Cut(first.RequestState, ".")
	flip := func(s string) string {
		b := []byte(s)
		if b[3] == 'A' {
			b[3] = 'B'
		} else {
			b[3] = 'A'
		}
		return string(b)
	}
	bad := []struct {
		name, user, args, state string
		later                   time.Duration
	}{
		{"payload altered", "alice", `{"n":1}`, flip(payload) + "." + mac, 0},
		{"mac altered", "alice", `{"n":1}`, payload + "." + flip(mac), 0},
		{"suffix appended", "alice", `{"n":1}`, first.RequestState + "-TAMPERED", 0},
		{"another caller", "bob", `{"n":1}`, first.RequestState, 0},
		{"other arguments", "alice", `{"n":2}`, first.RequestState, 0},
		{"expired", "alice", `{"n":1}`, first.RequestState, 11 * time.Minute},
		{"not a state", "alice", `{"n":1}`, "round-1", 0},
	}
	for _, b := range bad {
		now = time.Now().Add(b.later)
		res, err := ask(t, c, b.user, b.args, &catalog.Input{Can: canAll, Responses: answer, State: b.state})
		if !errors.Is(err, catalog.ErrBadState) || duet.ErrorCode(err) != duet.CodeInvalidArgument || res != nil {
			t.Errorf("%s: got %+v, %v; want ErrBadState", b.name, res, err)
		}
	}
	// A client that cannot be asked: the tool's Ask is UNAVAILABLE.
	now = time.Now()
	res, err := c.Call(t.Context(), catalog.Request{Caller: duet.Caller{UserID: "alice", Source: duet.SourceMCP}, Tool: "ask", Args: json.RawMessage(`{}`)})
	if err != nil || !res.IsError || res.Code != duet.CodeUnavailable {
		t.Errorf("without Input: got %+v, %v; want UNAVAILABLE", res, err)
	}
}

// TestStartRunAsksForApproval: bob starts alice's shared task whose cases
// call a tool with bob's credentials. A client that can answer an
// elicitation is asked first — the question shows the calls and every place
// the cases can send data to — and nothing starts until bob answers;
// approving records bob's approval of each case version for those places
// (audited) and starts the run; declining, or an accept without approve:
// true, starts nothing. When the places change (the task's base URL), bob
// is asked again, and an answer to the old question approves nothing. A
// client that cannot be asked gets the run as before (its steps will fail
// with APPROVAL_REQUIRED), and alice, the author, is never asked.
func TestStartRunAsksForApproval(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	base := "shop.example"
	review := func(ctx context.Context, executor string, task *duet.Task, c *duet.Case) (*catalog.CaseReview, error) {
		if c.CreatedBy == executor {
			return &catalog.CaseReview{}, nil
		}
		mu.Lock()
		d := duet.Destinations{BaseHost: base, Hosts: []string{base, "collector.example"}, Tools: []duet.ToolDestination{{ServerKey: "sk_orders", Tool: "set_order_status"}}}
		mu.Unlock()
		return &catalog.CaseReview{Calls: []duet.PendingCall{{Step: 1, Name: "cancel the order", ServerKey: "sk_orders", Tool: "set_order_status"}},
			Destinations: d, DestinationsHash: d.Hash()}, nil
	}
	c, db, task, log := setup(t, catalog.Options{Review: review})
	start := func(user, key string, in *catalog.Input) *catalog.Result {
		t.Helper()
		args, _ := json.Marshal(map[string]any{"taskId": task.ID, "idempotencyKey": key})
		res, err := c.Call(t.Context(), catalog.Request{Caller: duet.Caller{UserID: user, Source: duet.SourceMCP}, Tool: catalog.ToolStartRun, Args: args, Input: in})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	runs := func(user string) int {
		rs, _, err := db.FindRuns(t.Context(), duet.RunFilter{Viewer: user, TaskID: task.ID, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, r := range rs {
			if r.TriggeredBy == user {
				n++
			}
		}
		return n
	}
	elicit := func(m string) bool { return m == catalog.AskElicit }

	q := start("bob", "k1", &catalog.Input{Can: elicit})
	ir, ok := q.InputRequests["approve_shared_cases"]
	if !ok || ir.Method != catalog.AskElicit || q.RequestState == "" {
		t.Fatalf("bob was not asked: %+v", q)
	}
	msg := ir.Params.(map[string]any)["message"].(string)
	for _, want := range []string{"first", "second", "by alice", "set_order_status", "sk_orders", "host shop.example", "host collector.example"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the question does not say %q:\n%s", want, msg)
		}
	}
	if runs("bob") != 0 {
		t.Fatal("a run started before bob answered")
	}

	answer := func(action string, approve bool) map[string]json.RawMessage {
		b, _ := json.Marshal(map[string]any{"action": action, "content": map[string]any{"approve": approve}})
		return map[string]json.RawMessage{"approve_shared_cases": b}
	}
	no := start("bob", "k1", &catalog.Input{Can: elicit, Responses: answer("decline", false), State: q.RequestState})
	if !no.IsError || no.Code != duet.CodeApprovalRequired || runs("bob") != 0 {
		t.Fatalf("declined: got %s %s, %d runs; want APPROVAL_REQUIRED and no run", no.Code, no.Text, runs("bob"))
	}
	// An accept that does not say approve: true is no approval: an
	// auto-accepting client approves nothing.
	for _, content := range []string{`{}`, `{"approve":"true"}`, `{"approve":1}`} {
		raw := map[string]json.RawMessage{"approve_shared_cases": json.RawMessage(`{"action":"accept","content":` + content + `}`)}
		empty := start("bob", "k1", &catalog.Input{Can: elicit, Responses: raw, State: q.RequestState})
		if !empty.IsError || empty.Code != duet.CodeApprovalRequired || runs("bob") != 0 {
			t.Fatalf("accept with content %s: got %s %s, %d runs; want APPROVAL_REQUIRED and no run", content, empty.Code, empty.Text, runs("bob"))
		}
	}
	if list, _ := db.FindCaseApprovals(t.Context(), "bob", task.ID); len(list) != 0 {
		t.Fatalf("approvals recorded without a yes: %+v", list)
	}
	// The places change while bob is being asked: his yes to the old
	// question approves nothing, and he is asked again.
	mu.Lock()
	base = "shop2.example"
	mu.Unlock()
	stale := start("bob", "k1", &catalog.Input{Can: elicit, Responses: answer("accept", true), State: q.RequestState})
	ir, ok = stale.InputRequests["approve_shared_cases"]
	if !ok || runs("bob") != 0 || !strings.Contains(ir.Params.(map[string]any)["message"].(string), "host shop2.example") {
		t.Fatalf("a yes to the question about other destinations: got %+v, %d runs; want a new question", stale, runs("bob"))
	}
	q = stale

	yes := start("bob", "k1", &catalog.Input{Can: elicit, Responses: answer("accept", true), State: q.RequestState})
	if yes.IsError || len(yes.InputRequests) > 0 || runs("bob") != 1 {
		t.Fatalf("approved: got %+v, %d runs; want the run started", yes, runs("bob"))
	}
	cases, _, _, _ := db.FindCases(t.Context(), duet.CaseFilter{TaskID: task.ID, Limit: 10})
	now, _ := review(t.Context(), "bob", task, &duet.Case{CreatedBy: "alice"})
	for _, cs := range cases {
		if ap, err := db.FindCaseApproval(t.Context(), "bob", cs.ID, cs.Version); err != nil || !ap.Holds(now.DestinationsHash) {
			t.Errorf("bob's approval of %s v%d for the destinations shown was not recorded: %+v %v", cs.ID, cs.Version, ap, err)
		}
	}
	approvals := 0
	for _, r := range log.all() {
		if r.Method == "case.approve" && r.Caller == "bob" && r.Outcome == duet.OutcomeOK && r.CallSource == duet.SourceMCP {
			approvals++
		}
	}
	if approvals != len(cases) {
		t.Errorf("%d case.approve audit records, want %d", approvals, len(cases))
	}
	// Approved versions are not asked about again.
	if again := start("bob", "k2", &catalog.Input{Can: elicit}); len(again.InputRequests) > 0 || again.IsError {
		t.Errorf("asked again for approved versions: %+v", again)
	}
	// Other destinations: asked again.
	mu.Lock()
	base = "shop3.example"
	mu.Unlock()
	if again := start("bob", "k4", &catalog.Input{Can: elicit}); len(again.InputRequests) != 1 {
		t.Errorf("not asked again after the destinations changed: %+v", again)
	}

	// carol (shared with nobody) is not concerned; a client that cannot be
	// asked: the run starts at once, as before.
	c2, db2, task2, _ := setup(t, catalog.Options{Review: review})
	args, _ := json.Marshal(map[string]any{"taskId": task2.ID, "idempotencyKey": "k"})
	res, err := c2.Call(t.Context(), catalog.Request{Caller: duet.Caller{UserID: "bob", Source: duet.SourceMCP}, Tool: catalog.ToolStartRun, Args: args,
		Input: &catalog.Input{}})
	if err != nil || res.IsError || len(res.InputRequests) > 0 {
		t.Fatalf("a client that cannot be asked: got %+v, %v; want the run", res, err)
	}
	if _, err := db2.FindCaseApprovals(t.Context(), "bob", task2.ID); err != nil {
		t.Fatal(err)
	}
	// The author is never asked.
	if own := start("alice", "k3", &catalog.Input{Can: elicit}); own.IsError || len(own.InputRequests) > 0 {
		t.Errorf("alice was asked about her own cases: %+v", own)
	}
}

// TestRequestStateAcrossInstances: instances given the same key (Duet
// derives it from the master key) open each other's request states, so the
// second round of a call may reach any of them; an instance with another
// key refuses it.
func TestRequestStateAcrossInstances(t *testing.T) {
	t.Parallel()
	shared := func() ([]byte, error) { return []byte("0123456789abcdef0123456789abcdef"), nil }
	other := func() ([]byte, error) { return []byte("fedcba9876543210fedcba9876543210"), nil }
	one, _, _, _ := setup(t, catalog.Options{Extra: []*catalog.Tool{askTool()}, StateKey: shared})
	two, _, _, _ := setup(t, catalog.Options{Extra: []*catalog.Tool{askTool()}, StateKey: shared})
	three, _, _, _ := setup(t, catalog.Options{Extra: []*catalog.Tool{askTool()}, StateKey: other})
	first, err := ask(t, one, "alice", `{}`, &catalog.Input{Can: canAll})
	if err != nil || first.RequestState == "" {
		t.Fatal(first, err)
	}
	answer := map[string]json.RawMessage{"q": json.RawMessage(`{"action":"accept","content":{"a":"yes"}}`)}
	if res, err := ask(t, two, "alice", `{}`, &catalog.Input{Can: canAll, Responses: answer, State: first.RequestState}); err != nil || res.IsError {
		t.Errorf("another instance with the same key: %+v, %v", res, err)
	}
	if _, err := ask(t, three, "alice", `{}`, &catalog.Input{Can: canAll, Responses: answer, State: first.RequestState}); !errors.Is(err, catalog.ErrBadState) {
		t.Errorf("an instance with another key: %v, want ErrBadState", err)
	}
}

// TestOnlyADeclaredToolIsAsked: the client's Input reaches only a tool that
// declared it may ask (WithInput). Another tool sees CanAsk false and gets
// UNAVAILABLE from Ask whatever the transport offers — so a transport that
// answers its calls without a way to ask (the fast paths) answers them as
// every other one does — and it is not told the client's answers either.
func TestOnlyADeclaredToolIsAsked(t *testing.T) {
	t.Parallel()
	probe := func(name string) *catalog.Tool {
		return catalog.Define(name, "", "says whether it may ask, then asks", catalog.Annotations{ReadOnly: true}, nil,
			func(ctx context.Context, env *catalog.Env, _ struct{}) (echoOut, error) {
				if env.Answered() {
					return echoOut{Answer: "answered"}, nil
				}
				if !env.CanAsk(catalog.AskElicit) {
					return echoOut{Answer: "cannot ask"}, nil
				}
				return echoOut{}, env.Ask(map[string]catalog.InputRequest{"q": {Method: catalog.AskElicit, Params: map[string]any{"message": "?"}}}, nil)
			})
	}
	asker := func(name string) *catalog.Tool {
		return catalog.Define(name, "", "asks without looking", catalog.Annotations{ReadOnly: true}, nil,
			func(ctx context.Context, env *catalog.Env, _ struct{}) (echoOut, error) {
				return echoOut{}, env.Ask(map[string]catalog.InputRequest{"q": {Method: catalog.AskElicit, Params: map[string]any{"message": "?"}}}, nil)
			})
	}
	declared, undeclared := probe("declared").WithInput(), probe("undeclared")
	c, _, _, _ := setup(t, catalog.Options{Extra: []*catalog.Tool{declared, undeclared, asker("blind_asker")}})
	if !declared.Asks() || undeclared.Asks() {
		t.Fatalf("Asks: declared %v, undeclared %v", declared.Asks(), undeclared.Asks())
	}
	call := func(tool string, in *catalog.Input) *catalog.Result {
		t.Helper()
		res, err := c.Call(t.Context(), catalog.Request{Caller: duet.Caller{UserID: "alice", Source: duet.SourceMCP}, Tool: tool, Args: json.RawMessage(`{}`), Input: in})
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		return res
	}
	answered := map[string]json.RawMessage{"q": json.RawMessage(`{"action":"accept"}`)}
	if res := call("declared", &catalog.Input{Can: canAll}); len(res.InputRequests) != 1 {
		t.Errorf("declared: %+v, want an input-required result", res)
	}
	if res := call("declared", &catalog.Input{Can: canAll, Responses: answered}); !strings.Contains(res.Text, "answered") {
		t.Errorf("declared, with answers: %+v", res)
	}
	if res := call("undeclared", &catalog.Input{Can: canAll}); len(res.InputRequests) != 0 || !strings.Contains(res.Text, "cannot ask") {
		t.Errorf("undeclared: %+v, want the fallback of a client that cannot be asked", res)
	}
	if res := call("undeclared", &catalog.Input{Can: canAll, Responses: answered}); !strings.Contains(res.Text, "cannot ask") {
		t.Errorf("undeclared, with answers: %+v, want the answers not passed on", res)
	}
	if res := call("blind_asker", &catalog.Input{Can: canAll}); !res.IsError || res.Code != duet.CodeUnavailable {
		t.Errorf("blind_asker: %+v, want UNAVAILABLE", res)
	}
}
