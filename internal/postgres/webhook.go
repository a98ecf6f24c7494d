package postgres

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/storerules"
)

const webhookColumns = `w.id, w.task_id, w.name, w.url, w.events, w.on_when, w.format, w.disabled, w.secret, w.created_by, w.created_at, w.updated_at, w.secret_rotated_at`

func scanWebhook(row rowScanner) (*duet.Webhook, error) {
	var w duet.Webhook
	var events string
	if err := row.Scan(&w.ID, &w.TaskID, &w.Name, &w.URL, &events, &w.On, &w.Format, &w.Disabled, &w.SecretSealed, &w.CreatedBy, &w.CreatedAt, &w.UpdatedAt, &w.SecretRotatedAt); err != nil {
		return nil, err
	}
	w.Events = storerules.SplitEvents(events)
	w.CreatedAt, w.UpdatedAt, w.SecretRotatedAt = utc(w.CreatedAt), utc(w.UpdatedAt), utc(w.SecretRotatedAt)
	return &w, nil
}

const deliveryColumns = `d.id, d.webhook_id, d.task_id, d.event, d.run_id, d.case_id, d.status, d.attempts, d.payload, d.due_at, d.last_attempt_at, d.response_code, d.last_error, d.redelivery_of, d.lease, d.created_at`

func scanDelivery(row rowScanner) (*duet.WebhookDelivery, error) {
	var d duet.WebhookDelivery
	var due time.Time
	if err := row.Scan(&d.ID, &d.WebhookID, &d.TaskID, &d.Event, &d.RunID, &d.CaseID, &d.Status, &d.Attempts, &d.Payload, &due, &d.LastAttemptAt,
		&d.ResponseCode, &d.LastError, &d.RedeliveryOf, &d.Lease, &d.CreatedAt); err != nil {
		return nil, err
	}
	if d.Status == duet.DeliveryPending || d.Status == duet.DeliveryDelivering {
		t := utc(due)
		d.NextAttemptAt = &t
	}
	d.LastAttemptAt, d.CreatedAt = utcPtr(d.LastAttemptAt), utc(d.CreatedAt)
	return &d, nil
}

// CreateWebhook stores a webhook of a task by owns.
func (d *DB) CreateWebhook(ctx context.Context, by string, w *duet.Webhook) error {
	if err := duet.ValidWebhook(w); err != nil {
		return err
	}
	if len(w.SecretSealed) == 0 {
		return duet.Errorf(duet.CodeInvalidArgument, "a webhook needs its sealed secret")
	}
	return d.tx(ctx, func(tx pgx.Tx) error {
		if err := ownsTask(ctx, tx, by, w.TaskID); err != nil {
			return err
		}
		now := ts(d.now())
		if w.ID == "" {
			w.ID = duet.NewID("whk")
		}
		w.CreatedBy, w.CreatedAt, w.UpdatedAt, w.SecretRotatedAt = by, now, now, now
		_, err := tx.Exec(ctx, `INSERT INTO webhooks (id, task_id, name, url, events, on_when, format, disabled, secret, created_by, created_at, updated_at, secret_rotated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $11, $11)`,
			w.ID, w.TaskID, w.Name, w.URL, storerules.JoinEvents(w.Events), w.On, w.Format, w.Disabled, w.SecretSealed, by, now)
		if duet.ErrorCode(mapErr(err)) == duet.CodeConflict {
			return duet.Errorf(duet.CodeConflict, "the task already has a webhook named %q", w.Name)
		}
		return mapErr(err)
	})
}

// FindWebhooks lists the webhooks of a task by owns.
func (d *DB) FindWebhooks(ctx context.Context, by, taskID string) ([]*duet.Webhook, error) {
	var out []*duet.Webhook
	err := d.tx(ctx, func(tx pgx.Tx) error {
		var one int
		err := tx.QueryRow(ctx, `SELECT 1 FROM tasks t WHERE t.id = $2 AND `+ownedWebhook, by, taskID).Scan(&one)
		if err != nil {
			return found(err, "task", taskID)
		}
		rows, err := tx.Query(ctx, `SELECT `+webhookColumns+` FROM webhooks w WHERE w.task_id = $1 ORDER BY w.name`, taskID)
		if err != nil {
			return mapErr(err)
		}
		out, err = collect(rows, scanWebhook)
		return mapErr(err)
	})
	return out, err
}

// ownedWebhook is the condition that $1 owns task t.
const ownedWebhook = `(t.owner = $1 OR t.owner IN ` + teamsOf + `)`

// FindWebhook returns a webhook of a task by owns ("" by: any).
func (d *DB) FindWebhook(ctx context.Context, by, id string) (*duet.Webhook, error) {
	return findWebhook(ctx, d.pool, by, id, "")
}

func findWebhook(ctx context.Context, q querier, by, id, lock string) (*duet.Webhook, error) {
	query := `SELECT ` + webhookColumns + ` FROM webhooks w JOIN tasks t ON t.id = w.task_id WHERE w.id = $2`
	if by != "" {
		query += ` AND ` + ownedWebhook
	} else {
		query += ` AND $1 = ''`
	}
	w, err := scanWebhook(q.QueryRow(ctx, query+lock, by, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, storerules.NotFound("webhook", id)
	}
	return w, mapErr(err)
}

// UpdateWebhook stores a webhook's settings (and its new sealed secret).
func (d *DB) UpdateWebhook(ctx context.Context, by string, w *duet.Webhook) error {
	if err := duet.ValidWebhook(w); err != nil {
		return err
	}
	return d.tx(ctx, func(tx pgx.Tx) error {
		cur, err := findWebhook(ctx, tx, by, w.ID, ` FOR UPDATE OF w`)
		if err != nil {
			return err
		}
		now := ts(d.now())
		rotated, secret := cur.SecretRotatedAt, cur.SecretSealed
		if len(w.SecretSealed) > 0 {
			secret, rotated = w.SecretSealed, now
		}
		if _, err := tx.Exec(ctx, `UPDATE webhooks SET url = $1, events = $2, on_when = $3, format = $4, disabled = $5, secret = $6, updated_at = $7, secret_rotated_at = $8 WHERE id = $9`,
			w.URL, storerules.JoinEvents(w.Events), w.On, w.Format, w.Disabled, secret, now, rotated, w.ID); err != nil {
			return mapErr(err)
		}
		w.TaskID, w.Name, w.CreatedBy, w.CreatedAt, w.UpdatedAt, w.SecretRotatedAt, w.SecretSealed = cur.TaskID, cur.Name, cur.CreatedBy, cur.CreatedAt, now, rotated, secret
		return nil
	})
}

// DeleteWebhook removes a webhook and its deliveries.
func (d *DB) DeleteWebhook(ctx context.Context, by, id string) error {
	return d.tx(ctx, func(tx pgx.Tx) error {
		if _, err := findWebhook(ctx, tx, by, id, ` FOR UPDATE OF w`); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM webhooks WHERE id = $1`, id)
		return mapErr(err)
	})
}

func insertDelivery(ctx context.Context, q querier, x *duet.WebhookDelivery, now time.Time) error {
	x.ID, x.Status, x.CreatedAt, x.NextAttemptAt = duet.NewID("dlv"), duet.DeliveryPending, now, &now
	_, err := q.Exec(ctx, `INSERT INTO webhook_deliveries (id, webhook_id, task_id, event, run_id, case_id, status, payload, due_at, redelivery_of, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, 'pending', $7, $8, $9, $8)`,
		x.ID, x.WebhookID, x.TaskID, x.Event, x.RunID, x.CaseID, x.Payload, now, x.RedeliveryOf)
	return mapErr(err)
}

// enqueueRunFinished makes the run.finished deliveries of a run that ended
// with status (flaky of its cases passed on a retry), in the transaction
// that stores its end.
func enqueueRunFinished(ctx context.Context, q querier, runID string, status duet.RunStatus, flaky int, now time.Time) error {
	hooks, err := enabledWebhooks(ctx, q, `JOIN runs r ON r.task_id = w.task_id WHERE r.id = $1`, runID)
	if err != nil {
		return err
	}
	_, err = storerules.Deliver(ctx, hooks, duet.WebhookDelivery{Event: duet.EventRunFinished, RunID: runID}, status, flaky, deliveryInserter(q, now))
	return err
}

// enabledWebhooks lists the webhooks not disabled that where (a join and
// a condition on w with $1 = arg) selects, by name.
func enabledWebhooks(ctx context.Context, q querier, where, arg string) ([]*duet.Webhook, error) {
	return all(ctx, q, scanWebhook, `SELECT `+webhookColumns+` FROM webhooks w `+where+` AND NOT w.disabled ORDER BY w.name`, arg)
}

func deliveryInserter(q querier, now time.Time) func(context.Context, *duet.WebhookDelivery) error {
	return func(ctx context.Context, x *duet.WebhookDelivery) error { return insertDelivery(ctx, q, x, now) }
}

// EnqueueDeliveries makes a delivery of event for each webhook of taskID
// subscribed to it.
func (d *DB) EnqueueDeliveries(ctx context.Context, taskID string, event duet.WebhookEvent, caseID string, payload []byte) ([]*duet.WebhookDelivery, error) {
	var out []*duet.WebhookDelivery
	err := d.tx(ctx, func(tx pgx.Tx) error {
		hooks, err := enabledWebhooks(ctx, tx, `WHERE w.task_id = $1`, taskID)
		if err != nil {
			return err
		}
		out, err = storerules.Deliver(ctx, hooks, duet.WebhookDelivery{Event: event, CaseID: caseID, Payload: payload}, "", 0, deliveryInserter(tx, ts(d.now())))
		return err
	})
	return out, err
}

// ClaimDelivery takes the oldest due delivery under a new lease; a row
// another instance is claiming at that instant is skipped, not waited for.
func (d *DB) ClaimDelivery(ctx context.Context, now time.Time, lease time.Duration) (*duet.WebhookDelivery, time.Time, error) {
	var out *duet.WebhookDelivery
	var earliest time.Time
	err := d.tx(ctx, func(tx pgx.Tx) error {
		out, earliest = nil, time.Time{}
		x, err := scanDelivery(tx.QueryRow(ctx, `UPDATE webhook_deliveries SET status = 'delivering', lease = $1, due_at = $2
			WHERE id = (SELECT id FROM webhook_deliveries WHERE status IN ('pending', 'delivering') AND due_at <= $3 ORDER BY due_at, id LIMIT 1 FOR UPDATE SKIP LOCKED)
			RETURNING `+strings.ReplaceAll(deliveryColumns, "d.", ""), duet.NewID("lease"), ts(now.Add(lease)), ts(now)))
		switch {
		case errors.Is(err, pgx.ErrNoRows):
		case err != nil:
			return mapErr(err)
		default:
			out = x
		}
		var next *time.Time
		if err := tx.QueryRow(ctx, `SELECT min(due_at) FROM webhook_deliveries WHERE status = 'pending'`).Scan(&next); err != nil {
			return mapErr(err)
		}
		if next != nil {
			earliest = utc(*next)
		}
		return nil
	})
	return out, earliest, err
}

// FinishDelivery records an attempt of a delivery claimed under lease.
func (d *DB) FinishDelivery(ctx context.Context, id, lease string, o duet.DeliveryOutcome) error {
	due := o.At
	if o.Status == duet.DeliveryPending {
		due = o.NextAttempt
	}
	tag, err := d.pool.Exec(ctx, `UPDATE webhook_deliveries SET status = $1, attempts = attempts + 1, payload = $2, due_at = $3, last_attempt_at = $4, response_code = $5, last_error = $6, lease = ''
		WHERE id = $7 AND lease = $8 AND status = 'delivering'`,
		o.Status, o.Payload, ts(due), ts(o.At), o.ResponseCode, o.Error, id, lease)
	return changed(tag, err, duet.Errorf(duet.CodeLeaseLost, "webhook delivery %s was claimed by another instance", id))
}

// FindDeliveries lists a webhook's deliveries, newest first.
func (d *DB) FindDeliveries(ctx context.Context, by, webhookID string, limit int) ([]*duet.WebhookDelivery, error) {
	if _, err := findWebhook(ctx, d.pool, by, webhookID, ""); err != nil {
		return nil, err
	}
	if limit <= 0 || limit > 500 {
		limit = 100
	}
	rows, err := d.pool.Query(ctx, `SELECT `+deliveryColumns+` FROM webhook_deliveries d WHERE d.webhook_id = $1 ORDER BY d.created_at DESC, d.id DESC LIMIT $2`, webhookID, limit)
	if err != nil {
		return nil, mapErr(err)
	}
	out, err := collect(rows, scanDelivery)
	return out, mapErr(err)
}

// Redeliver makes a new delivery of a finished one.
func (d *DB) Redeliver(ctx context.Context, by, deliveryID string) (*duet.WebhookDelivery, error) {
	var out *duet.WebhookDelivery
	err := d.tx(ctx, func(tx pgx.Tx) error {
		x, err := scanDelivery(tx.QueryRow(ctx, `SELECT `+deliveryColumns+` FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id JOIN tasks t ON t.id = w.task_id
			WHERE d.id = $2 AND `+ownedWebhook, by, deliveryID))
		if err != nil {
			return found(err, "webhook delivery", deliveryID)
		}
		if x.Status != duet.DeliveryDelivered && x.Status != duet.DeliveryFailed {
			return duet.Errorf(duet.CodeInvalidArgument, "webhook delivery %s is still %s: only a delivered or failed delivery is sent again", deliveryID, x.Status)
		}
		out = &duet.WebhookDelivery{WebhookID: x.WebhookID, TaskID: x.TaskID, Event: x.Event, RunID: x.RunID, CaseID: x.CaseID, Payload: x.Payload, RedeliveryOf: x.ID}
		return insertDelivery(ctx, tx, out, ts(d.now()))
	})
	return out, err
}

// ClaimCatalogSync hands out a registration due for an automatic sync; a
// registration another instance is claiming at that instant is skipped.
func (d *DB) ClaimCatalogSync(ctx context.Context, now time.Time, every time.Duration) (*duet.MCPServer, error) {
	var out *duet.MCPServer
	err := d.tx(ctx, func(tx pgx.Tx) error {
		out = nil
		s, err := storerules.ScanMCPServer(tx.QueryRow(ctx, `SELECT `+storerules.PrefixColumns("s.", storerules.MCPServerColumns)+` FROM mcp_servers s LEFT JOIN mcp_auto_sync a ON a.registration_id = s.id
			WHERE GREATEST(coalesce(a.claimed_at, '-infinity'), coalesce(s.synced_at, '-infinity')) <= $1
			ORDER BY GREATEST(coalesce(a.claimed_at, '-infinity'), coalesce(s.synced_at, '-infinity')), s.id LIMIT 1 FOR UPDATE OF s SKIP LOCKED`,
			ts(now.Add(-every))))
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		} else if err != nil {
			return mapErr(err)
		}
		// The row lock on s serialises claimers of s; the condition is
		// checked again on the claim row so that a claim committed since
		// the read wins.
		tag, err := tx.Exec(ctx, `INSERT INTO mcp_auto_sync (registration_id, claimed_at) VALUES ($1, $2)
			ON CONFLICT (registration_id) DO UPDATE SET claimed_at = excluded.claimed_at WHERE mcp_auto_sync.claimed_at <= $3`, s.ID, ts(now), ts(now.Add(-every)))
		if err != nil {
			return mapErr(err)
		}
		if tag.RowsAffected() == 1 {
			out = s
		}
		return nil
	})
	return out, err
}
