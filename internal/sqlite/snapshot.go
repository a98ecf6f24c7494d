package sqlite

import (
	"context"
	"database/sql"
	_ "embed"
)

// A fresh database gets its schema from schema.sql, in one transaction,
// instead of from the migrations one by one: the file holds what the
// embedded migrations leave in an empty database (tables, indexes and
// triggers as SQLite stores them, the rows the migrations write, goose's
// version rows). It is generated from the migrations
// (`go test ./internal/sqlite -run TestSchemaSnapshot -update`), and
// TestSchemaSnapshot fails when it is not exactly what they produce.
//
// Why: every ALTER TABLE makes SQLite read the whole schema again, so the
// 35 migrations cost a fresh database 43 ms (590 ms under the race
// detector); the snapshot costs 14 ms (120 ms). A user's first start and
// every test that opens a new DUET_HOME take this path.
//
// goose still owns every later change: after the snapshot, it applies the
// migrations the snapshot does not have (none while the test holds), and
// an existing database is migrated by goose alone.

//go:embed schema.sql
var schemaSnapshot string

// createFromSnapshot gives an empty database the snapshot's schema and
// data, in one transaction. A database with anything in it is left as it
// is, for goose to decide. The transaction begins IMMEDIATE (the DSN's
// _txlock), so of two processes opening one new file at once, one creates
// the schema and the other then finds it.
func createFromSnapshot(ctx context.Context, db *sql.DB, snapshot string) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master`).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, snapshot); err != nil {
		return err
	}
	return tx.Commit()
}
