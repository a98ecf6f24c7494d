package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/app"
	"github.com/duet-test/duet/internal/config"
)

type bearerAuth struct{ token string }

func (b bearerAuth) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

var stopRequestRe = regexp.MustCompile(`stop_[0-9a-z]{26}`)

// TestStopTestRunEndToEnd: stop_test_run released to bob only
// (DUET_STOP_TOOL_USERS). carol, who may see alice's task, does not see the
// tool in tools/list (MCP or MCP-Lite) and is refused if she calls it. bob,
// with a go-sdk client that supports elicitation, cannot stop alice's run
// by confirming it himself: he is not asked, and the request waits for
// alice, who declines it. His own runs he is asked to confirm (are you
// sure?): over a sessions-mode connection declined, the run goes on;
// accepted, it stops; over stateless HTTP as a multi-round request. From a
// client that cannot be asked, the call leaves a pending request that
// alice, who started the run, approves with duet run approve-stop; the run
// stops, and the request, duet run stop-requests and the audit trail record
// who asked and who approved, and when.
func TestStopTestRunEndToEnd(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	e := &duetEnv{tr: &transcript{}, vars: map[string]string{
		"DUET_HOME": home, "HOME": home, "DUET_WORKERS": "0", "DUET_LOG_LEVEL": "error",
		"DUET_STOP_TOOL_USERS": "bob", "DUET_ADMINS": "auditor",
	}}
	suite := filepath.Join(home, "suite.yaml")
	if err := os.WriteFile(suite, []byte("task: {name: shop, sharedWith: [bob, carol]}\ncases:\n  - {key: a, title: a, steps: [{assert: 'true'}]}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e.must(t, "apply", "-f", suite, "--as", "alice")
	queue := func(user string) string { return strings.TrimSpace(e.must(t, "run", "shop", "--detach", "--as", user)) }
	token := func(user string) string { return strings.TrimSpace(e.must(t, "token", "create", "--user", user)) }

	getenv := func(k string) string { return e.vars[k] }
	cfg, err := config.Load(getenv)
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.Open(t.Context(), cfg, app.Options{Stderr: io.Discard, Getenv: getenv})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	sessions := httptest.NewServer(a.Handler(app.ServeOptions{Sessions: true}))
	t.Cleanup(sessions.Close)
	stateless := httptest.NewServer(a.Handler(app.ServeOptions{}))
	t.Cleanup(stateless.Close)

	var accept atomic.Bool
	var asked atomic.Int32
	connectAs := func(srv *httptest.Server, user string, elicits bool) *mcp.ClientSession {
		opts := &mcp.ClientOptions{
			ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				asked.Add(1)
				if !strings.Contains(req.Params.Message, "Are you sure") || !strings.Contains(req.Params.Message, "started by bob") {
					t.Errorf("bob is asked about a run that is not his, or not whether he is sure: %q", req.Params.Message)
				}
				if accept.Load() {
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}}, nil
				}
				return &mcp.ElicitResult{Action: "decline"}, nil
			},
		}
		if !elicits {
			opts = nil // no elicitation capability declared
		}
		c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "0"}, opts)
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()
		// On the sessions server, a handshake-era client (the confirmation
		// travels as a server-to-client request on its session); on the
		// stateless one, the SDK's default, 2026-07-28 (a multi-round
		// request).
		var so *mcp.ClientSessionOptions
		if srv == sessions {
			so = &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}
		}
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp/http",
			HTTPClient: &http.Client{Transport: bearerAuth{token(user)}}, MaxRetries: -1}, so)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	connect := func(srv *httptest.Server, user string) *mcp.ClientSession { return connectAs(srv, user, true) }
	listed := func(cs *mcp.ClientSession) bool {
		res, err := cs.ListTools(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tl := range res.Tools {
			if tl.Name == "stop_test_run" {
				if tl.Annotations == nil || tl.Annotations.DestructiveHint == nil || !*tl.Annotations.DestructiveHint {
					t.Errorf("stop_test_run is not marked destructive: %+v", tl.Annotations)
				}
				return true
			}
		}
		return false
	}
	stop := func(cs *mcp.ClientSession, args map[string]any) *mcp.CallToolResult {
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "stop_test_run", Arguments: args})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	text := func(r *mcp.CallToolResult) string { return r.Content[0].(*mcp.TextContent).Text }
	status := func(runID string) duet.RunStatus {
		r, err := a.Store.FindRunByID(t.Context(), "", runID)
		if err != nil {
			t.Fatal(err)
		}
		return r.Status
	}

	// The gray release: carol neither sees nor may call it.
	bob := connect(sessions, "bob")
	carol := connect(sessions, "carol")
	if !listed(bob) || listed(carol) {
		t.Fatalf("tools/list: bob sees stop_test_run %v, carol %v; want true, false", listed(bob), listed(carol))
	}
	for user, want := range map[string]bool{"bob": true, "carol": false} {
		req, _ := http.NewRequest("POST", stateless.URL+"/mcp/tools/list", strings.NewReader("{}"))
		req.Header.Set("Authorization", "Bearer "+token(user))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if got := bytes.Contains(body, []byte(`"stop_test_run"`)); got != want || resp.StatusCode != 200 {
			t.Errorf("MCP-Lite tools/list as %s: %d, lists stop_test_run %v, want %v", user, resp.StatusCode, got, want)
		}
	}
	run := queue("alice")
	if r := stop(carol, map[string]any{"runId": run}); !r.IsError || !strings.HasPrefix(text(r), "PERMISSION_DENIED") || asked.Load() != 0 {
		t.Fatalf("carol calls it: %s", text(r))
	}

	// alice's run: bob's client, which would accept, is not asked; the
	// request waits for alice, who declines it.
	accept.Store(true)
	r := stop(bob, map[string]any{"runId": run, "reason": "mine now"})
	denied := stopRequestRe.FindString(text(r))
	if !r.IsError || !strings.HasPrefix(text(r), "APPROVAL_PENDING") || denied == "" || asked.Load() != 0 || status(run) != duet.StatusQueued {
		t.Fatalf("bob stopping alice's run: %s (asked %d times, run %s)", text(r), asked.Load(), status(run))
	}
	if out := e.must(t, "run", "deny-stop", denied, "--as", "alice"); !strings.Contains(out, run) {
		t.Fatalf("duet run deny-stop: %s", out)
	}
	if r := stop(bob, map[string]any{"runId": run, "requestId": denied}); !strings.HasPrefix(text(r), "APPROVAL_DENIED") || status(run) != duet.StatusQueued {
		t.Fatalf("after alice declined: %s, run %s", text(r), status(run))
	}
	accept.Store(false)

	// bob's own run: asked whether he is sure; declined, then accepted.
	run = queue("bob")
	r = stop(bob, map[string]any{"runId": run, "reason": "wrong build"})
	if !r.IsError || !strings.HasPrefix(text(r), "APPROVAL_DENIED") || asked.Load() != 1 || status(run) != duet.StatusQueued {
		t.Fatalf("declined in the client: %s (asked %d times, run %s)", text(r), asked.Load(), status(run))
	}
	accept.Store(true)
	r = stop(bob, map[string]any{"runId": run})
	var out struct {
		Stopped    bool
		Status     duet.RunStatus
		ApprovedBy string
		Via        string
		RequestID  string
	}
	b, _ := json.Marshal(r.StructuredContent)
	json.Unmarshal(b, &out)
	if r.IsError || !out.Stopped || out.Status != duet.StatusCancelled || out.Via != "elicitation" || out.ApprovedBy != "bob" || status(run) != duet.StatusCancelled {
		t.Fatalf("accepted in the client: %s %+v", text(r), out)
	}

	// Stateless HTTP, a 2026-07-28 client with elicitation: asked in a
	// multi-round request, no session needed.
	run = queue("bob")
	r = stop(connect(stateless, "bob"), map[string]any{"runId": run})
	if r.IsError || asked.Load() != 3 || status(run) != duet.StatusCancelled {
		t.Fatalf("stateless, multi-round: %s (asked %d times, run %s)", text(r), asked.Load(), status(run))
	}

	// A client that cannot be asked (no elicitation): alice approves from
	// the CLI.
	run = queue("alice")
	bobStateless := connectAs(stateless, "bob", false)
	r = stop(bobStateless, map[string]any{"runId": run})
	id := stopRequestRe.FindString(text(r))
	if !r.IsError || !strings.HasPrefix(text(r), "APPROVAL_PENDING") || id == "" || !strings.Contains(text(r), "duet run approve-stop "+id+" --as alice") {
		t.Fatalf("stateless: %s", text(r))
	}
	if asked.Load() != 3 || status(run) != duet.StatusQueued {
		t.Fatalf("stateless: asked %d times, run %s; want no question and the run queued", asked.Load(), status(run))
	}
	if out := e.must(t, "run", "stop-requests", "--as", "alice"); !strings.Contains(out, id) || !strings.Contains(out, "bob asks to stop your run "+run) {
		t.Fatalf("duet run stop-requests: %s", out)
	}
	if _, errs, code := e.run(t, "run", "approve-stop", id, "--as", "bob"); code != 1 || !strings.Contains(errs, "PERMISSION_DENIED") {
		t.Fatalf("bob approves his own request: exit %d %s", code, errs)
	}
	if out := e.must(t, "run", "approve-stop", id, "--as", "alice"); !strings.Contains(out, "approved: run "+run+" is cancelled") {
		t.Fatalf("duet run approve-stop: %s", out)
	}
	if status(run) != duet.StatusCancelled {
		t.Fatalf("approved, yet the run is %s", status(run))
	}
	r = stop(bobStateless, map[string]any{"runId": run, "requestId": id})
	if b, _ := json.Marshal(r.StructuredContent); r.IsError || !strings.Contains(string(b), `"approvedBy":"alice"`) || !strings.Contains(string(b), `"via":"cli"`) {
		t.Fatalf("the outcome by request id: %s %s", text(r), b)
	}

	// Who asked, who approved, and when.
	var reqs []*duet.StopRequest
	json.Unmarshal([]byte(e.must(t, "run", "stop-requests", "--all", "--json", "--as", "alice")), &reqs)
	if len(reqs) != 2 || reqs[0].ID != id || reqs[0].RequestedBy != "bob" || reqs[0].DecidedBy != "alice" || reqs[0].Via != "cli" || reqs[0].DecidedAt == nil ||
		reqs[1].ID != denied || reqs[1].Status != duet.StopDenied || reqs[1].DecidedBy != "alice" || reqs[1].Reason != "mine now" {
		t.Fatalf("stop requests of alice's runs: %s", e.must(t, "run", "stop-requests", "--all", "--as", "alice"))
	}
	reqs = nil
	json.Unmarshal([]byte(e.must(t, "run", "stop-requests", "--all", "--json", "--as", "bob")), &reqs)
	confirmed := map[duet.StopStatus]int{}
	for _, r := range reqs {
		if r.Via == "elicitation" {
			if r.DecidedBy != "bob" || r.Executor != "bob" {
				t.Errorf("a request confirmed in bob's client about someone else's run: %+v", r)
			}
			confirmed[r.Status]++
		}
	}
	if confirmed[duet.StopApproved] != 2 || confirmed[duet.StopDenied] != 1 {
		t.Fatalf("bob's confirmations: %v in %s", confirmed, e.must(t, "run", "stop-requests", "--all", "--as", "bob"))
	}
	a.Audit.Flush()
	var audit []*duet.AuditRecord
	json.Unmarshal([]byte(e.must(t, "audit", "--json", "--method", "run.stop.approve", "--as", "auditor")), &audit)
	if len(audit) != 2 || audit[0].Caller != "alice" || audit[0].Tool != id || audit[0].Outcome != duet.OutcomeOK || audit[0].CallSource != duet.SourceCLI ||
		audit[1].Caller != "bob" || audit[1].Outcome != duet.CodePermissionDenied {
		b, _ := json.Marshal(audit)
		t.Fatalf("audit of the approvals: got %s, want alice's and bob's refused one", b)
	}
	audit = nil
	json.Unmarshal([]byte(e.must(t, "audit", "--json", "--tool", "stop_test_run", "--as", "auditor")), &audit)
	outcomes := map[string][]duet.Code{}
	for _, rec := range audit {
		outcomes[rec.Caller] = append(outcomes[rec.Caller], rec.Outcome)
	}
	if len(outcomes["carol"]) != 1 || outcomes["carol"][0] != duet.CodePermissionDenied || len(outcomes["bob"]) != 8 { // pending and denied, declined, accepted, two rounds, pending, by request id
		t.Fatalf("audit of the calls: %v", outcomes)
	}
}
