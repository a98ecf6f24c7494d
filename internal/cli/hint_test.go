package cli_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/duet-test/duet/internal/sample"
)

// TestNotRegisteredHintPastes (issue 31 point 17): bob runs a task alice
// shared, whose case calls an MCP server bob has not registered. The
// step's MCP_SERVER_NOT_CONFIGURED names a command that works as bob —
// `duet task show TASK --as bob` — and that prints the server's address
// with the `duet server add` line to paste (it used to say "--url URL",
// an address bob cannot see). Pasted, it registers the server for bob.
func TestNotRegisteredHintPastes(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	e := &duetEnv{tr: &transcript{}, vars: map[string]string{
		"DUET_HOME": home, "DUET_MCP_ALLOW_LOOPBACK": "true", "ORDERS_TOKEN": "orders-token-5c1e", "HOME": home, "USER": "someone",
	}}
	url, stop, err := sample.StartOrderServer(t.Context(), "127.0.0.1:0", sample.NewOrders(), "orders-token-5c1e")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	e.must(t, "server", "add", "--as", "alice", "--name", "orders", "--url", url, "--bearer-token-env", "ORDERS_TOKEN")
	suite := filepath.Join(home, "ops.yaml")
	if err := os.WriteFile(suite, []byte(sharedOrdersYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	e.must(t, "apply", "-f", suite, "--as", "alice")

	out, _, code := e.run(t, "run", "order-ops", "--as", "bob")
	hint := regexp.MustCompile("MCP_SERVER_NOT_CONFIGURED: .*`(duet task show [^`]+)`").FindStringSubmatch(out)
	if code != 2 || hint == nil || hint[1] != "duet task show order-ops --as bob" { // a configuration error (exit 2)
		t.Fatalf("bob's run: exit %d, want MCP_SERVER_NOT_CONFIGURED naming duet task show order-ops --as bob:\n%s", code, out)
	}
	shown := e.must(t, strings.Fields(hint[1])[1:]...)
	add := regexp.MustCompile(`duet (server add .*--bearer-token-env) VAR`).FindStringSubmatch(shown)
	if add == nil || !strings.Contains(add[1], "--url "+url) || !strings.Contains(add[1], "--as bob") {
		t.Fatalf("task show for bob: want the server's address and the command that registers it:\n%s", shown)
	}
	e.must(t, append(strings.Fields(add[1]), "ORDERS_TOKEN")...)
	if shown := e.must(t, "task", "show", "order-ops", "--as", "bob"); !strings.Contains(shown, "registered by you as orders") {
		t.Fatalf("task show after pasting: %s", shown)
	}
	if shown := e.must(t, "task", "show", "order-ops", "--as", "alice"); !strings.Contains(shown, "registered by you as orders") || !strings.Contains(shown, url) {
		t.Fatalf("task show for alice: %s", shown)
	}
}

// TestReportLatestWithNoRunsSaysWhatToRun (issue 31 point 17): `duet
// report latest` for a user with no run names a command that works when
// pasted — the apply of a suite while the user has no task, then the run
// of one of their tasks, with the --as it needs — instead of "duet run
// TASK".
func TestReportLatestWithNoRunsSaysWhatToRun(t *testing.T) {
	t.Parallel()
	h := osUserHome(t) // carol by default
	code, _, errOut := h.duet(t.Context(), "report", "latest", "--as", "alice")
	if code != 1 || !strings.Contains(errOut, "NOT_FOUND") || !strings.Contains(errOut, "duet apply -f FILE --as alice") {
		t.Fatalf("report latest with no task: exit %d %s", code, errOut)
	}
	file := filepath.Join(t.TempDir(), "s.yaml")
	os.WriteFile(file, []byte("task: {name: sums}\ncases:\n  - {key: a, title: adds, steps: [{assert: \"1 + 1 == 2\"}]}\n"), 0o600)
	h.must(0, "apply", "-f", file, "--as", "alice")
	code, _, errOut = h.duet(t.Context(), "report", "latest", "--as", "alice")
	m := regexp.MustCompile(`start one: (duet run [^(]+) \(`).FindStringSubmatch(errOut)
	if code != 1 || m == nil || m[1] != "duet run sums --as alice" {
		t.Fatalf("report latest with a task and no run: exit %d %s", code, errOut)
	}
	h.must(0, strings.Fields(m[1])[1:]...)
	h.must(0, "report", "latest", "--as", "alice", "--format", "json")
}
