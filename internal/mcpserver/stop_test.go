package mcpserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/catalog"
	"github.com/duet-test/duet/internal/compiler"
	"github.com/duet-test/duet/internal/httpapi"
	"github.com/duet-test/duet/internal/mcpserver"
	"github.com/duet-test/duet/internal/sqlite"
)

// TestStopConfirmationIsNotTheAskers: stop_test_run from go-sdk clients of
// both eras that can answer an elicitation, on one endpoint with sessions
// (a 2026-07-28 client is asked in band, a 2025-11-25 client over its
// session). bob's client would accept anything, yet bob cannot stop alice's
// run: he is not asked, the call answers APPROVAL_PENDING and the run goes
// on until alice decides. alice's client answering accept with no content,
// or with empty content (which the form's required field makes the SDK
// refuse, and which a default would have turned into a yes), stops nothing:
// an empty or defaulted answer is no confirmation. accept with confirm:
// true stops her run.
func TestStopConfirmationIsNotTheAskers(t *testing.T) {
	t.Parallel()
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "duet.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	s, _ := compiler.CompileSuite(t.Context(), []byte("task: {name: shop, sharedWith: [bob]}\ncases: [{title: a, steps: [{assert: 'true'}]}]\n"), "", compiler.Options{})
	res, err := db.ApplySuite(t.Context(), "alice", s)
	if err != nil {
		t.Fatal(err)
	}
	cat := catalog.New(db, catalog.Options{StopTool: catalog.StopToolOptions{Users: []string{"*"}}})
	srv := httptest.NewServer(asUser(mcpserver.New(cat, mcpserver.Options{Codes: httpapi.Codes}).HTTPHandler(mcpserver.HTTPOptions{Sessions: true})))
	defer srv.Close()
	status := func(run string) duet.RunStatus {
		r, err := db.FindRunByID(t.Context(), "", run)
		if err != nil {
			t.Fatal(err)
		}
		return r.Status
	}

	for i, era := range []struct{ name, version string }{{"2026-07-28 in band", ""}, {"2025-11-25 over the session", "2025-11-25"}} {
		t.Run(era.name, func(t *testing.T) {
			connect := func(user string, content map[string]any, asked *atomic.Int32) *mcp.ClientSession {
				t.Helper()
				c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
					ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
						asked.Add(1)
						return &mcp.ElicitResult{Action: "accept", Content: content}, nil
					},
				})
				var so *mcp.ClientSessionOptions
				if era.version != "" {
					so = &mcp.ClientSessionOptions{ProtocolVersion: era.version}
				}
				cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: &http.Client{Transport: headerRT{user}}}, so)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { cs.Close() })
				return cs
			}
			call := func(cs *mcp.ClientSession, run string) (*mcp.CallToolResult, string, error) {
				t.Helper()
				out, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: catalog.ToolStopRun, Arguments: map[string]any{"runId": run, "reason": "wrong build"}})
				if err != nil {
					return nil, "", err
				}
				b, _ := json.Marshal(out.Content)
				return out, string(b), nil
			}
			stop := func(cs *mcp.ClientSession, run string) (*mcp.CallToolResult, string) {
				t.Helper()
				out, text, err := call(cs, run)
				if err != nil {
					t.Fatalf("stop_test_run: %v", err)
				}
				return out, text
			}
			start, err := cat.StartRun(t.Context(), duet.Caller{UserID: "alice", Source: duet.SourceMCP}, catalog.StartRunIn{TaskID: res.Task.ID, IdempotencyKey: "k" + string(rune('a'+i))})
			if err != nil {
				t.Fatal(err)
			}
			run := start.RunID

			var bobAsked, aliceAsked atomic.Int32
			bob := connect("bob", map[string]any{"confirm": true}, &bobAsked)
			out, text := stop(bob, run)
			if !out.IsError || !strings.Contains(text, "APPROVAL_PENDING") || bobAsked.Load() != 0 || status(run) != duet.StatusQueued {
				t.Fatalf("bob stopping alice's run: %s, bob asked %d times, run %s; want APPROVAL_PENDING, nobody asked, the run going on", text, bobAsked.Load(), status(run))
			}
			if reqs, _ := db.FindStopRequests(t.Context(), duet.StopRequestFilter{User: "alice", RunID: run, Pending: true}); len(reqs) != 1 || reqs[0].RequestedBy != "bob" {
				t.Fatalf("the request waiting for alice: %+v", reqs)
			}

			none := connect("alice", nil, &aliceAsked)
			out, text = stop(none, run)
			if !out.IsError || !strings.Contains(text, "APPROVAL_DENIED") || aliceAsked.Load() != 1 || status(run) != duet.StatusQueued {
				t.Fatalf("alice accepting with no content: %s, asked %d times, run %s; want APPROVAL_DENIED and the run going on", text, aliceAsked.Load(), status(run))
			}
			var emptyAsked atomic.Int32
			empty := connect("alice", map[string]any{}, &emptyAsked)
			out, text, err = call(empty, run)
			if emptyAsked.Load() != 1 || status(run) != duet.StatusQueued || err == nil && (!out.IsError || !strings.Contains(text, "APPROVAL_DENIED")) {
				t.Fatalf("alice accepting with empty content: %s %v, asked %d times, run %s; want no stop", text, err, emptyAsked.Load(), status(run))
			}

			var yesAsked atomic.Int32
			yes := connect("alice", map[string]any{"confirm": true}, &yesAsked)
			out, text = stop(yes, run)
			var got catalog.StopRunOut
			b, _ := json.Marshal(out.StructuredContent)
			json.Unmarshal(b, &got)
			if out.IsError || !got.Stopped || got.ApprovedBy != "alice" || got.Via != duet.StopViaElicitation || yesAsked.Load() != 1 || status(run) != duet.StatusCancelled {
				t.Fatalf("alice confirming: %s %s, asked %d times, run %s", text, b, yesAsked.Load(), status(run))
			}
		})
	}
}
