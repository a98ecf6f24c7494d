package postgres_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/duet-test/duet/internal/postgres/pgtest"
)

// TestInvocationIndexes: migration 00017 dropped mcp_invocations'
// (executor, time) index, which overlapped (executor, id) and which no list
// of invocation records needs; (executor, id) stays.
func TestInvocationIndexes(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	openURL(t, url)
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	has := func(name string) bool {
		var n int
		if err := conn.QueryRow(t.Context(), `SELECT count(*) FROM pg_indexes WHERE schemaname = current_schema() AND indexname = $1`, name).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n > 0
	}
	if has("mcp_invocations_executor") {
		t.Error("mcp_invocations_executor (executor, time) still exists")
	}
	if !has("mcp_invocations_executor_id") {
		t.Error("mcp_invocations_executor_id (executor, id) is missing")
	}
}
