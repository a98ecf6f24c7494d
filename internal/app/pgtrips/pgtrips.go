// Package pgtrips counts the round trips to PostgreSQL of each catalog
// tool called as a client calls it: a personal access token resolved to
// its user (the identity step), then the governed call (catalog.Call) of a
// Duet built as `duet serve` builds it (app.Open), with a postgres.RoundTrips
// tracer on its store. The audit records of reads are written by the audit
// writer in batches, apart from the calls: Measure reports the round trips
// of a batch and how many records it held.
//
// `make bench` prints the table; the package's test keeps the counts
// within their budgets (docs/performance.md).
package pgtrips

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/app"
	"github.com/duet-test/duet/internal/auth"
	"github.com/duet-test/duet/internal/catalog"
	"github.com/duet-test/duet/internal/config"
	"github.com/duet-test/duet/internal/postgres"
)

// Row is what one call of a tool cost.
type Row struct {
	Tool  string
	Write bool // the call changes something (its audit record goes with the change)
	// Identity is the round trips of the identity step (the token), Call
	// those of the governed call; Total their sum.
	Identity, Call, Total int
	// Budget is the most Total may be (docs/performance.md, issue 32).
	Budget int
	// CallStatements is the statements of the governed call (a batch
	// counts as many as it holds), StatementBudget the most it may be: a
	// read's data is one statement.
	CallStatements, StatementBudget int
	// Statements are the call's statements, in order.
	Statements []string
}

// Met reports whether the call kept within both its budgets.
func (r Row) Met() bool { return r.Total <= r.Budget && r.CallStatements <= r.StatementBudget }

// Budgets of round trips per call, identity included: a read makes one for
// the identity (where it is not cached) and one for the data; a start
// makes at most four.
const (
	ReadBudget  = 2
	StartBudget = 4
)

// Budgets of statements per governed call (the identity's apart): a read
// reads its data in one statement, which the server plans and starts
// once; a start is CreateRun's batch and the reads around it.
const (
	ReadStatements  = 1
	StartStatements = 9
)

// Result is a measurement.
type Result struct {
	Rows []Row
	// AuditRecords were stored in AuditRoundTrips round trips by the
	// audit writer's flushes (the reads' records, batched).
	AuditRecords, AuditRoundTrips int
}

// Measure opens a Duet on the empty PostgreSQL schema at url (home is a
// directory for its other files), seeds a task of three cases owned by
// alice and a token of hers, and measures each catalog tool: warm calls
// first (each connection prepares its statements once), then one counted
// call.
func Measure(ctx context.Context, url, home string) (*Result, error) {
	var key [32]byte
	for i := range key {
		key[i] = byte(i + 1)
	}
	env := map[string]string{
		"DUET_HOME": home, "DUET_DATABASE_URL": url, "DUET_MASTER_KEY": base64.StdEncoding.EncodeToString(key[:]),
		"DUET_ARTIFACT_DIR": filepath.Join(home, "artifacts"), "DUET_WORKERS": "0", "DUET_LOG_LEVEL": "error",
		"DUET_STOP_TOOL_USERS": "*", "DUET_MAX_QUEUED_RUNS": "1000", "DUET_MAX_RUNS_PER_MINUTE": "1000",
	}
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, err
	}
	rt := &postgres.RoundTrips{}
	a, err := app.Open(ctx, cfg, app.Options{Stderr: io.Discard, PostgresTracer: rt})
	if err != nil {
		return nil, err
	}
	defer a.Close()

	su := &duet.Suite{Task: duet.Task{Name: "trips", Description: "round trips", BaseURL: "http://127.0.0.1:1"}}
	for _, k := range []string{"a", "b", "c"} {
		su.Cases = append(su.Cases, &duet.Case{Key: k, Title: "case " + k, Source: "src " + k, SourceHash: "h-" + k,
			Steps: []duet.Step{{Index: 0, Kind: duet.StepAssert, Name: "true", Assert: &duet.AssertStep{Expr: "true"}}}})
	}
	applied, err := a.Store.ApplySuite(ctx, "alice", su)
	if err != nil {
		return nil, err
	}
	plain, hash := auth.NewToken()
	if err := a.Store.CreateToken(ctx, &duet.Token{UserID: "alice", Name: "trips", Hash: hash}); err != nil {
		return nil, err
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://duet.test/mcp/http", nil)
	req.Header.Set("Authorization", "Bearer "+plain)

	out := &Result{}
	// call makes one call and returns the round trips and statements of
	// its identity step.
	call := func(ctx context.Context, tool, args string) (*catalog.Result, int, int, error) {
		ictx, itally := rt.Track(ctx)
		id, err := a.Auth.Authenticate(ictx, req.WithContext(ictx))
		if err != nil {
			return nil, 0, 0, fmt.Errorf("identity: %w", err)
		}
		res, err := a.Catalog.Call(ctx, catalog.Request{Caller: duet.Caller{UserID: id.UserID, TokenID: id.TokenID, Source: duet.SourceMCP},
			Tool: tool, Args: json.RawMessage(args)})
		if err == nil && res.IsError {
			err = fmt.Errorf("%s: %s", res.Code, res.Text)
		}
		if err != nil {
			return nil, 0, 0, fmt.Errorf("%s: %w", tool, err)
		}
		return res, itally.N(), itally.StatementCount(), nil
	}
	measure := func(tool string, write bool, budget, stmtBudget int, args func(i int) string) (*catalog.Result, error) {
		for i := range 3 {
			if _, _, _, err := call(ctx, tool, args(i)); err != nil {
				return nil, err
			}
		}
		cctx, tally := rt.Track(ctx)
		res, ident, identStmts, err := call(cctx, tool, args(3))
		if err != nil {
			return nil, err
		}
		calls := tally.N() - ident
		r := Row{Tool: tool, Write: write, Identity: ident, Call: calls, Total: ident + calls, Budget: budget,
			CallStatements: tally.StatementCount() - identStmts, StatementBudget: stmtBudget, Statements: tally.Statements()}
		out.Rows = append(out.Rows, r)
		return res, nil
	}
	task := applied.Task.ID
	caseID := applied.Cases[0].ID
	fixed := func(s string) func(int) string { return func(int) string { return s } }
	var started catalog.StartRunOut
	steps := []struct {
		tool               string
		write              bool
		budget, stmtBudget int
		args               func(int) string
		after              func(*catalog.Result) error
	}{
		{catalog.ToolListTasks, false, ReadBudget, ReadStatements, fixed(`{}`), nil},
		{catalog.ToolGetTask, false, ReadBudget, ReadStatements, fixed(fmt.Sprintf(`{"taskId":%q}`, task)), nil},
		{catalog.ToolListCases, false, ReadBudget, ReadStatements, fixed(fmt.Sprintf(`{"taskId":%q}`, task)), nil},
		{catalog.ToolGetCase, false, ReadBudget, ReadStatements, fixed(fmt.Sprintf(`{"caseId":%q}`, caseID)), nil},
		{catalog.ToolStartRun, true, StartBudget, StartStatements, func(i int) string { return fmt.Sprintf(`{"taskId":%q,"idempotencyKey":"trips-%d"}`, task, i) },
			func(r *catalog.Result) error { return json.Unmarshal(r.Structured, &started) }},
	}
	for _, s := range steps {
		res, err := measure(s.tool, s.write, s.budget, s.stmtBudget, s.args)
		if err != nil {
			return nil, err
		}
		if s.after != nil {
			if err := s.after(res); err != nil {
				return nil, err
			}
		}
	}
	res, err := measure(catalog.ToolGetRun, false, ReadBudget, ReadStatements, fixed(fmt.Sprintf(`{"runId":%q}`, started.RunID)))
	if err != nil {
		return nil, err
	}
	var run catalog.GetRunOut
	if err := json.Unmarshal(res.Structured, &run); err != nil || len(run.Executions) == 0 {
		return nil, fmt.Errorf("get_test_run: no execution in %s (%v)", res.Structured, err)
	}
	if _, err := measure(catalog.ToolGetExecutionResult, false, ReadBudget, ReadStatements, fixed(fmt.Sprintf(`{"executionId":%q}`, run.Executions[0].ID))); err != nil {
		return nil, err
	}

	// The reads' audit records, batched: what the writer's flush costs.
	// The writer stores with a context of its own: its round trips are
	// the untracked ones.
	a.Audit.Flush()
	before := rt.Total()
	bctx, tally := rt.Track(ctx)
	const batch = 50
	for i := range batch {
		if _, _, _, err := call(bctx, catalog.ToolGetTask, fmt.Sprintf(`{"taskId":%q}`, task)); err != nil {
			return nil, fmt.Errorf("call %d: %w", i, err)
		}
	}
	a.Audit.Flush()
	out.AuditRecords = batch
	out.AuditRoundTrips = int(rt.Total()-before) - tally.N()
	return out, nil
}

// Table formats r as a Markdown table.
func (r *Result) Table() string {
	var b strings.Builder
	b.WriteString("| tool | kind | identity | call | total | budget | call's statements | budget | met |\n|---|---|---:|---:|---:|---:|---:|---:|---|\n")
	for _, row := range r.Rows {
		kind := "read"
		if row.Write {
			kind = "write"
		}
		met := "yes"
		if !row.Met() {
			met = "NO"
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %d | ≤ %d | %d | ≤ %d | %s |\n", row.Tool, kind, row.Identity, row.Call, row.Total, row.Budget, row.CallStatements, row.StatementBudget, met)
	}
	fmt.Fprintf(&b, "\naudit of reads: %d records in %d round trips (the audit writer's batches)\n", r.AuditRecords, r.AuditRoundTrips)
	return b.String()
}
