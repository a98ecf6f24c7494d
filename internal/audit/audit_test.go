package audit_test

import (
	"context"
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

// away is an audit store whose database is unavailable for its first
// attempts, as during a restart.
type away struct {
	*sqlite.DB
	mu    sync.Mutex
	fails int
}

func (s *away) AppendAudit(ctx context.Context, recs []*duet.AuditRecord) error {
	s.mu.Lock()
	if s.fails > 0 {
		s.fails--
		s.mu.Unlock()
		return duet.Errorf(duet.CodeUnavailable, "database unavailable")
	}
	s.mu.Unlock()
	return s.DB.AppendAudit(ctx, recs)
}

// TestDatabaseAwayLosesNothing: records of calls made while the database
// restarts are stored once it is back.
func TestDatabaseAwayLosesNothing(t *testing.T) {
	t.Parallel()
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "d.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	st := &away{DB: db, fails: 3}
	w := audit.NewWriter(st, 10*time.Millisecond, nil)
	for i := range 50 {
		w.Record(&duet.AuditRecord{Time: time.Now(), TraceID: fmt.Sprint(i), Caller: "u", Method: "tools/call", Outcome: duet.CodeUnavailable})
		time.Sleep(time.Millisecond)
	}
	w.Close()
	recs, _ := db.FindAudit(t.Context(), duet.AuditFilter{Limit: 5000})
	if len(recs) != 50 {
		t.Fatalf("after the database came back: got %d records, want 50", len(recs))
	}
}

// TestCompletesTheRecordOfAChange: a record the change's transaction
// stored (duet.AuditIntent) is completed by the writer — the call's final
// outcome, duration and result size in the same row — not stored twice.
func TestCompletesTheRecordOfAChange(t *testing.T) {
	t.Parallel()
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "d.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	w := audit.NewWriter(db, time.Hour, nil)
	in := duet.NewAuditIntent(duet.AuditRecord{Time: time.Now(), TraceID: "change", CallSource: duet.SourceCLI, Caller: "u", Method: "token.create"})
	if err := db.CreateToken(duet.WithAuditIntent(t.Context(), in), &duet.Token{UserID: "u", Hash: "h"}); err != nil {
		t.Fatal(err)
	}
	w.Record(&duet.AuditRecord{ID: in.Close(), Time: time.Now(), TraceID: "change", CallSource: duet.SourceCLI, Caller: "u", Method: "token.create",
		Outcome: duet.CodeTimeout, DurationUs: 777, ResultBytes: 12})
	w.Close()
	recs, _ := db.FindAudit(t.Context(), duet.AuditFilter{TraceID: "change"})
	if len(recs) != 1 || recs[0].Outcome != duet.CodeTimeout || recs[0].DurationUs != 777 || recs[0].ResultBytes != 12 {
		t.Fatalf("got %+v, want the one record, completed", recs)
	}
}
