package cli

import (
	"bufio"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/duet-test/duet/internal/app"
	"github.com/duet-test/duet/internal/client"
)

// writeTrace writes the trace of case ref of run runID to out (default
// trace-RUN-CASE.zip), as --as sees it: only the run's executor may.
func writeTrace(cmd *cobra.Command, env Env, runRef, ref, out string) error {
	c, err := connect(cmd, env)
	if err != nil {
		return err
	}
	defer c.Close()
	id, err := runID(cmd.Context(), c, runRef, asFlag(cmd))
	if err != nil {
		return err
	}
	data, key, err := c.Trace(cmd.Context(), id, ref)
	if err != nil {
		return err
	}
	if out == "" || out == "-" {
		out = "trace-" + id + "-" + key + ".zip"
	}
	if err := client.WriteFileAtomic(out, func(w *bufio.Writer) error { _, err := w.Write(data); return err }); err != nil {
		return usage("cannot write %s: %v", out, err)
	}
	fmt.Fprintf(env.Stdout, "wrote the trace of case %s of run %s (%d KB) to %s: unzip it and open index.html\n", key, id, (len(data)+1023)/1024, out)
	return nil
}

func gcCmd(env Env) *cobra.Command {
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "gc",
		Short: "Remove the artifacts (screenshots, traces) older than DUET_ARTIFACT_RETENTION now",
		Long: `gc removes, from the artifact directory (DUET_ARTIFACT_DIR), the screenshots and
traces of every run whose newest artifact is older than DUET_ARTIFACT_RETENTION
(default 30 days), and says how many runs it cleared and how much space that
freed. Every serve and worker does the same every few minutes; gc does it now,
for example after lowering the retention. A retention of 0 keeps everything.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := localOnly(cmd, env, "it removes files from this machine's artifact directory (DUET_ARTIFACT_DIR); a Duet server collects its own every few minutes"); err != nil {
				return err
			}
			a, err := openApp(cmd, env, app.Options{})
			if err != nil {
				return err
			}
			defer a.Close()
			if a.Artifacts.Retention() == 0 {
				fmt.Fprintf(env.Stdout, "DUET_ARTIFACT_RETENTION is 0: artifacts in %s are kept forever; nothing removed\n", a.Artifacts.Dir())
				return nil
			}
			runs, bytes, err := a.Artifacts.Collect(cmd.Context(), time.Now(), dryRun)
			verb := "removed"
			if dryRun {
				verb = "would remove"
			}
			fmt.Fprintf(env.Stdout, "%s the artifacts of %d run(s), %d KB, older than %s from %s\n", verb, runs, (bytes+1023)/1024, a.Artifacts.Retention(), a.Artifacts.Dir())
			return err
		},
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "say what would be removed, remove nothing")
	return cmd
}
