package sqlite_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/sqlite"
)

// BenchmarkTaskReads measures get_test_task's three reads (the task as its
// viewer sees it, its case count, its latest run) with the read cache
// (one freshness check for the three, in a duet.ReadScope) and without it
// (a change between every iteration invalidates the cache, so each read
// goes to SQLite):
//
//	go test -run '^$' -bench TaskReads ./internal/sqlite/
func BenchmarkTaskReads(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background()) // a request's context: cancellable
	defer cancel()
	db, id := openShop(ctx, b)
	reads := func(b *testing.B) {
		sc := duet.WithReadScope(ctx)
		if _, err := db.FindTaskByID(sc, "alice", id); err != nil {
			b.Fatal(err)
		}
		if _, err := db.CountCases(sc, id); err != nil {
			b.Fatal(err)
		}
		if _, _, err := db.FindRuns(sc, duet.RunFilter{Viewer: "alice", TaskID: id, Limit: 1}); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("cached", func(b *testing.B) {
		for b.Loop() {
			reads(b)
		}
	})
	b.Run("invalidated", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			b.StopTimer()
			if err := db.ShareTask(ctx, "alice", id, "bob"); err != nil {
				b.Fatal(err)
			}
			if err := db.UnshareTask(ctx, "alice", id, "bob"); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			reads(b)
		}
	})
}

// BenchmarkRegistryLookup measures invoke()'s registry lookup
// (FindMCPServerTool: the registration and the archived tool) served from
// the read cache after one freshness check, and read from SQLite (a change
// between every iteration invalidates the cache):
//
//	go test -run '^$' -bench RegistryLookup ./internal/sqlite/
func BenchmarkRegistryLookup(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	db, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "duet.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	s := &duet.MCPServer{Owner: "alice", Name: "orders", URL: "https://orders.example/mcp", ServerKey: "mcp_orders_0badcafe"}
	if err := db.CreateMCPServer(ctx, s, nil); err != nil {
		b.Fatal(err)
	}
	tool := &duet.MCPTool{Name: "add", Description: "adds", InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}}}`),
		Annotations: json.RawMessage(`{"readOnlyHint":true}`)}
	cat := &duet.MCPCatalog{Transport: duet.TransportStreamableHTTP, Hash: "h", SyncedAt: time.Now(), Tools: []*duet.MCPTool{tool}}
	if err := db.SaveMCPCatalog(ctx, s.ID, cat); err != nil {
		b.Fatal(err)
	}
	lookup := func(b *testing.B) {
		if _, tl, err := db.FindMCPServerTool(ctx, "alice", s.ServerKey, "add"); err != nil || tl == nil {
			b.Fatal(tl, err)
		}
	}
	b.Run("cached", func(b *testing.B) {
		for b.Loop() {
			lookup(b)
		}
	})
	b.Run("invalidated", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			if _, err := db.SQL().ExecContext(ctx, `UPDATE cache_epoch SET n = n + 1 WHERE id = 1`); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			lookup(b)
		}
	})
}

// openShop opens a database in a temporary directory, closed when b ends,
// with alice's task of one case; it returns the task's id.
func openShop(ctx context.Context, b *testing.B) (*sqlite.DB, string) {
	db, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "duet.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	res, err := db.ApplySuite(ctx, "alice", &duet.Suite{Task: duet.Task{Name: "shop"}, Cases: []*duet.Case{{Key: "a", Title: "a", Source: "s", SourceHash: "h", Steps: []duet.Step{{Kind: duet.StepAssert, Assert: &duet.AssertStep{Expr: "true"}}}}}})
	if err != nil {
		b.Fatal(err)
	}
	return db, res.Task.ID
}

// BenchmarkTransactionWrites measures two writes in transactions, a task
// shared and unshared, each with its ownership check: the statements a
// transaction runs, prepared once (cachedTx):
//
//	go test -run '^$' -bench TransactionWrites ./internal/sqlite/
func BenchmarkTransactionWrites(b *testing.B) {
	ctx := context.Background()
	db, id := openShop(ctx, b)
	for b.Loop() {
		if err := db.ShareTask(ctx, "alice", id, "bob"); err != nil {
			b.Fatal(err)
		}
		if err := db.UnshareTask(ctx, "alice", id, "bob"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTransactionWritesParallel is BenchmarkTransactionWrites from
// 16 goroutines a core at once, each sharing with a user of its own,
// contending for the write lock (writers.go):
//
//	go test -run '^$' -bench TransactionWritesParallel ./internal/sqlite/
func BenchmarkTransactionWritesParallel(b *testing.B) {
	ctx := context.Background()
	db, id := openShop(ctx, b)
	var users atomic.Int64
	b.SetParallelism(16)
	b.RunParallel(func(pb *testing.PB) {
		user := fmt.Sprintf("user%d", users.Add(1))
		for pb.Next() {
			if err := db.ShareTask(ctx, "alice", id, user); err != nil {
				b.Fatal(err)
			}
			if err := db.UnshareTask(ctx, "alice", id, user); err != nil {
				b.Fatal(err)
			}
		}
	})
}
