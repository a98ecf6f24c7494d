package app_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/app"
	"github.com/duet-test/duet/internal/auth"
	"github.com/duet-test/duet/internal/compiler"
)

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// TestReportResources reads a run's report as an MCP resource over
// Streamable HTTP, as the run's owner and as someone else.
func TestReportResources(t *testing.T) {
	t.Parallel()
	a := openAppEnv(t, map[string]string{"DUET_LOG_LEVEL": "error", "DUET_MAX_RESULT_BYTES": "8192"})
	ctx := t.Context()
	suite, err := compiler.CompileSuite(ctx, []byte("task: {name: plain}\ncases:\n  - title: sums\n    steps:\n      - set: {x: '1 + 1'}\n      - assert: x == 2\n"),
		"s.yaml", a.CompilerOptions(ctx, "alice"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Store.ApplySuite(ctx, "alice", suite)
	if err != nil {
		t.Fatal(err)
	}
	cases, _, _, _ := a.Store.FindCases(ctx, duet.CaseFilter{TaskID: res.Task.ID})
	run := &duet.Run{TaskID: res.Task.ID, TriggeredBy: "alice", CallSource: duet.SourceCLI}
	x := &duet.Execution{CaseID: cases[0].ID, CaseKey: cases[0].Key, CaseTitle: cases[0].Title, CaseVersion: cases[0].Version, Steps: cases[0].Steps}
	if _, _, err := a.Store.CreateRun(ctx, duet.StartRunParams{Run: run, Executions: []*duet.Execution{x}}); err != nil {
		t.Fatal(err)
	}
	if ok, err := a.Worker.ExecuteRun(ctx, run.ID); !ok || err != nil {
		t.Fatalf("ExecuteRun: %v %v", ok, err)
	}

	srv := httptest.NewServer(a.Handler(app.ServeOptions{}))
	t.Cleanup(srv.Close)
	connect := func(user string) *mcp.ClientSession {
		plain, hash := auth.NewToken()
		if err := a.Store.CreateToken(ctx, &duet.Token{UserID: user, Name: "t", Hash: hash}); err != nil {
			t.Fatal(err)
		}
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "0"}, nil).Connect(cctx, &mcp.StreamableClientTransport{
			Endpoint: srv.URL + "/mcp/http", HTTPClient: &http.Client{Transport: bearer{plain}}, MaxRetries: -1}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	uri := "duet://runs/" + run.ID + "/report.json"
	got, err := connect("alice").ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	if err != nil || len(got.Contents) != 1 || !strings.Contains(got.Contents[0].Text, `"status": "passed"`) {
		t.Fatalf("alice reads %s: got %+v, %v", uri, got, err)
	}
	if _, err := connect("bob").ReadResource(ctx, &mcp.ReadResourceParams{URI: uri}); err == nil {
		t.Errorf("bob reads alice's report: got no error, want resource not found")
	}
	// The HTML report (styles and all) is over this app's result limit: it
	// is stopped while it is written, not built whole and then refused.
	html := "duet://runs/" + run.ID + "/report.html"
	if _, err := connect("alice").ReadResource(ctx, &mcp.ReadResourceParams{URI: html}); err == nil || !strings.Contains(err.Error(), "while it was being written") {
		t.Errorf("alice reads %s over the result limit: got %v, want TOO_LARGE stopped while written", html, err)
	}
}
