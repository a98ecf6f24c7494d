package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/app"
	"github.com/duet-test/duet/internal/engine"
	"github.com/duet-test/duet/internal/escape"
)

// printPostRun shows a task's post-run actions (duet task show) and, for a
// viewer who did not write them, whether their runs may call each one.
func printPostRun(ctx context.Context, w io.Writer, a *app.App, user string, t *duet.Task) error {
	if len(t.PostRun) == 0 {
		return nil
	}
	fmt.Fprintf(w, "post-run actions (written by %s):\n", t.PostRunBy)
	approved := t.PostRunBy == user
	if !approved {
		_, err := a.Store.FindPostRunApproval(ctx, user, t.ID, duet.PostRunHash(t.PostRun))
		switch {
		case err == nil:
			approved = true
		case duet.ErrorCode(err) != duet.CodeNotFound:
			return err
		}
	}
	for i, act := range t.PostRun {
		srv := act.ServerName
		if srv == "" {
			srv = act.ServerKey
		}
		inputs := make([]string, 0, len(act.InputBindings))
		for k := range act.InputBindings {
			inputs = append(inputs, k)
		}
		slices.Sort(inputs)
		note := ""
		if !approved {
			need, err := engine.NeedsApproval(ctx, a.Store, user, t.PostRunBy, &duet.MCPCallStep{ServerKey: act.ServerKey, ToolName: act.ToolName})
			if err != nil {
				return err
			}
			if need {
				note = "  [needs your approval: duet task approve-post-run " + t.ID + "]"
			}
		}
		fmt.Fprintf(w, "  %d. %s: on %s, %s of %s (%s)  input: %s%s\n", i+1, escape.Text(act.Name), act.On, escape.Text(act.ToolName), escape.Text(srv), act.ServerKey, escape.Text(orNone(strings.Join(inputs, ", "))), note)
	}
	return nil
}

func taskApprovePostRunCmd(env Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "approve-post-run TASK",
		Short: "Approve the post-run actions of a task someone else wrote (for your runs)",
		Long: `approve-post-run approves the current version of TASK's post-run actions: the
MCP tool calls made, with your own credentials, when a run of yours ends, and
the run's summary each is sent. Until you approve, an action of a task you did
not write that calls a server you registered (read-only tools too) fails with
APPROVAL_REQUIRED (a note on the run; the verdict is unchanged). Review them first with duet task show TASK. When the
author changes the actions, approve the new version again.`,
		Args: cobra.ExactArgs(1),
		RunE: withApp(env, func(cmd *cobra.Command, args []string, a *app.App, user string) error {
			actx, done := auditing(cmd.Context(), a, user, "task.approve-post-run", "")
			t, err := a.ResolveTask(actx, user, args[0])
			if err == nil {
				var ap *duet.PostRunApproval
				if ap, err = a.Store.ApprovePostRun(actx, user, t.ID, duet.PostRunHash(t.PostRun)); err == nil {
					fmt.Fprintf(env.Stdout, "approved the %d post-run action(s) of task %s (written by %s) for your runs, at %s\n",
						len(t.PostRun), t.Name, t.PostRunBy, ap.ApprovedAt.Local().Format(time.DateTime))
					err = printPostRun(cmd.Context(), env.Stdout, a, user, t)
				}
			}
			done(err)
			return err
		}),
	}
	addAs(cmd)
	return cmd
}

// printPostRunNotes shows the outcomes of a run's post-run actions: notes,
// not part of the verdict.
func printPostRunNotes(w io.Writer, run *duet.Run) {
	for _, p := range run.PostRun {
		line := fmt.Sprintf("post-run %s (%s): %s", p.Name, p.Tool, p.Status)
		if p.ErrorCode != "" {
			line += fmt.Sprintf(": %s: %s", p.ErrorCode, p.ErrorMessage)
		}
		fmt.Fprintln(w, line+" (a note: the run's verdict does not depend on it)")
	}
}
