package pgtrips_test

import (
	"strings"
	"testing"

	"github.com/duet-test/duet/internal/app/pgtrips"
	"github.com/duet-test/duet/internal/postgres/pgtest"
)

// TestRoundTripsPerTool keeps the round trips each catalog tool makes to
// PostgreSQL within its budget — a read: one for the identity, one for
// the data; start_test_run: four — the statements of each call within
// theirs (a read's data: one statement, not a batch), and the reads'
// audit records batched, so that a change that adds one cannot land
// unnoticed.
func TestRoundTripsPerTool(t *testing.T) {
	res, err := pgtrips.Measure(t.Context(), pgtest.URL(t), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", res.Table())
	for _, r := range res.Rows {
		if r.Total > r.Budget {
			t.Errorf("%s: %d round trips (identity %d, call %d), the budget is %d:\n  %s", r.Tool, r.Total, r.Identity, r.Call, r.Budget, strings.Join(r.Statements, "\n  "))
		}
		if r.CallStatements > r.StatementBudget {
			t.Errorf("%s: the call made %d statements, the budget is %d:\n  %s", r.Tool, r.CallStatements, r.StatementBudget, strings.Join(r.Statements, "\n  "))
		}
	}
	if len(res.Rows) < 7 {
		t.Errorf("measured %d tools, want the 7 of the catalog", len(res.Rows))
	}
	// 50 reads' records: a few batches, never one round trip a record.
	// How many batches depends on how long the 50 calls took (the writer
	// stores every 100 ms): 6 under -race at a load average of 50, so
	// the test asks only for fewer round trips than records.
	if res.AuditRoundTrips >= res.AuditRecords {
		t.Errorf("the audit records of %d reads took %d round trips: they are not batched", res.AuditRecords, res.AuditRoundTrips)
	}
}
