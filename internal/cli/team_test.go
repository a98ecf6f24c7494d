package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/sample"
)

// TestTeamsEndToEnd: alice shares a task and her order server's address
// with team qa; bob, added to the team, sees the task at once, finds the
// server on the team's list, registers it with his own token in one step
// and runs the task as himself; removed, he loses the task at once. Then
// alice hands the task to carol: recorded, and alice keeps only what the
// team share gives her.
func TestTeamsEndToEnd(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	e := &duetEnv{tr: &transcript{}, vars: map[string]string{
		"DUET_HOME": home, "DUET_MCP_ALLOW_LOOPBACK": "true", "ORDERS_TOKEN": canary, "BOB_TOKEN": canary, "HOME": home,
	}}
	url, stop, err := sample.StartOrderServer(t.Context(), "127.0.0.1:0", sample.NewOrders(), canary)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	e.must(t, "server", "add", "--as", "alice", "--name", "orders", "--url", url, "--bearer-token-env", "ORDERS_TOKEN")
	suite := filepath.Join(home, "suite.yaml")
	if err := os.WriteFile(suite, []byte(suiteYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	e.must(t, "apply", "-f", suite, "--as", "alice")
	e.must(t, "team", "create", "qa", "--as", "alice")
	e.must(t, "team", "server", "add", "qa", "--from", "orders", "--description", "order lookups", "--as", "alice")
	e.must(t, "task", "share", "shop-orders", "--with", "team:qa", "--as", "alice")

	if _, errs, code := e.run(t, "task", "show", "shop-orders", "--as", "bob"); code != 1 || !strings.Contains(errs, "NOT_FOUND") {
		t.Fatalf("bob before joining: exit %d %s", code, errs)
	}
	e.must(t, "team", "add", "qa", "bob", "--as", "alice")
	if out := e.must(t, "task", "list", "--as", "bob"); !strings.Contains(out, "shop-orders") {
		t.Fatalf("bob's tasks after joining: %s", out)
	}
	out := e.must(t, "team", "show", "qa", "--as", "bob")
	if !strings.Contains(out, "members  alice, bob") || !strings.Contains(out, "orders  "+url) || !strings.Contains(out, "NOT registered by you") {
		t.Fatalf("team show for bob: %s", out)
	}
	e.must(t, "team", "register", "qa", "orders", "--bearer-token-env", "BOB_TOKEN", "--as", "bob")
	if out := e.must(t, "team", "show", "qa", "--as", "bob"); !strings.Contains(out, "registered by you as orders") {
		t.Fatalf("team show after registering: %s", out)
	}
	// alice's cases call the server with bob's credentials: he approves them.
	var pending []struct{ CaseID string }
	json.Unmarshal([]byte(e.must(t, "case", "approvals", "--task", "shop-orders", "--as", "bob", "--json")), &pending)
	for _, c := range pending {
		e.must(t, "case", "approve", c.CaseID, "--as", "bob")
	}
	out = e.must(t, "run", "shop-orders", "--as", "bob", "--json")
	var run duet.Run
	if err := json.Unmarshal([]byte(out), &run); err != nil || run.Status != duet.StatusPassed || run.TriggeredBy != "bob" {
		t.Fatalf("bob's run: %v %s", err, out)
	}
	var recs []*duet.Invocation
	json.Unmarshal([]byte(e.must(t, "server", "invocations", "--as", "bob", "--json")), &recs)
	if len(recs) == 0 {
		t.Fatal("no invocation records")
	}
	for _, r := range recs {
		if r.Executor != "bob" {
			t.Errorf("invocation as %s, want bob (his own registration)", r.Executor)
		}
	}

	e.must(t, "team", "remove", "qa", "bob", "--as", "alice")
	if out := e.must(t, "task", "list", "--as", "bob"); strings.Contains(out, "shop-orders") {
		t.Fatalf("bob still sees the task after leaving: %s", out)
	}

	// Handoff: carol owns it; alice keeps the team share only.
	if _, errs, code := e.run(t, "task", "transfer", "shop-orders", "--to", "carol", "--as", "bob"); code != 1 || !strings.Contains(errs, "NOT_FOUND") {
		t.Fatalf("bob transfers: exit %d %s", code, errs)
	}
	if out := e.must(t, "task", "transfer", "shop-orders", "--to", "carol", "--as", "alice"); !strings.Contains(out, "now belongs to carol (was alice)") {
		t.Fatalf("transfer: %s", out)
	}
	if out := e.must(t, "task", "list", "--as", "carol"); !strings.Contains(out, "carol") {
		t.Fatalf("carol's tasks: %s", out)
	}
	if _, errs, code := e.run(t, "task", "share", "shop-orders", "--with", "dave", "--as", "alice"); code != 1 || !strings.Contains(errs, "NOT_FOUND") {
		t.Fatalf("alice shares after the handoff: exit %d %s", code, errs)
	}
	e.must(t, "task", "unshare", "shop-orders", "--with", "team:qa", "--as", "carol")
	if out := e.must(t, "task", "list", "--as", "alice"); strings.Contains(out, "shop-orders") {
		t.Fatalf("alice still sees the task with no share: %s", out)
	}
	var audit []*duet.AuditRecord
	json.Unmarshal([]byte(e.must(t, "audit", "--json", "--method", "task.transfer")), &audit)
	if len(audit) != 1 || audit[0].Caller != "alice" || audit[0].Outcome != duet.OutcomeOK || audit[0].CallSource != duet.SourceCLI {
		t.Fatalf("audit of transfers: got %d records, want alice's", len(audit))
	}
}
