package api_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/api"
	"github.com/duet-test/duet/internal/api/apitest"
	"github.com/duet-test/duet/internal/catalog"
)

// TestProgressStreamsBudgeted: a progress stream takes no call slot, but
// one user cannot open them without bound — the per-caller limit refuses
// the next with RATE_LIMITED (audited), another user is not affected,
// and a closed stream gives its place back.
func TestProgressStreamsBudgeted(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, map[string]string{"DUET_MAX_PER_CALLER": "2"})
	status, b, _ := e.Call("alice", "POST", "/api/v1/tasks", api.ApplyIn{Source: apitest.Suite("streamed")})
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
	if status != http.StatusTooManyRequests || apitest.ErrCode([]byte(body)) != duet.CodeRateLimited {
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
