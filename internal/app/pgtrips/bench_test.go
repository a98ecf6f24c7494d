package pgtrips_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"testing"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/app"
	"github.com/duet-test/duet/internal/catalog"
	"github.com/duet-test/duet/internal/config"
	"github.com/duet-test/duet/internal/postgres/pgtest"
)

// BenchmarkGetTask is a governed get_test_task through the catalog, in
// process, on each engine: Duet's own work per call (go test -bench
// GetTask -cpuprofile shows where it goes).
func BenchmarkGetTask(b *testing.B) {
	for _, engine := range []string{"sqlite", "postgres"} {
		b.Run(engine, func(b *testing.B) {
			home := b.TempDir()
			env := map[string]string{"DUET_HOME": home, "DUET_WORKERS": "0", "DUET_LOG_LEVEL": "error", "DUET_MAX_PER_CALLER": "1024", "DUET_MAX_CONCURRENT": "1024"}
			if engine == "postgres" {
				env["DUET_DATABASE_URL"] = pgtest.URL(b)
				env["DUET_MASTER_KEY"] = base64.StdEncoding.EncodeToString(make([]byte, 32))
				env["DUET_ARTIFACT_DIR"] = filepath.Join(home, "artifacts")
			}
			cfg, err := config.Load(func(k string) string { return env[k] })
			if err != nil {
				b.Fatal(err)
			}
			a, err := app.Open(b.Context(), cfg, app.Options{Stderr: io.Discard})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(a.Close)
			su := &duet.Suite{Task: duet.Task{Name: "bench", BaseURL: "http://127.0.0.1:1"}}
			su.Cases = append(su.Cases, &duet.Case{Key: "a", Title: "a", Source: "a", SourceHash: "a",
				Steps: []duet.Step{{Kind: duet.StepAssert, Name: "true", Assert: &duet.AssertStep{Expr: "true"}}}})
			res, err := a.Store.ApplySuite(b.Context(), "alice", su)
			if err != nil {
				b.Fatal(err)
			}
			args := json.RawMessage(fmt.Sprintf(`{"taskId":%q}`, res.Task.ID))
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					r, err := a.Catalog.Call(b.Context(), catalog.Request{Caller: duet.Caller{UserID: "alice", Source: duet.SourceMCP}, Tool: catalog.ToolGetTask, Args: args})
					if err != nil || r.IsError {
						b.Fatalf("%v %+v", err, r)
					}
				}
			})
		})
	}
}
