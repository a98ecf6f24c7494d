package storerules

import (
	"context"
	"time"

	"github.com/duet-test/duet"
)

// Deliver makes, through insert, a delivery like x (its event, run, case
// and payload) for each of hooks that wants it (duet.Webhook.Wants; for
// run.finished: after a run that ended with status, flaky of its cases
// having passed on a retry), in the order of hooks, and returns them.
func Deliver(ctx context.Context, hooks []*duet.Webhook, x duet.WebhookDelivery, status duet.RunStatus, flaky int,
	insert func(context.Context, *duet.WebhookDelivery) error) ([]*duet.WebhookDelivery, error) {
	var out []*duet.WebhookDelivery
	for _, w := range hooks {
		if !w.Wants(x.Event, status, flaky) {
			continue
		}
		d := &duet.WebhookDelivery{WebhookID: w.ID, TaskID: w.TaskID, Event: x.Event, RunID: x.RunID, CaseID: x.CaseID, Payload: x.Payload}
		if err := insert(ctx, d); err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// WebhookColumns are the columns of webhooks w that ScanWebhook reads.
const WebhookColumns = `w.id, w.task_id, w.name, w.url, w.events, w.on_when, w.format, w.disabled, w.secret, w.created_by, w.created_at, w.updated_at, w.secret_rotated_at`

// ScanWebhook reads a webhook of WebhookColumns.
func ScanWebhook(r Row) (*duet.Webhook, error) {
	var w duet.Webhook
	var events string
	if err := r.Scan(&w.ID, &w.TaskID, &w.Name, &w.URL, &events, &w.On, &w.Format, &w.Disabled, &w.SecretSealed, &w.CreatedBy,
		TimeOf(&w.CreatedAt), TimeOf(&w.UpdatedAt), TimeOf(&w.SecretRotatedAt)); err != nil {
		return nil, err
	}
	w.Events = SplitEvents(events)
	return &w, nil
}

// DeliveryColumns are the columns of webhook_deliveries d that
// ScanDelivery reads.
const DeliveryColumns = `d.id, d.webhook_id, d.task_id, d.event, d.run_id, d.case_id, d.status, d.attempts, d.payload, d.due_at, d.last_attempt_at, d.response_code, d.last_error, d.redelivery_of, d.lease, d.created_at`

// ScanDelivery reads a delivery of DeliveryColumns; its next attempt is
// its due time while it is pending or being delivered.
func ScanDelivery(r Row) (*duet.WebhookDelivery, error) {
	var d duet.WebhookDelivery
	var due time.Time
	if err := r.Scan(&d.ID, &d.WebhookID, &d.TaskID, &d.Event, &d.RunID, &d.CaseID, &d.Status, &d.Attempts, &d.Payload, TimeOf(&due), TimePtrOf(&d.LastAttemptAt),
		&d.ResponseCode, &d.LastError, &d.RedeliveryOf, &d.Lease, TimeOf(&d.CreatedAt)); err != nil {
		return nil, err
	}
	if d.Status == duet.DeliveryPending || d.Status == duet.DeliveryDelivering {
		d.NextAttemptAt = &due
	}
	return &d, nil
}

// CheckWebhook refuses a webhook no engine may store.
func CheckWebhook(w *duet.Webhook) error {
	if err := duet.ValidWebhook(w); err != nil {
		return err
	}
	if len(w.SecretSealed) == 0 {
		return duet.Errorf(duet.CodeInvalidArgument, "a webhook needs its sealed secret")
	}
	return nil
}

// InsertWebhook writes the new webhook w, checked by CheckWebhook, created
// by by, on e (the transaction that checked by owns its task): its id
// unless it has one, and its times, to the microsecond, are set. Returns
// CONFLICT for a name the task has already.
func InsertWebhook(ctx context.Context, e Engine, by string, w *duet.Webhook) error {
	now := e.Now().Truncate(time.Microsecond)
	if w.ID == "" {
		w.ID = duet.NewID("whk")
	}
	w.CreatedBy, w.CreatedAt, w.UpdatedAt, w.SecretRotatedAt = by, now, now, now
	_, err := e.Exec(ctx, `INSERT INTO webhooks (id, task_id, name, url, events, on_when, format, disabled, secret, created_by, created_at, updated_at, secret_rotated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $11, $11)`,
		w.ID, w.TaskID, w.Name, w.URL, JoinEvents(w.Events), w.On, w.Format, w.Disabled, w.SecretSealed, by, e.Stored(now))
	if duet.ErrorCode(err) == duet.CodeConflict {
		return duet.Errorf(duet.CodeConflict, "the task already has a webhook named %q", w.Name)
	}
	return err
}

// UpdateWebhook writes w's settings over cur, the webhook as stored (read
// in e's transaction), and its new sealed secret if it has one; w changes
// into what is stored.
func UpdateWebhook(ctx context.Context, e Engine, cur, w *duet.Webhook) error {
	now := e.Now().Truncate(time.Microsecond)
	rotated, secret := cur.SecretRotatedAt, cur.SecretSealed
	if len(w.SecretSealed) > 0 {
		secret, rotated = w.SecretSealed, now
	}
	if _, err := e.Exec(ctx, `UPDATE webhooks SET url = $1, events = $2, on_when = $3, format = $4, disabled = $5, secret = $6, updated_at = $7, secret_rotated_at = $8 WHERE id = $9`,
		w.URL, JoinEvents(w.Events), w.On, w.Format, w.Disabled, secret, e.Stored(now), e.Stored(rotated), w.ID); err != nil {
		return err
	}
	w.TaskID, w.Name, w.CreatedBy, w.CreatedAt, w.UpdatedAt, w.SecretRotatedAt, w.SecretSealed = cur.TaskID, cur.Name, cur.CreatedBy, cur.CreatedAt, now, rotated, secret
	return nil
}

// InsertDelivery writes the new pending delivery x, due now, on e; its
// id, status and times are set.
func InsertDelivery(ctx context.Context, e Engine, x *duet.WebhookDelivery, now time.Time) error {
	x.ID, x.Status, x.CreatedAt, x.NextAttemptAt = duet.NewID("dlv"), duet.DeliveryPending, now, &now
	_, err := e.Exec(ctx, `INSERT INTO webhook_deliveries (id, webhook_id, task_id, event, run_id, case_id, status, payload, due_at, redelivery_of, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, 'pending', $7, $8, $9, $8)`,
		x.ID, x.WebhookID, x.TaskID, x.Event, x.RunID, x.CaseID, x.Payload, e.Stored(now), x.RedeliveryOf)
	return err
}

// DeliveryInserter is InsertDelivery on e at now, for Deliver.
func DeliveryInserter(e Engine, now time.Time) func(context.Context, *duet.WebhookDelivery) error {
	return func(ctx context.Context, x *duet.WebhookDelivery) error { return InsertDelivery(ctx, e, x, now) }
}

// Redeliver makes, on e, a new delivery of x, a delivery read in e's
// transaction, at now. Returns INVALID_ARGUMENT unless x was delivered or
// failed.
func Redeliver(ctx context.Context, e Engine, x *duet.WebhookDelivery, now time.Time) (*duet.WebhookDelivery, error) {
	if x.Status != duet.DeliveryDelivered && x.Status != duet.DeliveryFailed {
		return nil, duet.Errorf(duet.CodeInvalidArgument, "webhook delivery %s is still %s: only a delivered or failed delivery is sent again", x.ID, x.Status)
	}
	out := &duet.WebhookDelivery{WebhookID: x.WebhookID, TaskID: x.TaskID, Event: x.Event, RunID: x.RunID, CaseID: x.CaseID, Payload: x.Payload, RedeliveryOf: x.ID}
	return out, InsertDelivery(ctx, e, out, now)
}

// Deliveries is the part of duet.WebhookStore that is the same on every
// engine.
type Deliveries struct{ E Engine }

// FinishDelivery records an attempt of a delivery claimed under lease.
// Returns LEASE_LOST when the claim was lost.
func (s Deliveries) FinishDelivery(ctx context.Context, id, lease string, o duet.DeliveryOutcome) error {
	due := o.At
	if o.Status == duet.DeliveryPending {
		due = o.NextAttempt
	}
	n, err := s.E.Exec(ctx, `UPDATE webhook_deliveries SET status = $1, attempts = attempts + 1, payload = $2, due_at = $3, last_attempt_at = $4, response_code = $5, last_error = $6, lease = ''
		WHERE id = $7 AND lease = $8 AND status = 'delivering'`,
		o.Status, o.Payload, s.E.Stored(due), s.E.Stored(o.At), o.ResponseCode, o.Error, id, lease)
	if err == nil && n == 0 {
		return duet.Errorf(duet.CodeLeaseLost, "webhook delivery %s was claimed by another instance", id)
	}
	return err
}
