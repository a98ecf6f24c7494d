package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/api"
	"github.com/duet-test/duet/internal/catalog"
	"github.com/duet-test/duet/internal/client"
	"github.com/duet-test/duet/internal/escape"
)

func taskCmd(env Env) *cobra.Command {
	cmd := &cobra.Command{Use: "task", Short: "List, show and share tasks"}
	list := jsonCmd(env, &cobra.Command{
		Use: "list", Short: "List the tasks you can access", Args: cobra.NoArgs,
	}, func(cmd *cobra.Command, _ []string, c client.Client, asJSON bool) error {
		out, err := c.ListTasks(cmd.Context(), catalog.ListTasksIn{Limit: 100})
		if err != nil {
			return err
		}
		if asJSON {
			return printJSON(env.Stdout, out.Tasks)
		}
		printTable(env.Stdout, "ID\tNAME\tOWNER\tBASE URL", out.Tasks, func(t catalog.TaskView) string {
			return fmt.Sprintf("%s\t%s\t%s\t%s", t.ID, escape.Text(t.Name), t.Owner, escape.Text(t.BaseURL))
		})
		fmt.Fprintf(env.Stdout, "%d task(s) visible to %s\n", out.Total, c.User())
		if out.Total == 0 {
			fmt.Fprintf(env.Stderr, "create one from a suite file: duet apply -f FILE %s(docs/suite-format.md; examples/ has two)\n", asFlag(cmd))
			noneVisible(cmd, env)
		}
		return nil
	})
	show := clientCmd(env, &cobra.Command{
		Use: "show TASK", Short: "Show a task and its cases", Args: cobra.ExactArgs(1),
	}, func(cmd *cobra.Command, args []string, c client.Client) error {
		ctx := cmd.Context()
		got, err := c.GetTask(ctx, args[0])
		if err != nil {
			return err
		}
		t := got.Task
		cases, err := c.ListCases(ctx, catalog.ListCasesIn{TaskID: t.ID, IncludeDrafts: true, Limit: 200})
		if err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "%s %s\nowner %s; shared with %s\nbase URL %s\n%s\ncases:\n", t.ID, t.Name, t.Owner, orNone(strings.Join(t.SharedWith, ", ")), orNone(t.BaseURL), t.Description)
		for _, cs := range cases.Cases {
			status := cs.Status
			if cs.Status == string(duet.CaseDraft) {
				status += " by " + escape.Text(cs.CreatedBy) // a sharee's draft is a proposal only the owner applies
			}
			fmt.Fprintf(env.Stdout, "  %s  %s (key %s, v%d, %d steps, %s)\n", cs.ID, escape.Text(cs.Title), cs.Key, cs.Version, cs.StepCount, status)
		}
		servers, err := c.ListTaskServers(ctx, t.ID)
		if err != nil {
			return err
		}
		printTaskServers(env.Stdout, servers, asFlag(cmd))
		pr, err := c.GetPostRun(ctx, t.ID)
		if err != nil {
			return err
		}
		printPostRun(env, pr, asFlag(cmd)) // postrun.go
		return nil
	})
	share := clientCmd(env, &cobra.Command{
		Use: "share TASK --with USER", Short: "Share a task you own with a user", Args: cobra.ExactArgs(1),
	}, func(cmd *cobra.Command, args []string, c client.Client) error {
		return shareTask(cmd, env, c, args[0], true)
	})
	unshare := clientCmd(env, &cobra.Command{
		Use: "unshare TASK --with USER", Short: "Stop sharing a task with a user", Args: cobra.ExactArgs(1),
	}, func(cmd *cobra.Command, args []string, c client.Client) error {
		return shareTask(cmd, env, c, args[0], false)
	})
	for _, c := range []*cobra.Command{share, unshare} {
		c.Flags().String("with", "", "user id, or team:NAME for every member of a team")
		c.MarkFlagRequired("with")
	}
	return group(cmd, list, show, share, unshare, taskTransferCmd(env), taskApprovePostRunCmd(env), taskCheckCmd(env))
}

// printTaskServers lists the MCP servers a task calls, and for each one the
// user has not registered the command that does it (the address from its
// author's registration): a run's calls go with the runner's credentials.
func printTaskServers(w io.Writer, ts api.TaskServers, as string) {
	if len(ts.Servers) == 0 {
		return
	}
	fmt.Fprintln(w, "MCP servers it calls (with the credentials of whoever runs it):")
	for _, s := range ts.Servers {
		addr := s.URL
		if addr == "" {
			addr = "(address unknown: " + escape.Text(s.Author) + " no longer has it registered)"
		}
		fmt.Fprintf(w, "  %s  %s  %s\n", escape.Text(s.Name), escape.Text(addr), s.ServerKey)
		switch {
		case s.RegisteredAs != "":
			fmt.Fprintf(w, "      registered by you as %s\n", escape.Text(s.RegisteredAs))
		case s.URL != "":
			fmt.Fprintf(w, "      NOT registered by you: duet server add %s--name %s --url %s --bearer-token-env VAR   (or --auth oauth: duet server add --help)\n",
				as, shellQuote(s.Name), shellQuote(s.URL))
		default:
			fmt.Fprintf(w, "      NOT registered by you; ask %s for its address\n", escape.Text(s.Author))
		}
	}
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// shareTask shares (or stops sharing) a task through the service: the one
// check of whom a task may be shared with (api.Service.ShareTask).
func shareTask(cmd *cobra.Command, env Env, c client.Client, ref string, share bool) error {
	with, _ := cmd.Flags().GetString("with")
	var s api.Sharing
	var err error
	if share {
		s, err = c.ShareTask(cmd.Context(), ref, api.ShareIn{With: with})
	} else {
		s, err = c.UnshareTask(cmd.Context(), ref, with)
	}
	if err != nil {
		return err
	}
	verb := "shared with"
	if !share {
		verb = "no longer shared with"
	}
	fmt.Fprintf(env.Stdout, "task %s %s %s\n", s.TaskID, verb, strings.TrimSpace(with))
	return nil
}
