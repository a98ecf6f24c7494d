package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/app"
	"github.com/duet-test/duet/internal/catalog"
	"github.com/duet-test/duet/internal/cli"
	"github.com/duet-test/duet/internal/closedport"
	"github.com/duet-test/duet/internal/config"
	"github.com/duet-test/duet/internal/sample"
)

// The canaries: the order server's real token, and a wrong one carol
// registers. Neither may appear anywhere but in the requests to the server.
// The by-value canaries are secrets a web API hands a run: one under a
// sensitive key then copied under an innocent name, one that arrives only
// under an innocent key ("note": "Bearer …"), one only in a text body
// ("token=…") and one in a cookie. None may appear anywhere either.
const (
	canary      = "canary-7f3a9c1e-REAL-secret-x1"
	canaryWrong = "canary-b84d02aa-WRONG-secret-x2"

	canaryAccess = "canary-0d5e11aa-ACCESS-x3"
	canaryNote   = "canary-6c2f90b4-NOTE-x4"
	canaryText   = "canary-9a7e3d21-TEXT-x5"
	canaryCookie = "canary-41b8c6f0-COOKIE-x6"
)

// secretsAPI hands out the by-value canaries.
func secretsAPI(t *testing.T) string {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /login", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Set-Cookie", "sid="+canaryCookie+"; Path=/; HttpOnly")
		fmt.Fprintf(w, `{"access_token":%q,"note":"next time send Bearer %s","user":"alice"}`, canaryAccess, canaryNote)
	})
	mux.HandleFunc("GET /legacy-token", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprintf(w, "ok=1&token=%s&expires=3600", canaryText)
	})
	mux.HandleFunc("GET /whoami", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"you":"alice","sent":%q}`, r.Header.Get("Authorization"))
	})
	s := httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s.URL
}

// byValueSuite sends the by-value canaries around: set copies under innocent
// names, a header built from them, a failing request whose URL carries one.
const byValueSuite = `task:
  name: web-secrets
  baseURL: BASE
cases:
  - key: secrets-travel
    title: secrets travel through variables, headers and errors
    steps:
      - http: {method: POST, url: /login, saveAs: login}
      - set: {copy: "login.body.access_token", said: "login.body.note", jar: "login.headers['set-cookie']"}
      - http: {url: /legacy-token, saveAs: legacy}
      - set: {legacyCopy: "legacy.body"}
      - http: {url: /whoami, headers: {Authorization: "Bearer ${copy}"}, saveAs: me}
      - assert: {expr: "me.body.sent == 'Bearer ' + copy && said != ''", message: the token round-trips}
      - http: {url: "CLOSED/closed?token=${copy}"}
`

// transcript collects everything the commands printed.
type transcript struct {
	mu  sync.Mutex
	all bytes.Buffer
}

func (tr *transcript) add(s string) {
	tr.mu.Lock()
	tr.all.WriteString(s)
	tr.mu.Unlock()
}

type duetEnv struct {
	vars map[string]string
	tr   *transcript
}

func (e *duetEnv) run(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = cli.Main(t.Context(), args, cli.Env{
		Getenv: func(k string) string { return e.vars[k] },
		Stdin:  io.NopCloser(strings.NewReader("")),
		Stdout: &out, Stderr: &errb,
	})
	e.tr.add(out.String() + errb.String())
	return out.String(), errb.String(), code
}

func (e *duetEnv) must(t *testing.T, args ...string) string {
	t.Helper()
	out, errs, code := e.run(t, args...)
	if code != 0 {
		t.Fatalf("duet %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errs)
	}
	return out
}

const suiteYAML = `task:
  name: shop-orders
  description: Order status through the order service's MCP tools.
cases:
  - key: order-status
    title: query_order returns A1001 as paid, twice
    steps:
      - mcpCall:
          server: orders
          tool: query_order
          input: {orderId: A1001}
          saveAs: order
      - assert: order.structuredContent.order.status == "paid"
      - mcpCall:
          server: orders
          tool: query_order
          input:
            orderId: {var: order.structuredContent.order.id}
          saveAs: again
      - assert: again.structuredContent.order.id == "A1001"
  - key: optional-lookup
    title: an optional lookup does not fail the case
    steps:
      - mcpCall: {server: orders, tool: list_orders, input: {limit: 2}, failurePolicy: optional, saveAs: page}
      - assert: "true"
`

// TestMCPClientEndToEnd is the acceptance story of the MCP client side and
// the canary test of its credentials: alice registers the sample order
// server with a token, writes a case with mcpCall steps and runs it (it
// passes); bob runs alice's shared task without having registered the server
// (the run starts and the step fails with MCP_SERVER_NOT_CONFIGURED); carol
// registers it with a wrong token (MCP_AUTH_FAILED). Afterwards neither token
// appears in the database files, logs, audit or invocation records, command
// output, step JSON, reports, tool responses or error messages.
func TestMCPClientEndToEnd(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	e := &duetEnv{tr: &transcript{}, vars: map[string]string{
		"DUET_HOME": home, "DUET_MCP_ALLOW_LOOPBACK": "true", "DUET_LOG_LEVEL": "debug",
		"ORDERS_TOKEN": canary, "WRONG_TOKEN": canaryWrong, "HOME": home, "DUET_ADMINS": "auditor",
	}}
	orders := sample.NewOrders()
	url, stop, err := sample.StartOrderServer(t.Context(), "127.0.0.1:0", orders, canary)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)

	// Registration reads the token from the environment, never from argv.
	out := e.must(t, "server", "add", "--as", "alice", "--name", "orders", "--url", url, "--bearer-token-env", "ORDERS_TOKEN")
	if !strings.Contains(out, "3 tools") || !strings.Contains(out, "mcp_127-0-0-1_") {
		t.Fatalf("server add: %s", out)
	}
	if _, errs, code := e.run(t, "server", "add", "--as", "carol", "--name", "orders", "--url", url, "--bearer-token-env", "WRONG_TOKEN"); code != 1 ||
		!strings.Contains(errs, "MCP_AUTH_FAILED") {
		t.Fatalf("carol's add with a wrong token: exit %d: %s", code, errs)
	}
	if _, errs, code := e.run(t, "server", "add", "--as", "dave", "--name", "x", "--url", url+"?token=abc"); code != 1 || !strings.Contains(errs, "URL_REFUSED") {
		t.Fatalf("a token in the URL: exit %d: %s", code, errs)
	}
	out = e.must(t, "server", "call", "--as", "alice", "orders", "query_order", "--args", `{"orderId":"A1002"}`)
	if !strings.Contains(out, "A1002") {
		t.Fatalf("server call: %s", out)
	}
	e.must(t, "server", "show", "orders", "--as", "alice", "--json")
	e.must(t, "server", "list", "--as", "alice")

	suite := filepath.Join(home, "suite.yaml")
	if err := os.WriteFile(suite, []byte(suiteYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	// The compiler checks tools against alice's archive.
	bad := filepath.Join(home, "bad.yaml")
	os.WriteFile(bad, []byte(strings.Replace(suiteYAML, "tool: query_order\n          input: {orderId: A1001}", "tool: query_orders\n          input: {orderId: A1001}", 1)), 0o600)
	if _, errs, code := e.run(t, "apply", "-f", bad, "--as", "alice"); code != 1 || !strings.Contains(errs, `no tool "query_orders"`) ||
		!strings.Contains(errs, "did you mean query_order") {
		t.Fatalf("apply with an unknown tool: exit %d: %s", code, errs)
	}
	e.must(t, "apply", "-f", suite, "--as", "alice")
	e.must(t, "task", "share", "shop-orders", "--with", "bob", "--as", "alice")

	out = e.must(t, "run", "shop-orders", "--as", "alice", "--json")
	var aliceRun duet.Run
	if err := json.Unmarshal([]byte(out), &aliceRun); err != nil || aliceRun.Status != duet.StatusPassed {
		t.Fatalf("alice's run: %v %s", err, out)
	}

	out, _, code := e.run(t, "run", "shop-orders", "--as", "bob", "--json")
	var bobRun duet.Run
	if err := json.Unmarshal([]byte(out), &bobRun); err != nil || code != 2 || bobRun.Status != duet.StatusFailed || bobRun.StartedAt == nil { // 2: a configuration error
		t.Fatalf("bob's run: exit %d, %v %s", code, err, out)
	}
	var shown struct {
		Executions []*duet.Execution `json:"executions"`
	}
	json.Unmarshal([]byte(e.must(t, "run", "show", bobRun.ID, "--as", "bob", "--json")), &shown)
	if len(shown.Executions) != 2 {
		t.Fatalf("bob's executions: %+v", shown.Executions)
	}
	for _, x := range shown.Executions {
		step := x.Results[0]
		if step.ErrorCode != duet.CodeMCPServerNotConfigured || !strings.Contains(step.ErrorMessage, "bob") {
			t.Fatalf("bob's mcpCall step in %s: got %s %q, want MCP_SERVER_NOT_CONFIGURED", x.CaseKey, step.ErrorCode, step.ErrorMessage)
		}
		// required fails the case; optional records the failure and goes on.
		if want := map[string]duet.RunStatus{"order-status": duet.StatusFailed, "optional-lookup": duet.StatusPassed}[x.CaseKey]; x.Status != want || step.Optional != (x.CaseKey == "optional-lookup") {
			t.Errorf("bob's case %s: got %s (optional step %v), want %s", x.CaseKey, x.Status, step.Optional, want)
		}
	}
	e.must(t, "run", "show", aliceRun.ID, "--as", "alice")
	e.must(t, "run", "show", aliceRun.ID, "--as", "alice", "--json")

	// The by-value canaries: a web API's secrets travel through a run.
	web := filepath.Join(home, "web.yaml")
	closed := closedport.URL(t) // where nothing answers: a failing request whose URL carries a secret
	if err := os.WriteFile(web, []byte(strings.NewReplacer("BASE", secretsAPI(t), "CLOSED", closed).Replace(byValueSuite)), 0o600); err != nil {
		t.Fatal(err)
	}
	e.must(t, "apply", "-f", web, "--as", "alice")
	e.must(t, "task", "share", "web-secrets", "--with", "bob", "--as", "alice")
	out, _, _ = e.run(t, "run", "web-secrets", "--as", "alice", "--json")
	var webRun duet.Run
	if err := json.Unmarshal([]byte(out), &webRun); err != nil || webRun.Status != duet.StatusFailed {
		t.Fatalf("the web secrets run: %v %s", err, out)
	}
	var webShown struct {
		Executions []*duet.Execution `json:"executions"`
	}
	json.Unmarshal([]byte(e.must(t, "run", "show", webRun.ID, "--as", "alice", "--json")), &webShown)
	if x := webShown.Executions; len(x) != 1 || len(x[0].Results) != 7 || x[0].Results[5].Status != duet.StatusPassed ||
		!strings.Contains(x[0].Results[6].ErrorMessage, closed+"/closed?token=") {
		t.Fatalf("the web secrets run did not go as planned: %+v", x)
	}
	for _, as := range []string{"alice", "bob"} {
		for _, format := range []string{"html", "json", "junit"} {
			e.must(t, "report", webRun.ID, "--as", as, "--format", format)
		}
		e.must(t, "run", "show", webRun.ID, "--as", as)
	}

	inv := e.must(t, "server", "invocations", "--json", "--as", "auditor") // everyone's: an administrator
	var recs []*duet.Invocation
	json.Unmarshal([]byte(inv), &recs)
	sources := map[duet.CallSource]int{}
	for _, r := range recs {
		sources[r.Source]++
		if r.Executor == "bob" && r.Outcome != duet.CodeMCPServerNotConfigured {
			t.Errorf("bob's record: %+v", r)
		}
	}
	if sources[duet.SourceEngine] != 5 || sources[duet.SourceCLI] != 1 {
		t.Errorf("invocation records by source: got %v, want 5 engine (alice 3, bob 2) and 1 cli", sources)
	}
	e.must(t, "audit")
	e.must(t, "server", "remove", "orders", "--as", "carol")

	// Tool responses over the product catalog (what MCP clients read).
	cfg, err := config.Load(func(k string) string { return e.vars[k] })
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	a, err := app.Open(context.Background(), cfg, app.Options{Stderr: &logs, Getenv: func(k string) string { return e.vars[k] }})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{aliceRun.ID, bobRun.ID, webRun.ID} {
		args, _ := json.Marshal(catalog.GetRunIn{RunID: id})
		res, err := a.Catalog.Call(t.Context(), catalog.Request{Caller: duet.Caller{UserID: "alice", Source: duet.SourceMCP}, Tool: catalog.ToolGetRun, Args: args})
		if err != nil {
			t.Fatal(err)
		}
		e.tr.add(res.Text + string(res.Structured))
		execs, _ := a.Store.FindExecutions(t.Context(), id)
		for _, x := range execs {
			args, _ := json.Marshal(catalog.GetExecutionIn{ExecutionID: x.ID})
			res, err := a.Catalog.Call(t.Context(), catalog.Request{Caller: duet.Caller{UserID: "alice", Source: duet.SourceMCP}, Tool: catalog.ToolGetExecutionResult, Args: args})
			if err != nil {
				t.Fatal(err)
			}
			e.tr.add(res.Text + string(res.Structured))
		}
	}
	a.Close()
	e.tr.add(logs.String())

	// The canary check. The transcript holds stdout and stderr of every
	// command (logs at debug level included) and every tool response.
	checkCanaries(t, e, home, canary, canaryWrong, canaryAccess, canaryNote, canaryText, canaryCookie)
}

// checkCanaries fails when one of the canaries appears in the transcript
// (command output, logs, tool responses) or in plain text in a file of
// DUET_HOME (the database, the master key).
func checkCanaries(t *testing.T, e *duetEnv, home string, canaries ...string) {
	t.Helper()
	text := e.tr.all.String()
	if !strings.Contains(text, "level=DEBUG") && !strings.Contains(text, "level=WARN") {
		t.Errorf("the transcript holds no logs; the canary check would prove little")
	}
	for _, c := range canaries {
		if strings.Contains(text, c) {
			t.Errorf("a canary appears in command output, logs or tool responses")
		}
	}
	files, _ := filepath.Glob(filepath.Join(home, "*"))
	checked := 0
	for _, f := range files {
		if fi, err := os.Stat(f); err != nil || fi.IsDir() {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		for _, c := range canaries {
			if bytes.Contains(b, []byte(c)) {
				t.Errorf("a canary appears in plain text in %s", filepath.Base(f))
			}
		}
	}
	if checked < 2 {
		t.Errorf("checked %d files in DUET_HOME, want the database and the master key at least", checked)
	}
}
