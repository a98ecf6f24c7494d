package cli

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/app"
	"github.com/duet-test/duet/internal/escape"
)

func taskCmd(env Env) *cobra.Command {
	cmd := &cobra.Command{Use: "task", Short: "List, show and share tasks"}
	list := &cobra.Command{
		Use: "list", Short: "List the tasks you can access", Args: cobra.NoArgs,
		RunE: withApp(env, func(cmd *cobra.Command, _ []string, a *app.App, user string) error {
			tasks, _, total, err := a.Store.FindTasks(cmd.Context(), duet.TaskFilter{Viewer: user, Limit: 100})
			if err != nil {
				return err
			}
			if j, _ := cmd.Flags().GetBool("json"); j {
				return printJSON(env.Stdout, tasks)
			}
			tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tNAME\tOWNER\tBASE URL")
			for _, t := range tasks {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.ID, escape.Text(t.Name), t.Owner, escape.Text(t.BaseURL))
			}
			tw.Flush()
			fmt.Fprintf(env.Stdout, "%d task(s) visible to %s\n", total, user)
			if total == 0 {
				fmt.Fprintf(env.Stderr, "create one from a suite file: duet apply -f FILE %s(docs/suite-format.md; examples/ has two)\n", asFlag(a.Config, user))
				noneVisible(cmd, env)
			}
			return nil
		}),
	}
	list.Flags().Bool("json", false, "print JSON")
	show := &cobra.Command{
		Use: "show TASK", Short: "Show a task and its cases", Args: cobra.ExactArgs(1),
		RunE: withApp(env, func(cmd *cobra.Command, args []string, a *app.App, user string) error {
			t, err := a.ResolveTask(cmd.Context(), user, args[0])
			if err != nil {
				return err
			}
			cases, _, _, err := a.Store.FindCases(cmd.Context(), duet.CaseFilter{TaskID: t.ID, IncludeDrafts: true, Limit: 200})
			if err != nil {
				return err
			}
			fmt.Fprintf(env.Stdout, "%s %s\nowner %s; shared with %s\nbase URL %s\n%s\ncases:\n", t.ID, t.Name, t.Owner, orNone(strings.Join(t.SharedWith, ", ")), orNone(t.BaseURL), t.Description)
			for _, c := range cases {
				status := string(c.Status)
				if c.Status == duet.CaseDraft {
					status += " by " + escape.Text(c.CreatedBy) // a sharee's draft is a proposal only the owner applies
				}
				fmt.Fprintf(env.Stdout, "  %s  %s (key %s, v%d, %d steps, %s)\n", c.ID, escape.Text(c.Title), c.Key, c.Version, len(c.Steps), status)
			}
			return printPostRun(cmd.Context(), env.Stdout, a, user, t) // postrun.go
		}),
	}
	share := &cobra.Command{
		Use: "share TASK --with USER", Short: "Share a task you own with a user", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return shareTask(cmd, env, args[0], true) },
	}
	unshare := &cobra.Command{
		Use: "unshare TASK --with USER", Short: "Stop sharing a task with a user", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return shareTask(cmd, env, args[0], false) },
	}
	for _, c := range []*cobra.Command{share, unshare} {
		c.Flags().String("with", "", "user id, or team:NAME for every member of a team")
		c.MarkFlagRequired("with")
	}
	for _, c := range []*cobra.Command{list, show, share, unshare} {
		addAs(c)
	}
	cmd.AddCommand(list, show, share, unshare, taskTransferCmd(env), taskApprovePostRunCmd(env), taskCheckCmd(env))
	return cmd
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func shareTask(cmd *cobra.Command, env Env, ref string, share bool) error {
	a, err := openApp(cmd, env, app.Options{})
	if err != nil {
		return err
	}
	defer a.Close()
	user := asUser(cmd, a.Config)
	with, _ := cmd.Flags().GetString("with")
	method := "task.share"
	if !share {
		method = "task.unshare"
	}
	ctx, done := auditing(cmd.Context(), a, user, method, "")
	t, err := a.Store.FindTaskByName(ctx, user, ref)
	if err != nil {
		t, err = a.Store.FindTaskByID(ctx, user, ref)
	}
	if err == nil {
		if share {
			err = a.Store.ShareTask(ctx, user, t.ID, with)
		} else {
			err = a.Store.UnshareTask(ctx, user, t.ID, with)
		}
	}
	done(err)
	if err != nil {
		return err
	}
	verb := "shared with"
	if !share {
		verb = "no longer shared with"
	}
	fmt.Fprintf(env.Stdout, "task %s %s %s\n", t.ID, verb, with)
	return nil
}
