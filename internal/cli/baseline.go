package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/api"
	"github.com/duet-test/duet/internal/client"
	"github.com/duet-test/duet/internal/escape"
)

func baselineCmd(env Env) *cobra.Command {
	return group(&cobra.Command{
		Use:   "baseline",
		Short: "Visual baselines (assertScreenshot): list yours, approve or reject a pending one",
		Long: `baseline manages the reference screenshots of assertScreenshot steps. A baseline is
the person's whose runs recorded it (what a run saw with your credentials is yours):
you list, approve and reject only your own. The first run of a step records its
screenshot as a baseline that awaits approval; a later run that differs records the
new screenshot as a candidate and fails. Approving a candidate makes later runs
compare against it; rejecting it leaves the baseline as it was. Every decision is
audited (approveBaseline, rejectBaseline). The console's Baselines page shows the
two side by side with the difference.`,
	}, baselineListCmd(env), baselineDecideCmd(env, true), baselineDecideCmd(env, false))
}

func baselineListCmd(env Env) *cobra.Command {
	var taskRef, status string
	cmd := jsonCmd(env, &cobra.Command{
		Use: "list", Short: "List your baselines, newest first", Args: cobra.NoArgs,
	}, func(cmd *cobra.Command, _ []string, c client.Client, asJSON bool) error {
		switch duet.BaselineStatus(status) {
		case "", duet.BaselinePending, duet.BaselineApproved, duet.BaselineRejected:
		default:
			return usage("--status: want pending, approved or rejected, got %q", status)
		}
		out, err := c.ListBaselines(cmd.Context(), api.BaselinesIn{TaskID: taskRef, Status: duet.BaselineStatus(status)})
		if err != nil {
			return err
		}
		list := out.Baselines
		return printList(env.Stdout, asJSON, list, list, "no baselines", "ID\tSTATUS\tCASE\tNAME\tVERSION\tDEVICE\tENVIRONMENT\tDIFF\tRECORDED", func(b *duet.Baseline) string {
			diff := "-"
			if b.DiffRatio != nil {
				diff = fmt.Sprintf("%.2f%%", *b.DiffRatio*100)
			}
			return fmt.Sprintf("%s\t%s\t%s\t%s\tv%d\t%s\t%s\t%s\t%s", b.ID, b.Status, escape.Text(b.CaseKey), oneLine(b.Name, 40), b.Version,
				escape.Text(b.Device), escape.Text(b.Environment), diff, b.CreatedAt.Local().Format("2006-01-02 15:04"))
		})
	})
	cmd.Flags().StringVar(&taskRef, "task", "", "only this task's (id or name)")
	cmd.Flags().StringVar(&status, "status", "", "only pending, approved or rejected ones")
	return cmd
}

func baselineDecideCmd(env Env, approve bool) *cobra.Command {
	use, short := "approve ID", "Approve your pending baseline: later runs compare against it"
	if !approve {
		use, short = "reject ID", "Reject your pending baseline: it is never compared against"
	}
	return argResultCmd(env, use, short, func(c client.Client, ctx context.Context, id string) (*duet.Baseline, error) {
		return c.DecideBaseline(ctx, id, approve)
	}, func(b *duet.Baseline, _ string) string {
		return fmt.Sprintf("%s baseline %s (v%d of %q, case %s)", b.Status, b.ID, b.Version, escape.Text(b.Name), escape.Text(b.CaseKey))
	})
}
