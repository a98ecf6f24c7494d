package webhook_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/netguard"
	"github.com/duet-test/duet/internal/sqlite"
	"github.com/duet-test/duet/internal/vault"
	"github.com/duet-test/duet/internal/webhook"
)

// received is one request a receiver got, with what its own check of the
// signature said.
type received struct {
	event, delivery string
	verified        bool
	body            []byte
}

// receiver is a real HTTP server that checks each delivery's signature the
// way docs/webhooks.md tells receivers to (written here from the recipe,
// not with the package's Verify), answering status(n) to the n-th request.
func receiver(t *testing.T, secret *string, status func(n int) int) (*httptest.Server, chan received) {
	got := make(chan received, 16)
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		// Duet-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, t + "." + body)>
		var ts, v1 string
		for _, part := range strings.Split(r.Header.Get("Duet-Signature"), ",") {
			k, v, _ := strings.Cut(part, "=")
			switch k {
			case "t":
				ts = v
			case "v1":
				v1 = v
			}
		}
		m := hmac.New(sha256.New, []byte(*secret))
		m.Write([]byte(ts + "." + string(body)))
		sec, err := strconv.ParseInt(ts, 10, 64)
		fresh := err == nil && time.Since(time.Unix(sec, 0)).Abs() < 5*time.Minute
		ok := fresh && hmac.Equal([]byte(v1), []byte(hex.EncodeToString(m.Sum(nil))))
		got <- received{event: r.Header.Get("Duet-Event"), delivery: r.Header.Get("Duet-Delivery"), verified: ok, body: body}
		w.WriteHeader(status(int(n.Add(1))))
	}))
	t.Cleanup(srv.Close)
	return srv, got
}

type env struct {
	db     *sqlite.DB
	kr     *vault.Keyring
	taskID string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "duet.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	key, _ := vault.GenerateKey()
	kr, _ := vault.NewKeyring(key)
	su := &duet.Suite{Task: duet.Task{Name: "shop", BaseURL: "http://127.0.0.1:1"}}
	for _, k := range []string{"login", "checkout"} {
		su.Cases = append(su.Cases, &duet.Case{Key: k, Title: "case " + k, Source: k, SourceHash: k,
			Steps: []duet.Step{{Index: 0, Kind: duet.StepAssert, Name: "true", Assert: &duet.AssertStep{Expr: "true"}}}})
	}
	res, err := db.ApplySuite(t.Context(), "alice", su)
	if err != nil {
		t.Fatal(err)
	}
	return &env{db: db, kr: kr, taskID: res.Task.ID}
}

// hook makes a webhook of the task to url and returns its secret.
func (e *env) hook(t *testing.T, url string, on duet.PostRunWhen, format duet.WebhookFormat) (*duet.Webhook, string) {
	t.Helper()
	secret := webhook.NewSecret()
	w := &duet.Webhook{TaskID: e.taskID, Name: "hook-" + duet.NewID("h"), URL: url, Events: duet.WebhookEvents, On: on, Format: format, SecretSealed: []byte("x")}
	if err := e.db.CreateWebhook(t.Context(), "alice", w); err != nil {
		t.Fatal(err)
	}
	sealed, err := webhook.Seal(e.kr, w.ID, secret)
	if err != nil {
		t.Fatal(err)
	}
	w.SecretSealed = sealed
	if err := e.db.UpdateWebhook(t.Context(), "alice", w); err != nil {
		t.Fatal(err)
	}
	return w, secret
}

// failRun runs the task through the store as a worker would: one case
// passes, one fails, the run ends failed.
func (e *env) failRun(t *testing.T) *duet.Run {
	t.Helper()
	cases, _, _, err := e.db.FindCases(t.Context(), duet.CaseFilter{TaskID: e.taskID})
	if err != nil {
		t.Fatal(err)
	}
	run := &duet.Run{TaskID: e.taskID, TriggeredBy: "alice", CallSource: duet.SourceMCP}
	var execs []*duet.Execution
	for _, c := range cases {
		execs = append(execs, &duet.Execution{CaseID: c.ID, CaseKey: c.Key, CaseTitle: c.Title, CaseVersion: c.Version, Steps: c.Steps})
	}
	if _, _, err := e.db.CreateRun(t.Context(), duet.StartRunParams{Run: run, Executions: execs}); err != nil {
		t.Fatal(err)
	}
	r, err := e.db.ClaimRun(t.Context(), "w1", time.Minute)
	if err != nil || r == nil || r.ID != run.ID {
		t.Fatalf("claim: %+v %v", r, err)
	}
	l := duet.LeaseOf(r, "w1")
	xs, _ := e.db.FindExecutions(t.Context(), r.ID)
	now := time.Now()
	for _, x := range xs {
		res := &duet.StepResult{Index: 0, Name: "true", Status: duet.StatusPassed}
		x.Status = duet.StatusPassed
		if x.CaseKey == "checkout" {
			res.Status, x.Status, x.ErrorCode, x.ErrorMessage = duet.StatusFailed, duet.StatusFailed, duet.CodeAssertionFailed, "expected total 42, got 41"
		}
		if err := e.db.SaveStepResult(t.Context(), l, x.ID, res, nil); err != nil {
			t.Fatal(err)
		}
		x.StartedAt, x.FinishedAt = &now, &now
		if err := e.db.FinishExecution(t.Context(), l, x); err != nil {
			t.Fatal(err)
		}
	}
	r.Status, r.ErrorCode, r.ErrorMessage, r.FinishedAt = duet.StatusFailed, duet.CodeAssertionFailed, `case "case checkout": expected total 42, got 41`, &now
	if err := e.db.FinishRun(t.Context(), l, r); err != nil {
		t.Fatal(err)
	}
	return r
}

func (e *env) deliverer(policy netguard.Policy, o webhook.Options) *webhook.Deliverer {
	o.Store, o.Client, o.PublicURL = e.db, policy.Client(), "https://duet.example.com"
	o.Keyring = func() (*vault.Keyring, error) { return e.kr, nil }
	return webhook.New(o)
}

func next(t *testing.T, got chan received) received {
	t.Helper()
	select {
	case r := <-got:
		return r
	case <-time.After(30 * time.Second):
		t.Fatal("the receiver got nothing")
	}
	return received{}
}

// waitStatus waits until the webhook's newest delivery has status.
func (e *env) waitStatus(t *testing.T, w *duet.Webhook, status duet.DeliveryStatus) *duet.WebhookDelivery {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ds, err := e.db.FindDeliveries(t.Context(), "alice", w.ID, 1)
		if err == nil && len(ds) == 1 && ds[0].Status == status {
			return ds[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("delivery: got %+v %v, want %s", ds, err, status)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestSignedDelivery: a run that fails is POSTed to the task's webhook, a
// real HTTP receiver verifies the signature with the documented recipe,
// and the body carries the verdict, the counts, the failed case and the
// link to the run.
func TestSignedDelivery(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var secret string
	srv, got := receiver(t, &secret, func(int) int { return http.StatusNoContent })
	w, sec := e.hook(t, srv.URL+"/duet", duet.PostRunOnFailure, duet.WebhookJSON)
	secret = sec
	run := e.failRun(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go e.deliverer(netguard.Policy{AllowLoopback: true}, webhook.Options{}).Run(ctx)

	r := next(t, got)
	if !r.verified || r.event != "run.finished" || r.delivery == "" {
		t.Fatalf("received: event %s delivery %s verified %v (body %s)", r.event, r.delivery, r.verified, r.body)
	}
	var p webhook.Payload
	if err := json.Unmarshal(r.body, &p); err != nil {
		t.Fatal(err)
	}
	if p.Run == nil || p.Run.ID != run.ID || p.Run.Status != duet.StatusFailed || p.Run.Totals.Passed != 1 || p.Run.Totals.Failed != 1 ||
		p.Run.URL != "https://duet.example.com/runs/"+run.ID || len(p.FailedCases) != 1 || p.FailedCases[0].Key != "checkout" ||
		p.FailedCases[0].ErrorMessage != "expected total 42, got 41" || p.Task.Name != "shop" {
		t.Fatalf("payload: %s", r.body)
	}
	d := e.waitStatus(t, w, duet.DeliveryDelivered)
	if d.Attempts != 1 || d.ResponseCode != 204 || d.ID != r.delivery {
		t.Fatalf("delivery: %+v", d)
	}
	// A body signed with another secret does not verify.
	if webhook.Verify("whsec_other", webhook.Sign(sec, time.Now(), r.body), r.body, time.Now(), 5*time.Minute) ||
		!webhook.Verify(sec, webhook.Sign(sec, time.Now(), r.body), r.body, time.Now(), 5*time.Minute) ||
		webhook.Verify(sec, webhook.Sign(sec, time.Now().Add(-time.Hour), r.body), r.body, time.Now(), 5*time.Minute) {
		t.Fatal("Verify")
	}
}

// TestRetryThenSuccess: the receiver fails twice (503, then a dropped
// connection's kin: 500), then accepts; the delivery is retried with
// backoff and ends delivered after three attempts, the same delivery id
// and body each time.
func TestRetryThenSuccess(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var secret string
	srv, got := receiver(t, &secret, func(n int) int {
		switch n {
		case 1:
			return http.StatusServiceUnavailable
		case 2:
			return http.StatusInternalServerError
		}
		return http.StatusOK
	})
	w, sec := e.hook(t, srv.URL, duet.PostRunAlways, duet.WebhookJSON)
	secret = sec
	e.failRun(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go e.deliverer(netguard.Policy{AllowLoopback: true}, webhook.Options{Backoff: 20 * time.Millisecond, Poll: time.Hour}).Run(ctx)

	first, second, third := next(t, got), next(t, got), next(t, got)
	if first.delivery != second.delivery || second.delivery != third.delivery || string(first.body) != string(third.body) || !third.verified {
		t.Fatalf("attempts: %+v %+v %+v", first, second, third)
	}
	d := e.waitStatus(t, w, duet.DeliveryDelivered)
	if d.Attempts != 3 || d.ResponseCode != 200 {
		t.Fatalf("delivery: %+v", d)
	}
}

// TestGiveUpAndRedeliver: a receiver that always fails gets the capped
// number of attempts, then the delivery is failed; the owner's redelivery
// sends it again.
func TestGiveUpAndRedeliver(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var secret string
	ok := atomic.Bool{}
	srv, got := receiver(t, &secret, func(int) int {
		if ok.Load() {
			return http.StatusOK
		}
		return http.StatusBadGateway
	})
	w, sec := e.hook(t, srv.URL, duet.PostRunAlways, duet.WebhookSlack)
	secret = sec
	e.failRun(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	dl := e.deliverer(netguard.Policy{AllowLoopback: true}, webhook.Options{Attempts: 3, Backoff: 10 * time.Millisecond, Poll: time.Hour})
	go dl.Run(ctx)
	for range 3 {
		r := next(t, got)
		var slack map[string]string
		if json.Unmarshal(r.body, &slack) != nil || !strings.Contains(slack["text"], "run of *shop* failed") || !strings.Contains(slack["text"], "expected total 42") {
			t.Fatalf("slack body: %s", r.body)
		}
	}
	d := e.waitStatus(t, w, duet.DeliveryFailed)
	if d.Attempts != 3 || d.ResponseCode != 502 || !strings.Contains(d.LastError, "no more retries") {
		t.Fatalf("failed delivery: %+v", d)
	}
	ok.Store(true)
	re, err := e.db.Redeliver(t.Context(), "alice", d.ID)
	if err != nil {
		t.Fatal(err)
	}
	dl.Wake()
	if r := next(t, got); r.delivery != re.ID || !r.verified {
		t.Fatalf("redelivery: %+v", r)
	}
	if d := e.waitStatus(t, w, duet.DeliveryDelivered); d.ID != re.ID || d.RedeliveryOf == "" {
		t.Fatalf("redelivered: %+v", d)
	}
}

// TestGuardRefusesLoopback: without the deployment's allowance a webhook
// to a loopback address is refused by the network guard, never sent, and
// the delivery fails at once with URL_REFUSED (no retry changes it).
func TestGuardRefusesLoopback(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var secret string
	srv, got := receiver(t, &secret, func(int) int { return http.StatusOK })
	w, _ := e.hook(t, srv.URL, duet.PostRunAlways, duet.WebhookJSON)
	e.failRun(t)
	dl := e.deliverer(netguard.Policy{}, webhook.Options{Backoff: 10 * time.Millisecond})
	dl.Drain(t.Context())
	d := e.waitStatus(t, w, duet.DeliveryFailed)
	if d.Attempts != 1 || !strings.Contains(d.LastError, "URL_REFUSED") || !strings.Contains(d.LastError, "loopback") {
		t.Fatalf("delivery: %+v", d)
	}
	select {
	case r := <-got:
		t.Fatalf("the receiver got %+v", r)
	default:
	}
}

// TestBackoff: the wait doubles from the base and stops at the cap.
func TestBackoff(t *testing.T) {
	d := webhook.New(webhook.Options{Backoff: 10 * time.Second, BackoffMax: time.Minute})
	var got []time.Duration
	for n := 1; n <= 6; n++ {
		got = append(got, d.Backoff(n))
	}
	want := []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, time.Minute, time.Minute, time.Minute}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("backoff: got %v, want %v", got, want)
		}
	}
}
