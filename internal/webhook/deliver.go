package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/vault"
)

// Store is what the Deliverer needs.
type Store interface {
	FindWebhook(ctx context.Context, by, id string) (*duet.Webhook, error)
	ClaimDelivery(ctx context.Context, now time.Time, lease time.Duration) (*duet.WebhookDelivery, time.Time, error)
	FinishDelivery(ctx context.Context, id, lease string, o duet.DeliveryOutcome) error
	FindRunByID(ctx context.Context, viewer, id string) (*duet.Run, error)
	FindExecutions(ctx context.Context, runID string) ([]*duet.Execution, error)
	FindTaskByID(ctx context.Context, viewer, id string) (*duet.Task, error)
}

// Options configure a Deliverer. Zero values mean the defaults.
type Options struct {
	Store   Store
	Keyring func() (*vault.Keyring, error)
	// Client sends the deliveries: the network guard's (netguard.Policy
	// .Client), so a webhook cannot reach a private or loopback address
	// the deployment does not allow. Redirects are not followed.
	Client *http.Client
	// PublicURL is the console's address, for the links in the bodies
	// ("" gives paths only).
	PublicURL string
	Logger    *slog.Logger
	// Attempts (default 8) a delivery is tried; Backoff (default 10s) the
	// delay before its first retry, doubled at each one up to BackoffMax
	// (default 1h).
	Attempts   int
	Backoff    time.Duration
	BackoffMax time.Duration
	// Timeout of one attempt (default 10s); Lease how long an instance
	// holds a delivery it sends (default 1m: another takes it over after
	// that); Poll how often the store is looked at for deliveries other
	// instances made (default 2s).
	Timeout time.Duration
	Lease   time.Duration
	Poll    time.Duration
	Now     func() time.Time
}

// Deliverer sends the due deliveries, one at a time.
type Deliverer struct {
	o    Options
	log  *slog.Logger
	wake chan struct{}

	mu sync.Mutex
	kr *vault.Keyring
}

// New returns a Deliverer.
func New(o Options) *Deliverer {
	if o.Attempts <= 0 {
		o.Attempts = 8
	}
	if o.Backoff <= 0 {
		o.Backoff = 10 * time.Second
	}
	if o.BackoffMax <= 0 {
		o.BackoffMax = time.Hour
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.Lease <= 0 {
		o.Lease = time.Minute
	}
	if o.Poll <= 0 {
		o.Poll = 2 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Client == nil {
		o.Client = &http.Client{}
	}
	c := *o.Client
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	o.Client = &c
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Deliverer{o: o, log: log, wake: make(chan struct{}, 1)}
}

// Wake makes Run look for due deliveries at once (one was just made).
func (d *Deliverer) Wake() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Run sends due deliveries until ctx ends.
func (d *Deliverer) Run(ctx context.Context) {
	for {
		next := d.Drain(ctx)
		wait := d.o.Poll
		if !next.IsZero() {
			wait = min(wait, max(next.Sub(d.o.Now()), 0))
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-d.wake:
		case <-t.C:
		}
		t.Stop()
	}
}

// Drain sends every delivery due now and returns when the next pending one
// is due (zero: none).
func (d *Deliverer) Drain(ctx context.Context) time.Time {
	for ctx.Err() == nil {
		x, next, err := d.o.Store.ClaimDelivery(ctx, d.o.Now(), d.o.Lease)
		if err != nil {
			if ctx.Err() == nil {
				d.log.WarnContext(ctx, "webhooks: claiming a delivery", "err", err)
			}
			return time.Time{}
		}
		if x == nil {
			return next
		}
		d.deliver(ctx, x)
	}
	return time.Time{}
}

// deliver makes one attempt of x and records it.
func (d *Deliverer) deliver(ctx context.Context, x *duet.WebhookDelivery) {
	o := d.attempt(ctx, x)
	o.At = d.o.Now()
	if o.Status == "" {
		switch n := x.Attempts + 1; {
		case n >= d.o.Attempts:
			o.Status = duet.DeliveryFailed
			o.Error = fmt.Sprintf("%s (attempt %d of %d: no more retries)", o.Error, n, d.o.Attempts)
		default:
			o.Status, o.NextAttempt = duet.DeliveryPending, o.At.Add(d.Backoff(n))
		}
	}
	if err := d.o.Store.FinishDelivery(context.WithoutCancel(ctx), x.ID, x.Lease, o); err != nil {
		d.log.WarnContext(ctx, "webhooks: recording a delivery", "delivery", x.ID, "err", err)
	}
}

// Backoff is the wait after the n-th failed attempt: Backoff·2^(n-1), at
// most BackoffMax.
func (d *Deliverer) Backoff(n int) time.Duration {
	w := d.o.Backoff
	for i := 1; i < n && w < d.o.BackoffMax; i++ {
		w *= 2
	}
	return min(w, d.o.BackoffMax)
}

// attempt sends x once. A zero Status means a failure worth a retry.
func (d *Deliverer) attempt(ctx context.Context, x *duet.WebhookDelivery) duet.DeliveryOutcome {
	var o duet.DeliveryOutcome
	w, err := d.o.Store.FindWebhook(ctx, "", x.WebhookID)
	if err != nil {
		if duet.ErrorCode(err) == duet.CodeNotFound {
			return duet.DeliveryOutcome{Status: duet.DeliveryFailed, Error: "the webhook was removed"}
		}
		o.Error = duet.ErrorMessage(err)
		return o
	}
	if w.Disabled {
		return duet.DeliveryOutcome{Status: duet.DeliveryFailed, Error: "the webhook is disabled (redeliver once it is enabled)", Payload: x.Payload}
	}
	if len(x.Payload) == 0 {
		if x.Payload, err = d.runPayload(ctx, x); err != nil {
			o.Error = "building the body: " + duet.ErrorMessage(err)
			return o
		}
	}
	o.Payload = x.Payload
	body := x.Payload
	if w.Format == duet.WebhookSlack {
		body = slackBody(x.Payload)
	}
	kr, err := d.keyring()
	if err != nil {
		o.Error = duet.ErrorMessage(err)
		return o
	}
	secret, err := Open(kr, w.ID, w.SecretSealed)
	if err != nil {
		// Sealed under a key this process has not loaded (the master key
		// was rotated since): load the keyring again.
		d.mu.Lock()
		d.kr = nil
		d.mu.Unlock()
		if kr, err = d.keyring(); err == nil {
			secret, err = Open(kr, w.ID, w.SecretSealed)
		}
	}
	if err != nil {
		o.Status, o.Error = duet.DeliveryFailed, duet.ErrorMessage(err)
		return o
	}
	actx, cancel := context.WithTimeout(ctx, d.o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, w.URL, bytes.NewReader(body))
	if err != nil {
		o.Status, o.Error = duet.DeliveryFailed, "the URL cannot be requested: "+err.Error()
		return o
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "Duet-Webhooks/1")
	req.Header.Set(HeaderEvent, string(x.Event))
	req.Header.Set(HeaderDelivery, x.ID)
	req.Header.Set(HeaderSignature, Sign(secret, d.o.Now(), body))
	resp, err := d.o.Client.Do(req)
	if err != nil {
		if duet.ErrorCode(err) == duet.CodeURLRefused {
			// The network policy refuses the address: no retry changes
			// that (the deployment's setting does).
			o.Status, o.Error = duet.DeliveryFailed, "URL_REFUSED: "+duet.ErrorMessage(err)
			return o
		}
		o.Error = requestError(err)
		return o
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	o.ResponseCode = resp.StatusCode
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		o.Status = duet.DeliveryDelivered
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		o.Error = fmt.Sprintf("HTTP %d: redirects are not followed (give the final URL)", resp.StatusCode)
	default:
		o.Error = fmt.Sprintf("HTTP %d", resp.StatusCode)
	}
	return o
}

// requestError says why a request failed, without the URL's query (it may
// hold a token).
func requestError(err error) string {
	msg := duet.ErrorMessage(err)
	if i := strings.LastIndex(msg, ": "); i >= 0 && strings.HasPrefix(msg, "Post ") {
		msg = msg[i+2:]
	}
	return msg
}

func (d *Deliverer) keyring() (*vault.Keyring, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.kr != nil {
		return d.kr, nil
	}
	if d.o.Keyring == nil {
		return nil, duet.Errorf(duet.CodeUnavailable, "no master key is configured, so webhook secrets cannot be read")
	}
	kr, err := d.o.Keyring()
	if err != nil {
		return nil, err
	}
	d.kr = kr
	return kr, nil
}

// json encodes v (the payloads are plain data).
func encode(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}
