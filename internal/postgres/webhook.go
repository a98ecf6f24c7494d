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

// CreateWebhook stores a webhook of a task by owns.
func (d *DB) CreateWebhook(ctx context.Context, by string, w *duet.Webhook) error {
	if err := storerules.CheckWebhook(w); err != nil {
		return err
	}
	return d.tx(ctx, func(tx pgx.Tx) error {
		if err := ownsTask(ctx, tx, by, w.TaskID); err != nil {
			return err
		}
		return storerules.InsertWebhook(ctx, d.engineOn(tx), by, w)
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
		rows, err := tx.Query(ctx, `SELECT `+storerules.WebhookColumns+` FROM webhooks w WHERE w.task_id = $1 ORDER BY w.name`, taskID)
		if err != nil {
			return mapErr(err)
		}
		out, err = collect(rows, storerules.ScanWebhook)
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
	query := `SELECT ` + storerules.WebhookColumns + ` FROM webhooks w JOIN tasks t ON t.id = w.task_id WHERE w.id = $2`
	if by != "" {
		query += ` AND ` + ownedWebhook
	} else {
		query += ` AND $1 = ''`
	}
	w, err := storerules.ScanWebhook(q.QueryRow(ctx, query+lock, by, id))
	return w, found(err, "webhook", id)
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
		return storerules.UpdateWebhook(ctx, d.engineOn(tx), cur, w)
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

// enqueueRunFinished makes the run.finished deliveries of a run that ended
// with status (flaky of its cases passed on a retry), in the transaction
// that stores its end.
func enqueueRunFinished(ctx context.Context, q querier, runID string, status duet.RunStatus, flaky int, now time.Time) error {
	hooks, err := enabledWebhooks(ctx, q, `JOIN runs r ON r.task_id = w.task_id WHERE r.id = $1`, runID)
	if err != nil {
		return err
	}
	_, err = storerules.Deliver(ctx, hooks, duet.WebhookDelivery{Event: duet.EventRunFinished, RunID: runID}, status, flaky, storerules.DeliveryInserter(engineOf(q), now))
	return err
}

// enabledWebhooks lists the webhooks not disabled that where (a join and
// a condition on w with $1 = arg) selects, by name.
func enabledWebhooks(ctx context.Context, q querier, where, arg string) ([]*duet.Webhook, error) {
	return all(ctx, q, storerules.ScanWebhook, `SELECT `+storerules.WebhookColumns+` FROM webhooks w `+where+` AND NOT w.disabled ORDER BY w.name`, arg)
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
		out, err = storerules.Deliver(ctx, hooks, duet.WebhookDelivery{Event: event, CaseID: caseID, Payload: payload}, "", 0, storerules.DeliveryInserter(engineOf(tx), ts(d.now())))
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
		x, err := storerules.ScanDelivery(tx.QueryRow(ctx, `UPDATE webhook_deliveries SET status = 'delivering', lease = $1, due_at = $2
			WHERE id = (SELECT id FROM webhook_deliveries WHERE status IN ('pending', 'delivering') AND due_at <= $3 ORDER BY due_at, id LIMIT 1 FOR UPDATE SKIP LOCKED)
			RETURNING `+strings.ReplaceAll(storerules.DeliveryColumns, "d.", ""), duet.NewID("lease"), ts(now.Add(lease)), ts(now)))
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

// FindDeliveries lists a webhook's deliveries, newest first.
func (d *DB) FindDeliveries(ctx context.Context, by, webhookID string, limit int) ([]*duet.WebhookDelivery, error) {
	if _, err := findWebhook(ctx, d.pool, by, webhookID, ""); err != nil {
		return nil, err
	}
	if limit <= 0 || limit > 500 {
		limit = 100
	}
	rows, err := d.pool.Query(ctx, `SELECT `+storerules.DeliveryColumns+` FROM webhook_deliveries d WHERE d.webhook_id = $1 ORDER BY d.created_at DESC, d.id DESC LIMIT $2`, webhookID, limit)
	if err != nil {
		return nil, mapErr(err)
	}
	out, err := collect(rows, storerules.ScanDelivery)
	return out, mapErr(err)
}

// Redeliver makes a new delivery of a finished one.
func (d *DB) Redeliver(ctx context.Context, by, deliveryID string) (*duet.WebhookDelivery, error) {
	var out *duet.WebhookDelivery
	err := d.tx(ctx, func(tx pgx.Tx) error {
		x, err := storerules.ScanDelivery(tx.QueryRow(ctx, `SELECT `+storerules.DeliveryColumns+` FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id JOIN tasks t ON t.id = w.task_id
			WHERE d.id = $2 AND `+ownedWebhook, by, deliveryID))
		if err != nil {
			return found(err, "webhook delivery", deliveryID)
		}
		out, err = storerules.Redeliver(ctx, d.engineOn(tx), x, ts(d.now()))
		return err
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
