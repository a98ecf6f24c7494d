package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/closedport"
	"github.com/duet-test/duet/internal/engine"
	"github.com/duet-test/duet/internal/redact"
	"github.com/duet-test/duet/internal/sqlite"
)

// registry is a duet.Invoker over the users' registrations in the store:
// a call as a user who has not registered the server fails with
// MCP_SERVER_NOT_CONFIGURED, like the real client. Its tools answer with
// what they were sent, and "whoami" with the executor's credential under an
// innocent key — scrubbed by value, as an invoker returns what it answers
// (duet.Invoker: the real client's canaries are mcpclient's
// TestInvokeScrubsEchoedCredentials and app's TestCredentialCanary).
type registry struct {
	db    *sqlite.DB
	creds map[string]string // user → credential value

	mu    sync.Mutex
	calls []duet.InvokeRequest
}

func (r *registry) Invoke(ctx context.Context, req duet.InvokeRequest) (*duet.ToolResult, error) {
	if _, _, err := r.db.FindMCPServerTool(ctx, req.Executor, req.ServerKey, req.Tool); duet.ErrorCode(err) == duet.CodeNotFound {
		return nil, duet.Errorf(duet.CodeMCPServerNotConfigured, "%s has not configured MCP server %s", req.Executor, req.ServerKey)
	}
	r.mu.Lock()
	r.calls = append(r.calls, req)
	r.mu.Unlock()
	if req.Tool == "broken_tool" {
		content, _ := json.Marshal([]map[string]any{{"type": "text", "text": "the ticket system is down"}})
		return &duet.ToolResult{Content: content, IsError: true}, duet.Errorf(duet.CodeMCPToolError, "the ticket system is down")
	}
	out := map[string]any{"tool": req.Tool, "args": req.Arguments}
	if req.Tool == "whoami" {
		out = map[string]any{"user": req.Executor, "memo": "you called with " + r.creds[req.Executor]}
	}
	creds := redact.NewSet()
	if c := r.creds[req.Executor]; c != "" {
		creds.Add("Bearer " + c)
	}
	sc, _ := json.Marshal(creds.Value(out))
	content, _ := json.Marshal([]map[string]any{{"type": "text", "text": string(sc)}})
	return &duet.ToolResult{Content: content, StructuredContent: sc}, nil
}

func (r *registry) called(executor, tool string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, c := range r.calls {
		if c.Executor == executor && c.Tool == tool {
			n++
		}
	}
	return n
}

// register gives user a registration of key whose archived catalog has the
// tools, read-only or not as readOnly says.
func register(t *testing.T, db *sqlite.DB, user, key string, readOnly map[string]bool) {
	t.Helper()
	s := &duet.MCPServer{Owner: user, Name: "orders", URL: "https://orders.example/mcp", ServerKey: key}
	if err := db.CreateMCPServer(t.Context(), s, nil); err != nil {
		t.Fatal(err)
	}
	cat := &duet.MCPCatalog{Transport: duet.TransportStreamableHTTP, ProtocolVersion: "2025-06-18", Hash: "h", SyncedAt: time.Now()}
	for name, ro := range readOnly {
		ann := json.RawMessage(fmt.Sprintf(`{"readOnlyHint":%v}`, ro))
		cat.Tools = append(cat.Tools, &duet.MCPTool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: ann})
	}
	if err := db.SaveMCPCatalog(t.Context(), s.ID, cat); err != nil {
		t.Fatal(err)
	}
}

func runAs(t *testing.T, db *sqlite.DB, w *engine.Worker, task *duet.Task, user string) (*duet.Run, map[string]*duet.Execution) {
	t.Helper()
	run := startRun(t, db, task, user)
	w.Notify()
	final := waitFinal(t, db, run.ID)
	execs, err := db.FindExecutions(t.Context(), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	byKey := map[string]*duet.Execution{}
	for _, x := range execs {
		byKey[x.CaseKey] = x
	}
	return final, byKey
}

const sharedSuite = `
task: {name: shared-orders, sharedWith: [bob, carol]}
cases:
  - key: cancel
    title: cancel an order
    steps:
      - mcpCall: {serverKey: mcp_orders_0badcafe, tool: query_order, input: {orderId: A1}, saveAs: q}
      - mcpCall: {serverKey: mcp_orders_0badcafe, tool: cancel_order, input: {orderId: A1}, saveAs: c}
      - mcpCall: {serverKey: mcp_orders_0badcafe, tool: unarchived_tool, input: {}, failurePolicy: optional}
      - assert: "true"
`

// TestSharedCaseNeedsApproval: bob runs alice's shared case with his own
// registration. Every call with his credentials — the read-only tool too —
// fails with APPROVAL_REQUIRED and is never made, while the run starts and
// ends normally. Once bob approves the case version (for the places it can
// send data to) the calls run; alice's edit makes a new version that needs
// approval again; alice's own runs need none; carol, who has not
// registered the server, gets MCP_SERVER_NOT_CONFIGURED as before.
func TestSharedCaseNeedsApproval(t *testing.T) {
	t.Parallel()
	db := openStore(t)
	const key = "mcp_orders_0badcafe"
	ro := map[string]bool{"query_order": true, "cancel_order": false}
	register(t, db, "alice", key, ro)
	register(t, db, "bob", key, ro)
	reg := &registry{db: db}
	w, _, _ := worker(t, db, engine.Options{Invoker: reg}, engine.WorkerOptions{})
	res := apply(t, db, "alice", sharedSuite)
	caseID := res.Cases[0].ID

	run, x := runAs(t, db, w, res.Task, "bob")
	c := x["cancel"]
	if run.StartedAt == nil || c.Status != duet.StatusFailed || c.ErrorCode != duet.CodeApprovalRequired {
		t.Fatalf("bob's first run: run %s, case %s %s %q", run.Status, c.Status, c.ErrorCode, c.ErrorMessage)
	}
	msg := c.Results[0].ErrorMessage
	if r := c.Results[0]; r.ErrorCode != duet.CodeApprovalRequired {
		t.Fatalf("the read-only call: got %s %s", r.Status, r.ErrorMessage)
	}
	for _, want := range []string{"alice", "query_order", "cancel_order", "duet case approve " + caseID + " --as bob"} {
		if !strings.Contains(msg, want) {
			t.Errorf("APPROVAL_REQUIRED message %q does not say %q", msg, want)
		}
	}
	if n := len(reg.calls); n != 0 {
		t.Fatalf("%d calls were made as bob without his approval: %+v", n, reg.calls)
	}

	// An approval for other destinations does not hold; one for the
	// destinations the case has does.
	if err := db.ApproveCase(t.Context(), &duet.CaseApproval{User: "bob", CaseID: caseID, Version: 1, DestinationsHash: "elsewhere"}); err != nil {
		t.Fatal(err)
	}
	if _, x := runAs(t, db, w, res.Task, "bob"); x["cancel"].ErrorCode != duet.CodeApprovalRequired || len(reg.calls) != 0 {
		t.Fatalf("an approval of other destinations: got %s, calls %+v", x["cancel"].ErrorCode, reg.calls)
	}
	cs, _ := db.FindCaseByID(t.Context(), "bob", caseID)
	review, err := engine.ReviewCase(t.Context(), db, "bob", res.Task, cs)
	if err != nil || len(review.Calls) != 3 {
		t.Fatalf("bob's review: %+v %v", review, err)
	}
	if err := db.ApproveCase(t.Context(), &duet.CaseApproval{User: "bob", CaseID: caseID, Version: 1, DestinationsHash: review.DestinationsHash}); err != nil {
		t.Fatal(err)
	}
	_, x = runAs(t, db, w, res.Task, "bob")
	if c := x["cancel"]; c.Status != duet.StatusPassed || reg.called("bob", "query_order") != 1 || reg.called("bob", "cancel_order") != 1 || reg.called("bob", "unarchived_tool") != 1 {
		t.Fatalf("bob's approved run: got %s %s %q, calls %v", c.Status, c.ErrorCode, c.ErrorMessage, reg.calls)
	}

	// alice edits the case: version 2 is not approved.
	apply(t, db, "alice", strings.Replace(sharedSuite, "title: cancel an order", "title: cancel an order, edited", 1))
	_, x = runAs(t, db, w, res.Task, "bob")
	if c := x["cancel"]; c.ErrorCode != duet.CodeApprovalRequired || c.CaseVersion != 2 {
		t.Fatalf("bob's run of version 2: got %s v%d", c.ErrorCode, c.CaseVersion)
	}

	_, x = runAs(t, db, w, res.Task, "alice")
	if c := x["cancel"]; c.Status != duet.StatusPassed {
		t.Fatalf("alice's run of her own case: got %s %s %q", c.Status, c.ErrorCode, c.ErrorMessage)
	}

	_, x = runAs(t, db, w, res.Task, "carol")
	if c := x["cancel"]; c.ErrorCode != duet.CodeMCPServerNotConfigured {
		t.Fatalf("carol without a registration: got %s %q", c.ErrorCode, c.ErrorMessage)
	}
}

// secretAPI serves secrets the way real services hand them out: a JSON
// token, a note under an innocent key, a form-encoded text body, a cookie,
// and a value first seen under an innocent key that a later answer calls a
// secret.
func secretAPI(t *testing.T, c canaries) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /login", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Set-Cookie", "sid="+c.cookie+"; Path=/; HttpOnly")
		fmt.Fprintf(w, `{"access_token":%q,"note":"next time send Bearer %s","ref":%q}`, c.access, c.note, c.late)
	})
	mux.HandleFunc("GET /legacy", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprintf(w, "ok=1&token=%s&expires=3600", c.text)
	})
	mux.HandleFunc("GET /session", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"session_secret":%q,"echo":%q}`, c.late, r.Header.Get("Authorization"))
	})
	s := httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

type canaries struct{ access, note, text, cookie, late, cred string }

func (c canaries) all() []string { return []string{c.access, c.note, c.text, c.cookie, c.late, c.cred} }

// TestRedactsByValue: every secret value the run comes to know — the
// executor's credential, values first seen under a sensitive key or header,
// after "Bearer", in a text body — is scrubbed wherever it appears later: in
// set copies, under innocent keys, in text bodies, request URLs, error
// messages, step outputs and variables, even when a value is called a
// secret only after it was first saved.
func TestRedactsByValue(t *testing.T) {
	t.Parallel()
	c := canaries{access: "at-CANARY-41d7e09a", note: "nt-CANARY-0c3f9b2e", text: "tx-CANARY-88a1d4c7",
		cookie: "ck-CANARY-5e2b7f10", late: "lt-CANARY-93cd0a6e", cred: "cr-CANARY-1f0e2d3c"}
	db := openStore(t)
	srv := secretAPI(t, c)
	closed := closedport.URL(t) // where nothing answers (not a fixed port: one may be taken)
	register(t, db, "alice", "mcp_orders_0badcafe", map[string]bool{"whoami": true})
	reg := &registry{db: db, creds: map[string]string{"alice": c.cred}}
	w, _, _ := worker(t, db, engine.Options{Invoker: reg}, engine.WorkerOptions{})
	res := apply(t, db, "alice", `
task: {name: secrets, baseURL: `+srv.URL+`}
cases:
  - key: by-value
    title: secrets travel
    steps:
      - http: {method: POST, url: /login, saveAs: login}
      - set: {copy: "login.body.access_token", said: "login.body.note", cookie: "login.headers['set-cookie']", ref: "login.body.ref"}
      - http: {url: /legacy, saveAs: legacy}
      - set: {legacyCopy: "legacy.body"}
      - http: {url: "/session", headers: {Authorization: "Bearer ${copy}"}, saveAs: session}
      - mcpCall: {serverKey: mcp_orders_0badcafe, tool: whoami, input: {hint: "${said}"}, saveAs: me}
      - http: {url: "`+closed+`/closed?token=${copy}&ref=${ref}"}
`)
	run, x := runAs(t, db, w, res.Task, "alice")
	xe := x["by-value"]
	if last := xe.Results[len(xe.Results)-1]; last.Status != duet.StatusFailed || !strings.Contains(last.ErrorMessage, closed) {
		t.Fatalf("the last step should fail with a message naming its URL: got %s %q (run %s)", last.ErrorCode, last.ErrorMessage, run.Status)
	}
	for i, r := range xe.Results[:len(xe.Results)-1] {
		if r.Status != duet.StatusPassed {
			t.Fatalf("step %d: got %s %s %q", i+1, r.Status, r.ErrorCode, r.ErrorMessage)
		}
	}
	stored, _ := json.Marshal(map[string]any{"run": run, "executions": x})
	for _, secret := range c.all() {
		if strings.Contains(string(stored), secret) {
			t.Errorf("secret %s is stored in clear:\n%s", secret, stored)
		}
	}
	if !strings.Contains(string(stored), `"[redacted]"`) || !strings.Contains(string(stored), "ok=1") {
		t.Fatalf("nothing was kept, the test proves little:\n%s", stored)
	}
}

// TestRescrubsEarlierCases: a value an earlier case kept under an innocent
// name, which a later case of the run then learns is a secret (it comes
// back under a sensitive key), is scrubbed from the earlier case too once
// the run's cases are done — outputs, variables and error messages.
func TestRescrubsEarlierCases(t *testing.T) {
	t.Parallel()
	const secret = "ls-CANARY-6a0d2f9b71"
	db := openStore(t)
	w, _, _ := worker(t, db, engine.Options{}, engine.WorkerOptions{})
	res := apply(t, db, "alice", `
task: {name: late-secret}
cases:
  - key: a-early
    title: sees the value first
    steps:
      - set: {note: "'ls-CANARY-' + '6a0d2f9b71'"}
      - assert: "note == 'nothing'"
  - key: b-late
    title: learns it is a secret
    steps:
      - set: {password: "'ls-CANARY-' + '6a0d2f9b71'"}
`)
	_, x := runAs(t, db, w, res.Task, "alice")
	early := x["a-early"]
	if early == nil || early.Status != duet.StatusFailed || x["b-late"] == nil {
		t.Fatalf("the cases did not run as planned: %+v", x)
	}
	stored, _ := json.Marshal(x)
	if strings.Contains(string(stored), secret) {
		t.Errorf("the secret learned by a later case is kept in clear by an earlier one:\n%s", stored)
	}
	if !strings.Contains(string(stored), `"note"`) {
		t.Fatalf("the early case kept nothing, the test proves little:\n%s", stored)
	}
}
