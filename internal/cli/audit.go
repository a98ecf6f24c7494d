package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/api"
	"github.com/duet-test/duet/internal/client"
)

func auditCmd(env Env) *cobra.Command {
	var in api.RecordsIn
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Query the audit trail (one record per call, every transport)",
		Long: `audit lists the audit records of the calls --as made, through every door (the
CLI, MCP, REST, the console), newest first. An administrator (DUET_ADMINS) sees
everyone's, or one user's with --caller. The methods are the operations' names, the
same through every door: tools/call, applySuite, shareTask, registerServer, ...
(records written before the CLI called the service keep the names it gave them then,
such as task.share).`,
	}
	cmd.Flags().StringVar(&in.User, "caller", "", "only this caller (administrators; others see their own)")
	cmd.Flags().StringVar(&in.Tool, "tool", "", "only this tool")
	cmd.Flags().StringVar(&in.Method, "method", "", "only this method (tools/call, tools/list, applySuite, shareTask, ...)")
	cmd.Flags().StringVar(&in.Source, "source", "", "only this call source (mcp, mcp-lite, stdio, cli, api, web, agent, engine, post-run, oauth)")
	cmd.Flags().StringVar(&in.Outcome, "outcome", "", "only this outcome (OK or an error code)")
	return recordsCmd(env, cmd, &in, "at most this many records (at most 1000)",
		func(ctx context.Context, c client.Client, in api.RecordsIn) ([]*duet.AuditRecord, error) {
			list, err := c.ListAudit(ctx, in)
			return list.Records, err
		},
		"TIME\tSOURCE\tCALLER\tMETHOD\tTOOL\tOUTCOME\tMS\tARGS\tRESULT\tTRACE",
		func(r *duet.AuditRecord) string {
			return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s\t%.1f\t%d\t%d\t%s", r.Time.Local().Format(recordTime), r.CallSource, orDash(r.Caller), r.Method, orDash(r.Tool), r.Outcome, float64(r.DurationUs)/1000, r.ArgBytes, r.ResultBytes, r.TraceID)
		})
}

// recordTime is how a record's time is shown.
const recordTime = "2006-01-02 15:04:05.000"

// recordsCmd completes cmd, a command that lists call records (the audit
// trail, the invocations of MCP servers) newest first, whose own flags set
// the filters in: it adds --trace, --since, --limit (limitDoc), --json and
// --as. list fetches the records; header and row make the table.
func recordsCmd[T any](env Env, cmd *cobra.Command, in *api.RecordsIn, limitDoc string,
	list func(context.Context, client.Client, api.RecordsIn) ([]T, error), header string, row func(T) string) *cobra.Command {
	var since string
	cmd.Args = cobra.NoArgs
	cmd.PreRunE = func(*cobra.Command, []string) error {
		var err error
		in.Since, err = parseSince(since)
		return err
	}
	cmd = jsonCmd(env, cmd, func(cmd *cobra.Command, _ []string, c client.Client, asJSON bool) error {
		records, err := list(cmd.Context(), c, *in)
		if err != nil {
			return err
		}
		return printList(env.Stdout, asJSON, records, records, "", header, row)
	})
	cmd.Flags().StringVar(&in.TraceID, "trace", "", "only this trace id")
	cmd.Flags().StringVar(&since, "since", "", "only records newer than a duration (1h) or a time")
	cmd.Flags().IntVar(&in.Limit, "limit", 100, limitDoc)
	return cmd
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
