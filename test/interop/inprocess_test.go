package interop_test

import (
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/duet-test/duet/internal/app"
	"github.com/duet-test/duet/internal/compiler"
	"github.com/duet-test/duet/internal/config"
)

// inProcess is the app the duet binary runs, built in this process (for
// what cannot be seen from outside a process: goroutines, the live heap).
type inProcess struct {
	app   *app.App
	cs    *mcp.ClientSession
	calls []call
}

func newInProcess(t *testing.T) *inProcess {
	t.Helper()
	env := map[string]string{"DUET_HOME": t.TempDir(), "DUET_GATEWAY_API_KEYS": gatewayKey, "DUET_LOG_LEVEL": "warn"}
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.Open(t.Context(), cfg, app.Options{Stderr: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	src, err := os.ReadFile(filepath.Join(repoRoot, "examples", "api-smoke.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	suite, err := compiler.CompileSuite(t.Context(), src, "api-smoke.yaml", a.CompilerOptions(t.Context(), "alice"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Store.ApplySuite(t.Context(), "alice", suite)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(a.Handler(app.ServeOptions{}))
	t.Cleanup(srv.Close)
	cs := goConnectHTTP(t, httpTarget{URL: srv.URL + "/mcp/http", Headers: map[string]string{"X-Api-Key": gatewayKey, "SSO-Emp-Id": "alice"}}, nil)
	var cases struct {
		Cases []struct{ ID string } `json:"cases"`
	}
	callJSON(t, cs, "list_test_cases", map[string]any{"taskId": res.Task.ID}, &cases)
	return &inProcess{app: a, cs: cs, calls: []call{
		{"list_test_tasks", map[string]any{}},
		{"get_test_task", map[string]any{"taskId": res.Task.ID}},
		{"list_test_cases", map[string]any{"taskId": res.Task.ID}},
		{"get_test_case", map[string]any{"caseId": cases.Cases[0].ID}},
	}}
}
