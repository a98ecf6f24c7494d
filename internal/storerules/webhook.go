package storerules

import (
	"context"

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
