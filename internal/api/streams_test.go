package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/api"
	"github.com/duet-test/duet/internal/app/apptest"
	"github.com/duet-test/duet/internal/catalog"
	"github.com/duet-test/duet/internal/httpapi"
)

// TestProgressStreamsBudgeted: a progress stream takes no call slot, but
// one user cannot open them without bound — the per-caller limit refuses
// the next with RATE_LIMITED (audited), another user is not affected,
// and a closed stream gives its place back.
func TestProgressStreamsBudgeted(t *testing.T) {
	t.Parallel()
	e := apptest.New(t, map[string]string{"DUET_MAX_PER_CALLER": "2"})
	status, b, _ := e.Call("alice", "POST", "/api/v1/tasks", api.ApplyIn{Source: apptest.Suite("streamed")})
	if status != 201 && status != 200 {
		t.Fatalf("apply: %d %s", status, b)
	}
	taskID := decode[duet.ApplyResult](t, b).Task.ID
	status, b, _ = e.Call("alice", "POST", "/api/v1/runs", api.RunIn{TaskID: taskID}, "Idempotency-Key", "s1")
	if status != 201 && status != 200 {
		t.Fatalf("start: %d %s", status, b)
	}
	runID := decode[catalog.StartRunOut](t, b).RunID
	// The run stays queued (no worker here): a stream stays open.
	open := func(user string) (int, string, context.CancelFunc) {
		ctx, cancel := context.WithCancel(t.Context())
		req, _ := http.NewRequestWithContext(ctx, "GET", e.URL+"/api/v1/runs/"+runID+"/events", nil)
		req.Header.Set("Authorization", "Bearer "+e.Tokens[user])
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 200 {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			cancel()
			return resp.StatusCode, string(b), cancel
		}
		line, _ := bufio.NewReader(resp.Body).ReadString('\n') // the first event has arrived
		t.Cleanup(func() { cancel(); resp.Body.Close() })
		return resp.StatusCode, line, func() { cancel(); resp.Body.Close() }
	}
	if status, b, _ := e.Call("alice", "POST", "/api/v1/tasks/"+taskID+"/shares", api.ShareIn{With: "bob"}); status != 200 {
		t.Fatalf("share: %d %s", status, b)
	}
	_, first, close1 := open("alice")
	if !strings.HasPrefix(first, "event: progress") {
		t.Fatalf("first stream: %q", first)
	}
	open("alice")
	status, body, _ := open("alice")
	if status != http.StatusTooManyRequests || apptest.ErrCode([]byte(body)) != duet.CodeRateLimited {
		t.Fatalf("alice's third stream: %d %s, want 429 RATE_LIMITED", status, body)
	}
	if status, body, _ := open("bob"); status != 200 {
		t.Fatalf("bob's stream: %d %s", status, body)
	}
	close1()
	// The closed stream's place comes back once the server sees it closed.
	var got int
	for range 100 {
		if got, body, _ = open("alice"); got == 200 {
			break
		}
	}
	if got != 200 {
		t.Fatalf("alice after closing one: %d %s", got, body)
	}
	e.App.Audit.Flush()
	recs, err := e.App.Store.FindAudit(t.Context(), duet.AuditFilter{Caller: "alice", Method: "followRun", Outcome: duet.CodeRateLimited})
	if err != nil || len(recs) == 0 {
		t.Fatalf("the refusal is audited: %v %v", recs, err)
	}
}

// TestMCPListenStreamsBudgeted: MCP's subscriptions/listen streams
// (2026-07-28) over /mcp/http take the catalog's stream slots, the budget
// REST's progress streams share: a user's (DUET_MAX_PER_CALLER+1)th is
// refused with RATE_LIMITED — HTTP 429 with the JSON-RPC code the error
// table gives it — and audited; another user still gets theirs; closing
// one frees a slot; and a REST progress stream counts against the same
// budget.
func TestMCPListenStreamsBudgeted(t *testing.T) {
	t.Parallel()
	e := apptest.New(t, map[string]string{"DUET_MAX_PER_CALLER": "2"})
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},` +
		`"io.modelcontextprotocol/clientInfo":{"name":"listen","version":"1"}}`
	listen := func(user string, id int) (int, string, func()) {
		ctx, cancel := context.WithCancel(t.Context())
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},%s}}`, id, meta)
		req, _ := http.NewRequestWithContext(ctx, "POST", e.URL+"/mcp/http", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+e.Tokens[user])
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "subscriptions/listen")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			cancel()
			return resp.StatusCode, string(b), cancel
		}
		// The stream is open once its acknowledgement has arrived.
		rd := bufio.NewReader(resp.Body)
		var first string
		for !strings.Contains(first, "subscriptions/acknowledged") {
			line, err := rd.ReadString('\n')
			if err != nil {
				t.Fatalf("%s's stream %d: %v after %q", user, id, err, first)
			}
			first += line
		}
		closeIt := func() { cancel(); resp.Body.Close() }
		t.Cleanup(closeIt)
		return resp.StatusCode, first, closeIt
	}
	_, _, close1 := listen("alice", 1)
	if status, body, _ := listen("alice", 2); status != 200 {
		t.Fatalf("alice's second stream: %d %s", status, body)
	}
	status, body, _ := listen("alice", 3)
	var rpc struct {
		ID    int `json:"id"`
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &rpc); err != nil {
		t.Fatalf("alice's third stream: %d %q: %v", status, body, err)
	}
	if status != http.StatusTooManyRequests || rpc.ID != 3 || rpc.Error.Code != httpapi.Codes.RPCCode(duet.CodeRateLimited) ||
		!strings.HasPrefix(rpc.Error.Message, string(duet.CodeRateLimited)+":") {
		t.Fatalf("alice's third stream: %d %s, want 429 with JSON-RPC %d RATE_LIMITED", status, body, httpapi.Codes.RPCCode(duet.CodeRateLimited))
	}
	if status, body, _ := listen("bob", 4); status != 200 {
		t.Fatalf("bob's stream: %d %s", status, body)
	}
	// One budget: alice's REST progress stream is refused as well.
	if status, b, _ := e.Call("alice", "GET", "/api/v1/runs/run_none/events", nil); status != http.StatusTooManyRequests || apptest.ErrCode(b) != duet.CodeRateLimited {
		t.Fatalf("alice's progress stream beside two listen streams: %d %s, want 429 RATE_LIMITED", status, b)
	}
	close1()
	// The closed stream's slot comes back once the server sees it closed.
	var got int
	for i := range 100 {
		if got, body, _ = listen("alice", 10+i); got == 200 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got != 200 {
		t.Fatalf("alice after closing a stream: %d %s", got, body)
	}
	e.App.Audit.Flush()
	recs, err := e.App.Store.FindAudit(t.Context(), duet.AuditFilter{Caller: "alice", Method: "subscriptions/listen", Outcome: duet.CodeRateLimited})
	if err != nil || len(recs) == 0 {
		t.Fatalf("the refusal is audited: %v %v", recs, err)
	}
}
