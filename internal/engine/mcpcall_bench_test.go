package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/engine"
	"github.com/duet-test/duet/internal/mcpclient"
	"github.com/duet-test/duet/internal/sqlite"
)

// secretsEveryStep is the MCP client without its CredentialGeneration: the
// engine then reads the executor's credentials before and after every
// mcpCall step, as it did before it could tell when they changed.
type secretsEveryStep struct{ c *mcpclient.Client }

func (s secretsEveryStep) Invoke(ctx context.Context, req duet.InvokeRequest) (*duet.ToolResult, error) {
	return s.c.Invoke(ctx, req)
}

func (s secretsEveryStep) Secrets(ctx context.Context, executor, serverKey string) ([]string, error) {
	return s.c.Secrets(ctx, executor, serverKey)
}

// BenchmarkMCPCallSteps runs a case of 20 mcpCall steps (a real go-sdk
// server on loopback, the real MCP client, SQLite) with the credentials
// read once per session (per-session) and before and after every step
// (every-step), alternately in one loop so that both see the same load,
// and reports the time and the process CPU per step of each and their
// ratio.
//
//	go test ./internal/engine/ -run '^$' -bench MCPCallSteps -benchtime 100x
func BenchmarkMCPCallSteps(b *testing.B) {
	const steps = 20
	db, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "duet.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	c := newMCPClient(b, db, keyring(b))
	url := whoamiServer(b, nil, nil)
	if _, err := c.Register(b.Context(), mcpclient.Registration{Owner: "alice", Name: "who", URL: url,
		Headers: map[string]string{"Authorization": "Bearer bench-7f3a9c21"}}); err != nil {
		b.Fatal(err)
	}
	reg, err := c.Sync(b.Context(), "alice", "who")
	if err != nil {
		b.Fatal(err)
	}
	task := applyB(b, db, whoamiSuite(reg.ServerKey, steps))
	workers := map[string]*engine.Worker{
		"per-session": engine.NewWorker(db, engine.New(db, engine.Options{Invoker: c}), engine.WorkerOptions{}),
		"every-step":  engine.NewWorker(db, engine.New(db, engine.Options{Invoker: secretsEveryStep{c}}), engine.WorkerOptions{}),
	}
	runOnce := func(w *engine.Worker) {
		run := createRun(b, db, task)
		if ok, err := w.ExecuteRun(b.Context(), run.ID); !ok || err != nil {
			b.Fatalf("ExecuteRun: %v, %v", ok, err)
		}
		final, err := db.FindRunByID(b.Context(), "", run.ID)
		if err != nil || final.Status != duet.StatusPassed {
			b.Fatalf("run: got %v, %v; want passed", final.Status, err)
		}
	}
	order := []string{"every-step", "per-session"}
	for _, name := range order {
		runOnce(workers[name]) // warm: the session is open
	}
	wall, cpu := map[string]time.Duration{}, map[string]time.Duration{}
	pid := os.Getpid()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, name := range order {
			c0, t0 := treeCPU(pid), time.Now()
			runOnce(workers[name])
			wall[name] += time.Since(t0)
			cpu[name] += treeCPU(pid) - c0
		}
	}
	b.StopTimer()
	n := float64(b.N * steps)
	for _, name := range order {
		b.ReportMetric(float64(wall[name].Microseconds())/n, name+"-µs/step")
		b.ReportMetric(float64(cpu[name].Microseconds())/n, name+"-cpu-µs/step")
	}
	b.ReportMetric(float64(wall["per-session"])/float64(wall["every-step"]), "per-session/every-step")
	if cpu["every-step"] > 0 {
		b.ReportMetric(float64(cpu["per-session"])/float64(cpu["every-step"]), "per-session/every-step-cpu")
	}
}
