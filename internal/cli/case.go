package cli

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/app"
	"github.com/duet-test/duet/internal/engine"
	"github.com/duet-test/duet/internal/escape"
)

// caseCmd is `duet case`: approving shared cases that call tools with your
// credentials.
func caseCmd(env Env) *cobra.Command {
	cmd := &cobra.Command{
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
  duet case revoke CASE_ID            withdraw your approvals of a case`,
	}
	cmd.AddCommand(caseShowCmd(env), caseApprovalsCmd(env), caseApproveCmd(env), caseRevokeCmd(env))
	return cmd
}

func caseShowCmd(env Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "show CASE_ID",
		Short: "Show a case: who wrote its current version, its source, and the calls that need your approval",
		Args:  cobra.ExactArgs(1),
		RunE: withApp(env, func(cmd *cobra.Command, args []string, a *app.App, user string) error {
			ctx := cmd.Context()
			c, err := a.Store.FindCaseByID(ctx, user, args[0])
			if err != nil {
				return err
			}
			task, err := a.Store.FindTaskByID(ctx, user, c.TaskID)
			if err != nil {
				return err
			}
			r, err := engine.ReviewCase(ctx, a.Store, user, task, c)
			if err != nil {
				return err
			}
			fmt.Fprintf(env.Stdout, "case %s %q (key %s) in task %s\nversion %d written by %s, source %s, %s\n", c.ID, escape.Text(c.Title), c.Key, c.TaskID,
				c.Version, c.CreatedBy, shortHash(c.SourceHash), c.Status)
			switch {
			case !r.Needed():
				fmt.Fprintf(env.Stdout, "nothing in it needs %s's approval: no step calls an MCP tool with %s's credentials\n", user, user)
			default:
				ap, err := a.Store.FindCaseApproval(ctx, user, c.ID, c.Version)
				if err != nil && duet.ErrorCode(err) != duet.CodeNotFound {
					return err
				}
				fmt.Fprintf(env.Stdout, "calls that need %s's approval (%s):\n", user, approvalStatus(r, ap))
				printCalls(env, r.Calls, "calls")
			}
			printDestinations(env, r)
			fmt.Fprintf(env.Stdout, "source:\n%s\n", strings.TrimRight(c.Source, "\n"))
			return nil
		}),
	}
	addAs(cmd)
	return cmd
}

// caseApproval is one case as `duet case approvals` lists it.
type caseApproval struct {
	CaseID       string               `json:"caseId"`
	Title        string               `json:"title"`
	Version      int                  `json:"version"`
	Author       string               `json:"author"`
	TaskID       string               `json:"taskId"`
	TaskName     string               `json:"taskName"`
	Status       string               `json:"status"` // "needs approval", "approved" or "needs approval again: ..."
	Approved     *time.Time           `json:"approvedAt,omitempty"`
	Calls        []engine.PendingCall `json:"calls"`
	Destinations duet.Destinations    `json:"destinations"` // where the version can send data to
}

// approvalStatus says whether ap (nil: none) approves the version r
// reviews for the destinations it has now.
func approvalStatus(r *engine.Review, ap *duet.CaseApproval) string {
	switch {
	case r.Holds(ap):
		return "approved"
	case ap != nil:
		return "needs approval again: where it can send data changed since you approved this version"
	}
	return "needs approval"
}

// printCalls prints the calls of a review that use the user's credentials.
func printCalls(env Env, calls []engine.PendingCall, verb string) {
	for _, pc := range calls {
		fmt.Fprintf(env.Stdout, "  step %d (%s) %s %s of %s with your credentials\n", pc.Step, escape.Text(pc.Name), verb, escape.Text(pc.Tool),
			escape.Text(strings.TrimSpace(pc.ServerName+" "+pc.ServerKey)))
	}
}

// printDestinations prints every place the reviewed version can send data
// to.
func printDestinations(env Env, r *engine.Review) {
	fmt.Fprintf(env.Stdout, "where it can send data (destinations %s):\n", shortHash(r.DestinationsHash))
	lines := r.Destinations.Lines()
	if len(lines) == 0 {
		fmt.Fprintln(env.Stdout, "  nowhere outside this run")
	}
	for _, l := range lines {
		fmt.Fprintf(env.Stdout, "  %s\n", escape.Text(l))
	}
}

func caseApprovalsCmd(env Env) *cobra.Command {
	var task string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "approvals [--task TASK]",
		Short: "List the shared cases whose calls need your approval, approved or not",
		Args:  cobra.NoArgs,
		RunE: withApp(env, func(cmd *cobra.Command, _ []string, a *app.App, user string) error {
			ctx := cmd.Context()
			taskID, err := taskIDOf(ctx, a, user, task)
			if err != nil {
				return err
			}
			list, err := pendingApprovals(ctx, a, user, taskID)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(env.Stdout, list)
			}
			if len(list) == 0 {
				fmt.Fprintf(env.Stdout, "no case shared with %s calls an MCP tool with %s's credentials\n", user, user)
				return nil
			}
			tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "CASE\tVERSION\tAUTHOR\tTASK\tSTATUS\tCALLS")
			for _, c := range list {
				fmt.Fprintf(tw, "%s\tv%d\t%s\t%s\t%s\t%s\n", c.CaseID, c.Version, c.Author, escape.Text(c.TaskName), c.Status, escape.Text(callList(c.Calls)))
			}
			tw.Flush()
			fmt.Fprintf(env.Stdout, "review a case with `duet case show CASE --as %s`, then approve it: duet case approve CASE --as %s\n", user, user)
			return nil
		}),
	}
	cmd.Flags().StringVar(&task, "task", "", "only the cases of this task")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	addAs(cmd)
	return cmd
}

// pendingApprovals walks the active and draft cases user may see (of taskID
// only, when set) that someone else wrote, and returns those with calls
// needing user's approval, saying whether user approved their current
// version.
func pendingApprovals(ctx context.Context, a *app.App, user, taskID string) ([]caseApproval, error) {
	var tasks []*duet.Task
	if taskID != "" {
		t, err := a.Store.FindTaskByID(ctx, user, taskID)
		if err != nil {
			return nil, err
		}
		tasks = append(tasks, t)
	} else {
		for cursor := ""; ; {
			page, next, _, err := a.Store.FindTasks(ctx, duet.TaskFilter{Viewer: user, Cursor: cursor, Limit: 100})
			if err != nil {
				return nil, err
			}
			tasks = append(tasks, page...)
			if next == "" {
				break
			}
			cursor = next
		}
	}
	out := []caseApproval{}
	for _, t := range tasks {
		for cursor := ""; ; {
			cases, next, _, err := a.Store.FindCases(ctx, duet.CaseFilter{TaskID: t.ID, IncludeDrafts: true, Cursor: cursor, Limit: 200})
			if err != nil {
				return nil, err
			}
			for _, c := range cases {
				r, err := engine.ReviewCase(ctx, a.Store, user, t, c)
				if err != nil {
					return nil, err
				}
				if !r.Needed() {
					continue
				}
				ca := caseApproval{CaseID: c.ID, Title: c.Title, Version: c.Version, Author: c.CreatedBy, TaskID: t.ID, TaskName: t.Name,
					Calls: r.Calls, Destinations: r.Destinations}
				ap, err := a.Store.FindCaseApproval(ctx, user, c.ID, c.Version)
				if err != nil && duet.ErrorCode(err) != duet.CodeNotFound {
					return nil, err
				}
				ca.Status = approvalStatus(r, ap)
				if r.Holds(ap) {
					ca.Approved = &ap.ApprovedAt
				}
				out = append(out, ca)
			}
			if next == "" {
				break
			}
			cursor = next
		}
	}
	return out, nil
}

func callList(calls []engine.PendingCall) string {
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
	cmd := &cobra.Command{
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
		RunE: withApp(env, func(cmd *cobra.Command, args []string, a *app.App, user string) error {
			ctx, done := auditing(cmd.Context(), a, user, "case.approve", args[0])
			c, err := a.Store.FindCaseByID(ctx, user, args[0])
			if err != nil {
				done(err)
				return err
			}
			if version == 0 {
				version = c.Version
			}
			if c.CreatedBy == user {
				fmt.Fprintf(env.Stdout, "you (%s) wrote version %d of case %s: its steps run with your credentials without an approval\n", user, c.Version, c.ID)
				return nil
			}
			task, err := a.Store.FindTaskByID(ctx, user, c.TaskID)
			if err != nil {
				return err
			}
			r, err := engine.ReviewCase(ctx, a.Store, user, task, c)
			if err != nil {
				return err
			}
			ap := &duet.CaseApproval{User: user, CaseID: c.ID, Version: version, DestinationsHash: r.DestinationsHash}
			err = a.Store.ApproveCase(ctx, ap)
			done(err)
			if err != nil {
				return err
			}
			fmt.Fprintf(env.Stdout, "approved version %d of case %s %q by %s (source %s) for %s\n", ap.Version, c.ID, escape.Text(c.Title), c.CreatedBy, shortHash(ap.SourceHash), user)
			if !r.Needed() {
				fmt.Fprintln(env.Stdout, "none of its steps calls an MCP tool with your credentials today")
			}
			printCalls(env, r.Calls, "may call")
			printDestinations(env, r)
			return nil
		}),
	}
	cmd.Flags().IntVar(&version, "version", 0, "approve only this version (default: the current one)")
	addAs(cmd)
	return cmd
}

func shortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

func caseRevokeCmd(env Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "revoke CASE_ID",
		Short: "Withdraw your approvals of every version of a case",
		Args:  cobra.ExactArgs(1),
		RunE: withApp(env, func(cmd *cobra.Command, args []string, a *app.App, user string) error {
			actx, done := auditing(cmd.Context(), a, user, "case.revoke", "")
			err := a.Store.RevokeCaseApproval(actx, user, args[0])
			done(err)
			if err != nil {
				return err
			}
			fmt.Fprintf(env.Stdout, "%s no longer approves case %s\n", user, args[0])
			return nil
		}),
	}
	addAs(cmd)
	return cmd
}
