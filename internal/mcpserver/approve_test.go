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

// TestApprovalBothEras: bob starts alice's shared task from go-sdk clients
// of both eras on one endpoint with sessions. A 2026-07-28 client is asked
// in band (an input-required result its SDK answers and retries); a
// 2025-11-25 client is asked over its session (elicitation/create). Each
// answer is what starts the run; a client that declared no elicitation is
// not asked and gets the run as before.
func TestApprovalBothEras(t *testing.T) {
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
	review := func(_ context.Context, executor string, _ *duet.Task, c *duet.Case) (*catalog.CaseReview, error) {
		if c.CreatedBy == executor {
			return &catalog.CaseReview{}, nil
		}
		d := duet.Destinations{Tools: []duet.ToolDestination{{ServerKey: "sk_orders", Tool: "set_order_status"}}}
		return &catalog.CaseReview{Calls: []duet.PendingCall{{Step: 1, Name: "cancel", ServerKey: "sk_orders", Tool: "set_order_status"}},
			Destinations: d, DestinationsHash: d.Hash()}, nil
	}
	cat := catalog.New(db, catalog.Options{Review: review})
	srv := httptest.NewServer(asUser(mcpserver.New(cat, mcpserver.Options{Codes: httpapi.Codes}).HTTPHandler(mcpserver.HTTPOptions{Sessions: true})))
	defer srv.Close()

	for i, tc := range []struct {
		name    string
		version string // "" = the client's default, 2026-07-28
		elicit  bool
		asked   bool
	}{
		{"2026-07-28 in band", "", true, true},
		{"2025-11-25 over the session", "2025-11-25", true, true},
		{"no elicitation", "2025-11-25", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var asked atomic.Int32
			opts := &mcp.ClientOptions{}
			if tc.elicit {
				opts.ElicitationHandler = func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					asked.Add(1)
					if !strings.Contains(r.Params.Message, "set_order_status") {
						t.Errorf("the question does not name the tool: %s", r.Params.Message)
					}
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
				}
			}
			c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts)
			var so *mcp.ClientSessionOptions
			if tc.version != "" {
				so = &mcp.ClientSessionOptions{ProtocolVersion: tc.version}
			}
			cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: &http.Client{Transport: headerRT{"bob"}}}, so)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			out, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: catalog.ToolStartRun,
				Arguments: map[string]any{"taskId": res.Task.ID, "idempotencyKey": "k" + string(rune('a'+i))}})
			if err != nil || out.IsError {
				t.Fatalf("start_test_run: %v %v", out, err)
			}
			var started catalog.StartRunOut
			b, _ := json.Marshal(out.StructuredContent)
			if json.Unmarshal(b, &started); started.RunID == "" {
				t.Fatalf("no run: %s", b)
			}
			if got := asked.Load() == 1; got != tc.asked {
				t.Errorf("asked %d times, want asked=%v", asked.Load(), tc.asked)
			}
			_, err = db.FindCaseApproval(t.Context(), "bob", res.Cases[0].ID, 1)
			if tc.asked && err != nil {
				t.Errorf("the approval was not recorded: %v", err)
			}
			if tc.asked {
				db.RevokeCaseApproval(t.Context(), "bob", res.Cases[0].ID)
			}
		})
	}
}
