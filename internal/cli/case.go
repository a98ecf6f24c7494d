package cli

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/api"
	"github.com/duet-test/duet/internal/client"
	"github.com/duet-test/duet/internal/escape"
)

// caseCmd is `duet case`: approving shared cases that call tools with your
// credentials.
func caseCmd(env Env) *cobra.Command {
	return group(&cobra.Command{
		Use:   "case",
		Short: "Approve shared cases that would call MCP tools with your credentials",
		Long: `A shared task runs its author's steps with the credentials of whoever runs it.
In a case someone else wrote, a step that calls an MCP tool of a server you
registered — read-only tools too — fails with APPROVAL_REQUIRED until you
approve that version of the case. The approval shows every place the version
can send data to (the task's base-URL host, the hosts of its open and http
steps, the MCP tools it calls, the task's post-run actions) and holds only
while those stay the same: editing the case (a new version) or changing where
it can send data (the task's base URL, its post-run actions) needs a new
approval.

  duet case approvals [--task TASK]   what needs your approval, and what you approved
  duet case show CASE_ID              review a case: its source, the calls and where data can go
  duet case approve CASE_ID           approve its current version and its destinations
  duet case revoke CASE_ID            withdraw your approvals of a case

The acting AI steps (ai, aiTap, aiFill) of a case replay their cached plans
(docs/ai-steps.md):

  duet case plans CASE_ID             the cached plans of its AI steps (--clear: remove them)
  duet case freeze CASE_ID            propose the case with those plans written out
                                      as ordinary steps: a draft KEY-frozen that the
                                      task's owner makes the case by applying it`,
	}, caseShowCmd(env), caseApprovalsCmd(env), caseApproveCmd(env), caseRevokeCmd(env), casePlansCmd(env), caseFreezeCmd(env))
}

func caseShowCmd(env Env) *cobra.Command {
	return clientCmd(env, &cobra.Command{
		Use:   "show CASE_ID",
		Short: "Show a case: who wrote its current version, its source, and the calls that need your approval",
		Args:  cobra.ExactArgs(1),
	}, func(cmd *cobra.Command, args []string, c client.Client) error {
		ctx := cmd.Context()
		got, err := c.GetCase(ctx, args[0])
		if err != nil {
			return err
		}
		cs := got.Case
		r, err := c.GetApproval(ctx, cs.ID)
		if err != nil {
			return err
		}
		user := c.User()
		fmt.Fprintf(env.Stdout, "case %s %q (key %s) in task %s\nversion %d written by %s, %s\n", cs.ID, escape.Text(cs.Title), cs.Key, cs.TaskID,
			cs.Version, cs.CreatedBy, cs.Status)
		switch {
		case !r.Needed:
			fmt.Fprintf(env.Stdout, "nothing in it needs %s's approval: no step calls an MCP tool with %s's credentials\n", user, user)
		default:
			fmt.Fprintf(env.Stdout, "calls that need %s's approval (%s):\n", user, approvalStatus(r))
			printCalls(env, r.Calls, "calls")
		}
		printDestinations(env, r.Destinations, r.DestinationsHash)
		fmt.Fprintf(env.Stdout, "source:\n%s\n", strings.TrimRight(cs.Source, "\n"))
		return nil
	})
}

// approvalStatus says whether the caller's approval covers the version
// and the destinations it has now.
func approvalStatus(r api.Approval) string {
	switch {
	case r.Approved:
		return api.ApprovalGiven
	case r.Approval != nil:
		return api.ApprovalNeededAgain
	}
	return api.ApprovalNeeded
}

// printCalls prints the calls of a review that use the user's credentials.
func printCalls(env Env, calls []api.ApprovalCall, verb string) {
	for _, pc := range calls {
		fmt.Fprintf(env.Stdout, "  step %d (%s) %s %s of %s with your credentials\n", pc.Step, escape.Text(pc.Name), verb, escape.Text(pc.Tool),
			escape.Text(strings.TrimSpace(pc.ServerName+" "+pc.ServerKey)))
	}
}

// printDestinations prints every place the reviewed version can send data
// to.
func printDestinations(env Env, d duet.Destinations, hash string) {
	fmt.Fprintf(env.Stdout, "where it can send data (destinations %s):\n", shortHash(hash))
	lines := d.Lines()
	if len(lines) == 0 {
		fmt.Fprintln(env.Stdout, "  nowhere outside this run")
	}
	for _, l := range lines {
		fmt.Fprintf(env.Stdout, "  %s\n", escape.Text(l))
	}
}

func caseApprovalsCmd(env Env) *cobra.Command {
	var task string
	cmd := jsonCmd(env, &cobra.Command{
		Use:   "approvals [--task TASK]",
		Short: "List the shared cases whose calls need your approval, approved or not",
		Args:  cobra.NoArgs,
	}, func(cmd *cobra.Command, _ []string, c client.Client, asJSON bool) error {
		list, err := c.ListApprovals(cmd.Context(), api.ApprovalsIn{TaskID: task})
		if err != nil {
			return err
		}
		if asJSON {
			return printJSON(env.Stdout, list.Cases)
		}
		user := c.User()
		if len(list.Cases) == 0 {
			fmt.Fprintf(env.Stdout, "no case shared with %s calls an MCP tool with %s's credentials\n", user, user)
			return nil
		}
		printTable(env.Stdout, "CASE\tVERSION\tAUTHOR\tTASK\tSTATUS\tCALLS", list.Cases, func(c api.CaseApproval) string {
			return fmt.Sprintf("%s\tv%d\t%s\t%s\t%s\t%s", c.CaseID, c.Version, c.Author, escape.Text(c.TaskName), c.Status, escape.Text(callList(c.Calls)))
		})
		fmt.Fprintf(env.Stdout, "review a case with `duet case show CASE %s`, then approve it: duet case approve CASE %s\n", strings.TrimSpace(asFlag(cmd)), strings.TrimSpace(asFlag(cmd)))
		return nil
	})
	cmd.Flags().StringVar(&task, "task", "", "only the cases of this task")
	return cmd
}

func callList(calls []api.ApprovalCall) string {
	var parts []string
	for _, c := range calls {
		server := c.ServerName
		if server == "" {
			server = c.ServerKey
		}
		parts = append(parts, fmt.Sprintf("step %d %s/%s", c.Step, server, c.Tool))
	}
	return strings.Join(parts, ", ")
}

func caseApproveCmd(env Env) *cobra.Command {
	var version int
	cmd := clientCmd(env, &cobra.Command{
		Use:   "approve CASE_ID [--version N]",
		Short: "Approve the current version of a shared case: its steps may call MCP tools with your credentials",
		Long: `approve records your consent that the current version of CASE_ID, a case
someone else wrote in a task shared with you, may call the MCP tools it calls
with your own credentials, and send what it obtains to the places it can reach
now. It prints both. --version N approves only if N is still the current
version (CONFLICT otherwise: review the case again). Editing the case (a new
version) or changing where it can send data (the task's base URL, its
post-run actions) needs a new approval.`,
		Args: cobra.ExactArgs(1),
	}, func(cmd *cobra.Command, args []string, c client.Client) error {
		ctx := cmd.Context()
		user := c.User()
		cur, err := c.GetApproval(ctx, args[0])
		if err != nil {
			return err
		}
		if cur.Author == user {
			fmt.Fprintf(env.Stdout, "you (%s) wrote version %d of case %s: its steps run with your credentials without an approval\n", user, cur.Version, cur.CaseID)
			return nil
		}
		if version == 0 {
			version = cur.Version
		}
		r, err := c.ApproveCase(ctx, args[0], api.ApprovalIn{Version: version})
		if err != nil {
			return err
		}
		title := ""
		if got, err := c.GetCase(ctx, r.CaseID); err == nil {
			title = got.Case.Title
		}
		src := ""
		if r.Approval != nil {
			src = shortHash(r.Approval.SourceHash)
		}
		fmt.Fprintf(env.Stdout, "approved version %d of case %s %q by %s (source %s) for %s\n", version, r.CaseID, escape.Text(title), r.Author, src, user)
		if !r.Needed {
			fmt.Fprintln(env.Stdout, "none of its steps calls an MCP tool with your credentials today")
		}
		printCalls(env, r.Calls, "may call")
		printDestinations(env, r.Destinations, r.DestinationsHash)
		return nil
	})
	cmd.Flags().IntVar(&version, "version", 0, "approve only this version (default: the current one)")
	return cmd
}

func shortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

func caseRevokeCmd(env Env) *cobra.Command {
	return argCmd(env, "revoke CASE_ID", "Withdraw your approvals of every version of a case", client.Client.RevokeApproval,
		func(user, id string) string { return user + " no longer approves case " + id })
}

func casePlansCmd(env Env) *cobra.Command {
	var clear bool
	cmd := jsonCmd(env, &cobra.Command{
		Use:   "plans CASE_ID",
		Short: "Show the cached plans of a case's acting AI steps (ai, aiTap, aiFill)",
		Args:  cobra.ExactArgs(1),
	}, func(cmd *cobra.Command, args []string, c client.Client, asJSON bool) error {
		if clear {
			got, err := c.GetCase(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			out, err := c.ClearAIPlans(cmd.Context(), api.ClearAIPlansIn{TaskID: got.Case.TaskID, CaseID: got.Case.ID})
			if err != nil {
				return err
			}
			fmt.Fprintf(env.Stdout, "cleared %d cached plan(s) of case %s: its AI steps ask the model on their next run\n", out.Cleared, args[0])
			return nil
		}
		list, err := c.CaseAIPlans(cmd.Context(), args[0])
		if err != nil {
			return err
		}
		if asJSON {
			return printJSON(env.Stdout, list)
		}
		if len(list.Plans) == 0 {
			fmt.Fprintf(env.Stdout, "case %s has no cached AI plans: its AI steps ask the model on their next run\n", args[0])
			return nil
		}
		for _, p := range list.Plans {
			fmt.Fprintf(env.Stdout, "step %d (version %d): %d action(s), used %d time(s), last %s, verified in run %s by %s\n", p.StepIndex+1, p.CaseVersion,
				len(p.Actions), p.Hits, p.UsedAt.Local().Format("2006-01-02 15:04:05"), p.RunID, p.CreatedBy)
			for _, a := range p.Actions {
				fmt.Fprintf(env.Stdout, "  %s %s\n", a.Do, escape.Text(locatorText(a)))
			}
		}
		fmt.Fprintf(env.Stdout, "write them out as ordinary steps: duet case freeze %s %s\n", args[0], asFlag(cmd))
		return nil
	})
	cmd.Flags().BoolVar(&clear, "clear", false, "remove them instead (the task's owner only; audited)")
	return cmd
}

// locatorText is an action's target as JSON (the locator of the written
// step it becomes).
func locatorText(a duet.AIAction) string {
	b, err := json.Marshal(a.Locator)
	if err != nil || a.Locator == nil {
		return ""
	}
	return string(b)
}

func caseFreezeCmd(env Env) *cobra.Command {
	return clientCmd(env, &cobra.Command{
		Use:   "freeze CASE_ID",
		Short: "Propose the case with its cached AI steps written out as ordinary steps (a draft for the task's owner)",
		Long: `freeze turns the cached plan of each acting AI step (ai, aiTap, aiFill) of the
case's current version into the written steps it resolved to, and saves the result
as your draft KEY-frozen of the task. A draft runs only when named; the task's
owner makes it the case by applying it to the suite (docs/ai-steps.md).`,
		Args: cobra.ExactArgs(1),
	}, func(cmd *cobra.Command, args []string, c client.Client) error {
		out, err := c.FreezeCase(cmd.Context(), args[0])
		if err != nil {
			return err
		}
		d := out.Draft
		fmt.Fprintf(env.Stdout, "draft %s (key %s) of task %s: %d AI step(s) written out\n", d.ID, d.Key, d.TaskID, out.Replaced)
		fmt.Fprintf(env.Stdout, "source:\n%s\n", strings.TrimRight(d.Source, "\n"))
		return nil
	})
}
