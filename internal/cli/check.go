package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/duet-test/duet/internal/app"
)

// taskCheckCmd shows the contract alerts of a task's cases: a thin client
// of the Service's operation (REST GET /tasks/{id}/alerts).
func taskCheckCmd(env Env) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "check TASK",
		Short: "Show the cases an MCP tool they call changed under (exit 1 when one is broken)",
		Long: `check lists the task's cases whose MCP tools changed since the case was written,
as found when the tools' server was synced again (duet server sync, a list_changed
notification): BROKEN by a dependency change when the call no longer fits the new
tool (removed, a required argument added, an argument gone, a value that no longer
validates), or changed compatibly, with the difference. It exits 1 when a case is
broken: run it in CI before the tests.`,
		Args: cobra.ExactArgs(1),
		RunE: withApp(env, func(cmd *cobra.Command, args []string, a *app.App, user string) error {
			t, err := a.ResolveTask(cmd.Context(), user, args[0])
			if err != nil {
				return err
			}
			list, err := a.API.ContractAlerts(cmd.Context(), cliCaller(user), t.ID)
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
					fmt.Fprintf(env.Stdout, "no dependency changes affect the cases of %s\n", t.Name)
				}
			}
			if list.Broken > 0 {
				return &exitError{ExitFailed, fmt.Errorf("%d case(s) of %s broken by a dependency change", list.Broken, t.Name)}
			}
			return nil
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	addAs(cmd)
	return cmd
}
