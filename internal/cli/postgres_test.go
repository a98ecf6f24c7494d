package cli_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/cli"
	"github.com/duet-test/duet/internal/postgres/pgtest"
	"github.com/duet-test/duet/internal/sample"
)

func newMasterKey() string {
	var k [32]byte
	rand.Read(k[:])
	return base64.StdEncoding.EncodeToString(k[:])
}

// TestEveryCommandOnPostgres drives the command line against PostgreSQL
// as against SQLite: migrations, the MCP registry with a sealed
// credential, suites, runs, reports, tokens, assets, audit, the vault. The
// database password in DUET_DATABASE_URL appears in no output.
func TestEveryCommandOnPostgres(t *testing.T) {
	t.Parallel()
	const pw = "pw-CANARY-5d1c09"
	dbURL := strings.Replace(pgtest.URL(t), "postgres@", "postgres:"+pw+"@", 1) // trust auth: never sent
	home := t.TempDir()
	e := &duetEnv{tr: &transcript{}, vars: map[string]string{
		"DUET_DATABASE_URL": dbURL, "DUET_MASTER_KEY": newMasterKey(), "DUET_HOME": home,
		"DUET_MCP_ALLOW_LOOPBACK": "true", "DUET_LOG_LEVEL": "debug", "ORDERS_TOKEN": canary, "HOME": home, "DUET_ADMINS": "auditor",
	}}
	latest, count := postgresMigrations(t)
	out, _, code := e.run(t, "migrate", "status")
	if code != 3 || !strings.Contains(out, "schema version: 0") || !strings.Contains(out, fmt.Sprintf("%d pending", count)) {
		t.Fatalf("migrate status of an empty database: %s", out)
	}
	if out := e.must(t, "migrate", "up"); strings.Count(out, "applied ") != count {
		t.Fatalf("migrate up: %s", out)
	}
	if out := e.must(t, "migrate", "status", "--json"); !strings.Contains(out, fmt.Sprintf(`"version": %d`, latest)) || strings.Contains(out, `"applied": false`) {
		t.Fatalf("migrate status after up: %s", out)
	}
	if out := e.must(t, "migrate", "up"); !strings.Contains(out, "the schema is current") {
		t.Fatalf("migrate up again: %s", out)
	}

	orders := sample.NewOrders()
	url, stop, err := sample.StartOrderServer(t.Context(), "127.0.0.1:0", orders, canary)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	e.must(t, "server", "add", "--as", "alice", "--name", "orders", "--url", url, "--bearer-token-env", "ORDERS_TOKEN")
	e.must(t, "server", "list", "--as", "alice")
	e.must(t, "server", "show", "orders", "--as", "alice", "--json")
	e.must(t, "server", "sync", "orders", "--as", "alice")
	if out := e.must(t, "server", "call", "--as", "alice", "orders", "query_order", "--args", `{"orderId":"A1002"}`); !strings.Contains(out, "A1002") {
		t.Fatalf("server call: %s", out)
	}

	suite := filepath.Join(home, "suite.yaml")
	if err := os.WriteFile(suite, []byte(suiteYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	e.must(t, "apply", "-f", suite, "--as", "alice")
	e.must(t, "task", "list", "--as", "alice")
	e.must(t, "task", "show", "shop-orders", "--as", "alice")
	e.must(t, "task", "share", "shop-orders", "--with", "bob", "--as", "alice")
	if out := e.must(t, "task", "list", "--as", "bob"); !strings.Contains(out, "shop-orders") {
		t.Fatalf("bob's tasks after sharing: %s", out)
	}
	e.must(t, "task", "unshare", "shop-orders", "--with", "bob", "--as", "alice")

	var run duet.Run
	if err := json.Unmarshal([]byte(e.must(t, "run", "shop-orders", "--as", "alice", "--json")), &run); err != nil || run.Status != duet.StatusPassed {
		t.Fatalf("run on PostgreSQL: %v %+v", err, run)
	}
	e.must(t, "run", "list", "--as", "alice")
	e.must(t, "run", "show", run.ID, "--as", "alice")
	var rep struct {
		Cases []struct {
			Steps []any `json:"steps"`
		} `json:"cases"`
	}
	if err := json.Unmarshal([]byte(e.must(t, "report", run.ID, "--as", "alice", "--format", "json")), &rep); err != nil || len(rep.Cases) != 2 {
		t.Fatalf("report: %v %+v", err, rep)
	}
	if out := e.must(t, "server", "invocations", "--json", "--as", "auditor"); !strings.Contains(out, `"source": "engine"`) {
		t.Fatalf("invocations: %s", out)
	}

	e.must(t, "token", "create", "--user", "alice", "--name", "ci")
	toks := e.must(t, "token", "list", "--user", "alice")
	id := strings.Fields(strings.Split(toks, "\n")[1])[0]
	e.must(t, "token", "revoke", id, "--user", "alice")
	e.must(t, "asset", "add", "rule", "no-sleeps", "--as", "alice", "--text", "Wait for a condition, never a fixed time.", "--share-with", "*")
	if out := e.must(t, "asset", "list", "--as", "bob"); !strings.Contains(out, "no-sleeps") {
		t.Fatalf("bob's assets: %s", out)
	}
	e.must(t, "asset", "show", "rule", "alice/no-sleeps", "--as", "bob")
	e.must(t, "asset", "rm", "rule", "no-sleeps", "--as", "alice")
	e.must(t, "generate", "list", "--as", "alice")
	if out := e.must(t, "audit", "--json", "--as", "auditor"); !strings.Contains(out, "applySuite") {
		t.Fatalf("audit: %s", out)
	}
	e.must(t, "vault", "rotate", "--rewrap-only")
	if out := e.must(t, "config"); !regexp.MustCompile(`DUET_DATABASE_URL +\(set: PostgreSQL\) +environment`).MatchString(out) {
		t.Fatalf("config: %s", out)
	}
	e.must(t, "server", "remove", "orders", "--as", "alice")

	if strings.Contains(e.tr.all.String(), pw) {
		t.Fatal("the database password appears in the commands' output")
	}
	if strings.Contains(e.tr.all.String(), canary) {
		t.Fatal("the MCP server's token appears in the commands' output")
	}
}

// TestInstanceRefusesAnotherMasterKey: a serve or worker whose master key
// cannot open the stored credentials does not start (exit 2, one line
// naming what to set); with the right key it runs. On both engines.
func TestInstanceRefusesAnotherMasterKey(t *testing.T) {
	t.Parallel()
	engines := map[string]func(*testing.T) map[string]string{
		"sqlite":   func(t *testing.T) map[string]string { return map[string]string{} },
		"postgres": func(t *testing.T) map[string]string { return map[string]string{"DUET_DATABASE_URL": pgtest.URL(t)} },
	}
	for name, engine := range engines {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			home := t.TempDir()
			vars := engine(t)
			vars["DUET_HOME"], vars["HOME"], vars["DUET_MCP_ALLOW_LOOPBACK"] = home, home, "true"
			vars["DUET_MASTER_KEY"], vars["ORDERS_TOKEN"], vars["DUET_ADDR"] = newMasterKey(), canary, "127.0.0.1:0"
			e := &duetEnv{tr: &transcript{}, vars: vars}
			url, stop, err := sample.StartOrderServer(t.Context(), "127.0.0.1:0", sample.NewOrders(), canary)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(stop)
			e.must(t, "server", "add", "--as", "alice", "--name", "orders", "--url", url, "--bearer-token-env", "ORDERS_TOKEN")

			right := vars["DUET_MASTER_KEY"]
			vars["DUET_MASTER_KEY"] = newMasterKey()
			for _, cmd := range []string{"worker", "serve"} {
				ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
				code, errs := runFor(ctx, e, cmd)
				cancel()
				if code != 2 || !strings.Contains(errs, "cannot open 1 of the 1 MCP credentials") || !strings.Contains(errs, "DUET_MASTER_KEY") {
					t.Fatalf("%s with another master key: exit %d: %s", cmd, code, errs)
				}
			}
			vars["DUET_MASTER_KEY"] = right
			ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
			defer cancel()
			if code, errs := runFor(ctx, e, "worker"); code != 0 {
				t.Fatalf("worker with the right key: exit %d: %s", code, errs)
			}
		})
	}
}

// runFor runs a long-lived command until it exits or ctx ends (then it
// stops as on SIGTERM) and returns its exit code and stderr.
func runFor(ctx context.Context, e *duetEnv, args ...string) (int, string) {
	var out, errb syncBuffer
	code := cli.Main(ctx, args, cli.Env{
		Getenv: func(k string) string { return e.vars[k] },
		Stdin:  io.NopCloser(strings.NewReader("")),
		Stdout: &out, Stderr: &errb,
	})
	return code, errb.String()
}

// postgresMigrations returns the highest version and the number of the
// PostgreSQL migrations this build embeds.
func postgresMigrations(t *testing.T) (latest, count int) {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join("..", "postgres", "migrations"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		var v int
		if _, err := fmt.Sscanf(e.Name(), "%05d_", &v); err == nil && strings.HasSuffix(e.Name(), ".sql") {
			count++
			latest = max(latest, v)
		}
	}
	return latest, count
}
