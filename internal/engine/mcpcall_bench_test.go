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

// BenchmarkMCPCallSteps runs a case of 20 mcpCall steps (a real go-sdk
// server on loopback, the real MCP client, SQLite; the client scrubs its
// credentials from every result it returns) and reports the time and the
// process CPU per step.
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
	w := engine.NewWorker(db, engine.New(db, engine.Options{Invoker: c}), engine.WorkerOptions{})
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
	runOnce(w) // warm: the session is open
	pid := os.Getpid()
	var wall, cpu time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c0, t0 := treeCPU(pid), time.Now()
		runOnce(w)
		wall += time.Since(t0)
		cpu += treeCPU(pid) - c0
	}
	b.StopTimer()
	n := float64(b.N * steps)
	b.ReportMetric(float64(wall.Microseconds())/n, "µs/step")
	b.ReportMetric(float64(cpu.Microseconds())/n, "cpu-µs/step")
}
