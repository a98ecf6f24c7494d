package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/engine"
	"github.com/duet-test/duet/internal/mcpclient"
	"github.com/duet-test/duet/internal/netguard"
	"github.com/duet-test/duet/internal/sqlite"
	"github.com/duet-test/duet/internal/vault"
)

// whoamiServer is a go-sdk MCP server whose tool whoami answers, under an
// innocent key, the token of the Authorization header its request carried
// (without "Bearer", which would make it look like a secret anyway); onCall (if
// set) runs before it answers the n-th call (from 1). seen gets every
// Authorization value it was sent.
func whoamiServer(t testing.TB, onCall func(n int64), seen *sync.Map) string {
	s := mcp.NewServer(&mcp.Implementation{Name: "who", Version: "1"}, nil)
	var calls atomic.Int64
	s.AddTool(&mcp.Tool{Name: "whoami", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}, InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			n := calls.Add(1)
			if onCall != nil {
				onCall(n)
			}
			if seen != nil {
				seen.Store(req.Extra.Header.Get("Authorization"), true)
			}
			memo := "you called with " + strings.TrimPrefix(req.Extra.Header.Get("Authorization"), "Bearer ")
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: memo}},
				StructuredContent: map[string]any{"memo": memo}}, nil
		})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(func() { srv.CloseClientConnections(); srv.Close() })
	return srv.URL + "/mcp"
}

// countingStore is the store of an MCP client, counting the credential
// reads.
type countingStore struct {
	duet.MCPClientStore
	reads atomic.Int64
}

func (s *countingStore) FindCredential(ctx context.Context, ref string) (*duet.Credential, error) {
	s.reads.Add(1)
	return s.MCPClientStore.FindCredential(ctx, ref)
}

func newMCPClient(t testing.TB, db duet.MCPClientStore, kr *vault.Keyring) *mcpclient.Client {
	c := mcpclient.New(mcpclient.Options{Store: db, Keyring: func() (*vault.Keyring, error) { return kr, nil },
		Policy: netguard.Policy{AllowLoopback: true}, CallTimeout: 10 * time.Second})
	t.Cleanup(func() { c.Close() })
	return c
}

func keyring(t testing.TB) *vault.Keyring {
	key, _ := vault.GenerateKey()
	kr, err := vault.NewKeyring(key)
	if err != nil {
		t.Fatal(err)
	}
	return kr
}

func whoamiSuite(key string, steps int) string {
	var b strings.Builder
	b.WriteString("task: {name: who}\ncases:\n  - key: who\n    title: who am I\n    steps:\n")
	for i := range steps {
		fmt.Fprintf(&b, "      - mcpCall: {serverKey: %s, tool: whoami, input: {}, saveAs: me%d}\n", key, i+1)
	}
	return b.String()
}

// TestCaseReadsCredentialsOnce: a case of several mcpCall steps reads the
// executor's credentials for the server once per session the client
// opens (the engine reads none: the client scrubs them from what it
// returns) — and a credential replaced mid-run by another process
// (another store handle and client) is still scrubbed from the step that
// sent it (docs/governance.md).
func TestCaseReadsCredentialsOnce(t *testing.T) {
	t.Parallel()
	const first, second = "cred-FIRST-7a1c9e02", "cred-SECOND-5d3b8f14"
	path := filepath.Join(t.TempDir(), "duet.db")
	db, err := sqlite.Open(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	kr := keyring(t)
	other, err := sqlite.Open(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	otherClient := newMCPClient(t, other, kr)

	var replaceAt atomic.Int64 // the call before which the credential is replaced (0: never)
	var url string
	var seen sync.Map
	url = whoamiServer(t, func(n int64) {
		if n == replaceAt.Load() {
			// Another process replaces alice's credential while the
			// case runs.
			if _, err := otherClient.Register(context.Background(), mcpclient.Registration{Owner: "alice", Name: "who", URL: url,
				Headers: map[string]string{"Authorization": "Bearer " + second}, Replace: true}); err != nil {
				t.Error(err)
			}
			if _, err := otherClient.Sync(context.Background(), "alice", "who"); err != nil {
				t.Error(err)
			}
		}
	}, &seen)
	counted := &countingStore{MCPClientStore: db}
	c := newMCPClient(t, counted, kr)
	if _, err := c.Register(t.Context(), mcpclient.Registration{Owner: "alice", Name: "who", URL: url,
		Headers: map[string]string{"Authorization": "Bearer " + first}}); err != nil {
		t.Fatal(err)
	}
	reg, err := c.Sync(t.Context(), "alice", "who")
	if err != nil {
		t.Fatal(err)
	}
	w, _, _ := worker(t, db, engine.Options{Invoker: c}, engine.WorkerOptions{})
	const steps = 6
	task := apply(t, db, "alice", whoamiSuite(reg.ServerKey, steps)).Task

	check := func(run *duet.Run, x map[string]*duet.Execution) string {
		t.Helper()
		xe := x["who"]
		if run.Status != duet.StatusPassed || len(xe.Results) != steps {
			t.Fatalf("run %s, %d results", run.Status, len(xe.Results))
		}
		stored, _ := json.Marshal(map[string]any{"run": run, "executions": x})
		for _, secret := range []string{first, second} {
			if strings.Contains(string(stored), secret) {
				t.Errorf("credential %s is stored in clear:\n%s", secret, stored)
			}
		}
		if !strings.Contains(string(stored), "you called with") {
			t.Fatalf("the results were not kept:\n%s", stored)
		}
		return string(stored)
	}

	// One session, one credential: the session opened by the first step
	// reads it; the other steps read nothing.
	counted.reads.Store(0)
	check(runAs(t, db, w, task, "alice"))
	if n := counted.reads.Load(); n > 1 {
		t.Errorf("a case of %d mcpCall steps read the credentials %d times, want at most 1", steps, n)
	}

	// The credential replaced through another handle during the third
	// call: the fourth call opens a session with the new one, whose values
	// it scrubs from its result.
	counted.reads.Store(0)
	replaceAt.Store(steps + 3)
	check(runAs(t, db, w, task, "alice"))
	if _, ok := seen.Load("Bearer " + second); !ok {
		t.Fatal("the replaced credential was never sent: the test proves nothing")
	}
	if n := counted.reads.Load(); n > 2 {
		t.Errorf("a case of %d mcpCall steps read the credentials %d times, want at most 2 (one per session)", steps, n)
	}
}
