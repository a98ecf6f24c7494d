package catalog_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/catalog"
)

// TestGovern is the pipeline every MCP method goes through (tools/call,
// resources/read, prompts/get, ...): each step refuses with its own code,
// and every outcome leaves exactly one audit record.
func TestGovern(t *testing.T) {
	t.Parallel()
	c, _, _, log := setup(t, catalog.Options{Limits: catalog.Limits{MaxPerCaller: 1, MaxArgBytes: 300, MaxResultBytes: 1000, Timeout: 100 * time.Millisecond}})
	alice := duet.Caller{UserID: "alice", Source: duet.SourceMCP}
	op := func(caller duet.Caller, name string) catalog.Op {
		return catalog.Op{Caller: caller, Method: "resources/read", Name: name}
	}
	ok := func(size int) func(context.Context) (int, error) {
		return func(context.Context) (int, error) { return size, nil }
	}
	tests := []struct {
		name string
		op   catalog.Op
		fn   func(context.Context) (int, error)
		code duet.Code
	}{
		{"ok", op(alice, "r1"), ok(999), ""},
		{"no caller", op(duet.Caller{}, "r2"), ok(1), duet.CodeUnauthenticated},
		{"an invalid caller", op(duet.Caller{UserID: "alice\nbob"}, "r3"), ok(1), duet.CodeUnauthenticated},
		{"arguments too large", catalog.Op{Caller: alice, Method: "prompts/get", Name: "r4", ArgBytes: 301}, ok(1), duet.CodeTooLarge},
		{"result too large", op(alice, "r5"), ok(1001), duet.CodeTooLarge},
		{"too slow", op(alice, "r6"), func(ctx context.Context) (int, error) { <-ctx.Done(); return 0, ctx.Err() }, duet.CodeTimeout},
		{"a panic", op(alice, "r7"), func(context.Context) (int, error) { panic("boom") }, duet.CodeInternal},
		{"a domain error", op(alice, "r8"), func(context.Context) (int, error) { return 0, duet.Errorf(duet.CodeNotFound, "no r8") }, duet.CodeNotFound},
		{"a stream has no time limit", catalog.Op{Caller: alice, Method: "subscriptions/listen", Name: "r9", Stream: true},
			func(ctx context.Context) (int, error) { time.Sleep(200 * time.Millisecond); return 0, ctx.Err() }, ""},
	}
	for _, tt := range tests {
		err := c.Govern(t.Context(), tt.op, tt.fn)
		if duet.ErrorCode(err) != tt.code {
			t.Errorf("%s: got %v, want %q", tt.name, err, tt.code)
		}
		var recs []*duet.AuditRecord
		for _, r := range log.all() {
			if r.Tool == tt.op.Name {
				recs = append(recs, r)
			}
		}
		want := tt.code
		if want == "" {
			want = duet.OutcomeOK
		}
		if len(recs) != 1 || recs[0].Outcome != want || recs[0].Method != tt.op.Method || recs[0].TraceID == "" {
			t.Errorf("%s: audit %+v, want one record %s", tt.name, recs, want)
			continue
		}
		if strings.ContainsAny(recs[0].Caller, "\n") {
			t.Errorf("%s: an invalid user id reached the audit: %q", tt.name, recs[0].Caller)
		}
	}

	// A slot taken with Admit is the call's (Op.Slot): Govern does not
	// take another, and a second call of the same caller is refused until
	// it is given back — also one that names a Slot Admit did not take.
	slot, err := c.Admit(op(alice, "held"))
	if err != nil {
		t.Fatal(err)
	}
	inside := op(alice, "inside")
	inside.Slot = slot
	if err := c.Govern(t.Context(), inside, ok(1)); err != nil {
		t.Errorf("Govern with the admitted slot: %v", err)
	}
	if _, err := c.Admit(op(alice, "second")); duet.ErrorCode(err) != duet.CodeRateLimited {
		t.Errorf("a second admission: got %v, want RATE_LIMITED", err)
	}
	if err := c.Govern(t.Context(), op(alice, "third"), ok(1)); duet.ErrorCode(err) != duet.CodeRateLimited {
		t.Errorf("a second call: got %v, want RATE_LIMITED", err)
	}
	forged := op(alice, "forged")
	forged.Slot = &catalog.Slot{}
	if err := c.Govern(t.Context(), forged, ok(1)); duet.ErrorCode(err) != duet.CodeRateLimited {
		t.Errorf("a call naming a slot Admit did not take: got %v, want RATE_LIMITED", err)
	}
	slot.Release()
	slot.Release() // idempotent
	if err := c.Govern(t.Context(), op(alice, "after"), ok(1)); err != nil {
		t.Errorf("after the release: %v", err)
	}
	if err := c.Refuse(op(alice, "refused"), errors.New("disk on fire")); duet.ErrorCode(err) != duet.CodeInternal {
		t.Errorf("Refuse returns its error: %v", err)
	}
}

// TestCallRefusesInvalidCallers: the identity step applies the one user-id
// rule, whatever the transport did.
func TestCallRefusesInvalidCallers(t *testing.T) {
	t.Parallel()
	c, _, _, _ := setup(t, catalog.Options{})
	for _, user := range []string{"", "a b", "a\x00", strings.Repeat("x", 129)} {
		res, err := c.Call(t.Context(), catalog.Request{Caller: duet.Caller{UserID: user}, Tool: "list_test_tasks"})
		if err != nil || !res.IsError || res.Code != duet.CodeUnauthenticated {
			t.Errorf("%q: got %+v %v", user, res, err)
		}
	}
}

// TestStreamBudget: a stream (subscriptions/listen, a run's progress)
// takes a stream slot, counted apart from the call slots under the same
// limits: a caller's (MaxPerCaller+1)th stream is refused RATE_LIMITED and
// audited, whether it was admitted first (HTTP) or governed directly
// (stdio); another caller still gets theirs; the streams leave the calls
// alone and the calls the streams; a closed stream gives its slot back;
// MaxConcurrent bounds the streams of everyone.
func TestStreamBudget(t *testing.T) {
	t.Parallel()
	c, _, _, log := setup(t, catalog.Options{Limits: catalog.Limits{MaxPerCaller: 2, MaxConcurrent: 3}})
	listen := func(user, name string) catalog.Op {
		return catalog.Op{Caller: duet.Caller{UserID: user, Source: duet.SourceMCP}, Method: "subscriptions/listen", Name: name, Stream: true}
	}
	refusals := func(name string) int {
		n := 0
		for _, r := range log.all() {
			if r.Tool == name && r.Outcome == duet.CodeRateLimited {
				n++
			}
		}
		return n
	}
	release1, err := c.Admit(listen("alice", "a1"))
	if err != nil {
		t.Fatal(err)
	}
	// The second, governed as stdio governs one: held until it ends.
	open2, end2 := make(chan struct{}), make(chan struct{})
	done2 := make(chan error, 1)
	go func() {
		done2 <- c.Govern(t.Context(), listen("alice", "a2"), func(ctx context.Context) (int, error) {
			close(open2)
			<-end2
			return 0, nil
		})
	}()
	<-open2
	if _, err := c.Admit(listen("alice", "a3")); duet.ErrorCode(err) != duet.CodeRateLimited {
		t.Fatalf("alice's third stream: %v, want RATE_LIMITED", err)
	}
	if err := c.Govern(t.Context(), listen("alice", "a4"), func(context.Context) (int, error) { return 0, nil }); duet.ErrorCode(err) != duet.CodeRateLimited {
		t.Fatalf("alice's third stream, governed: %v, want RATE_LIMITED", err)
	}
	if refusals("a3") != 1 || refusals("a4") != 1 {
		t.Errorf("the refusals are audited once each: %d %d", refusals("a3"), refusals("a4"))
	}
	// The streams are not calls: alice's calls still run, both of them.
	releaseCall, err := c.Admit(catalog.Op{Caller: duet.Caller{UserID: "alice"}, Method: "tools/call", Name: "c1"})
	if err != nil {
		t.Fatalf("a call beside two streams: %v", err)
	}
	if err := c.Govern(t.Context(), catalog.Op{Caller: duet.Caller{UserID: "alice"}, Method: "resources/read", Name: "c2"}, func(context.Context) (int, error) { return 0, nil }); err != nil {
		t.Fatalf("a second call beside two streams: %v", err)
	}
	// Bob gets his: the third stream of the server, its limit.
	releaseBob, err := c.Admit(listen("bob", "b1"))
	if err != nil {
		t.Fatalf("bob's stream: %v", err)
	}
	if _, err := c.Admit(listen("carol", "c3")); duet.ErrorCode(err) != duet.CodeRateLimited || !strings.Contains(err.Error(), "DUET_MAX_CONCURRENT") {
		t.Fatalf("a fourth stream on the server: %v, want RATE_LIMITED (DUET_MAX_CONCURRENT)", err)
	}
	// The calls are not streams: with alice's call slots full (one held,
	// the per-caller limit is 2), a stream is still refused for the stream
	// budget only, and after closing one, admitted.
	releaseCall2, err := c.Admit(catalog.Op{Caller: duet.Caller{UserID: "alice"}, Method: "tools/call", Name: "c4"})
	if err != nil {
		t.Fatal(err)
	}
	release1.Release()
	release1.Release() // idempotent
	release5, err := c.Admit(listen("alice", "a5"))
	if err != nil {
		t.Fatalf("alice after closing a stream, her calls full: %v", err)
	}
	close(end2)
	if err := <-done2; err != nil {
		t.Fatalf("the governed stream: %v", err)
	}
	release6, err := c.Admit(listen("alice", "a6"))
	if err != nil {
		t.Fatalf("alice after her governed stream ended: %v", err)
	}
	for _, r := range []*catalog.Slot{releaseCall, releaseCall2, releaseBob, release5, release6} {
		r.Release()
	}
}
