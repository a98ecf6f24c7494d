package cli

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/app"
	"github.com/duet-test/duet/internal/report"
)

func reportCmd(env Env) *cobra.Command {
	var format, out, cursor string
	var limit int
	cmd := &cobra.Command{
		Use:   "report RUN_ID",
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
person; anyone else gets statuses, timings and error codes.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := report.ParseFormat(format)
			if err != nil {
				return usage("%s", duet.ErrorMessage(err))
			}
			a, err := openApp(cmd, env, app.Options{})
			if err != nil {
				return err
			}
			defer a.Close()
			if limit < 0 || limit > 1000 {
				return usage("--limit: want 1 to 1000 cases")
			}
			user := asUser(cmd, a.Config)
			id, err := runID(cmd.Context(), a, user, args[0])
			if err != nil {
				return err
			}
			r, err := report.BuildPage(cmd.Context(), a.Store, a.Artifacts, user, id, report.Page{Cursor: cursor, Limit: limit})
			if err != nil {
				return err
			}
			if w := r.Window; w != nil && w.NotShown > 0 && w.NextCursor != "" {
				defer fmt.Fprintf(env.Stderr, "%d more case(s) not shown: get them with `duet report %s %s--cursor %s`\n", w.NotShown, r.Run.ID, asFlag(a.Config, user), w.NextCursor)
			}
			if out == "" || out == "-" {
				w := bufio.NewWriter(env.Stdout)
				if err := r.Write(w, f); err != nil {
					return err
				}
				return w.Flush()
			}
			if err := writeFileAtomic(out, func(w *bufio.Writer) error { return r.Write(w, f) }); err != nil {
				return usage("cannot write %s: %v", out, err)
			}
			t := r.Totals()
			fmt.Fprintf(env.Stdout, "wrote the %s report of run %s (%s: %d of %d cases passed) to %s\n", f, r.Run.ID, r.Run.Status, t.Passed, t.Cases, out)
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", "html", "html, json or junit")
	cmd.Flags().StringVarP(&out, "output", "o", "", "write to this file instead of stdout")
	cmd.Flags().StringVar(&cursor, "cursor", "", "the part of a big run's report after this cursor (the report prints it)")
	cmd.Flags().IntVar(&limit, "limit", 0, "cases per report (default 500, at most 1000)")
	addAs(cmd)
	return cmd
}

// writeFileAtomic writes path through a temporary file in its directory, so
// that a reader never sees half a report.
func writeFileAtomic(path string, write func(*bufio.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	w := bufio.NewWriter(tmp)
	err = write(w)
	if err == nil {
		err = w.Flush()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	return err
}
