package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/sqlite"
)

// BenchmarkTransactionWrites measures two writes in transactions, a task
// shared and unshared, each with its ownership check: the statements a
// transaction runs, prepared once (cachedTx):
//
//	go test -run '^$' -bench TransactionWrites ./internal/sqlite/
func BenchmarkTransactionWrites(b *testing.B) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "duet.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	res, err := db.ApplySuite(ctx, "alice", &duet.Suite{Task: duet.Task{Name: "shop"}, Cases: []*duet.Case{{Key: "a", Title: "a", Source: "s", SourceHash: "h", Steps: []duet.Step{{Kind: duet.StepAssert, Assert: &duet.AssertStep{Expr: "true"}}}}}})
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := db.ShareTask(ctx, "alice", res.Task.ID, "bob"); err != nil {
			b.Fatal(err)
		}
		if err := db.UnshareTask(ctx, "alice", res.Task.ID, "bob"); err != nil {
			b.Fatal(err)
		}
	}
}
