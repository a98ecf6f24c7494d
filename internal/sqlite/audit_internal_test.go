package sqlite

import (
	"path/filepath"
	"testing"
)

// TestLogInsertsNeedNoStatementJournal: no instruction of the INSERT of a
// batch of audit rows or of MCP invocation rows halts with ABORT. A
// multi-row INSERT that may abort halfway (SQLite's default for a
// constraint) undoes just itself, so inside a transaction SQLite first
// copies every page it touches to a statement journal — a tenth of the
// audit writer's CPU, a third of the invocation recorder's. OR FAIL keeps
// the rows stored before a failure, and the batch's transaction
// (appendLog) undoes them all: the batch is stored whole or not at all
// either way.
func TestLogInsertsNeedNoStatementJournal(t *testing.T) {
	t.Parallel()
	db, err := Open(t.Context(), filepath.Join(t.TempDir(), "duet.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, log := range []struct {
		into  string
		chunk int
	}{{auditInto, auditChunk}, {invocationInto, invocationChunk}} {
		for _, n := range []int{1, 2, log.chunk} {
			args := make([]any, 10*n)
			for i := range args {
				args[i] = 1
			}
			rows, err := db.db.QueryContext(t.Context(), "EXPLAIN "+logInsert(log.into, n), args...)
			if err != nil {
				t.Fatal(err)
			}
			cols, _ := rows.Columns()
			for rows.Next() {
				vals := make([]any, len(cols))
				ptrs := make([]any, len(cols))
				for i := range vals {
					ptrs[i] = &vals[i]
				}
				if err := rows.Scan(ptrs...); err != nil {
					t.Fatal(err)
				}
				// addr, opcode, p1, p2, ...: P2 of a halt is its conflict
				// resolution, 2 ABORT (sqliteInt.h: OE_Abort).
				op, _ := vals[1].(string)
				if p2, _ := vals[3].(int64); (op == "Halt" || op == "HaltIfNull") && p2 == 2 {
					t.Errorf("the INSERT of %d rows into %.20s… may abort halfway (%v): it needs a statement journal", n, log.into, vals)
				}
			}
			rows.Close()
		}
	}
}
