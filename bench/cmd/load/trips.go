package main

import (
	"fmt"
	"log"
	"path/filepath"

	"github.com/duet-test/duet/internal/app/pgtrips"
)

// What tripsTable measured, for the goals (tripsGetTask 0: not measured).
var (
	tripsOK      bool
	tripsGetTask int
)

// tripsTable prints the round trips to PostgreSQL of each catalog tool,
// counted by a pgx tracer on the store of an in-process Duet
// (internal/app/pgtrips; its test keeps them within the budgets).
// It returns whether every tool is within its budget and get_test_task's
// count (0: not measured).
func tripsTable(dir string) (ok bool, getTask int) {
	fmt.Printf("\n## Round trips to PostgreSQL per catalog call (pgx tracer; identity = the token, call = the governed call)\n\n")
	if *pgURL == "" {
		fmt.Println("skipped: no PostgreSQL (set -postgres URL or DUET_TEST_POSTGRES_URL)")
		return false, 0
	}
	db, drop := newSchema(*pgURL)
	defer drop()
	res, err := pgtrips.Measure(ctx(), db, filepath.Join(dir, "home"))
	if err != nil {
		log.Fatalf("round trips: %v", err)
	}
	fmt.Print(res.Table())
	ok = true
	for _, r := range res.Rows {
		if r.Total > r.Budget {
			ok = false
		}
		if r.Tool == "get_test_task" {
			getTask = r.Total
		}
	}
	return ok, getTask
}
