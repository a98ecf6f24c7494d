package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/api"
	"github.com/duet-test/duet/internal/client"
)

// The approvals of stop_test_run requests (docs/governance.md): a request
// to stop someone else's run (or one from a client that cannot be asked)
// waits for the person who started the run, who approves or declines it
// here, within DUET_STOP_APPROVAL_TTL.

func runApproveStopCmd(env Env) *cobra.Command {
	return runDecideStopCmd(env, true)
}

func runDenyStopCmd(env Env) *cobra.Command {
	return runDecideStopCmd(env, false)
}

func runDecideStopCmd(env Env, approve bool) *cobra.Command {
	use, short := "deny-stop REQUEST_ID", "Decline a request to stop a run you started"
	if approve {
		use, short = "approve-stop REQUEST_ID", "Approve a request to stop a run you started (the run stops at once)"
	}
	return clientCmd(env, &cobra.Command{
		Use: use, Short: short, Args: cobra.ExactArgs(1),
		Long: short + `.

A stop_test_run call whose client could not confirm it leaves a stop request
(its id is in the APPROVAL_PENDING answer, and in duet run stop-requests).
Only the person who started the run decides, before the request expires
(DUET_STOP_APPROVAL_TTL). Approving stops the run as duet run cancel does.
The decision is recorded with the request and in the audit trail
(duet audit --method run.stop.approve).`,
	}, func(cmd *cobra.Command, args []string, c client.Client) error {
		d, err := c.DecideStop(cmd.Context(), args[0], api.StopDecisionIn{Approve: approve})
		if err != nil {
			return err
		}
		req, run := d.Request, d.Run
		if !approve {
			fmt.Fprintf(env.Stdout, "stop request %s of %s declined: run %s goes on (%s)\n", req.ID, req.RequestedBy, req.RunID, run.Status)
			return nil
		}
		fmt.Fprintf(env.Stdout, "stop request %s approved: run %s", req.ID, req.RunID)
		if run.Status.Final() {
			fmt.Fprintf(env.Stdout, " is %s\n", run.Status)
		} else {
			fmt.Fprintf(env.Stdout, " is stopping (its worker stops it within a second)\n")
		}
		return nil
	})
}

func runStopRequestsCmd(env Env) *cobra.Command {
	var all bool
	var runID string
	cmd := jsonCmd(env, &cobra.Command{
		Use: "stop-requests", Short: "List requests to stop your runs (to approve) and the ones you made", Args: cobra.NoArgs,
		Long: `stop-requests lists the stop_test_run requests that wait for your approval
(for runs you started) and those you made, newest first: who asked, when,
why, and — once decided — who approved or declined, when and how
(elicitation: confirmed in the MCP client of the run's executor or its
task's owner, who asked it themselves; cli: by the run's executor).
Without --all, only the requests still waiting.`,
	}, func(cmd *cobra.Command, _ []string, c client.Client, asJSON bool) error {
		list, err := c.ListStopRequests(cmd.Context(), api.StopRequestsIn{RunID: runID, All: all})
		if err != nil {
			return err
		}
		reqs, user := list.Requests, c.User()
		if asJSON {
			return printJSON(env.Stdout, reqs)
		}
		if len(reqs) == 0 {
			if all {
				fmt.Fprintln(env.Stdout, "no stop requests")
			} else {
				fmt.Fprintln(env.Stdout, "no stop requests wait for a decision (--all lists decided ones too)")
			}
			return nil
		}
		printTable(env.Stdout, "REQUEST\tRUN\tASKED BY\tASKED AT\tSTATUS\tDECIDED", reqs, func(r *duet.StopRequest) string {
			decided := "expires " + r.ExpiresAt.Local().Format(time.DateTime)
			switch {
			case r.DecidedAt != nil:
				decided = fmt.Sprintf("by %s via %s at %s", r.DecidedBy, r.Via, r.DecidedAt.Local().Format(time.DateTime))
			case r.Status == duet.StopExpired:
				decided = "expired " + r.ExpiresAt.Local().Format(time.DateTime)
			}
			return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s", r.ID, r.RunID, r.RequestedBy, r.CreatedAt.Local().Format(time.DateTime), r.Status, decided)
		})
		for _, r := range reqs {
			if r.Status == duet.StopPending && r.Executor == user {
				fmt.Fprintf(env.Stdout, "%s asks to stop your run %s%s: duet run approve-stop %s%s   (or deny-stop)\n", r.RequestedBy, r.RunID, reasonNote(r.Reason), asFlag(cmd), r.ID)
			}
		}
		return nil
	})
	cmd.Flags().BoolVar(&all, "all", false, "also list decided and expired requests")
	cmd.Flags().StringVar(&runID, "run", "", "only requests to stop this run")
	return cmd
}

func reasonNote(reason string) string {
	if reason == "" {
		return ""
	}
	return fmt.Sprintf(" (%q)", reason)
}
