package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/api"
	"github.com/duet-test/duet/internal/catalog"
	"github.com/duet-test/duet/internal/client"
	"github.com/duet-test/duet/internal/escape"
	"github.com/duet-test/duet/internal/report"
)

func runCmd(env Env) *cobra.Command {
	var caseIDs, tags, excludeTags []string
	var retries int
	var detach, wait, failOnFlaky bool
	var grep string
	var device, remote, environment, traceMode, jsonOut, junitOut, reportOut string
	var origin duet.RunOrigin
	cmd := clientCmd(env, &cobra.Command{
		Use:   "run TASK",
		Short: "Run a task's cases now and show progress (exit 0 pass, 1 failures, 2 usage or configuration, 3 infrastructure)",
		Long: `run starts a run of TASK (an id or a name) as --as, executes it in this process
with progress output, waits for its end (--wait, the default) and exits:

  0  every case passed
  1  a case failed (or the run was cancelled; with --fail-on-flaky, a flaky case)
  2  a usage or configuration error: bad arguments, an unknown task, a missing MCP
     registration, credentials refused, an approval missing, a file not writable
  3  an infrastructure error: the browser, a device or an MCP server unavailable

If a "duet serve" worker takes the run first, run follows its progress instead.
Against a Duet server (--server URL) the server's workers execute it and run
follows its progress, with the same output, files and exit codes.
--tag, --exclude-tag and --grep select the cases by tag and by text (with
--case: those of the named cases that match); --retries N runs each failed case
again from its start up to N times, in place of the cases' own retries
(docs/suite-format.md, "Retries, flaky cases, tags and parallel cases").
--junit, --json=FILE and --report write the JUnit XML, JSON and HTML reports when
the run ends (docs/ci.md); beside the JUnit file, junit-attachments/ gets the
screenshots and traces of the failed cases, named in their system-out. With --detach it only queues the run and prints its id.
Ctrl-C cancels the run.

Subcommands show, list and cancel manage existing runs.`,
		Args: cobra.ExactArgs(1),
	}, func(cmd *cobra.Command, args []string, c client.Client) error {
		ctx := cmd.Context()
		if detach && (cmd.Flags().Changed("wait") || junitOut != "" || reportOut != "" || (jsonOut != "" && jsonOut != "-") || failOnFlaky) {
			return usage("--detach only queues the run: it takes none of --wait, --junit, --json=FILE, --report, --fail-on-flaky")
		}
		if !wait && !detach {
			return usage("--wait=false: use --detach to only queue the run")
		}
		if remote != "" {
			if strings.HasPrefix(device, "android:") || strings.Contains(device, "@") {
				return usage("--browser names the browser; --device must then be a preset, got %q", device)
			}
			device += "@" + remote
		}
		in := catalog.StartRunIn{TaskID: args[0], CaseIDs: caseIDs, IdempotencyKey: duet.NewID("cli"), Device: device,
			Environment: environment, Trace: traceMode, Tags: tags, ExcludeTags: excludeTags, Grep: grep}
		if cmd.Flags().Changed("retries") {
			in.Retries = &retries // the service checks its bounds (DUET_MAX_RETRIES)
		}
		out, err := c.StartRun(ctx, in, ciOrigin(origin, env.Getenv))
		if err != nil {
			return startExit(err)
		}
		if detach {
			if jsonOut != "" {
				return printJSON(env.Stdout, out)
			}
			fmt.Fprintln(env.Stdout, out.RunID)
			return nil
		}
		toStdout := jsonOut == "-"
		run, err := executeAndFollow(ctx, c, out.RunID, env.Stdout, !toStdout)
		if err != nil {
			return startExit(err)
		}
		if toStdout {
			printJSON(env.Stdout, run.Run)
		} else {
			printPostRunNotes(env.Stdout, run.Run.PostRun)
		}
		if err := writeRunFiles(ctx, c, run.Run.ID, env.Stdout, map[report.Format]string{report.JUnit: junitOut, report.JSON: fileOnly(jsonOut), report.HTML: reportOut}); err != nil {
			return err
		}
		if !toStdout && junitOut == "" && reportOut == "" && jsonOut == "" {
			fmt.Fprintf(env.Stdout, "report: duet report %s %s-o report.html   (also --format json|junit)\n", run.Run.ID, asFlag(cmd))
		}
		exit, err := c.RunExit(context.WithoutCancel(ctx), run.Run.ID, api.RunExitIn{FailOnFlaky: failOnFlaky})
		if err != nil {
			return &exitError{ExitInfra, fmt.Errorf("reading the run's verdict: %s", duet.ErrorMessage(err))}
		}
		if exit.Code != ExitPassed {
			if exit.Code != ExitFailed {
				fmt.Fprintf(env.Stderr, "exit %d: %s\n", exit.Code, exit.Reason)
			}
			return &exitError{exit.Code, nil}
		}
		return nil
	})
	cmd.Flags().StringSliceVar(&caseIDs, "case", nil, "run only these case ids (repeatable)")
	cmd.Flags().StringArrayVar(&tags, "tag", nil, "run only the cases with this tag (repeatable: any of them)")
	cmd.Flags().StringArrayVar(&excludeTags, "exclude-tag", nil, "leave out the cases with this tag (repeatable)")
	cmd.Flags().StringVar(&grep, "grep", "", "run only the cases whose title or key contains this text (case-insensitive)")
	cmd.Flags().IntVar(&retries, "retries", 0, "run each failed case again from its start up to N times, in place of the cases' own retries (0: none)")
	cmd.Flags().BoolVar(&detach, "detach", false, "only queue the run (a serve or worker executes it) and print its id")
	cmd.Flags().BoolVar(&wait, "wait", true, "wait for the run's end and exit with its verdict (the default)")
	cmd.Flags().StringVar(&device, "device", "", deviceFlagHelp)
	cmd.Flags().StringVar(&environment, "env", "", "the task's environment to run in (its baseURL and env variables); default: the task's default environment")
	cmd.Flags().StringVar(&traceMode, "trace", "", "when the cases keep a trace: off, on-failure, on-first-retry or on (default: the task's, else DUET_TRACE)")
	cmd.Flags().StringVar(&remote, "browser", "", "DevTools endpoint of a remote browser for this run, e.g. ws://10.0.0.5:9222 (with --device PRESET to emulate one)")
	cmd.Flags().StringVar(&jsonOut, "json", "", "--json: print the final run as JSON instead of progress; --json=FILE: write the JSON report to FILE at the end")
	cmd.Flags().Lookup("json").NoOptDefVal = "-"
	cmd.Flags().StringVar(&junitOut, "junit", "", "write the JUnit XML report to FILE at the end, with the failed cases' screenshots and traces in junit-attachments/ beside it")
	cmd.Flags().StringVar(&reportOut, "report", "", "write the HTML report to FILE at the end")
	cmd.Flags().StringVar(&origin.Commit, "commit", "", "the commit this run tests (default: from the CI's environment, e.g. GITHUB_SHA)")
	cmd.Flags().StringVar(&origin.Branch, "branch", "", "its branch (default: from the CI's environment)")
	cmd.Flags().StringVar(&origin.PullRequest, "pr", "", "the pull or merge request's URL (default: from the CI's environment)")
	cmd.Flags().StringVar(&origin.Pipeline, "pipeline", "", "the pipeline run's URL (default: from the CI's environment)")
	cmd.Flags().BoolVar(&failOnFlaky, "fail-on-flaky", false, "exit 1 when a case passed only on a retry (flaky)")
	cmd.AddCommand(runShowCmd(env), runListCmd(env), runCancelCmd(env),
		runApproveStopCmd(env), runDenyStopCmd(env), runStopRequestsCmd(env)) // stop.go
	return cmd
}

func fileOnly(p string) string {
	if p == "-" {
		return ""
	}
	return p
}

// writeRunFiles writes the reports of a finished run to the files named
// (format → path; "" skips one): the run as the user sees it, from the
// service (getReport), in either mode. A file that cannot be written is a
// usage error (exit 2).
func writeRunFiles(ctx context.Context, c client.Client, runID string, w io.Writer, files map[report.Format]string) error {
	for _, f := range []report.Format{report.JUnit, report.JSON, report.HTML} {
		path := files[f]
		if path == "" {
			continue
		}
		if f == report.JUnit {
			if err := writeJUnitFiles(ctx, c, runID, path, w); err != nil {
				return err
			}
			continue
		}
		r, err := c.Report(context.WithoutCancel(ctx), runID, f, report.Page{Limit: 1000})
		if err != nil {
			return &exitError{ExitInfra, fmt.Errorf("building the %s report: %s", f, duet.ErrorMessage(err))}
		}
		if err := client.WriteFileAtomic(path, func(bw *bufio.Writer) error { _, err := bw.Write(r.Body); return err }); err != nil {
			return usage("cannot write the %s report to %s: %v", f, path, err)
		}
		fmt.Fprintf(w, "wrote the %s report to %s\n", f, path)
		if win := r.Window; win != nil && win.NotShown > 0 {
			fmt.Fprintf(w, "  %d more cases are not in it: duet report %s --format %s --cursor %s\n", win.NotShown, runID, f, win.NextCursor)
		}
	}
	return nil
}

// writeJUnitFiles writes the JUnit report to path and the screenshots
// and traces of its failed cases into junit-attachments/ beside it
// (client.Client.JUnitFiles): an error of the service is exit 3, one
// writing the files exit 2.
func writeJUnitFiles(ctx context.Context, c client.Client, runID, path string, w io.Writer) error {
	out, err := c.JUnitFiles(context.WithoutCancel(ctx), runID, path)
	var de *duet.Error
	switch {
	case errors.As(err, &de):
		return &exitError{ExitInfra, fmt.Errorf("building the junit report: %s", duet.ErrorMessage(err))}
	case err != nil:
		return usage("cannot write the junit report to %s: %v", path, err)
	}
	fmt.Fprintf(w, "wrote the junit report to %s", path)
	if out.Attached > 0 {
		fmt.Fprintf(w, " (%d attachments of its failed cases in %s)", out.Attached, filepath.Join(filepath.Dir(path), client.JUnitAttachmentsDir))
	}
	fmt.Fprintln(w)
	if win := out.Window; win != nil && win.NotShown > 0 {
		fmt.Fprintf(w, "  %d more cases are not in it: duet report %s --format junit --cursor %s\n", win.NotShown, runID, win.NextCursor)
	}
	return nil
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

// stepKey names a step of an execution (or of the run's hooks), printed
// once.
type stepKey struct {
	execution, hook string
	index           int
}

// printSteps prints the finished steps not printed yet.
func printSteps(w io.Writer, steps []api.StepProgress, printed map[stepKey]bool) {
	for _, s := range steps {
		k := stepKey{s.ExecutionID, s.Hook, s.Index}
		if printed[k] {
			continue
		}
		printed[k] = true
		printStepResult(w, s.CaseTitle, &duet.StepResult{Index: s.Index, Name: s.Name, Hook: s.Hook, Status: s.Status, Optional: s.Optional,
			DurationMs: s.DurationMs, ErrorCode: duet.Code(s.ErrorCode), ErrorMessage: s.ErrorMessage, Branch: s.Branch, Iterations: s.Iterations,
			Children: s.Children, Omitted: s.Omitted})
	}
}

// printResults prints the finished results of one case (or hook), up to
// the first still running (a flow step in progress).
func printResults(w io.Writer, title string, results []*duet.StepResult) {
	for _, r := range results {
		if !r.Status.Final() {
			return
		}
		printStepResult(w, title, r)
	}
}

// printStepResult prints a finished step of a case (or hook) with the
// steps a flow step ran under it, indented, with their loop iteration.
func printStepResult(w io.Writer, title string, r *duet.StepResult) {
	printResult(w, fmt.Sprintf("  %%s %s > %d. %s%s (%d ms)", title, r.Index+1, stepLabel(r, title), flowNote(r), r.DurationMs), r, "         ")
	var walk func(rs duet.StepResults, indent string)
	walk = func(rs duet.StepResults, indent string) {
		for _, c := range rs {
			it := ""
			if c.Iteration > 0 {
				it = fmt.Sprintf("#%d ", c.Iteration)
			}
			printResult(w, fmt.Sprintf("%s%%s %s%d. %s%s (%d ms)", indent, it, c.Index+1, c.Name, flowNote(c), c.DurationMs), c, indent+"       ")
			walk(c.Children, indent+"  ")
		}
	}
	walk(r.Children, "         ")
	if r.Omitted > 0 {
		fmt.Fprintf(w, "         (%d passed steps not kept)\n", r.Omitted)
	}
}

// stepLabel is a step's name, after the hook it belongs to when it is a
// case's beforeEach or afterEach step.
func stepLabel(r *duet.StepResult, title string) string {
	if r.Hook != "" && r.Hook != title {
		return r.Hook + ": " + r.Name
	}
	return r.Name
}

// flowNote says what a flow step did: the branch an if took, the
// iterations a loop began.
func flowNote(r *duet.StepResult) string {
	switch {
	case r.Branch != "":
		return " [" + r.Branch + "]"
	case r.Iterations > 0:
		return fmt.Sprintf(" [%d iterations]", r.Iterations)
	}
	return ""
}

func printResult(w io.Writer, format string, r *duet.StepResult, indent string) {
	mark := map[duet.RunStatus]string{duet.StatusPassed: "ok  ", duet.StatusFailed: "FAIL", duet.StatusError: "ERR ", duet.StatusSkipped: "skip", duet.StatusCancelled: "stop"}[r.Status]
	if r.Optional {
		mark = "warn"
	}
	line := fmt.Sprintf(format, mark)
	if r.ErrorCode != "" {
		line += fmt.Sprintf("\n%s%s: %s", indent, r.ErrorCode, r.ErrorMessage)
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
	return jsonCmd(env, &cobra.Command{
		Use: "show RUN_ID", Short: "Show a run and its case executions (RUN_ID latest: the newest you can see)", Args: cobra.ExactArgs(1),
	}, func(cmd *cobra.Command, args []string, c client.Client, asJSON bool) error {
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
		hooks := map[string][]*duet.StepResult{}
		for _, h := range r.Hooks {
			hooks[h.Hook] = append(hooks[h.Hook], h)
		}
		printResults(env.Stdout, duet.HookBeforeAll, hooks[duet.HookBeforeAll])
		for _, x := range d.Executions {
			printResults(env.Stdout, x.CaseTitle, x.Steps)
		}
		printResults(env.Stdout, duet.HookAfterAll, hooks[duet.HookAfterAll])
		printPostRunNotes(env.Stdout, r.PostRun)
		return nil
	})
}

func runListCmd(env Env) *cobra.Command {
	var task, branch, commit string
	cmd := clientCmd(env, &cobra.Command{
		Use: "list", Short: "List recent runs you can see", Args: cobra.NoArgs,
	}, func(cmd *cobra.Command, _ []string, c client.Client) error {
		list, err := c.ListRuns(cmd.Context(), api.RunListIn{TaskID: task, Branch: branch, Commit: commit, Limit: 50})
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
	})
	cmd.Flags().StringVar(&task, "task", "", "only runs of this task")
	cmd.Flags().StringVar(&branch, "branch", "", "only runs whose origin (the CI job) has this branch")
	cmd.Flags().StringVar(&commit, "commit", "", "only runs whose origin has this commit")
	return cmd
}

func runCancelCmd(env Env) *cobra.Command {
	return clientCmd(env, &cobra.Command{
		Use: "cancel RUN_ID", Short: "Cancel a queued or running run", Args: cobra.ExactArgs(1),
	}, func(cmd *cobra.Command, args []string, c client.Client) error {
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
	})
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

// ciOrigin is the run's origin: the flags, and what they leave empty from
// the standard variables of GitHub Actions, GitLab CI and Jenkins.
func ciOrigin(flags duet.RunOrigin, getenv func(string) string) *duet.RunOrigin {
	o := flags
	first := func(dst *string, vals ...string) {
		for _, v := range vals {
			if *dst == "" && v != "" {
				*dst = v
			}
		}
	}
	gh := getenv("GITHUB_SERVER_URL") + "/" + getenv("GITHUB_REPOSITORY")
	if getenv("GITHUB_ACTIONS") == "true" {
		first(&o.Commit, getenv("GITHUB_SHA"))
		first(&o.Branch, getenv("GITHUB_HEAD_REF"), getenv("GITHUB_REF_NAME"))
		if n, ok := strings.CutPrefix(getenv("GITHUB_REF"), "refs/pull/"); ok {
			first(&o.PullRequest, gh+"/pull/"+strings.TrimSuffix(n, "/merge"))
		}
		if id := getenv("GITHUB_RUN_ID"); id != "" {
			first(&o.Pipeline, gh+"/actions/runs/"+id)
		}
	}
	if getenv("GITLAB_CI") == "true" {
		first(&o.Commit, getenv("CI_COMMIT_SHA"))
		first(&o.Branch, getenv("CI_MERGE_REQUEST_SOURCE_BRANCH_NAME"), getenv("CI_COMMIT_REF_NAME"))
		if iid := getenv("CI_MERGE_REQUEST_IID"); iid != "" {
			first(&o.PullRequest, getenv("CI_MERGE_REQUEST_PROJECT_URL")+"/-/merge_requests/"+iid)
		}
		first(&o.Pipeline, getenv("CI_PIPELINE_URL"))
	}
	if getenv("JENKINS_URL") != "" {
		first(&o.Commit, getenv("GIT_COMMIT"))
		first(&o.Branch, getenv("CHANGE_BRANCH"), getenv("BRANCH_NAME"), getenv("GIT_BRANCH"))
		first(&o.PullRequest, getenv("CHANGE_URL"))
		first(&o.Pipeline, getenv("BUILD_URL"))
	}
	if o.Empty() {
		return nil
	}
	return &o
}
