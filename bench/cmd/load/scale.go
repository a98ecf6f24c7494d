package main

import (
	"cmp"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/catalog"
)

// scaleRow is one row of the scale-out load table, for the goals.
type scaleRow struct {
	rps        float64
	cpu, dbCPU time.Duration // per call: the duet processes', the PostgreSQL backends'
}

// scaled holds the rows of the scale-out load table in order (SQLite;
// PostgreSQL with one instance; with two, -c clients in all; with two, -c
// clients each; with one whose reads are not coalesced) once it ran.
var scaled []scaleRow

// scaleTables measures Duet scaled out on PostgreSQL beside one instance on
// SQLite, in one run:
//
//   - governed get_test_task over Streamable HTTP at -c concurrent clients
//     for -d: SQLite with one `duet serve`, PostgreSQL with one, and
//     PostgreSQL with two (clients spread over both, as a load balancer
//     without sticky sessions would: -c in all, and -c each, so that each
//     instance is driven as the one alone was), and PostgreSQL with one
//     whose reads are not coalesced (DUET_DATABASE_READ_LANES=-1, what the
//     coalescing is worth); the CPU of the duet processes and of the
//     PostgreSQL backends per call;
//   - run throughput: 600 runs of 5 http-step cases each, queued first, then
//     executed by one `duet worker` on SQLite, one on PostgreSQL and two on
//     PostgreSQL (each DUET_WORKERS=4, DUET_PARALLEL=4). A queue that long
//     shows a claim whose cost grows with the queue (120 runs hid one that
//     read the whole queue per claim: docs/performance.md, part 16), and
//     spreads the new connections' first statements over more cases.
//
// Every process of a row shares this machine's cores with the others, the
// database and the load generator: the figures say how the work divides,
// not how a cluster of machines would scale.
func scaleTables(sqliteHome, dir string) {
	fmt.Printf("\n## Scale-out on PostgreSQL\n\n")
	if *pgURL == "" {
		fmt.Println("skipped: no PostgreSQL (set -postgres URL or DUET_TEST_POSTGRES_URL; scripts/test.sh shows how to start a throwaway one)")
		return
	}
	db, drop := newSchema(*pgURL)
	defer drop()
	var key [32]byte
	rand.Read(key[:])
	pgEnv := []string{"DUET_DATABASE_URL=" + db, "DUET_MASTER_KEY=" + base64.StdEncoding.EncodeToString(key[:]),
		"DUET_ARTIFACT_DIR=" + filepath.Join(dir, "artifacts"), "DUET_DATABASE_MAX_CONNS=32"}
	pgHome := func(name string) string {
		h := filepath.Join(dir, name)
		os.MkdirAll(h, 0o700)
		return h
	}
	// The same suite as the SQLite home, applied to the PostgreSQL schema.
	apply := exec.Command(*duetBin, "apply", "-f", filepath.Join(*repo, *suite), "--as", "alice")
	apply.Env = append(os.Environ(), append([]string{"DUET_HOME=" + pgHome("apply")}, pgEnv...)...)
	if out, err := apply.CombinedOutput(); err != nil {
		log.Fatalf("seeding PostgreSQL: %v\n%s", err, out)
	}

	fmt.Printf("### Governed get_test_task, Streamable HTTP, concurrency %d, %d rounds of %s per row (after %s warm-up), rows interleaved\n\n", *conc, *rounds, *dur, *warm)
	sq := startDuet(sqliteHome)
	defer sq.stop()
	pgA := startDuet(pgHome("serve-a"), append(pgEnv, "DUET_WORKERS=0")...)
	defer pgA.stop()
	pgB := startDuet(pgHome("serve-b"), append(pgEnv, "DUET_WORKERS=0")...)
	defer pgB.stop()
	pgAlone := startDuet(pgHome("serve-alone"), append(pgEnv, "DUET_WORKERS=0", "DUET_DATABASE_READ_LANES=-1")...)
	defer pgAlone.stop()
	sqBody := callBody(7, catalog.ToolGetTask, fmt.Sprintf(`{"taskId":%q}`, taskID(sq.url)))
	pgBody := callBody(7, catalog.ToolGetTask, fmt.Sprintf(`{"taskId":%q}`, taskID(pgA.url)))
	loadRows := []struct {
		name string
		ps   []*proc
		conc int
		body string
		pg   bool
	}{
		{"SQLite, 1 × duet serve", []*proc{sq}, *conc, sqBody, false},
		{"PostgreSQL, 1 × duet serve", []*proc{pgA}, *conc, pgBody, true},
		{fmt.Sprintf("PostgreSQL, 2 × duet serve, %d clients in all", *conc), []*proc{pgA, pgB}, *conc, pgBody, true},
		{fmt.Sprintf("PostgreSQL, 2 × duet serve, %d clients each", *conc), []*proc{pgA, pgB}, 2 * *conc, pgBody, true},
		{"PostgreSQL, 1 × duet serve, reads not coalesced (DUET_DATABASE_READ_LANES=-1)", []*proc{pgAlone}, *conc, pgBody, true},
	}
	results := make([][]loadResult, len(loadRows))
	for range *rounds {
		for i, row := range loadRows {
			var extra func() time.Duration
			if row.pg {
				extra = backendCPU(db)
			}
			results[i] = append(results[i], hammerAll(row.name, row.ps, row.conc, row.body, extra))
		}
	}
	fmt.Println("| database, instances | req/s (median) | p50 | p99 | errors | duet CPU/call | PostgreSQL CPU/call | ÷ SQLite |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|---:|")
	var base float64
	for i, row := range loadRows {
		var rps []float64
		var p50s, p99s []time.Duration
		var n, errs int
		var cpu, dbCPU time.Duration
		for _, r := range results[i] {
			rps, p50s, p99s = append(rps, r.rps()), append(p50s, r.p50), append(p99s, r.p99)
			n, errs, cpu, dbCPU = n+r.n, errs+r.errs, cpu+r.cpu, dbCPU+r.dbCPU
		}
		med := median(rps)
		if base == 0 {
			base = med
		}
		per := func(d time.Duration) string {
			if n == 0 || d == 0 {
				return "–"
			}
			return round(d / time.Duration(n))
		}
		fmt.Printf("| %s | %.0f | %s | %s | %d | %s | %s | %.2fx |\n", row.name, med, round(median(p50s)), round(median(p99s)), errs, per(cpu), per(dbCPU), med/base)
		if n > 0 {
			scaled = append(scaled, scaleRow{rps: med, cpu: cpu / time.Duration(n), dbCPU: dbCPU / time.Duration(n)})
		}
	}

	const runs, cases = 600, 5
	fmt.Printf("\n### Run throughput: %d runs of %d http-step cases (request + assertion), queued, then executed (DUET_WORKERS=4, DUET_PARALLEL=4 per process), %d rounds\n\n", runs, cases, *rounds)
	src, stopTarget := httpSuite("throughput", cases)
	defer stopTarget()
	runRows := []struct {
		name    string
		pg      bool
		workers int
	}{{"SQLite, 1 × duet worker", false, 1}, {"PostgreSQL, 1 × duet worker", true, 1}, {"PostgreSQL, 2 × duet worker", true, 2}}
	cps := make([][]float64, len(runRows))
	var cpuCases [3]int
	var workerCPU, dbCPU [3]time.Duration
	for round := range *rounds {
		for i, row := range runRows {
			home := pgHome(fmt.Sprintf("runs-%d-%d", round, i))
			extra := map[string]string{"DUET_WORKERS": "4", "DUET_PARALLEL": "4"}
			var env []string
			if row.pg {
				schema, dropSchema := newSchema(*pgURL)
				defer dropSchema()
				env = append([]string{"DUET_DATABASE_URL=" + schema}, pgEnv[1:]...)
				extra["DUET_DATABASE_URL"], extra["DUET_MASTER_KEY"] = schema, base64.StdEncoding.EncodeToString(key[:])
			}
			var dbURL string
			if row.pg {
				dbURL = extra["DUET_DATABASE_URL"]
			}
			n, el, wcpu, dcpu := throughput(home, extra, env, src, runs, row.workers, dbURL)
			cps[i] = append(cps[i], float64(n)/el.Seconds())
			cpuCases[i] += n
			workerCPU[i] += wcpu
			dbCPU[i] += dcpu
		}
	}
	fmt.Println("| database, workers | cases/s (median) | min | max | worker CPU/case | PostgreSQL CPU/case | ÷ SQLite |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|")
	base = 0
	for i, row := range runRows {
		m := median(cps[i])
		if base == 0 {
			base = m
		}
		per := func(d time.Duration) string {
			if d == 0 || cpuCases[i] == 0 {
				return "–"
			}
			return round(d / time.Duration(cpuCases[i]))
		}
		fmt.Printf("| %s | %.0f | %.0f | %.0f | %s | %s | %.2fx |\n", row.name, m, slices.Min(cps[i]), slices.Max(cps[i]), per(workerCPU[i]), per(dbCPU[i]), m/base)
	}
}

// median returns the middle value of v (the upper one of an even count).
func median[T cmp.Ordered](v []T) T {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// throughput queues runs of the suite src (in-process, without workers),
// then starts `duet worker` processes and times them until every run ends.
// It returns the number of cases that passed, the time, the CPU time of the
// worker processes and (with dbURL) of the PostgreSQL backends.
func throughput(home string, extra map[string]string, env []string, src string, runs, workers int, dbURL string) (int, time.Duration, time.Duration, time.Duration) {
	// All the runs are queued up front by one user: lift the per-user
	// queue cap (DUET_MAX_QUEUED_RUNS, 20 by default) and the budget of
	// runs started a minute (DUET_MAX_RUNS_PER_MINUTE, 60) above them.
	withCap := map[string]string{"DUET_MAX_QUEUED_RUNS": strconv.Itoa(runs + 1), "DUET_MAX_RUNS_PER_MINUTE": strconv.Itoa(runs + 1)}
	for k, v := range extra {
		withCap[k] = v
	}
	a := openApp(home, withCap)
	defer a.Close()
	applied := applySuite(a, home, src)
	caller := duet.Caller{UserID: "alice", Source: duet.SourceCLI}
	var ids []string
	for i := range runs {
		res, err := a.Catalog.Call(ctx(), catalog.Request{Caller: caller, Tool: catalog.ToolStartRun,
			Args: json.RawMessage(fmt.Sprintf(`{"taskId":%q,"idempotencyKey":"t-%d"}`, applied.Task.ID, i))})
		if err != nil || res.IsError {
			log.Fatalf("start_test_run: %+v %v", res, err)
		}
		var out catalog.StartRunOut
		json.Unmarshal(res.Structured, &out)
		ids = append(ids, out.RunID)
	}
	var dbCPU func() time.Duration
	if dbURL != "" {
		dbCPU = backendCPU(dbURL)
		dbCPU()
	}
	t0 := time.Now()
	var ps []*proc
	for i := range workers {
		cmd := exec.Command(*duetBin, "worker")
		wh := filepath.Join(home, "w"+strconv.Itoa(i))
		os.MkdirAll(wh, 0o700)
		if len(env) == 0 {
			wh = home // SQLite: the workers use the same file
		}
		cmd.Env = append(os.Environ(), append([]string{"DUET_HOME=" + wh, "DUET_WORKERS=4", "DUET_PARALLEL=4", "DUET_LOG_LEVEL=info"}, env...)...)
		ps = append(ps, start(cmd, regexp.MustCompile(`msg="duet worker started" id=(\S+)`), ""))
	}
	passed := 0
	for _, id := range ids {
		for {
			r, err := a.Store.FindRunByID(ctx(), "", id)
			if err != nil {
				log.Fatal(err)
			}
			if r.Status.Final() {
				passed += r.Totals.Passed
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	el := time.Since(t0)
	var wcpu, dcpu time.Duration
	for _, p := range ps {
		wcpu += p.cpu()
	}
	if dbCPU != nil {
		dcpu = dbCPU()
	}
	for _, p := range ps {
		p.stop()
	}
	return passed, el, wcpu, dcpu
}

// newSchema creates an empty schema on the server at base and returns a URL
// whose search_path is that schema, and a function that drops it.
func newSchema(base string) (string, func()) {
	var b [6]byte
	rand.Read(b[:])
	name := "bench_" + hex.EncodeToString(b[:])
	conn, err := pgx.Connect(ctx(), base)
	if err != nil {
		log.Fatalf("PostgreSQL: %v", err)
	}
	defer conn.Close(ctx())
	if _, err := conn.Exec(ctx(), "CREATE SCHEMA "+name); err != nil {
		log.Fatalf("PostgreSQL: %v", err)
	}
	u, err := url.Parse(base)
	if err != nil {
		log.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", name)
	// The schema's connections carry its name, so that backendCPU counts
	// theirs alone: other clients of the server (tests run beside the
	// benchmark) use the same database.
	q.Set("application_name", name)
	u.RawQuery = q.Encode()
	return u.String(), func() {
		if conn, err := pgx.Connect(ctx(), base); err == nil {
			conn.Exec(ctx(), "DROP SCHEMA "+name+" CASCADE")
			conn.Close(ctx())
		}
	}
}

// backendCPU returns a function for hammerAll's extra CPU: the first call
// notes the CPU time of every PostgreSQL backend connected with the
// application name of the URL u (newSchema's: the server processes serving
// the pooled connections of the Duets on that schema, read from /proc) and
// returns 0; the second returns how much they used since. A backend that
// connected in between counts from its start.
func backendCPU(u string) func() time.Duration {
	var first map[int]time.Duration
	return func() time.Duration {
		now := map[int]time.Duration{}
		conn, err := pgx.Connect(ctx(), u)
		if err != nil {
			return 0
		}
		defer conn.Close(ctx())
		rows, err := conn.Query(ctx(), `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = current_setting('application_name') AND pid <> pg_backend_pid()`)
		if err != nil {
			return 0
		}
		for rows.Next() {
			var pid int
			rows.Scan(&pid)
			now[pid] = (&proc{cmd: &exec.Cmd{Process: &os.Process{Pid: pid}}}).cpu()
		}
		rows.Close()
		if first == nil {
			first = now
			return 0
		}
		var d time.Duration
		for pid, c := range now {
			d += c - first[pid]
		}
		return d
	}
}
