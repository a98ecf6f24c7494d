package sqlite_test

import (
	"context"
	cryptorand "crypto/rand"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/sqlite"
)

// TestAppendAuditPreparesOutsideItsTransaction: with every connection of
// the pool taken by the audit's own transaction (one connection here), a
// batch of a size never stored before still goes in — its INSERT is not
// prepared on another connection while the write lock is held, which
// waited on connections that wait for that lock (runs stalled until
// busy_timeout). The deadline only turns a deadlock into a failure.
func TestAppendAuditPreparesOutsideItsTransaction(t *testing.T) {
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "duet.db"), &sqlite.Options{MaxOpenConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for _, n := range []int{3, 64 + 5} {
		var recs []*duet.AuditRecord
		for i := range n {
			recs = append(recs, &duet.AuditRecord{Time: time.Now(), TraceID: fmt.Sprint("t", i), CallSource: duet.SourceMCP, Caller: "alice", Method: "tools/call", Outcome: duet.OutcomeOK})
		}
		if err := db.AppendAudit(ctx, recs); err != nil {
			t.Fatalf("a batch of %d: %v", n, err)
		}
	}
}

// BenchmarkAppendAudit measures the audit writer's batches (256 records,
// as audit.Writer sends them under load) into a trail that already holds
// 100,000 records, with the trace ids Duet generates (duet.NewTraceID:
// time first, so the trace index grows at its end) and with random ones
// (an incoming traceparent's: each lands on another page of the index):
//
//	go test -run '^$' -bench AppendAudit -benchtime 200x ./internal/sqlite/
func BenchmarkAppendAudit(b *testing.B) {
	random := func() string {
		var r [16]byte
		cryptorand.Read(r[:])
		return hex.EncodeToString(r[:])
	}
	for _, ids := range []struct {
		name string
		new  func() string
	}{{"generated", duet.NewTraceID}, {"random", random}} {
		b.Run(ids.name, func(b *testing.B) {
			ctx := context.Background()
			db, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "duet.db"), nil)
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			batch := func() []*duet.AuditRecord {
				recs := make([]*duet.AuditRecord, 256)
				for i := range recs {
					recs[i] = &duet.AuditRecord{Time: time.Now(), TraceID: ids.new(), CallSource: duet.SourceMCP, Caller: "alice", Method: "tools/call", Tool: "get_test_task", Outcome: duet.OutcomeOK}
				}
				return recs
			}
			for range 100_000 / 256 {
				if err := db.AppendAudit(ctx, batch()); err != nil {
					b.Fatal(err)
				}
			}
			for b.Loop() {
				if err := db.AppendAudit(ctx, batch()); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/256, "µs/record")
		})
	}
}
