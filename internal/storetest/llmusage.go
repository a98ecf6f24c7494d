package storetest

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/duet-test/duet"
)

// testLLMUsage: a user's day counts what their AI steps spent; a charge
// that would pass the limit changes nothing; a settlement after a call
// gives back or adds without a limit, never below zero; users and days
// are counted apart.
func testLLMUsage(t *testing.T, s duet.Store) {
	const day, next = "2026-12-02", "2026-12-03"
	charge := func(user, day string, tokens, limit int64) (duet.LLMUsage, bool) {
		t.Helper()
		u, ok, err := s.ChargeLLMUsage(ctx(t), duet.LLMCharge{UserID: user, Day: day, Tokens: tokens, Calls: 1, Limit: limit})
		if err != nil {
			t.Fatalf("charge %d for %s: %v", tokens, user, err)
		}
		return u, ok
	}
	if u, err := s.FindLLMUsage(ctx(t), "alice", day); err != nil || u.Tokens != 0 || u.Calls != 0 {
		t.Fatalf("nothing spent yet: %+v %v", u, err)
	}
	if u, ok := charge("alice", day, 600, 1000); !ok || u.Tokens != 600 || u.Calls != 1 {
		t.Fatalf("the first charge: %+v %v", u, ok)
	}
	if u, ok := charge("alice", day, 500, 1000); ok || u.Tokens != 600 || u.Calls != 1 {
		t.Fatalf("a charge past the limit was made, or changed the day: %+v %v", u, ok)
	}
	if u, ok := charge("alice", day, 2000, 1000); ok || u.Tokens != 600 {
		t.Fatalf("a charge larger than the limit: %+v %v", u, ok)
	}
	if u, ok := charge("alice", day, 400, 1000); !ok || u.Tokens != 1000 || u.Calls != 2 {
		t.Fatalf("a charge up to the limit: %+v %v", u, ok)
	}
	// Settling a call that spent less than it reserved gives back; one
	// that spent more adds, whatever the limit.
	if u, _, err := s.ChargeLLMUsage(ctx(t), duet.LLMCharge{UserID: "alice", Day: day, Tokens: -300}); err != nil || u.Tokens != 700 || u.Calls != 2 {
		t.Fatalf("give back 300: %+v %v", u, err)
	}
	if u, ok := charge("alice", day, 900, 0); !ok || u.Tokens != 1600 {
		t.Fatalf("an unlimited settlement: %+v %v", u, ok)
	}
	if u, _, err := s.ChargeLLMUsage(ctx(t), duet.LLMCharge{UserID: "alice", Day: day, Tokens: -5000}); err != nil || u.Tokens != 0 {
		t.Fatalf("the tokens fell below zero: %+v %v", u, err)
	}
	if u, ok := charge("bob", day, 900, 1000); !ok || u.Tokens != 900 {
		t.Fatalf("bob's day is his own: %+v %v", u, ok)
	}
	if u, ok := charge("bob", next, 900, 1000); !ok || u.Tokens != 900 || u.Day != next {
		t.Fatalf("the next day starts afresh: %+v %v", u, ok)
	}
	if u, err := s.FindLLMUsage(ctx(t), "bob", day); err != nil || u.Tokens != 900 || u.Calls != 1 {
		t.Fatalf("bob's first day: %+v %v", u, err)
	}
	for _, c := range []duet.LLMCharge{{Day: day, Tokens: 1}, {UserID: "alice", Day: "2026-13-01", Tokens: 1}, {UserID: "alice", Day: day, Tokens: 1, Limit: -1}} {
		_, _, err := s.ChargeLLMUsage(ctx(t), c)
		wantCode(t, err, duet.CodeInvalidArgument)
	}
}

// testLLMUsageAcrossHandles: six chargers on two handles (two instances)
// charge one user's day at once: exactly as many charges are made as fit
// the limit, and the day holds their sum — none lost, none past it.
func testLLMUsageAcrossHandles(t *testing.T, a duet.Store, another func() duet.Store) {
	b := another()
	const (
		day    = "2026-12-02"
		each   = 10
		limit  = 1000 // 100 charges fit
		tries  = 30   // per charger: 180 in all
		wantOK = limit / each
	)
	var made atomic.Int64
	var wg sync.WaitGroup
	for i := range 6 {
		s := a
		if i%2 == 1 {
			s = b
		}
		wg.Go(func() {
			for range tries {
				for {
					_, ok, err := s.ChargeLLMUsage(ctx(t), duet.LLMCharge{UserID: "alice", Day: day, Tokens: each, Calls: 1, Limit: limit})
					if duet.ErrorCode(err) == duet.CodeUnavailable {
						continue // SQLite busy under contention: try again
					}
					if err != nil {
						t.Error(err)
						return
					}
					if ok {
						made.Add(1)
					}
					break
				}
			}
		})
	}
	wg.Wait()
	u, err := b.FindLLMUsage(ctx(t), "alice", day)
	if err != nil {
		t.Fatal(err)
	}
	if made.Load() != wantOK || u.Tokens != wantOK*each || u.Calls != wantOK {
		t.Fatalf("six chargers made %d charges and the day holds %+v; want %d charges, %d tokens", made.Load(), u, wantOK, wantOK*each)
	}
}
