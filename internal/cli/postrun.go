package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/api"
	"github.com/duet-test/duet/internal/client"
	"github.com/duet-test/duet/internal/escape"
)

// printPostRun shows a task's post-run actions (duet task show) and, for a
// viewer who did not write them, whether their runs may call each one.
func printPostRun(env Env, pr api.PostRun, as string) {
	if len(pr.Actions) == 0 {
		return
	}
	fmt.Fprintf(env.Stdout, "post-run actions (written by %s):\n", pr.Author)
	for i, act := range pr.Actions {
		srv := act.ServerName
		if srv == "" {
			srv = act.ServerKey
		}
		note := ""
		if act.NeedsApproval {
			note = "  [needs your approval: duet task approve-post-run " + as + pr.TaskID + "]"
		}
		fmt.Fprintf(env.Stdout, "  %d. %s: on %s, %s of %s (%s)  input: %s%s\n", i+1, escape.Text(act.Name), act.On, escape.Text(act.Tool), escape.Text(srv), act.ServerKey,
			escape.Text(orNone(strings.Join(act.Inputs, ", "))), note)
	}
}

func taskApprovePostRunCmd(env Env) *cobra.Command {
	return clientCmd(env, &cobra.Command{
		Use:   "approve-post-run TASK",
		Short: "Approve the post-run actions of a task someone else wrote (for your runs)",
		Long: `approve-post-run approves the current version of TASK's post-run actions: the
MCP tool calls made, with your own credentials, when a run of yours ends, and
the run's summary each is sent. Until you approve, an action of a task you did
not write that calls a server you registered (read-only tools too) fails with
APPROVAL_REQUIRED (a note on the run; the verdict is unchanged). Review them first with duet task show TASK. When the
author changes the actions, approve the new version again.`,
		Args: cobra.ExactArgs(1),
	}, func(cmd *cobra.Command, args []string, c client.Client) error {
		pr, err := c.ApprovePostRun(cmd.Context(), args[0], api.PostRunApprovalIn{})
		if err != nil {
			return err
		}
		at := "now"
		if pr.ApprovedAt != nil {
			at = pr.ApprovedAt.Local().Format("2006-01-02 15:04:05")
		}
		fmt.Fprintf(env.Stdout, "approved the %d post-run action(s) of task %s (written by %s) for your runs, at %s\n", len(pr.Actions), pr.TaskName, pr.Author, at)
		printPostRun(env, pr, asFlag(cmd))
		return nil
	})
}

// printPostRunNotes shows the outcomes of a run's post-run actions: notes,
// not part of the verdict.
func printPostRunNotes(w io.Writer, results []*duet.PostRunResult) {
	for _, p := range results {
		line := fmt.Sprintf("post-run %s (%s): %s", p.Name, p.Tool, p.Status)
		if p.ErrorCode != "" {
			line += fmt.Sprintf(": %s: %s", p.ErrorCode, p.ErrorMessage)
		}
		fmt.Fprintln(w, line+" (a note: the run's verdict does not depend on it)")
	}
}
