package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/api"
	"github.com/duet-test/duet/internal/client"
	"github.com/duet-test/duet/internal/escape"
)

// webhookCmd is `duet webhook`: a task's signed webhooks and their
// deliveries (docs/webhooks.md), through the service's webhook operations.
func webhookCmd(env Env) *cobra.Command {
	return group(&cobra.Command{
		Use:   "webhook",
		Short: "Send a task's events (a run's end, a case broken by a tool change) to a URL, signed",
		Long: `A webhook sends the events of a task you own to a URL, signed with a secret
shown once when it is made (docs/webhooks.md):

  duet webhook add TASK --name N --url URL [--event E]... [--on failure|success|always] [--format json|slack]
  duet webhook list TASK
  duet webhook remove WEBHOOK_ID
  duet webhook deliveries WEBHOOK_ID       its deliveries, newest first
  duet webhook redeliver DELIVERY_ID       send a delivered or failed one again`,
	}, webhookAddCmd(env), webhookListCmd(env), webhookRemoveCmd(env), webhookDeliveriesCmd(env), webhookRedeliverCmd(env))
}

func webhookAddCmd(env Env) *cobra.Command {
	var in api.WebhookIn
	cmd := jsonCmd(env, &cobra.Command{
		Use: "add TASK", Short: "Make a webhook on a task you own; prints its signing secret once", Args: cobra.ExactArgs(1),
	}, func(cmd *cobra.Command, args []string, c client.Client, asJSON bool) error {
		t, err := c.GetTask(cmd.Context(), args[0])
		if err != nil {
			return err
		}
		in.TaskID = t.Task.ID
		v, err := c.CreateWebhook(cmd.Context(), in)
		if err != nil {
			return err
		}
		if asJSON {
			return printJSON(env.Stdout, v)
		}
		fmt.Fprintf(env.Stdout, "webhook %s %q of task %s: %v to %s (on %s, %s)\n", v.ID, v.Name, args[0], v.Events, escape.Text(v.URL), v.On, v.Format)
		fmt.Fprintf(env.Stdout, "signing secret (shown this once; store it in the receiver): %s\n", v.Secret)
		return nil
	})
	cmd.Flags().StringVar(&in.Name, "name", "", "a name, unique among the task's webhooks")
	cmd.Flags().StringVar(&in.URL, "url", "", "the receiver: an http or https URL")
	cmd.Flags().StringArrayVar(&in.Events, "event", nil, "run.finished, case.broken or case.changed (repeatable; default: run.finished and case.broken)")
	cmd.Flags().StringVar(&in.On, "on", "", "after which runs run.finished is sent: failure (default), success or always")
	cmd.Flags().StringVar(&in.Format, "format", "", "json (default) or slack")
	return cmd
}

func webhookListCmd(env Env) *cobra.Command {
	return jsonCmd(env, &cobra.Command{
		Use: "list TASK", Short: "List the webhooks of a task you own (never their secrets)", Args: cobra.ExactArgs(1),
	}, func(cmd *cobra.Command, args []string, c client.Client, asJSON bool) error {
		t, err := c.GetTask(cmd.Context(), args[0])
		if err != nil {
			return err
		}
		list, err := c.ListWebhooks(cmd.Context(), t.Task.ID)
		if err != nil {
			return err
		}
		return printList(env.Stdout, asJSON, list, list.Webhooks, "task "+args[0]+" has no webhooks", "ID\tNAME\tURL\tEVENTS\tON\tFORMAT\tSTATE", func(w api.WebhookView) string {
			state := "enabled"
			if w.Disabled {
				state = "disabled"
			}
			return fmt.Sprintf("%s\t%s\t%s\t%v\t%s\t%s\t%s", w.ID, escape.Text(w.Name), escape.Text(w.URL), w.Events, w.On, w.Format, state)
		})
	})
}

func webhookRemoveCmd(env Env) *cobra.Command {
	return argCmd(env, "remove WEBHOOK_ID", "Remove a webhook and its deliveries", client.Client.DeleteWebhook,
		func(_, id string) string { return "removed webhook " + id })
}

func webhookDeliveriesCmd(env Env) *cobra.Command {
	var limit int
	cmd := jsonCmd(env, &cobra.Command{
		Use: "deliveries WEBHOOK_ID", Short: "A webhook's deliveries, newest first: status, attempts, response code, next retry", Args: cobra.ExactArgs(1),
	}, func(cmd *cobra.Command, args []string, c client.Client, asJSON bool) error {
		list, err := c.ListDeliveries(cmd.Context(), args[0], limit)
		if err != nil {
			return err
		}
		return printList(env.Stdout, asJSON, list, list.Deliveries, "webhook "+args[0]+" has no deliveries", "ID\tEVENT\tRUN/CASE\tSTATUS\tATTEMPTS\tRESPONSE\tNEXT\tERROR", func(d *duet.WebhookDelivery) string {
			subject, next, code := d.RunID+d.CaseID, "", ""
			if d.NextAttemptAt != nil {
				next = d.NextAttemptAt.Local().Format("15:04:05")
			}
			if d.ResponseCode != 0 {
				code = fmt.Sprint(d.ResponseCode)
			}
			return fmt.Sprintf("%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s", d.ID, d.Event, subject, d.Status, d.Attempts, code, next, escape.Text(d.LastError))
		})
	})
	cmd.Flags().IntVar(&limit, "limit", 0, "at most this many (default 100, at most 500)")
	return cmd
}

func webhookRedeliverCmd(env Env) *cobra.Command {
	return argResultCmd(env, "redeliver DELIVERY_ID", "Send a delivered or failed delivery again (a new delivery, the same body)", client.Client.Redeliver,
		func(d *duet.WebhookDelivery, id string) string {
			return fmt.Sprintf("delivery %s queued (%s of %s): the webhook's deliverer sends it", d.ID, d.Event, id)
		})
}
