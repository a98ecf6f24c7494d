package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/duet-test/duet"
)

func newWebhook(taskID, name string, on duet.PostRunWhen, events ...duet.WebhookEvent) *duet.Webhook {
	if len(events) == 0 {
		events = []duet.WebhookEvent{duet.EventRunFinished}
	}
	return &duet.Webhook{TaskID: taskID, Name: name, URL: "https://hooks.example.com/" + name, Events: events, On: on, Format: duet.WebhookJSON,
		SecretSealed: []byte("sealed " + name)}
}

// testWebhooks: only the task's owner makes and sees its webhooks; a run's
// end makes the deliveries of the webhooks that want it in the
// transaction that stores the end (a queued run cancelled too); a
// delivery is claimed under a lease, retried, taken over when its lease
// expires, fenced, and sent again on request.
func testWebhooks(t *testing.T, s duet.Store) {
	ids := queueRuns(t, s, "alice", 3)
	r := claim(t, s, "w1")
	task := r.TaskID
	if err := s.ShareTask(ctx(t), "alice", task, "bob"); err != nil {
		t.Fatal(err)
	}
	fail := newWebhook(task, "on-failure", duet.PostRunOnFailure)
	if err := s.CreateWebhook(ctx(t), "alice", fail); err != nil {
		t.Fatal(err)
	}
	for _, w := range []*duet.Webhook{newWebhook(task, "always", duet.PostRunAlways), newWebhook(task, "success", duet.PostRunOnSuccess),
		newWebhook(task, "alerts", duet.PostRunAlways, duet.EventCaseBroken)} {
		if err := s.CreateWebhook(ctx(t), "alice", w); err != nil {
			t.Fatal(err)
		}
	}
	wantCode(t, s.CreateWebhook(ctx(t), "alice", newWebhook(task, "always", duet.PostRunAlways)), duet.CodeConflict)
	wantCode(t, s.CreateWebhook(ctx(t), "bob", newWebhook(task, "bobs", duet.PostRunAlways)), duet.CodeNotFound) // shared, not owned
	bad := newWebhook(task, "bad", duet.PostRunAlways)
	bad.URL = "ftp://x"
	wantCode(t, s.CreateWebhook(ctx(t), "alice", bad), duet.CodeInvalidArgument)
	_, err := s.FindWebhooks(ctx(t), "bob", task)
	wantCode(t, err, duet.CodeNotFound)
	_, err = s.FindWebhook(ctx(t), "bob", fail.ID)
	wantCode(t, err, duet.CodeNotFound)
	hooks, err := s.FindWebhooks(ctx(t), "alice", task)
	if err != nil || len(hooks) != 4 || hooks[0].Name != "alerts" || string(hooks[2].SecretSealed) != "sealed on-failure" || hooks[2].On != duet.PostRunOnFailure {
		t.Fatalf("FindWebhooks: got %+v %v", hooks, err)
	}

	// The run ends in error: on-failure and always get it.
	now := time.Now()
	r.Status, r.ErrorCode, r.ErrorMessage, r.FinishedAt = duet.StatusError, duet.CodeInternal, "boom", &now
	if err := s.FinishRun(ctx(t), duet.LeaseOf(r, "w1"), r); err != nil {
		t.Fatal(err)
	}
	// A queued run cancelled: always gets it.
	if _, err := s.RequestCancel(ctx(t), "alice", ids[1]); err != nil {
		t.Fatal(err)
	}
	count := func(name string) []*duet.WebhookDelivery {
		t.Helper()
		for _, w := range hooks {
			if w.Name == name {
				ds, err := s.FindDeliveries(ctx(t), "alice", w.ID, 0)
				if err != nil {
					t.Fatal(err)
				}
				return ds
			}
		}
		t.Fatalf("no webhook %s", name)
		return nil
	}
	if f, a, su, al := count("on-failure"), count("always"), count("success"), count("alerts"); len(f) != 1 || len(a) != 2 || len(su) != 0 || len(al) != 0 ||
		f[0].RunID != r.ID || f[0].Event != duet.EventRunFinished || f[0].Status != duet.DeliveryPending || f[0].NextAttemptAt == nil {
		t.Fatalf("deliveries: failure %+v always %+v success %+v alerts %+v", f, a, su, al)
	}
	_, err = s.FindDeliveries(ctx(t), "bob", fail.ID, 0)
	wantCode(t, err, duet.CodeNotFound)

	// A case event goes to the webhooks subscribed to it.
	made, err := s.EnqueueDeliveries(ctx(t), task, duet.EventCaseBroken, "case-1", []byte(`{"event":"case.broken"}`))
	if err != nil || len(made) != 1 || made[0].CaseID != "case-1" {
		t.Fatalf("EnqueueDeliveries: got %+v %v", made, err)
	}

	// Claims: the oldest due first, each under its own lease; none due
	// before its time.
	at := time.Now().Add(time.Second).Truncate(time.Millisecond)
	seen := map[string]bool{}
	var first *duet.WebhookDelivery
	for range 4 {
		x, _, err := s.ClaimDelivery(ctx(t), at, time.Minute)
		if err != nil || x == nil || x.Status != duet.DeliveryDelivering || x.Lease == "" || seen[x.ID] {
			t.Fatalf("claim: got %+v %v", x, err)
		}
		seen[x.ID] = true
		if first == nil {
			first = x
			continue
		}
		if err := s.FinishDelivery(ctx(t), x.ID, x.Lease, duet.DeliveryOutcome{Status: duet.DeliveryFailed, Error: "refused", At: at}); err != nil {
			t.Fatal(err)
		}
	}
	if x, earliest, err := s.ClaimDelivery(ctx(t), at, time.Minute); err != nil || x != nil || !earliest.IsZero() {
		t.Fatalf("a fifth claim: got %+v %v %v, want none", x, earliest, err)
	}
	// The first fails and is retried later; a stale lease cannot record.
	retry := at.Add(10 * time.Second)
	wantCode(t, s.FinishDelivery(ctx(t), first.ID, "another lease", duet.DeliveryOutcome{Status: duet.DeliveryDelivered, At: at}), duet.CodeLeaseLost)
	if err := s.FinishDelivery(ctx(t), first.ID, first.Lease, duet.DeliveryOutcome{Status: duet.DeliveryPending, ResponseCode: 503, Error: "HTTP 503",
		NextAttempt: retry, Payload: []byte(`{"x":1}`), At: at}); err != nil {
		t.Fatal(err)
	}
	if x, earliest, err := s.ClaimDelivery(ctx(t), at, time.Minute); err != nil || x != nil || !earliest.Equal(retry) {
		t.Fatalf("before the retry: got %+v %v %v, want none and the retry's time %v (at %v)", x, earliest, err, retry, at)
	}
	again, _, err := s.ClaimDelivery(ctx(t), retry, time.Minute)
	if err != nil || again == nil || again.ID != first.ID || again.Attempts != 1 || string(again.Payload) != `{"x":1}` || again.Lease == first.Lease {
		t.Fatalf("the retry: got %+v %v", again, err)
	}
	// Its instance dies: once the lease expires another takes it over,
	// and the first can no longer record.
	if x, _, _ := s.ClaimDelivery(ctx(t), retry.Add(30*time.Second), time.Minute); x != nil {
		t.Fatalf("claimed under a live lease: %+v", x)
	}
	taken, _, err := s.ClaimDelivery(ctx(t), retry.Add(2*time.Minute), time.Minute)
	if err != nil || taken == nil || taken.ID != first.ID {
		t.Fatalf("takeover: got %+v %v", taken, err)
	}
	wantCode(t, s.FinishDelivery(ctx(t), first.ID, again.Lease, duet.DeliveryOutcome{Status: duet.DeliveryDelivered, At: at}), duet.CodeLeaseLost)
	if err := s.FinishDelivery(ctx(t), first.ID, taken.Lease, duet.DeliveryOutcome{Status: duet.DeliveryDelivered, ResponseCode: 204, Payload: []byte(`{"x":1}`), At: at}); err != nil {
		t.Fatal(err)
	}
	var done *duet.WebhookDelivery
	for _, name := range []string{"on-failure", "always", "alerts"} {
		for _, x := range count(name) {
			if x.ID == first.ID {
				done = x
			}
		}
	}
	if done == nil || done.Status != duet.DeliveryDelivered || done.Attempts != 2 || done.ResponseCode != 204 || done.NextAttemptAt != nil || done.LastAttemptAt == nil {
		t.Fatalf("delivered: got %+v", done)
	}

	// Sent again on the owner's request, with the same payload.
	_, err = s.Redeliver(ctx(t), "bob", first.ID)
	wantCode(t, err, duet.CodeNotFound)
	re, err := s.Redeliver(ctx(t), "alice", first.ID)
	if err != nil || re.RedeliveryOf != first.ID || re.Status != duet.DeliveryPending || string(re.Payload) != `{"x":1}` {
		t.Fatalf("Redeliver: got %+v %v", re, err)
	}
	_, err = s.Redeliver(ctx(t), "alice", re.ID)
	wantCode(t, err, duet.CodeInvalidArgument)

	// Disabled webhooks get nothing; an update keeps the secret unless given.
	fail.Disabled, fail.SecretSealed = true, nil
	if err := s.UpdateWebhook(ctx(t), "alice", fail); err != nil || string(fail.SecretSealed) != "sealed on-failure" {
		t.Fatalf("UpdateWebhook: %v %q", err, fail.SecretSealed)
	}
	wantCode(t, s.UpdateWebhook(ctx(t), "bob", fail), duet.CodeNotFound)
	r2 := claim(t, s, "w2")
	r2.Status, r2.FinishedAt = duet.StatusError, &now
	if err := s.FinishRun(ctx(t), duet.LeaseOf(r2, "w2"), r2); err != nil {
		t.Fatal(err)
	}
	if f := count("on-failure"); len(f) != 1 {
		t.Fatalf("a disabled webhook got %+v", f)
	}
	wantCode(t, s.DeleteWebhook(ctx(t), "bob", fail.ID), duet.CodeNotFound)
	if err := s.DeleteWebhook(ctx(t), "alice", fail.ID); err != nil {
		t.Fatal(err)
	}
	_, err = s.FindDeliveries(ctx(t), "alice", fail.ID, 0)
	wantCode(t, err, duet.CodeNotFound)
}

// testDeliveryClaimExactlyOnce: 24 due deliveries, 6 instances on two
// handles claiming at once: each delivery is claimed exactly once.
func testDeliveryClaimExactlyOnce(t *testing.T, a duet.Store, another func() duet.Store) {
	b := another()
	res := mustApply(t, a, "alice", suite("hooks-shared", "a"))
	if err := a.CreateWebhook(ctx(t), "alice", newWebhook(res.Task.ID, "alerts", duet.PostRunAlways, duet.EventCaseBroken)); err != nil {
		t.Fatal(err)
	}
	const n = 24
	for i := range n {
		if _, err := a.EnqueueDeliveries(ctx(t), res.Task.ID, duet.EventCaseBroken, fmt.Sprint("case-", i), []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	at := time.Now().Add(time.Second)
	var mu sync.Mutex
	got := map[string]int{}
	var wg sync.WaitGroup
	for i := range 6 {
		s := a
		if i%2 == 1 {
			s = b
		}
		wg.Go(func() {
			for {
				x, _, err := s.ClaimDelivery(ctx(t), at, time.Minute)
				if duet.ErrorCode(err) == duet.CodeUnavailable {
					continue // SQLite busy under contention: try again
				}
				if err != nil {
					t.Error(err)
					return
				}
				if x == nil {
					return
				}
				mu.Lock()
				got[x.ID]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(got) != n {
		t.Fatalf("claimed %d distinct deliveries, want %d", len(got), n)
	}
	for id, k := range got {
		if k != 1 {
			t.Fatalf("delivery %s claimed %d times", id, k)
		}
	}
}
