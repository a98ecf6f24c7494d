package app_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/app"
	"github.com/duet-test/duet/internal/compiler"
	"github.com/duet-test/duet/internal/config"
	"github.com/duet-test/duet/internal/mcpclient"
	"github.com/duet-test/duet/internal/mcpclient/mcptest"
	"github.com/duet-test/duet/internal/telemetry"
)

// TestCredentialCanary: alice registers a real go-sdk server with a bearer
// token and an API key; its tools echo both back everywhere a server can
// put them — text content, text with JSON escapes, structuredContent
// nested (values, arrays, an object key), an isError result, a JSON-RPC
// error, a log message and a progress notification (mcptest.EchoServer).
// A run of a case that calls them, a post-run action and calls by hand
// over REST and MCP leave the credentials in no stored step or execution,
// no report (HTML, JSON, JUnit), no REST or MCP answer, no log line (debug
// level) and no span of the trace. The MCP client scrubs them from what it
// returns; the engine never reads them.
func TestCredentialCanary(t *testing.T) {
	t.Parallel()
	const bearer, apiKey = "app-CANARY-b7e21f94c0", "app-CANARY-k5d03a8e61"
	canaries := []string{bearer, apiKey}
	ctx := t.Context()
	logs := &syncBuffer{}
	spans := tracetest.NewInMemoryExporter()
	env := map[string]string{"DUET_HOME": t.TempDir(), "DUET_MCP_ALLOW_LOOPBACK": "true", "DUET_LOG_LEVEL": "debug"}
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.Open(ctx, cfg, app.Options{Stderr: logs, Telemetry: telemetry.New(telemetry.Options{Exporter: spans, Sync: true})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	srv := httptest.NewServer(a.Handler(app.ServeOptions{}))
	t.Cleanup(srv.Close)
	tok := patFor(t, a, "alice")

	echo := mcptest.Start(t, mcptest.Streamable(mcptest.EchoServer(), false, false))
	if _, err := a.MCPClient.Register(ctx, mcpclient.Registration{Owner: "alice", Name: "echo", URL: echo,
		Headers: map[string]string{"Authorization": "Bearer " + bearer, "X-Api-Key": apiKey}}); err != nil {
		t.Fatal(err)
	}
	reg, err := a.MCPClient.Sync(ctx, "alice", "echo")
	if err != nil {
		t.Fatal(err)
	}
	src := `task:
  name: canary
  postRun:
    - name: tell
      on: always
      serverKey: ` + reg.ServerKey + `
      tool: fails
      input: {}
cases:
  - key: echoes
    title: a server that echoes
    steps:
      - mcpCall: {serverKey: ` + reg.ServerKey + `, tool: echo, input: {}, saveAs: r}
      - set: {memo: "r.structuredContent.outer.memo", said: "r.text"}
      - mcpCall: {serverKey: ` + reg.ServerKey + `, tool: fails, input: {}, failurePolicy: optional}
      - mcpCall: {serverKey: ` + reg.ServerKey + `, tool: rejects, input: {}}
`
	suite, err := compiler.CompileSuite(ctx, []byte(src), "canary.yaml", a.CompilerOptions(ctx, "alice"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Store.ApplySuite(ctx, "alice", suite)
	if err != nil {
		t.Fatal(err)
	}
	c, err := a.Store.FindCaseByID(ctx, "alice", res.Cases[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	run := &duet.Run{TaskID: res.Task.ID, TriggeredBy: "alice", CallSource: duet.SourceCLI, TraceID: duet.NewTraceID()}
	x := &duet.Execution{CaseID: c.ID, CaseKey: c.Key, CaseTitle: c.Title, CaseVersion: c.Version, Steps: c.Steps}
	if _, _, err := a.Store.CreateRun(ctx, duet.StartRunParams{Run: run, Executions: []*duet.Execution{x}}); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if ok, err := a.Worker.ExecuteRun(wctx, run.ID); !ok || err != nil {
		t.Fatalf("ExecuteRun: %v, %v", ok, err)
	}

	// Where a credential could end up, by name.
	seen := map[string]string{}
	final, err := a.Store.FindRunByID(ctx, "alice", run.ID)
	if err != nil {
		t.Fatal(err)
	}
	execs, err := a.Store.FindExecutions(ctx, run.ID)
	if err != nil || len(execs) != 1 {
		t.Fatalf("executions: %v %v", execs, err)
	}
	stored, _ := json.Marshal(map[string]any{"run": final, "executions": execs})
	seen["stored run and steps"] = string(stored)
	if xe := execs[0]; xe.Status != duet.StatusFailed || len(xe.Results) != 4 || xe.Results[0].Status != duet.StatusPassed ||
		xe.Results[2].ErrorCode != duet.CodeMCPToolError || xe.Results[3].ErrorCode != duet.CodeMCPToolError {
		t.Fatalf("the case did not run as planned:\n%s", stored)
	}
	if !strings.Contains(string(stored), "[redacted]") || !strings.Contains(string(stored), "nothing secret here") {
		t.Errorf("the echoes were not kept masked:\n%s", stored)
	}
	get := func(path string) string {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
		}
		return string(b)
	}
	post := func(path, body string) string {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	for _, f := range []string{"html", "json", "junit"} {
		seen["report "+f] = get("/api/v1/runs/" + run.ID + "/report?format=" + f)
	}
	seen["REST getRun"] = get("/api/v1/runs/" + run.ID)
	seen["REST getExecution"] = get("/api/v1/executions/" + execs[0].ID)
	for _, tool := range []string{"echo", "fails", "rejects"} {
		seen["REST callTool "+tool] = post("/api/v1/servers/"+reg.ServerKey+"/tools/"+tool+"/call", `{"arguments":{}}`)
	}
	if !strings.Contains(seen["REST callTool echo"], "nothing secret here") {
		t.Fatalf("callTool echo: %s", seen["REST callTool echo"])
	}
	_, seen["MCP get_execution_result"] = call(t, srv.URL, tok, "tools/call", `{"name":"get_execution_result","arguments":{"executionId":"`+execs[0].ID+`"}}`)
	_, seen["MCP report.json"] = call(t, srv.URL, tok, "resources/read", `{"uri":"duet://runs/`+run.ID+`/report.json"}`)
	a.MCPClient.Flush()
	a.Audit.Close()
	seen["log"] = logs.String()
	sp, _ := json.Marshal(spans.GetSpans().Snapshots())
	seen["trace"] = string(sp)
	if len(spans.GetSpans()) == 0 {
		t.Fatal("no span was recorded, the test proves little")
	}
	for where, text := range seen {
		for _, s := range canaries {
			if i := strings.Index(text, s); i >= 0 {
				t.Errorf("%s holds the credential %s: …%s…", where, s, text[max(0, i-200):min(len(text), i+100)])
			}
		}
	}
}
