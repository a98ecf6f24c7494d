package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/api"
	"github.com/duet-test/duet/internal/catalog"
	"github.com/duet-test/duet/internal/client"
	"github.com/duet-test/duet/internal/escape"
)

func runCmd(env Env) *cobra.Command {
	var caseIDs []string
	var detach, asJSON bool
	var device, remote string
	cmd := &cobra.Command{
		Use:   "run TASK",
		Short: "Run a task's cases now and show progress (exit 1 unless the run passes)",
		Long: `run starts a run of TASK (an id or a name) as --as, executes it in this process
with progress output, and exits 0 when it passes, 1 otherwise. If a "duet serve"
worker takes the run first, run follows its progress instead. Against a Duet
server (--server URL) the server's workers execute it and run follows its progress.
With --detach it only queues the run and prints its id. Ctrl-C cancels the run.

Subcommands show, list and cancel manage existing runs.`,
		Args: cobra.ExactArgs(1),
		RunE: withClient(env, func(cmd *cobra.Command, args []string, c client.Client) error {
			ctx := cmd.Context()
			if remote != "" {
				if strings.HasPrefix(device, "android:") || strings.Contains(device, "@") {
					return usage("--browser names the browser; --device must then be a preset, got %q", device)
				}
				device += "@" + remote
			}
			out, err := c.StartRun(ctx, catalog.StartRunIn{TaskID: args[0], CaseIDs: caseIDs, IdempotencyKey: duet.NewID("cli"), Device: device})
			if err != nil {
				return err
			}
			if detach {
				if asJSON {
					return printJSON(env.Stdout, out)
				}
				fmt.Fprintln(env.Stdout, out.RunID)
				return nil
			}
			run, err := executeAndFollow(ctx, c, out.RunID, env.Stdout, !asJSON)
			if err != nil {
				return err
			}
			if asJSON {
				printJSON(env.Stdout, run.Run)
			} else {
				printPostRunNotes(env.Stdout, run.Run.PostRun)
				fmt.Fprintf(env.Stdout, "report: duet report %s %s-o report.html   (also --format json|junit)\n", run.Run.ID, asFlag(cmd))
			}
			if run.Run.Status != duet.StatusPassed {
				return &exitError{1, nil}
			}
			return nil
		}),
	}
	cmd.Flags().StringSliceVar(&caseIDs, "case", nil, "run only these case ids (repeatable)")
	cmd.Flags().BoolVar(&detach, "detach", false, "only queue the run (a serve or worker executes it) and print its id")
	cmd.Flags().StringVar(&device, "device", "", deviceFlagHelp)
	cmd.Flags().StringVar(&remote, "browser", "", "DevTools endpoint of a remote browser for this run, e.g. ws://10.0.0.5:9222 (with --device PRESET to emulate one)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the final run as JSON")
	addAs(cmd)
	cmd.AddCommand(runShowCmd(env), runListCmd(env), runCancelCmd(env),
		runApproveStopCmd(env), runDenyStopCmd(env), runStopRequestsCmd(env)) // stop.go
	return cmd
}

// executeAndFollow executes the run here when the client does that
// (client.Client.ExecuteHere: a local run), follows its progress — the
// same events in both modes — printing each step as it finishes, and
// returns the final run. Ending ctx (Ctrl-C) asks the run to stop and
// goes on following it until it has.
func executeAndFollow(ctx context.Context, c client.Client, runID string, w io.Writer, progress bool) (catalog.GetRunOut, error) {
	execDone := c.ExecuteHere(ctx, runID)
	started := time.Now()
	if progress {
		fmt.Fprintf(w, "run %s started\n", runID)
	}
	stop := context.AfterFunc(ctx, func() {
		if _, err := c.CancelRun(context.WithoutCancel(ctx), runID); err == nil && progress {
			fmt.Fprintln(w, "cancelling...")
		}
	})
	defer stop()
	printed := map[stepKey]bool{}
	fctx := context.WithoutCancel(ctx) // a cancelled run is followed to its end
	for {
		done := false
		err := c.FollowRun(fctx, runID, func(p api.Progress) error {
			if progress {
				printSteps(w, p.Steps, printed)
			}
			done = p.Run.Done
			return nil
		})
		if err != nil {
			return catalog.GetRunOut{}, err
		}
		if done {
			break
		}
	}
	<-execDone
	run, err := c.GetRun(fctx, catalog.GetRunIn{RunID: runID})
	if err != nil {
		return catalog.GetRunOut{}, err
	}
	if progress {
		r := run.Run
		fmt.Fprintf(w, "run %s %s: %d passed, %d failed, %d error, %d cancelled of %d case(s) in %s\n", r.ID, strings.ToUpper(string(r.Status)),
			r.Totals.Passed, r.Totals.Failed, r.Totals.Error, r.Totals.Cancelled, r.Totals.Cases, time.Since(started).Round(time.Millisecond))
		if r.ErrorMessage != "" && r.Status != duet.StatusPassed {
			fmt.Fprintf(w, "  %s: %s\n", r.ErrorCode, escape.Text(r.ErrorMessage))
		}
	}
	return run, nil
}

// stepKey names a step of an execution, printed once.
type stepKey struct {
	execution string
	index     int
}

// printSteps prints the finished steps not printed yet.
func printSteps(w io.Writer, steps []api.StepProgress, printed map[stepKey]bool) {
	for _, s := range steps {
		k := stepKey{s.ExecutionID, s.Index}
		if printed[k] {
			continue
		}
		printed[k] = true
		printStep(w, s.CaseTitle, s.Index, s.Name, s.Status, s.Optional, s.DurationMs, s.ErrorCode, s.ErrorMessage)
	}
}

func printStep(w io.Writer, caseTitle string, index int, name string, status duet.RunStatus, optional bool, ms int64, code, msg string) {
	mark := map[duet.RunStatus]string{duet.StatusPassed: "ok  ", duet.StatusFailed: "FAIL", duet.StatusError: "ERR ", duet.StatusSkipped: "skip", duet.StatusCancelled: "stop"}[status]
	if optional {
		mark = "warn"
	}
	line := fmt.Sprintf("  %s %s > %d. %s (%d ms)", mark, caseTitle, index+1, name, ms)
	if code != "" {
		line += fmt.Sprintf("\n         %s: %s", code, msg)
	}
	fmt.Fprintln(w, line)
}

// RunDetail is a run with its executions and their steps, as `duet run
// show --json` prints it.
type RunDetail struct {
	Run        catalog.RunView   `json:"run"`
	Executions []ExecutionDetail `json:"executions"`
	Disclosure duet.Disclosure   `json:"disclosure"`
}

// ExecutionDetail is an execution with its steps (get_execution_result)
// and the key of its case (get_test_run).
// ID repeats executionId under the name run show --json gave it before.
type ExecutionDetail struct {
	ID string `json:"id"`
	catalog.ExecutionView
	CaseKey string `json:"caseKey"`
}

func runShowCmd(env Env) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use: "show RUN_ID", Short: "Show a run and its case executions (RUN_ID latest: the newest you can see)", Args: cobra.ExactArgs(1),
		RunE: withClient(env, func(cmd *cobra.Command, args []string, c client.Client) error {
			ctx := cmd.Context()
			id, err := runID(ctx, c, args[0], asFlag(cmd))
			if err != nil {
				return err
			}
			// Outputs, variables and messages only for the run's executor
			// (the service's views).
			d := RunDetail{Executions: []ExecutionDetail{}}
			for cursor := ""; ; {
				page, err := c.GetRun(ctx, catalog.GetRunIn{RunID: id, Cursor: cursor})
				if err != nil {
					return err
				}
				d.Run, d.Disclosure = page.Run, page.Disclosure
				for _, x := range page.Executions {
					ex, err := c.GetExecution(ctx, x.ID)
					if err != nil {
						return err
					}
					d.Executions = append(d.Executions, ExecutionDetail{ID: ex.Execution.ID, ExecutionView: ex.Execution, CaseKey: x.CaseKey})
				}
				if cursor = page.NextCursor; cursor == "" {
					break
				}
			}
			if asJSON {
				return printJSON(env.Stdout, d)
			}
			r := d.Run
			fmt.Fprintf(env.Stdout, "run %s of task %s: %s (triggered by %s via %s)\n", r.ID, r.TaskID, r.Status, r.TriggeredBy, r.CallSource)
			if r.ErrorMessage != "" {
				fmt.Fprintf(env.Stdout, "%s: %s\n", r.ErrorCode, escape.Text(r.ErrorMessage))
			}
			for _, x := range d.Executions {
				for _, s := range x.Steps {
					printStep(env.Stdout, x.CaseTitle, s.Index, s.Name, s.Status, s.Optional, s.DurationMs, string(s.ErrorCode), s.ErrorMessage)
				}
			}
			printPostRunNotes(env.Stdout, r.PostRun)
			return nil
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	addAs(cmd)
	return cmd
}

func runListCmd(env Env) *cobra.Command {
	var task string
	cmd := &cobra.Command{
		Use: "list", Short: "List recent runs you can see", Args: cobra.NoArgs,
		RunE: withClient(env, func(cmd *cobra.Command, _ []string, c client.Client) error {
			list, err := c.ListRuns(cmd.Context(), api.RunListIn{TaskID: task, Limit: 50})
			if err != nil {
				return err
			}
			for _, r := range list.Runs {
				fmt.Fprintf(env.Stdout, "%s  %-9s %s  %d/%d passed  by %s via %s\n", r.ID, r.Status, r.CreatedAt.Local().Format("2006-01-02 15:04:05"), r.Totals.Passed, r.Totals.Cases, r.TriggeredBy, r.CallSource)
			}
			if len(list.Runs) == 0 {
				fmt.Fprintf(env.Stdout, "no runs visible to %s\n", c.User())
				fmt.Fprintf(env.Stderr, "start one: duet run TASK %s(duet task list %sshows the tasks)\n", asFlag(cmd), asFlag(cmd))
				noneVisible(cmd, env)
			}
			return nil
		}),
	}
	cmd.Flags().StringVar(&task, "task", "", "only runs of this task")
	addAs(cmd)
	return cmd
}

func runCancelCmd(env Env) *cobra.Command {
	cmd := &cobra.Command{
		Use: "cancel RUN_ID", Short: "Cancel a queued or running run", Args: cobra.ExactArgs(1),
		RunE: withClient(env, func(cmd *cobra.Command, args []string, c client.Client) error {
			run, err := c.CancelRun(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if run.Status.Final() {
				fmt.Fprintf(env.Stdout, "run %s is %s\n", run.ID, run.Status)
				return nil
			}
			// Wait for its worker to stop it (it checks a few times a
			// second), following the run's progress.
			ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
			defer cancel()
			var last api.RunSummary
			if err := c.FollowRun(ctx, run.ID, func(p api.Progress) error { last = p.Run; return nil }); err != nil && ctx.Err() == nil {
				return err
			}
			if last.Status.Final() {
				fmt.Fprintf(env.Stdout, "run %s is %s\n", last.ID, last.Status)
				return nil
			}
			if cmd.Context().Err() != nil {
				return nil
			}
			fmt.Fprintf(env.Stdout, "run %s: cancellation requested; no worker has stopped it yet: a `duet serve` or `duet worker` on this database stops it when it next checks\n", run.ID)
			return nil
		}),
	}
	addAs(cmd)
	return cmd
}

// latestRun is what a RUN_ID argument may say instead of an id: the newest
// run the user can see.
const latestRun = "latest"

// runID resolves a RUN_ID argument: an id, or "latest" (as is the --as
// a printed command needs). Returns NOT_FOUND, with a command to paste
// when there is no run yet.
func runID(ctx context.Context, c client.Client, ref, as string) (string, error) {
	if ref != latestRun {
		return ref, nil
	}
	list, err := c.ListRuns(ctx, api.RunListIn{Limit: 1})
	if err != nil {
		return "", err
	}
	if len(list.Runs) > 0 {
		return list.Runs[0].ID, nil
	}
	err = duet.Errorf(duet.CodeNotFound, "no runs visible to %s yet", c.User())
	tasks, terr := c.ListTasks(ctx, catalog.ListTasksIn{Limit: 1})
	switch {
	case terr == nil && len(tasks.Tasks) > 0:
		return "", &hintError{err, fmt.Sprintf("start one: duet run %s %s(duet task list %sshows every task you can run)", shellQuote(tasks.Tasks[0].Name), as, as)}
	case terr == nil:
		return "", &hintError{err, fmt.Sprintf("%s can see no task to run yet: create one from a suite file with duet apply -f FILE %s(docs/suite-format.md)", c.User(), as)}
	}
	return "", err
}
