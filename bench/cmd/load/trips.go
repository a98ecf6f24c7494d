package main

import (
	"fmt"
	"log"
	"path/filepath"

	"github.com/duet-test/duet/internal/app/pgtrips"
)

// What tripsTable measured, for the goals (0: not measured).
var (
	tripsOK      bool
	tripsGetTask int
	tripsStart   int
)

// tripsTable prints the round trips to PostgreSQL of each catalog tool,
// counted by a pgx tracer on the store of an in-process Duet
// (internal/app/pgtrips; its test keeps them within the budgets).
// It returns whether every tool is within its budgets (round trips and
// statements), and get_test_task's and start_test_run's round trips (0:
// not measured).
func tripsTable(dir string) (ok bool, getTask, start int) {
	fmt.Printf("\n## Round trips to PostgreSQL per catalog call (pgx tracer; identity = the token, call = the governed call)\n\n")
	if *pgURL == "" {
		fmt.Println("skipped: no PostgreSQL (set -postgres URL or DUET_TEST_POSTGRES_URL)")
		return false, 0, 0
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
		ok = ok && r.Met()
		switch r.Tool {
		case "get_test_task":
			getTask = r.Total
		case "start_test_run":
			start = r.Total
		}
	}
	return ok, getTask, start
}
