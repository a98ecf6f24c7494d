package audit_test

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/audit"
	"github.com/duet-test/duet/internal/sqlite"
)

func TestNothingLost(t *testing.T) {
	t.Parallel()
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "d.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	w := audit.NewWriter(db, time.Hour, nil) // only size and Flush/Close store
	var wg sync.WaitGroup
	for i := range 1000 {
		wg.Go(func() {
			w.Record(&duet.AuditRecord{Time: time.Now(), TraceID: fmt.Sprint(i), Caller: "u", Method: "tools/call", Outcome: duet.OutcomeOK})
		})
	}
	wg.Wait()
	w.Flush()
	recs, _ := db.FindAudit(t.Context(), duet.AuditFilter{Limit: 5000})
	if len(recs) != 1000 {
		t.Fatalf("after Flush: got %d records, want 1000", len(recs))
	}
	w.Record(&duet.AuditRecord{Time: time.Now(), TraceID: "last", Caller: "u", Method: "m", Outcome: duet.OutcomeOK})
	w.Close()
	w.Record(&duet.AuditRecord{Time: time.Now(), TraceID: "after-close", Caller: "u", Method: "m", Outcome: duet.OutcomeOK})
	recs, _ = db.FindAudit(t.Context(), duet.AuditFilter{Limit: 5000})
	if len(recs) != 1002 {
		t.Fatalf("after Close: got %d records, want 1002", len(recs))
	}
}
