package main

import (
	"database/sql"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/postgres"
	"github.com/duet-test/duet/internal/sqlite"
)

// growthTable measures every list a user reads — tasks, cases, runs, audit,
// invocations, assets — on two stores that hold the same rows of the user
// (her task with its cases and a run, a few audit rows, invocations and
// assets): one near-empty, and one to which -grow tasks owned by other users
// have been added, each with a run, as many audit rows, invocations and
// assets of others, shares of those tasks and assets among them and teams
// of theirs (so every visibility branch reads a big index); on SQLite and (with -postgres) PostgreSQL. The others'
// rows sort after the user's (newer ids), the worst case for a list that
// scans in id order. A list that costs what the user sees stays near 1x.
//
// The reads are taken in turns — one read of the near-empty store, one of
// the grown store, and so on — so that neither store keeps its pages in the
// CPU's caches while the other is read, as in a busy server; turnRounds
// rounds of turnPairs pairs, the ratio of each round's medians, and the
// median (and the spread) of those ratios. The table also shows each store
// read alone (200 reads of one store, then 200 of the other), the figure of
// the first rounds, for comparison; the goal is judged on the reads in turns.
// Both stores are analyzed after seeding (PostgreSQL: VACUUM ANALYZE, as
// autovacuum would after so many inserts).
func growthTable(dir string) (worst map[string]float64) {
	worst = map[string]float64{}
	fmt.Printf("\n## Lists as the store grows: 1 task vs %d tasks (and as many runs, audit rows, invocations, assets, task and asset shares of other users, and 1,000 teams of theirs)\n\n", *grow)
	fmt.Printf("Read in turns: one read of the near-empty store, one of the grown store, alternately, %d rounds of %d pairs per list; µs are the medians of the rounds' medians, the ratio is the median of the %d rounds' ratios (lowest–highest in brackets). Read alone: 200 reads of one store, then 200 of the other, medians. Both stores analyzed after seeding (PostgreSQL: VACUUM ANALYZE, as autovacuum does after so many inserts).\n\n", turnRounds, turnPairs, turnRounds)
	fmt.Printf("Load average at the start: %s.\n\n", loadavg())
	fmt.Println("| list | engine | near-empty (in turns) | grown (in turns) | grown ÷ near-empty (in turns) | read alone: near-empty → grown | ratio alone |")
	fmt.Println("|---|---|---:|---:|---:|---:|---:|")
	type engine struct {
		name string
		open func(name string) (duet.Store, func(string), func())
	}
	engines := []engine{{"SQLite", func(name string) (duet.Store, func(string), func()) {
		path := filepath.Join(dir, name+".db")
		st, err := sqlite.Open(ctx(), path, nil)
		if err != nil {
			log.Fatal(err)
		}
		raw, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
		if err != nil {
			log.Fatal(err)
		}
		exec := func(q string) {
			if _, err := raw.ExecContext(ctx(), q); err != nil {
				log.Fatalf("growth seed (SQLite): %v\n%s", err, q)
			}
		}
		return st, exec, func() { raw.Close(); st.Close() }
	}}}
	if *pgURL != "" {
		engines = append(engines, engine{"PostgreSQL", func(string) (duet.Store, func(string), func()) {
			u, drop := newSchema(*pgURL)
			st, err := postgres.Open(ctx(), u, nil)
			if err != nil {
				log.Fatal(err)
			}
			conn, err := pgx.Connect(ctx(), u)
			if err != nil {
				log.Fatal(err)
			}
			exec := func(q string) {
				if _, err := conn.Exec(ctx(), q); err != nil {
					log.Fatalf("growth seed (PostgreSQL): %v\n%s", err, q)
				}
			}
			return st, exec, func() { conn.Close(ctx()); st.Close(); drop() }
		}})
	}
	for _, e := range engines {
		smallSt, smallExec, closeSmall := e.open("small")
		bigSt, bigExec, closeBig := e.open("grown")
		small, big := seedUser(smallSt), seedUser(bigSt)
		if e.name == "SQLite" {
			smallExec(`ANALYZE`)
			bigExec(growSQLite(*grow))
		} else {
			smallExec(`VACUUM ANALYZE`)
			for _, q := range growPostgres(*grow) {
				bigExec(q)
			}
		}
		aloneSmall, aloneBig := measureLists(small), measureLists(big)
		for i := range small {
			ts, tb, r, lo, hi := inTurns(small[i], big[i])
			fmt.Printf("| %s | %s | %s | %s | %.2fx (%.2f–%.2f) | %s → %s | %.2fx |\n", small[i].name, e.name, round(ts), round(tb), r, lo, hi,
				round(aloneSmall[i]), round(aloneBig[i]), float64(aloneBig[i])/float64(aloneSmall[i]))
			worst[e.name] = max(worst[e.name], r)
		}
		closeSmall()
		closeBig()
	}
	return worst
}

// loadavg is the machine's 1-, 5- and 15-minute load average, or "unknown".
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "unknown"
}

const (
	turnRounds = 15
	turnPairs  = 200
)

// inTurns reads the near-empty store's list and the grown store's in turns,
// turnRounds rounds of turnPairs pairs (after a warm-up of 20 pairs), and
// returns the medians of the rounds' medians and the median, lowest and
// highest of the rounds' ratios.
func inTurns(small, big list) (ts, tb time.Duration, ratio, lo, hi float64) {
	read := func(l list) time.Duration {
		t0 := time.Now()
		if err := l.read(); err != nil {
			log.Fatalf("%s: %v", l.name, err)
		}
		return time.Since(t0)
	}
	for range 20 {
		read(small)
		read(big)
	}
	var ms, mb []time.Duration
	var rs []float64
	for range turnRounds {
		s, b := make([]time.Duration, turnPairs), make([]time.Duration, turnPairs)
		for j := range turnPairs {
			s[j] = read(small)
			b[j] = read(big)
		}
		slices.Sort(s)
		slices.Sort(b)
		ms, mb = append(ms, s[turnPairs/2]), append(mb, b[turnPairs/2])
		rs = append(rs, float64(b[turnPairs/2])/float64(s[turnPairs/2]))
	}
	slices.Sort(ms)
	slices.Sort(mb)
	slices.Sort(rs)
	return ms[turnRounds/2], mb[turnRounds/2], rs[turnRounds/2], rs[0], rs[turnRounds-1]
}

type list struct {
	name string
	read func() error
}

// seedUser gives alice a task with three cases and a run, audit rows,
// invocations and assets, and returns her lists.
func seedUser(st duet.Store) []list {
	c := ctx()
	su := &duet.Suite{Task: duet.Task{Name: "mine", Description: "d"}}
	for _, k := range []string{"a", "b", "c"} {
		su.Cases = append(su.Cases, &duet.Case{Key: k, Title: k, Source: k, SourceHash: k, Steps: []duet.Step{{Kind: duet.StepAssert, Name: "true", Assert: &duet.AssertStep{Expr: "true"}}}})
	}
	res, err := st.ApplySuite(c, "alice", su)
	if err != nil {
		log.Fatal(err)
	}
	task := res.Task.ID
	cases, _, _, err := st.FindCases(c, duet.CaseFilter{TaskID: task})
	if err != nil {
		log.Fatal(err)
	}
	var execs []*duet.Execution
	for _, x := range cases {
		execs = append(execs, &duet.Execution{CaseID: x.ID, CaseKey: x.Key, CaseTitle: x.Title, CaseVersion: x.Version, Steps: x.Steps})
	}
	if _, _, err := st.CreateRun(c, duet.StartRunParams{Run: &duet.Run{TaskID: task, TriggeredBy: "alice", CallSource: duet.SourceCLI}, Executions: execs}); err != nil {
		log.Fatal(err)
	}
	var audit []*duet.AuditRecord
	var invs []*duet.Invocation
	for i := range 5 {
		audit = append(audit, &duet.AuditRecord{Time: time.Now(), TraceID: fmt.Sprint("t", i), CallSource: duet.SourceMCP, Caller: "alice", Method: "tools/call", Tool: "get_test_task", Outcome: duet.OutcomeOK})
		invs = append(invs, &duet.Invocation{Time: time.Now(), TraceID: fmt.Sprint("t", i), Executor: "alice", Source: duet.SourceAgent, ServerKey: "k", Tool: "add", Outcome: duet.OutcomeOK})
	}
	if err := st.AppendAudit(c, audit); err != nil {
		log.Fatal(err)
	}
	if err := st.AppendInvocations(c, invs); err != nil {
		log.Fatal(err)
	}
	for _, n := range []string{"one", "two", "three"} {
		if _, err := st.SaveAsset(c, &duet.Asset{Kind: duet.AssetSkill, Name: n, Owner: "alice", Body: "b", Visibility: duet.VisibilityPrivate}); err != nil {
			log.Fatal(err)
		}
	}
	return []list{
		{"tasks (list_test_tasks)", func() error { _, _, _, err := st.FindTasks(c, duet.TaskFilter{Viewer: "alice", Limit: 20}); return err }},
		{"cases (list_test_cases)", func() error { _, _, _, err := st.FindCases(c, duet.CaseFilter{TaskID: task, Limit: 50}); return err }},
		{"runs (list_test_runs)", func() error { _, _, err := st.FindRuns(c, duet.RunFilter{Viewer: "alice", Limit: 20}); return err }},
		{"audit (a caller's)", func() error { _, err := st.FindAudit(c, duet.AuditFilter{Caller: "alice", Limit: 100}); return err }},
		{"invocations (an executor's)", func() error {
			_, err := st.FindInvocations(c, duet.InvocationFilter{Executor: "alice", Limit: 100})
			return err
		}},
		{"assets (Asset Center)", func() error { _, err := st.FindAssets(c, duet.AssetFilter{Viewer: "alice", Limit: 200}); return err }},
	}
}

func measureLists(lists []list) []time.Duration {
	out := make([]time.Duration, len(lists))
	for i, l := range lists {
		var ts []time.Duration
		for j := range 220 {
			t0 := time.Now()
			if err := l.read(); err != nil {
				log.Fatalf("%s: %v", l.name, err)
			}
			if j >= 20 {
				ts = append(ts, time.Since(t0))
			}
		}
		slices.Sort(ts)
		out[i] = ts[len(ts)/2]
	}
	return out
}

// growSQLite adds n tasks of 5,000 other users, a run of each, n audit
// rows, invocations and assets of others, each task and asset shared with
// another of them and every tenth task with one of 1,000 teams of five, in
// one transaction.
func growSQLite(n int) string {
	series := fmt.Sprintf(`WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < %d) `, n)
	return strings.Join([]string{
		`BEGIN`,
		series + `INSERT INTO tasks (id, owner, name, created_at, updated_at) SELECT printf('task_zzbulk%07d', i), printf('user%05d', i % 5000), printf('t%07d', i), 1, 1 FROM s`,
		series + `INSERT INTO runs (id, task_id, status, triggered_by, call_source, created_at) SELECT printf('run_zzbulk%07d', i), printf('task_zzbulk%07d', i), 'passed', printf('user%05d', i % 5000), 'cli', 1 FROM s`,
		series + `INSERT INTO audit (time, trace_id, call_source, caller, method, tool, outcome, duration_us, arg_bytes, result_bytes) SELECT i, printf('%032x', i), 'mcp', printf('user%05d', i % 5000), 'tools/call', 'get_test_task', 'ok', 1, 1, 1 FROM s`,
		series + `INSERT INTO mcp_invocations (time, trace_id, executor, source, server_key, tool, outcome, duration_us, arg_bytes, result_bytes) SELECT i, printf('%032x', i), printf('user%05d', i % 5000), 'agent', 'k', 'add', 'ok', 1, 1, 1 FROM s`,
		series + `INSERT INTO assets (id, owner, kind, name, version, created_at, updated_at) SELECT printf('asset_zzbulk%07d', i), printf('user%05d', i % 5000), 'skill', printf('s%07d', i), 1, 1, 1 FROM s`,
		series + `INSERT INTO asset_versions (asset_id, version, body, created_at) SELECT printf('asset_zzbulk%07d', i), 1, 'b', 1 FROM s`,
		// Shares and teams of others: every task and asset shared with
		// another user, every tenth task with a team; 1,000 teams of five.
		// (A share with a team carries the team's id: the teams first.)
		`WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i < 999) INSERT INTO teams (name, created_by, created_at) SELECT printf('team%04d', i), 'user00000', 1 FROM s`,
		`WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i < 4999) INSERT INTO team_members (team, user_id, added_by, added_at) SELECT printf('team%04d', i % 1000), printf('user%05d', i), 'user00000', 1 FROM s`,
		series + `INSERT INTO task_shares (task_id, user_id, created_at) SELECT printf('task_zzbulk%07d', i), printf('user%05d', (i + 1) % 5000), 1 FROM s`,
		series + `INSERT INTO task_shares (task_id, user_id, team_id, created_at) SELECT printf('task_zzbulk%07d', i), 'team:' || t.name, t.id, 1 FROM s JOIN teams t ON t.name = printf('team%04d', i % 1000) WHERE i % 10 = 0`,
		series + `INSERT INTO asset_shares (asset_id, user_id, created_at) SELECT printf('asset_zzbulk%07d', i), printf('user%05d', (i + 1) % 5000), 1 FROM s`,
		`COMMIT`, `ANALYZE`,
	}, ";\n")
}

// growPostgres is growSQLite for PostgreSQL.
func growPostgres(n int) []string {
	s := fmt.Sprintf(` FROM generate_series(1, %d) AS i`, n)
	return []string{
		`INSERT INTO tasks (id, owner, name, created_at, updated_at) SELECT 'task_zzbulk' || lpad(i::text, 7, '0'), 'user' || lpad((i % 5000)::text, 5, '0'), 't' || i, now(), now()` + s,
		`INSERT INTO runs (id, task_id, status, triggered_by, call_source, created_at) SELECT 'run_zzbulk' || lpad(i::text, 7, '0'), 'task_zzbulk' || lpad(i::text, 7, '0'), 'passed', 'user' || lpad((i % 5000)::text, 5, '0'), 'cli', now()` + s,
		`INSERT INTO audit (time, trace_id, call_source, caller, method, tool, outcome, duration_us, arg_bytes, result_bytes) SELECT now(), md5(i::text), 'mcp', 'user' || lpad((i % 5000)::text, 5, '0'), 'tools/call', 'get_test_task', 'ok', 1, 1, 1` + s,
		`INSERT INTO mcp_invocations (time, trace_id, executor, source, server_key, tool, outcome, duration_us, arg_bytes, result_bytes) SELECT now(), md5(i::text), 'user' || lpad((i % 5000)::text, 5, '0'), 'agent', 'k', 'add', 'ok', 1, 1, 1` + s,
		`INSERT INTO assets (id, owner, kind, name, version, created_at, updated_at) SELECT 'asset_zzbulk' || lpad(i::text, 7, '0'), 'user' || lpad((i % 5000)::text, 5, '0'), 'skill', 's' || i, 1, now(), now()` + s,
		`INSERT INTO asset_versions (asset_id, version, body, created_at) SELECT 'asset_zzbulk' || lpad(i::text, 7, '0'), 1, 'b', now()` + s,
		// (A share with a team carries the team's id: the teams first.)
		`INSERT INTO teams (name, created_by, created_at) SELECT 'team' || lpad(i::text, 4, '0'), 'user00000', now() FROM generate_series(0, 999) AS i`,
		`INSERT INTO team_members (team, user_id, added_by, added_at) SELECT 'team' || lpad((i % 1000)::text, 4, '0'), 'user' || lpad(i::text, 5, '0'), 'user00000', now() FROM generate_series(0, 4999) AS i`,
		`INSERT INTO task_shares (task_id, user_id, created_at) SELECT 'task_zzbulk' || lpad(i::text, 7, '0'), 'user' || lpad(((i + 1) % 5000)::text, 5, '0'), now()` + s,
		`INSERT INTO task_shares (task_id, user_id, team_id, created_at) SELECT 'task_zzbulk' || lpad(i::text, 7, '0'), 'team:' || t.name, t.id, now()` + s +
			` JOIN teams t ON t.name = 'team' || lpad((i % 1000)::text, 4, '0') WHERE i % 10 = 0`,
		`INSERT INTO asset_shares (asset_id, user_id, created_at) SELECT 'asset_zzbulk' || lpad(i::text, 7, '0'), 'user' || lpad(((i + 1) % 5000)::text, 5, '0'), now()` + s,
		// What autovacuum does within a minute of 100,000 inserts (its
		// insert threshold is 1,000 rows): statistics and the visibility
		// map, without which no index-only scan is possible.
		`VACUUM ANALYZE`,
	}
}
