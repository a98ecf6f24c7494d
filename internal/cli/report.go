package cli

import (
	"bufio"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/client"
	"github.com/duet-test/duet/internal/report"
)

func reportCmd(env Env) *cobra.Command {
	var format, out, cursor string
	var limit int
	var withTrace bool
	cmd := &cobra.Command{
		Use:   "report RUN_ID [CASE]",
		Short: "Write the report of a run: HTML (default), JSON or JUnit XML",
		Long: `report writes the report of RUN_ID, a run that --as may see, to stdout or to
the file -o names. RUN_ID latest is the newest run --as may see.

  --format html   one self-contained page: summary, each case's steps on a timeline
                  with their durations, error codes with their messages, saved
                  variables (secrets redacted) and screenshots inline
  --format json   the same data for programs; screenshots by artifact id
  --format junit  JUnit XML for CI systems: one testsuite, a testcase per case

Screenshots are kept for DUET_ARTIFACT_RETENTION; older ones are listed as
unavailable. The command exits 0 whatever the run's outcome.

A report shows at most 500 cases (--limit, up to 1000); the report of a bigger
run says how many more there are and prints the --cursor of the next part.

A run used the credentials of the person who ran it: its outputs, saved
variables, messages and screenshots are in the report only when --as is that
person; anyone else gets statuses, timings and error codes.

With --trace, report writes the trace of one case of the run (CASE: its key,
case id or execution id) as a zip to -o, default trace-RUN_ID-CASE.zip: unzip
it and open index.html (the viewer: each step's screenshots, DOM snapshot,
console and network, and a replay), or open network.har in DevTools. Only the
person who ran it may download it.`,
		Args: func(cmd *cobra.Command, args []string) error {
			switch {
			case withTrace && len(args) != 2:
				return usage("--trace needs RUN_ID and CASE (the case's key, case id or execution id)")
			case !withTrace && len(args) == 2:
				return usage("CASE names the case of --trace; without it, report takes RUN_ID only")
			}
			return cobra.RangeArgs(1, 2)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if withTrace {
				return writeTrace(cmd, env, args[0], args[1], out)
			}
			f, err := report.ParseFormat(format)
			if err != nil {
				return usage("%s", duet.ErrorMessage(err))
			}
			if limit < 0 || limit > 1000 {
				return usage("--limit: want 1 to 1000 cases")
			}
			return withClient(env, func(cmd *cobra.Command, args []string, c client.Client) error {
				id, err := runID(cmd.Context(), c, args[0], asFlag(cmd))
				if err != nil {
					return err
				}
				r, err := c.Report(cmd.Context(), id, f, report.Page{Cursor: cursor, Limit: limit})
				if err != nil {
					return err
				}
				if w := r.Window; w != nil && w.NotShown > 0 && w.NextCursor != "" {
					defer fmt.Fprintf(env.Stderr, "%d more case(s) not shown: get them with `duet report %s %s--cursor %s`\n", w.NotShown, r.RunID, asFlag(cmd), w.NextCursor)
				}
				if out == "" || out == "-" {
					_, err := env.Stdout.Write(r.Body)
					return err
				}
				if err := client.WriteFileAtomic(out, func(w *bufio.Writer) error { _, err := w.Write(r.Body); return err }); err != nil {
					return usage("cannot write %s: %v", out, err)
				}
				fmt.Fprintf(env.Stdout, "wrote the %s report of run %s (%s: %d of %d cases passed) to %s\n", f, r.RunID, r.Status, r.Totals.Passed, r.Totals.Cases, out)
				return nil
			})(cmd, args)
		},
	}
	cmd.Flags().StringVar(&format, "format", "html", "html, json or junit")
	cmd.Flags().StringVarP(&out, "output", "o", "", "write to this file instead of stdout")
	cmd.Flags().StringVar(&cursor, "cursor", "", "the part of a big run's report after this cursor (the report prints it)")
	cmd.Flags().IntVar(&limit, "limit", 0, "cases per report (default 500, at most 1000)")
	cmd.Flags().BoolVar(&withTrace, "trace", false, "write the trace of one case (RUN_ID CASE) as a zip")
	addAs(cmd)
	return cmd
}
