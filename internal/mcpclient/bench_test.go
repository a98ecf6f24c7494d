package mcpclient_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/mcpclient/mcptest"
)

// BenchmarkInvokeOverhead measures Invoke against a direct go-sdk client
// call of the same tool on the same loopback server, alternating the two in
// one loop so that both see the same machine load. It reports both
// latencies and their ratio (invoke/direct), and the CPU the process spent
// during each (client and server side: the calls run one at a time) and
// that ratio (invoke/direct-cpu), which a contended machine disturbs less
// than wall time. Invoke adds the registry and catalog lookup (served from
// the read cache after one freshness check on SQLite), the session cache,
// the observer that keeps the raw reply, and the queued invocation record.
//
//	go test ./internal/mcpclient/ -run '^$' -bench InvokeOverhead -benchtime 3000x
func BenchmarkInvokeOverhead(b *testing.B) {
	url := mcptest.Start(b, mcptest.Streamable(mcptest.NewServer("bench", nil), false, true)) + "/mcp"
	e := newEnv(b)
	reg := e.register(b, "alice", "bench", url, map[string]string{"Authorization": "Bearer bench-token"})

	direct := mcp.NewClient(&mcp.Implementation{Name: "direct", Version: "1"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
	cs, err := direct.Connect(b.Context(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{}}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	args := map[string]any{"a": 1, "b": 2}
	req := duet.InvokeRequest{Executor: "alice", ServerKey: reg.ServerKey, Tool: "add", Arguments: args, Source: duet.SourceAgent}
	// Warm both paths (connections, sessions).
	for range 20 {
		if _, err := cs.CallTool(b.Context(), &mcp.CallToolParams{Name: "add", Arguments: args}); err != nil {
			b.Fatal(err)
		}
		if _, err := e.c.Invoke(b.Context(), req); err != nil {
			b.Fatal(err)
		}
	}
	var directTime, invokeTime, directCPU, invokeCPU time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c0, t0 := processCPU(), time.Now()
		if _, err := cs.CallTool(b.Context(), &mcp.CallToolParams{Name: "add", Arguments: args}); err != nil {
			b.Fatal(err)
		}
		c1, t1 := processCPU(), time.Now()
		if _, err := e.c.Invoke(b.Context(), req); err != nil {
			b.Fatal(err)
		}
		directTime += t1.Sub(t0)
		invokeTime += time.Since(t1)
		directCPU += c1 - c0
		invokeCPU += processCPU() - c1
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(directTime.Nanoseconds())/n, "direct-ns/call")
	b.ReportMetric(float64(invokeTime.Nanoseconds())/n, "invoke-ns/call")
	b.ReportMetric(float64(invokeTime)/float64(directTime), "invoke/direct")
	if directCPU > 0 {
		b.ReportMetric(float64(directCPU.Nanoseconds())/n, "direct-cpu-ns/call")
		b.ReportMetric(float64(invokeCPU.Nanoseconds())/n, "invoke-cpu-ns/call")
		b.ReportMetric(float64(invokeCPU)/float64(directCPU), "invoke/direct-cpu")
	}
	e.c.Flush()
}
