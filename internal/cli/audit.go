package cli

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/app"
)

func auditCmd(env Env) *cobra.Command {
	var f duet.AuditFilter
	var since string
	var asJSON bool
	var source, outcome string
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Query the audit trail (one record per call, every transport)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if f.Since, err = parseSince(since); err != nil {
				return err
			}
			f.CallSource, f.Outcome = duet.CallSource(source), duet.Code(outcome)
			a, err := openApp(cmd, env, app.Options{})
			if err != nil {
				return err
			}
			defer a.Close()
			recs, err := a.Store.FindAudit(cmd.Context(), f)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(env.Stdout, recs)
			}
			tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "TIME\tSOURCE\tCALLER\tMETHOD\tTOOL\tOUTCOME\tMS\tARGS\tRESULT\tTRACE")
			for _, r := range recs {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%.1f\t%d\t%d\t%s\n", r.Time.Local().Format("2006-01-02 15:04:05.000"), r.CallSource, orDash(r.Caller), r.Method, orDash(r.Tool), r.Outcome, float64(r.DurationUs)/1000, r.ArgBytes, r.ResultBytes, r.TraceID)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&f.Caller, "caller", "", "only this caller")
	cmd.Flags().StringVar(&f.Tool, "tool", "", "only this tool")
	cmd.Flags().StringVar(&f.Method, "method", "", "only this method (tools/call, tools/list, apply, ...)")
	cmd.Flags().StringVar(&source, "source", "", "only this call source (mcp, mcp-lite, stdio, cli, api, web, agent, engine, post-run, oauth)")
	cmd.Flags().StringVar(&outcome, "outcome", "", "only this outcome (OK or an error code)")
	cmd.Flags().StringVar(&f.TraceID, "trace", "", "only this trace id")
	cmd.Flags().StringVar(&since, "since", "", "only records newer than a duration (1h) or a time")
	cmd.Flags().IntVar(&f.Limit, "limit", 100, "at most this many records")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
