package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/duet-test/duet/internal/client"
)

// taskCheckCmd shows the contract alerts of a task's cases: a thin client
// of the Service's operation (REST GET /tasks/{id}/alerts).
func taskCheckCmd(env Env) *cobra.Command {
	return jsonCmd(env, &cobra.Command{
		Use:   "check TASK",
		Short: "Show the cases an MCP tool they call changed under (exit 1 when one is broken)",
		Long: `check lists the task's cases whose MCP tools changed since the case was written,
as found when the tools' server was synced again (duet server sync, a list_changed
notification): BROKEN by a dependency change when the call no longer fits the new
tool (removed, a required argument added, an argument gone, a value that no longer
validates), or changed compatibly, with the difference. It exits 1 when a case is
broken: run it in CI before the tests.`,
		Args: cobra.ExactArgs(1),
	}, func(cmd *cobra.Command, args []string, c client.Client, asJSON bool) error {
		list, err := c.ContractAlerts(cmd.Context(), args[0])
		if err != nil {
			return err
		}
		if asJSON {
			printJSON(env.Stdout, list)
		} else {
			for _, al := range list.Alerts {
				state := "dependency changed"
				if al.Broken {
					state = "BROKEN by a dependency change"
				}
				fmt.Fprintf(env.Stdout, "%s  %s (v%d): %s/%s %s\n", state, al.CaseTitle, al.CaseVersion, al.ServerKey, al.Tool, al.DetectedAt.Local().Format("2006-01-02 15:04"))
				for _, p := range al.Problems {
					fmt.Fprintf(env.Stdout, "  fails: %s\n", p)
				}
				fmt.Fprintf(env.Stdout, "  changed: %s\n", strings.Join(al.Changes, "; "))
			}
			if len(list.Alerts) == 0 {
				fmt.Fprintf(env.Stdout, "no dependency changes affect the cases of %s\n", args[0])
			}
		}
		if list.Broken > 0 {
			return &exitError{ExitFailed, fmt.Errorf("%d case(s) of %s broken by a dependency change", list.Broken, args[0])}
		}
		return nil
	})
}

// serverDiffCmd shows what changed between two archived catalogs of one of
// the user's servers: a thin client of the Service's operation (REST GET
// /servers/{server}/diff).
func serverDiffCmd(env Env) *cobra.Command {
	var back int
	cmd := jsonCmd(env, &cobra.Command{
		Use:   "diff NAME",
		Short: "Show what changed in a server's tools since an earlier sync",
		Long: `diff compares the server's current archived catalog with the one its latest
changing sync replaced (--back 2: the one before that; the last 10 are kept): tools
added and removed, arguments added, removed, made required, retyped, enum options,
output fields, annotations, descriptions.`,
		Args: cobra.ExactArgs(1),
	}, func(cmd *cobra.Command, args []string, c client.Client, asJSON bool) error {
		d, err := c.ServerDiff(cmd.Context(), args[0], back)
		if err != nil {
			return err
		}
		if asJSON {
			return printJSON(env.Stdout, d)
		}
		if d.From == nil {
			fmt.Fprintf(env.Stdout, "%s: no sync has changed its catalog yet\n", d.Server)
			return nil
		}
		fmt.Fprintf(env.Stdout, "%s: the catalog of %s against the one of %s\n", d.Server, d.To.Local().Format("2006-01-02 15:04:05"), d.From.Local().Format("2006-01-02 15:04:05"))
		for _, t := range d.Changes {
			fmt.Fprintf(env.Stdout, "  %s: %s\n", t.Tool, strings.Join(t.Changes, "; "))
		}
		if len(d.Changes) == 0 {
			fmt.Fprintln(env.Stdout, "  no difference")
		}
		return nil
	})
	cmd.Flags().IntVar(&back, "back", 1, "compare with the catalog this many changing syncs back")
	return cmd
}
