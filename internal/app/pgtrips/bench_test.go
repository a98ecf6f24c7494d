package pgtrips_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/app"
	"github.com/duet-test/duet/internal/catalog"
	"github.com/duet-test/duet/internal/config"
	"github.com/duet-test/duet/internal/postgres"
	"github.com/duet-test/duet/internal/postgres/pgtest"
)

// BenchmarkGetTask is a governed get_test_task through the catalog, in
// process, on each engine: Duet's own work per call (go test -bench
// GetTask -cpuprofile shows where it goes). On PostgreSQL it reports the
// CPU its backends spent per call too (backend-µs/op, read from /proc when
// the server runs on this machine), the audit writer's flushes included.
func BenchmarkGetTask(b *testing.B) {
	for _, engine := range []string{"sqlite", "postgres"} {
		b.Run(engine, func(b *testing.B) {
			home := b.TempDir()
			env := map[string]string{"DUET_HOME": home, "DUET_WORKERS": "0", "DUET_LOG_LEVEL": "error", "DUET_MAX_PER_CALLER": "1024", "DUET_MAX_CONCURRENT": "1024"}
			var backends *backendCPU
			if engine == "postgres" {
				u := pgtest.URL(b)
				u, backends = newBackendCPU(b, u)
				env["DUET_DATABASE_URL"] = u
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
			call := func() {
				r, err := a.Catalog.Call(b.Context(), catalog.Request{Caller: duet.Caller{UserID: "alice", Source: duet.SourceMCP}, Tool: catalog.ToolGetTask, Args: args})
				if err != nil || r.IsError {
					b.Fatalf("%v %+v", err, r)
				}
			}
			for range 50 { // warm: every connection prepared
				call()
			}
			a.Audit.Flush()
			backends.start()
			cpu0 := processCPU()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					call()
				}
			})
			a.Audit.Flush()
			b.StopTimer()
			b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/float64(b.N), "duet-µs/op")
			backends.report(b)
		})
	}
}

// BenchmarkFindToken is the lookup every request with a personal token
// makes, 16 callers at a time per core: coalesced (the default, lookups
// that arrive while others are in flight read in one statement) and each
// alone (ReadLanes -1). It reports this process's CPU per lookup and its
// backends'.
func BenchmarkFindToken(b *testing.B) {
	for _, lanes := range []int{0, -1} {
		name := map[int]string{0: "coalesced", -1: "alone"}[lanes]
		b.Run(name, func(b *testing.B) {
			u, backends := newBackendCPU(b, pgtest.URL(b))
			db, err := postgres.Open(b.Context(), u, &postgres.Options{ReadLanes: lanes})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { db.Close() })
			tok := &duet.Token{UserID: "alice", Name: "bench", Hash: duet.NewID("hash")}
			if err := db.CreateToken(b.Context(), tok); err != nil {
				b.Fatal(err)
			}
			for range 50 {
				if _, err := db.FindTokenByHash(b.Context(), tok.Hash); err != nil {
					b.Fatal(err)
				}
			}
			backends.start()
			cpu0 := processCPU()
			b.SetParallelism(16)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := db.FindTokenByHash(b.Context(), tok.Hash); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/float64(b.N), "duet-µs/op")
			backends.report(b)
		})
	}
}

// backendCPU measures the CPU time of the PostgreSQL backends serving the
// connections of one URL (those with its application_name), from /proc:
// the server must run on this machine (else it reports nothing).
type backendCPU struct {
	base, app string
	at        map[int]time.Duration
}

// newBackendCPU returns u with an application_name of its own and a
// backendCPU for it.
func newBackendCPU(b *testing.B, u string) (string, *backendCPU) {
	var r [6]byte
	rand.Read(r[:])
	app := "bench_" + hex.EncodeToString(r[:])
	return pgtest.WithParam(u, "application_name", app), &backendCPU{base: pgtest.BaseURL(b), app: app}
}

// read returns the CPU time of each backend of the URL.
func (c *backendCPU) read(ctx context.Context) map[int]time.Duration {
	conn, err := pgx.Connect(ctx, c.base)
	if err != nil {
		return nil
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE application_name = $1`, c.app)
	if err != nil {
		return nil
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		return nil
	}
	out := map[int]time.Duration{}
	for _, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return nil // not on this machine
		}
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
		ut, _ := strconv.Atoi(f[11])
		st, _ := strconv.Atoi(f[12])
		out[pid] = time.Duration(ut+st) * time.Second / 100 // USER_HZ
	}
	return out
}

func (c *backendCPU) start() {
	if c != nil {
		c.at = c.read(context.Background())
	}
}

// report adds backend-µs/op: the backends' CPU since start per operation
// (a backend that connected since counts from its start).
func (c *backendCPU) report(b *testing.B) {
	if c == nil || c.at == nil {
		return
	}
	var d time.Duration
	for pid, t := range c.read(context.Background()) {
		d += t - c.at[pid]
	}
	b.ReportMetric(float64(d.Microseconds())/float64(b.N), "backend-µs/op")
}

// processCPU returns the CPU time of this process (user and system).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
