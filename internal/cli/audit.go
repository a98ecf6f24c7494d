package cli

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/duet-test/duet/internal/api"
	"github.com/duet-test/duet/internal/client"
)

func auditCmd(env Env) *cobra.Command {
	var in api.RecordsIn
	var since string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Query the audit trail (one record per call, every transport)",
		Long: `audit lists the audit records of the calls --as made, through every door (the
CLI, MCP, REST, the console), newest first. An administrator (DUET_ADMINS) sees
everyone's, or one user's with --caller. The methods are the operations' names, the
same through every door: tools/call, applySuite, shareTask, registerServer, ...
(records written before the CLI called the service keep the names it gave them then,
such as task.share).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var err error
			if in.Since, err = parseSince(since); err != nil {
				return err
			}
			return withClient(env, func(cmd *cobra.Command, _ []string, c client.Client) error {
				list, err := c.ListAudit(cmd.Context(), in)
				if err != nil {
					return err
				}
				if asJSON {
					return printJSON(env.Stdout, list.Records)
				}
				tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "TIME\tSOURCE\tCALLER\tMETHOD\tTOOL\tOUTCOME\tMS\tARGS\tRESULT\tTRACE")
				for _, r := range list.Records {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%.1f\t%d\t%d\t%s\n", r.Time.Local().Format("2006-01-02 15:04:05.000"), r.CallSource, orDash(r.Caller), r.Method, orDash(r.Tool), r.Outcome, float64(r.DurationUs)/1000, r.ArgBytes, r.ResultBytes, r.TraceID)
				}
				return tw.Flush()
			})(cmd, args)
		},
	}
	cmd.Flags().StringVar(&in.User, "caller", "", "only this caller (administrators; others see their own)")
	cmd.Flags().StringVar(&in.Tool, "tool", "", "only this tool")
	cmd.Flags().StringVar(&in.Method, "method", "", "only this method (tools/call, tools/list, applySuite, shareTask, ...)")
	cmd.Flags().StringVar(&in.Source, "source", "", "only this call source (mcp, mcp-lite, stdio, cli, api, web, agent, engine, post-run, oauth)")
	cmd.Flags().StringVar(&in.Outcome, "outcome", "", "only this outcome (OK or an error code)")
	cmd.Flags().StringVar(&in.TraceID, "trace", "", "only this trace id")
	cmd.Flags().StringVar(&since, "since", "", "only records newer than a duration (1h) or a time")
	cmd.Flags().IntVar(&in.Limit, "limit", 100, "at most this many records (at most 1000)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	addAs(cmd)
	return cmd
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
