package app

import (
	"context"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/webhook"
)

// notifyAlerts tells the webhooks of each alert's task (case.broken,
// case.changed) and logs each broken case to its task's owner's attention;
// the console shows the owner the broken cases of their tasks (the nav's
// badge and the alerts page).
func (a *App) notifyAlerts(ctx context.Context, alerts []*duet.ContractAlert) {
	if len(alerts) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	made := 0
	tasks := map[string]*duet.Task{}
	for _, al := range alerts {
		t := tasks[al.TaskID]
		if t == nil {
			var err error
			if t, err = a.Store.FindTaskByID(ctx, "", al.TaskID); err != nil {
				a.Logger.WarnContext(ctx, "webhooks: reading the task of a contract alert", "task", al.TaskID, "err", err)
				continue
			}
			tasks[al.TaskID] = t
		}
		ev := duet.EventCaseChanged
		if al.Broken {
			ev = duet.EventCaseBroken
		}
		ds, err := a.Store.EnqueueDeliveries(ctx, al.TaskID, ev, al.CaseID, webhook.AlertPayload(a.Config.PublicURL, t, al))
		if err != nil {
			a.Logger.WarnContext(ctx, "webhooks: a contract alert's deliveries", "task", al.TaskID, "case", al.CaseID, "err", err)
			continue
		}
		made += len(ds)
	}
	if made > 0 {
		a.Webhooks.Wake()
	}
}
