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
		"DUET_HOME": home, "DUET_MCP_ALLOW_LOOPBACK": "true", "ORDERS_TOKEN": canary, "BOB_TOKEN": canary, "HOME": home, "DUET_ADMINS": "auditor",
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
	if !strings.Contains(out, "members  alice (owner), bob (member)") || !strings.Contains(out, "orders  "+url) || !strings.Contains(out, "NOT registered by you") ||
		!strings.Contains(out, "duet team register qa orders --as bob --url "+url) { // a hint that acts as bob when pasted

		t.Fatalf("team show for bob: %s", out)
	}
	// Without --url, register shows the address and stops; with it, the
	// registration is pinned to that server.
	if _, errs, code := e.run(t, "team", "register", "qa", "orders", "--bearer-token-env", "BOB_TOKEN", "--as", "bob"); code != 2 || !strings.Contains(errs, "--url "+url) {
		t.Fatalf("register without --url: exit %d %s", code, errs)
	}
	if _, errs, _ := e.run(t, "team", "register", "qa", "orders", "--url", url, "--bearer-token-env", "BOB_TOKEN", "--as", "bob"); !strings.Contains(errs, "your credentials go to "+url) {
		t.Fatalf("register does not say where the credentials go: %s", errs)
	}
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
	json.Unmarshal([]byte(e.must(t, "audit", "--json", "--method", "transferTask", "--as", "auditor")), &audit)
	if len(audit) != 1 || audit[0].Caller != "alice" || audit[0].Outcome != duet.OutcomeOK || audit[0].CallSource != duet.SourceCLI {
		t.Fatalf("audit of transfers: got %d records, want alice's", len(audit))
	}
}

// TestTeamRolesCLI: the review's reproductions over the CLI. Mallory, a
// member, removes the maintainer who listed the order server and
// re-points the entry at her own endpoint: refused (PERMISSION_DENIED),
// the list unchanged. A colleague registering from the list with an
// address that is not the entry's server is refused before anything is
// stored or sent (CONFLICT). Sharing with a team that does not exist, and
// acting as a user "team:x", are refused too.
func TestTeamRolesCLI(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	e := &duetEnv{tr: &transcript{}, vars: map[string]string{
		"DUET_HOME": home, "DUET_MCP_ALLOW_LOOPBACK": "true", "ORDERS_TOKEN": canary, "HOME": home, "DUET_ADMINS": "auditor",
	}}
	url, stop, err := sample.StartOrderServer(t.Context(), "127.0.0.1:0", sample.NewOrders(), canary)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	evil, stopEvil, err := sample.StartOrderServer(t.Context(), "127.0.0.1:0", sample.NewOrders(), canary)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stopEvil)
	e.must(t, "server", "add", "--as", "bob", "--name", "orders", "--url", url, "--bearer-token-env", "ORDERS_TOKEN")
	e.must(t, "server", "add", "--as", "mallory", "--name", "orders", "--url", evil, "--bearer-token-env", "ORDERS_TOKEN")
	e.must(t, "team", "create", "qa", "--as", "alice")
	e.must(t, "team", "add", "qa", "bob", "mallory", "carol", "--as", "alice")
	e.must(t, "team", "role", "qa", "bob", "maintainer", "--as", "alice")
	e.must(t, "team", "server", "add", "qa", "--from", "orders", "--as", "bob")

	for _, args := range [][]string{
		{"team", "remove", "qa", "bob"},
		{"team", "server", "add", "qa", "--from", "orders"},
		{"team", "server", "remove", "qa", "orders"},
		{"team", "role", "qa", "mallory", "owner"},
		{"team", "delete", "qa"},
	} {
		if _, errs, code := e.run(t, append(args, "--as", "mallory")...); code != 1 || !strings.Contains(errs, "PERMISSION_DENIED") {
			t.Errorf("mallory: duet %s: exit %d %s", strings.Join(args, " "), code, errs)
		}
	}
	out := e.must(t, "team", "show", "qa", "--as", "carol")
	if !strings.Contains(out, "orders  "+url) || strings.Contains(out, evil) || !strings.Contains(out, "bob (maintainer)") {
		t.Fatalf("team qa after mallory's attempts: %s", out)
	}

	// carol registers from the list, pinned to an address that is not the
	// entry's server: refused, nothing stored.
	if _, errs, code := e.run(t, "team", "register", "qa", "orders", "--url", evil, "--bearer-token-env", "ORDERS_TOKEN", "--as", "carol"); code != 1 || !strings.Contains(errs, "CONFLICT") || !strings.Contains(errs, url) {
		t.Fatalf("register pinned to another server: exit %d %s", code, errs)
	}
	if out := e.must(t, "server", "list", "--as", "carol"); strings.Contains(out, "orders") {
		t.Fatalf("carol has a registration after the refusal: %s", out)
	}

	// The last owner stays; an owner hands over and leaves.
	if _, errs, code := e.run(t, "team", "remove", "qa", "alice", "--as", "alice"); code != 1 || !strings.Contains(errs, "last owner") {
		t.Fatalf("the last owner leaves: exit %d %s", code, errs)
	}
	e.must(t, "team", "role", "qa", "bob", "owner", "--as", "alice")
	e.must(t, "team", "remove", "qa", "alice", "--as", "alice")
	if out := e.must(t, "team", "list", "--as", "bob"); !strings.Contains(out, "bob (owner)") || strings.Contains(out, "alice") {
		t.Fatalf("team list after alice left: %s", out)
	}

	// Sharing with a team that does not exist; a user id "team:x".
	suite := filepath.Join(home, "suite.yaml")
	if err := os.WriteFile(suite, []byte(suiteYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	e.must(t, "apply", "-f", suite, "--as", "bob")
	if _, errs, code := e.run(t, "task", "share", "shop-orders", "--with", "team:ops", "--as", "bob"); code != 1 || !strings.Contains(errs, `no team "ops"`) {
		t.Fatalf("share with team:ops before it exists: exit %d %s", code, errs)
	}
	if _, errs, code := e.run(t, "task", "list", "--as", "team:ops"); code != 2 || !strings.Contains(errs, "team:") {
		t.Fatalf("--as team:ops: exit %d %s", code, errs)
	}
	if _, errs, code := e.run(t, "team", "add", "qa", "team:ops", "--as", "bob"); code != 1 || !strings.Contains(errs, "INVALID_ARGUMENT") {
		t.Fatalf("adding the user team:ops: exit %d %s", code, errs)
	}
	var audit []*duet.AuditRecord
	json.Unmarshal([]byte(e.must(t, "audit", "--json", "--method", "setTeamRole", "--as", "auditor")), &audit)
	if len(audit) != 3 { // bob maintainer, mallory's refusal, bob owner
		t.Fatalf("audit of setTeamRole: %d records", len(audit))
	}
}
