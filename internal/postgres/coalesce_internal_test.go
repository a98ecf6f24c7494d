package postgres

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/postgres/pgtest"
)

// heldLane is a coalescer of strings with one lane whose first read waits for
// release: the reads that come meanwhile queue (queued tells when n have),
// and many records what it was given.
type heldLane struct {
	*coalescer[string, string]
	release chan struct{}
	queued  chan int
	mu      sync.Mutex
	many    [][]string
	manyCtx chan context.Context
	block   chan struct{} // many waits for it, if set
}

func newHeldLane() *heldLane {
	h := &heldLane{release: make(chan struct{}), queued: make(chan int, 100), manyCtx: make(chan context.Context, 10)}
	first := true
	var fmu sync.Mutex
	h.coalescer = &coalescer[string, string]{lanes: 1, max: 64,
		one: func(ctx context.Context, k string) (string, error) {
			fmu.Lock()
			wait := first
			first = false
			fmu.Unlock()
			if wait {
				<-h.release
			}
			return "one:" + k, nil
		},
		many: func(ctx context.Context, keys []string) ([]string, []error, error) {
			h.mu.Lock()
			h.many = append(h.many, keys)
			h.mu.Unlock()
			h.manyCtx <- ctx
			if h.block != nil {
				select {
				case <-h.block:
				case <-ctx.Done():
					return nil, nil, ctx.Err()
				}
			}
			vs, errs := make([]string, len(keys)), make([]error, len(keys))
			for i, k := range keys {
				if strings.HasPrefix(k, "missing") {
					errs[i] = duet.Errorf(duet.CodeNotFound, "%s not found", k)
					continue
				}
				vs[i] = "many:" + k
			}
			return vs, errs, nil
		},
		queued: func(n int) { h.queued <- n },
	}
	return h
}

// waitQueued waits until n reads are queued.
func (h *heldLane) waitQueued(t *testing.T, n int) {
	t.Helper()
	for {
		select {
		case got := <-h.queued:
			if got >= n {
				return
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("fewer than %d reads queued", n)
		}
	}
}

// within receives from ch, or fails the test after 30s instead of hanging.
func within[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(30 * time.Second):
		t.Fatal("nothing came in 30s")
		panic("unreachable")
	}
}

type result struct {
	v   string
	err error
}

// TestCoalescerReadsTogether: reads that come while the lane is busy are
// read in one statement, each handed its own value or error, in order;
// the first read ran alone.
func TestCoalescerReadsTogether(t *testing.T) {
	h := newHeldLane()
	first := make(chan result, 1)
	go func() { v, err := h.get(t.Context(), "a"); first <- result{v, err} }()
	// "a" holds the lane; the next four queue behind it.
	keys := []string{"b", "missing-c", "d", "e"}
	res := make([]chan result, len(keys))
	h.waitQueuedAfter(t, func() {
		for i, k := range keys {
			res[i] = make(chan result, 1)
			go func() { v, err := h.get(t.Context(), k); res[i] <- result{v, err} }()
			h.waitQueued(t, i+1)
		}
	})
	close(h.release)
	if r := within(t, first); r.v != "one:a" || r.err != nil {
		t.Fatalf("the first read: %+v", r)
	}
	for i, k := range keys {
		r := within(t, res[i])
		if k == "missing-c" {
			if duet.ErrorCode(r.err) != duet.CodeNotFound {
				t.Errorf("%s: got %+v, want NOT_FOUND", k, r)
			}
			continue
		}
		if r.v != "many:"+k || r.err != nil {
			t.Errorf("%s: got %+v", k, r)
		}
	}
	if len(h.many) != 1 || !reflect.DeepEqual(h.many[0], keys) {
		t.Fatalf("statements of several reads: %v, want one of %v", h.many, keys)
	}
	if h.batches.Load() != 1 {
		t.Fatalf("batches: %d", h.batches.Load())
	}
	// The lane is free again: a read alone runs at once.
	if v, err := h.get(t.Context(), "f"); v != "one:f" || err != nil {
		t.Fatalf("a read alone after: %q %v", v, err)
	}
}

// waitQueuedAfter runs queue once the first read holds the lane (it has
// taken it before queue's reads come: they all queue).
func (h *heldLane) waitQueuedAfter(t *testing.T, queue func()) {
	t.Helper()
	laneTaken(t, h.coalescer)
	queue()
}

// laneTaken waits until c's one lane is taken, or fails after 30s.
func laneTaken[K, V any](t *testing.T, c *coalescer[K, V]) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		c.mu.Lock()
		busy := c.running == 1
		c.mu.Unlock()
		if busy {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the first read never took the lane")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestCoalescerCallerLeaves: a caller whose context ends stops waiting at
// once and is left out of the statement; a statement whose callers have
// all left is cancelled.
func TestCoalescerCallerLeaves(t *testing.T) {
	h := newHeldLane()
	h.block = make(chan struct{})
	go h.get(t.Context(), "a")
	leave, cancel := context.WithCancel(t.Context())
	left := make(chan error, 1)
	stay := make(chan result, 2)
	h.waitQueuedAfter(t, func() {
		go func() { _, err := h.get(leave, "gone"); left <- err }()
		h.waitQueued(t, 1)
		for i, k := range []string{"b", "c"} {
			go func() { v, err := h.get(t.Context(), k); stay <- result{v, err} }()
			h.waitQueued(t, i+2)
		}
	})
	cancel()
	if err := within(t, left); !errors.Is(err, context.Canceled) {
		t.Fatalf("the caller that left: %v", err)
	}
	close(h.release)
	within(t, h.manyCtx)
	close(h.block)
	for range 2 {
		if r := within(t, stay); r.err != nil || !strings.HasPrefix(r.v, "many:") {
			t.Fatalf("a caller that stayed: %+v", r)
		}
	}
	for _, keys := range h.many {
		for _, k := range keys {
			if k == "gone" {
				t.Fatalf("the read of a caller that left was made: %v", h.many)
			}
		}
	}

	// Two callers wait on a statement in flight and both leave: its
	// context is cancelled.
	h2 := newHeldLane()
	h2.block = make(chan struct{})
	go h2.get(t.Context(), "a")
	ctx1, cancel1 := context.WithCancel(t.Context())
	ctx2, cancel2 := context.WithCancel(t.Context())
	h2.waitQueuedAfter(t, func() {
		go h2.get(ctx1, "x")
		h2.waitQueued(t, 1)
		go h2.get(ctx2, "y")
		h2.waitQueued(t, 2)
	})
	close(h2.release)
	stmt := within(t, h2.manyCtx)
	cancel1()
	select {
	case <-stmt.Done():
		t.Fatal("the statement was cancelled while a caller still waited")
	case <-time.After(50 * time.Millisecond):
	}
	cancel2()
	select {
	case <-stmt.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the statement went on after every caller left")
	}
}

// TestReadsTogetherQueries: the statements of reads together are the
// reads alone for pairs, and the reads alone have no parameter but $1 and
// $2 (pairParams would misread $10).
func TestReadsTogetherQueries(t *testing.T) {
	for _, q := range []struct{ alone, together string }{{overviewQuery("viewer"), overviewsQuery}, {runByIDQuery("viewer"), runsTogetherQuery}, {caseByIDQuery("viewer"), casesTogetherQuery}} {
		for i := 3; i < 20; i++ {
			if strings.Contains(q.alone, fmt.Sprintf("$%d", i)) {
				t.Fatalf("a read alone has $%d:\n%s", i, q.alone)
			}
		}
		if strings.Count(q.together, "$") != 2 || !strings.Contains(q.together, readPairs) {
			t.Fatalf("reads together keep the parameters of a read alone:\n%s", q.together)
		}
	}
	// Tokens: the pairs, and the instant they must be unexpired at.
	if strings.Count(tokensTogetherQuery, "$") != 3 || !strings.Contains(tokensTogetherQuery, readPairs) || !strings.Contains(tokensTogetherQuery, "> $3") {
		t.Fatalf("tokens together:\n%s", tokensTogetherQuery)
	}
}

// openOneLane opens a DB with one read lane on a schema of its own (its
// clock now, or time.Now), closed when the test ends.
func openOneLane(t *testing.T, now func() time.Time) *DB {
	t.Helper()
	db, err := Open(t.Context(), pgtest.URL(t), &Options{ReadLanes: 1, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestReadsTogetherPlannedOnce: the server keeps one plan for each statement
// of reads together, whatever the number of pairs, instead of planning it
// afresh on every execution (readPairs). It fails with the arrays unnested
// directly: "custom plans 12, generic 0".
func TestReadsTogetherPlannedOnce(t *testing.T) {
	t.Parallel()
	db := openOneLane(t, nil)
	ctx := t.Context()
	conn, err := db.pool.Acquire(ctx) // the statements are prepared per connection
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	for _, q := range []struct {
		name, sql string
		more      []any
	}{{"overviews", overviewsQuery, nil}, {"runs", runsTogetherQuery, nil}, {"cases", casesTogetherQuery, nil}, {"tokens", tokensTogetherQuery, []any{time.Now()}}} {
		const executions = 12
		for i := range executions {
			n := 2 + i%3 // the number of pairs varies, as under load
			viewers, ids := make([]string, n), make([]string, n)
			for j := range n {
				viewers[j], ids[j] = "alice", fmt.Sprintf("missing-%d", j)
			}
			rows, err := conn.Query(ctx, q.sql, append([]any{viewers, ids}, q.more...)...)
			if err != nil {
				t.Fatalf("%s: %v", q.name, err)
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				t.Fatalf("%s: %v", q.name, err)
			}
		}
		var generic, custom int64
		if err := conn.QueryRow(ctx, `SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement = $1`, q.sql).Scan(&generic, &custom); err != nil {
			t.Fatalf("%s: not a prepared statement of the connection: %v", q.name, err)
		}
		// PostgreSQL tries five custom plans before it compares them with the generic one.
		if custom > 5 || generic != executions-custom {
			t.Errorf("%s: custom plans %d, generic %d, of %d executions", q.name, custom, generic, executions)
		}
	}
}

// TestTaskOverviewsTogether: task overviews, runs and cases read together, on
// PostgreSQL, are what each read alone returns — each with its own
// viewer's visibility (owner, shared, not shared, missing) — and
// FindTaskOverview's reads that come while one is in flight are read in
// one statement.
func TestTaskOverviewsTogether(t *testing.T) {
	t.Parallel()
	db := openOneLane(t, nil)
	ctx := t.Context()
	apply := func(owner, name string) string {
		res, err := db.ApplySuite(ctx, owner, &duet.Suite{Task: duet.Task{Name: name, Description: "d", BaseURL: "http://127.0.0.1:1"},
			Cases: []*duet.Case{{Key: "a", Title: "a", Source: "s", SourceHash: "h", Steps: []duet.Step{{Kind: duet.StepAssert, Name: "true", Assert: &duet.AssertStep{Expr: "true"}}}}}})
		if err != nil {
			t.Fatal(err)
		}
		return res.Task.ID
	}
	a, c := apply("alice", "shop"), apply("carol", "bank")
	if err := db.ShareTask(ctx, "alice", a, "bob"); err != nil {
		t.Fatal(err)
	}
	cases, _, _, err := db.FindCases(ctx, duet.CaseFilter{TaskID: a})
	if err != nil {
		t.Fatal(err)
	}
	run := &duet.Run{TaskID: a, TriggeredBy: "alice", CallSource: duet.SourceCLI}
	if _, _, err := db.CreateRun(ctx, duet.StartRunParams{Run: run, Executions: []*duet.Execution{{CaseID: cases[0].ID, CaseKey: "a", CaseTitle: "a", CaseVersion: cases[0].Version, Steps: cases[0].Steps}}}); err != nil {
		t.Fatal(err)
	}
	keys := []readKey{{"alice", a}, {"bob", a}, {"carol", a}, {"alice", c}, {"carol", c}, {"alice", "task_missing"}, {"alice", a}}
	vs, errs := sameAsAlone(t, db.overviews, keys)
	if vs[0] == nil || vs[0].LastRun == nil || vs[0].LastRun.ID != run.ID || vs[0].LastRun.Totals.Cases != 1 || !reflect.DeepEqual(vs[0].Task.SharedWith, []string{"bob"}) {
		t.Fatalf("alice's overview together: %+v", vs[0])
	}
	rs, _ := sameAsAlone(t, db.runs, []readKey{{"alice", run.ID}, {"bob", run.ID}, {"carol", run.ID}, {"alice", "run_missing"}})
	if rs[1] == nil || rs[1].ID != run.ID || rs[2] != nil {
		t.Fatalf("runs together: bob %+v, carol %+v", rs[1], rs[2])
	}
	cs, _ := sameAsAlone(t, db.cases, []readKey{{"bob", cases[0].ID}, {"carol", cases[0].ID}, {"alice", cases[0].ID}, {"alice", "case_missing"}})
	if cs[0] == nil || cs[0].ID != cases[0].ID || cs[1] != nil || len(cs[0].Steps) != 1 {
		t.Fatalf("cases together: bob %+v, carol %+v", cs[0], cs[1])
	}

	// Through FindTaskOverview, as the reads together above.
	first := throughHeldLane(t, db.overviews, func(k readKey) (*duet.TaskOverview, error) { return db.FindTaskOverview(ctx, k.viewer, k.id) },
		readKey{"alice", a}, keys, vs, errs)
	if first.Task.ID != a {
		t.Fatalf("the first read: %+v", first)
	}
}

// TestTokensTogether: tokens read together by hash, on PostgreSQL, are what
// each read alone returns — unexpired, expired, another's, unknown, twice —
// a token not found is UNAUTHENTICATED with no hash in its message, and
// FindTokenByHash's lookups that come while one is in flight are read in
// one statement.
func TestTokensTogether(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	db := openOneLane(t, clock)
	ctx := t.Context()
	hash := func(user string, ttl time.Duration) string {
		tok := &duet.Token{UserID: user, Name: "n", Hash: "hash-" + duet.NewID("h")}
		if ttl > 0 {
			e := clock().Add(ttl)
			tok.ExpiresAt = &e
		}
		if err := db.CreateToken(ctx, tok); err != nil {
			t.Fatal(err)
		}
		return tok.Hash
	}
	alice, bob, expiring, lasting := hash("alice", 0), hash("bob", 0), hash("alice", time.Hour), hash("bob", 3*time.Hour)
	mu.Lock()
	now = now.Add(2 * time.Hour)
	mu.Unlock()
	keys := []string{alice, "hash-unknown", bob, expiring, lasting, alice}
	vs, errs := sameAsAlone(t, db.tokens, keys)
	for i, k := range keys {
		switch k {
		case alice, bob, lasting:
			if errs[i] != nil || vs[i] == nil || vs[i].Hash != k {
				t.Fatalf("%s together: %+v %v", k, vs[i], errs[i])
			}
		default:
			if duet.ErrorCode(errs[i]) != duet.CodeUnauthenticated || strings.Contains(errs[i].Error(), k) {
				t.Fatalf("%s together: %v, want UNAUTHENTICATED without the hash", k, errs[i])
			}
		}
	}

	// Through FindTokenByHash, as the reads together above.
	first := throughHeldLane(t, db.tokens, func(h string) (*duet.Token, error) { return db.FindTokenByHash(ctx, h) }, bob, keys, vs, errs)
	if first.Hash != bob {
		t.Fatalf("the first read: %+v", first)
	}
}

// throughHeldLane reads first through read while c's one lane is held,
// then each of keys: they queue behind it, and once all have, the lane
// goes free. Each read of keys must return what want and wantErrs say
// (the error's code), and together in one statement; it returns first's
// value.
func throughHeldLane[K, V any](t *testing.T, c *coalescer[K, V], read func(K) (V, error), first K, keys []K, want []V, wantErrs []error) V {
	t.Helper()
	gate := make(chan struct{})
	alone := c.one
	var once sync.Once
	c.one = func(ctx context.Context, k K) (V, error) {
		once.Do(func() { <-gate })
		return alone(ctx, k)
	}
	queued := make(chan int, len(keys))
	c.queued = func(n int) { queued <- n }
	type got struct {
		v   V
		err error
	}
	firstGot := make(chan got, 1)
	go func() { v, err := read(first); firstGot <- got{v, err} }()
	laneTaken(t, c)
	out := make([]chan got, len(keys))
	for i, k := range keys {
		out[i] = make(chan got, 1)
		go func() { v, err := read(k); out[i] <- got{v, err} }()
		for n := range queued {
			if n == i+1 {
				break
			}
		}
	}
	close(gate)
	g := within(t, firstGot)
	if g.err != nil {
		t.Fatalf("the first read: %v", g.err)
	}
	for i, k := range keys {
		r := within(t, out[i])
		if duet.ErrorCode(r.err) != duet.ErrorCode(wantErrs[i]) || !reflect.DeepEqual(r.v, want[i]) {
			t.Errorf("%v: %+v %v; want %+v %v", k, r.v, r.err, want[i], wantErrs[i])
		}
	}
	if n := c.batches.Load(); n != 1 {
		t.Fatalf("statements of several reads: %d, want 1", n)
	}
	return g.v
}

// sameAsAlone reads keys together with c and checks that each read is
// what c's read alone returns; it returns the reads together.
func sameAsAlone[K, V any](t *testing.T, c *coalescer[K, V], keys []K) ([]V, []error) {
	t.Helper()
	vs, errs, err := c.many(t.Context(), keys)
	if err != nil {
		t.Fatal(err)
	}
	for i, k := range keys {
		want, wantErr := c.one(t.Context(), k)
		if duet.ErrorCode(errs[i]) != duet.ErrorCode(wantErr) || !reflect.DeepEqual(vs[i], want) {
			t.Errorf("%v together: %+v %v; alone: %+v %v", k, vs[i], errs[i], want, wantErr)
		}
	}
	return vs, errs
}

// TestStatementsByViewer: a statement built once serves every viewer as
// the one built for that viewer would (the builders look only at whether
// there is one).
func TestStatementsByViewer(t *testing.T) {
	for _, s := range []struct {
		built byViewer
		build func(string) string
	}{{taskByID, taskByIDQuery}, {overview, overviewQuery}, {runByID, runByIDQuery}, {caseByID, caseByIDQuery}} {
		for _, viewer := range []string{"", "alice", "team:qa"} {
			if got, want := s.built.of(viewer), s.build(viewer); got != want {
				t.Fatalf("viewer %q: got\n%s\nwant\n%s", viewer, got, want)
			}
		}
	}
}
