package sqlite_test

import (
	"context"
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
