package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/app"
	"github.com/duet-test/duet/internal/catalog"
	"github.com/duet-test/duet/internal/escape"
	"github.com/duet-test/duet/internal/report"
)

func runCmd(env Env) *cobra.Command {
	var caseIDs []string
	var detach, wait, failOnFlaky bool
	var device, remote, environment, traceMode, jsonOut, junitOut, reportOut string
	var origin duet.RunOrigin
	cmd := &cobra.Command{
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
--junit, --json=FILE and --report write the JUnit XML, JSON and HTML reports when
the run ends (docs/ci.md). With --detach it only queues the run and prints its id.
Ctrl-C cancels the run.

Subcommands show, list and cancel manage existing runs.`,
		Args: cobra.ExactArgs(1),
		RunE: withApp(env, func(cmd *cobra.Command, args []string, a *app.App, user string) error {
			ctx := cmd.Context()
			if detach && (cmd.Flags().Changed("wait") || junitOut != "" || reportOut != "" || (jsonOut != "" && jsonOut != "-") || failOnFlaky) {
				return usage("--detach only queues the run: it takes none of --wait, --junit, --json=FILE, --report, --fail-on-flaky")
			}
			if !wait && !detach {
				return usage("--wait=false: use --detach to only queue the run")
			}
			t, err := a.ResolveTask(ctx, user, args[0])
			if err != nil {
				return startExit(err)
			}
			if remote != "" {
				if strings.HasPrefix(device, "android:") || strings.Contains(device, "@") {
					return usage("--browser names the browser; --device must then be a preset, got %q", device)
				}
				device += "@" + remote
			}
			out, err := startRun(ctx, a, user, catalog.StartRunIn{TaskID: t.ID, CaseIDs: caseIDs, Device: device, Environment: environment, Trace: traceMode}, ciOrigin(origin, env.Getenv))
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
			run, err := executeAndFollow(ctx, a, user, out.RunID, env.Stdout, !toStdout)
			if err != nil {
				return startExit(err)
			}
			if toStdout {
				printJSON(env.Stdout, run)
			} else {
				printPostRunNotes(env.Stdout, run)
			}
			if err := writeRunFiles(ctx, a, user, run.ID, env.Stdout, map[report.Format]string{report.JUnit: junitOut, report.JSON: fileOnly(jsonOut), report.HTML: reportOut}); err != nil {
				return err
			}
			if !toStdout && junitOut == "" && reportOut == "" && jsonOut == "" {
				fmt.Fprintf(env.Stdout, "report: duet report %s %s-o report.html   (also --format json|junit)\n", run.ID, asFlag(a.Config, user))
			}
			execs, err := a.Store.FindExecutions(context.WithoutCancel(ctx), run.ID)
			if err != nil {
				return &exitError{ExitInfra, fmt.Errorf("reading the run's cases: %s", duet.ErrorMessage(err))}
			}
			if code, why := runExit(run, execs, failOnFlaky); code != ExitPassed {
				if code != ExitFailed {
					fmt.Fprintf(env.Stderr, "exit %d: %s\n", code, why)
				}
				return &exitError{code, nil}
			}
			return nil
		}),
	}
	cmd.Flags().StringSliceVar(&caseIDs, "case", nil, "run only these case ids (repeatable)")
	cmd.Flags().BoolVar(&detach, "detach", false, "only queue the run (a serve or worker executes it) and print its id")
	cmd.Flags().BoolVar(&wait, "wait", true, "wait for the run's end and exit with its verdict (the default)")
	cmd.Flags().StringVar(&device, "device", "", deviceFlagHelp)
	cmd.Flags().StringVar(&environment, "env", "", "the task's environment to run in (its baseURL and env variables); default: the task's default environment")
	cmd.Flags().StringVar(&traceMode, "trace", "", "when the cases keep a trace: off, on-failure, on-first-retry or on (default: the task's, else DUET_TRACE)")
	cmd.Flags().StringVar(&remote, "browser", "", "DevTools endpoint of a remote browser for this run, e.g. ws://10.0.0.5:9222 (with --device PRESET to emulate one)")
	cmd.Flags().StringVar(&jsonOut, "json", "", "--json: print the final run as JSON instead of progress; --json=FILE: write the JSON report to FILE at the end")
	cmd.Flags().Lookup("json").NoOptDefVal = "-"
	cmd.Flags().StringVar(&junitOut, "junit", "", "write the JUnit XML report to FILE at the end")
	cmd.Flags().StringVar(&reportOut, "report", "", "write the HTML report to FILE at the end")
	cmd.Flags().StringVar(&origin.Commit, "commit", "", "the commit this run tests (default: from the CI's environment, e.g. GITHUB_SHA)")
	cmd.Flags().StringVar(&origin.Branch, "branch", "", "its branch (default: from the CI's environment)")
	cmd.Flags().StringVar(&origin.PullRequest, "pr", "", "the pull or merge request's URL (default: from the CI's environment)")
	cmd.Flags().StringVar(&origin.Pipeline, "pipeline", "", "the pipeline run's URL (default: from the CI's environment)")
	cmd.Flags().BoolVar(&failOnFlaky, "fail-on-flaky", false, "exit 1 when a case passed only on a retry (flaky; retries arrive with issue 27)")
	addAs(cmd)
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
// (format → path; "" skips one): the run as the user sees it. A file that
// cannot be written is a usage error (exit 2).
func writeRunFiles(ctx context.Context, a *app.App, user, runID string, w io.Writer, files map[report.Format]string) error {
	for _, f := range []report.Format{report.JUnit, report.JSON, report.HTML} {
		path := files[f]
		if path == "" {
			continue
		}
		r, err := report.BuildPage(context.WithoutCancel(ctx), a.Store, a.Artifacts, user, runID, report.Page{Limit: 1000})
		if err != nil {
			return &exitError{ExitInfra, fmt.Errorf("building the %s report: %s", f, duet.ErrorMessage(err))}
		}
		if err := writeFileAtomic(path, func(bw *bufio.Writer) error { return r.Write(bw, f) }); err != nil {
			return usage("cannot write the %s report to %s: %v", f, path, err)
		}
		fmt.Fprintf(w, "wrote the %s report to %s\n", f, path)
		if win := r.Window; win != nil && win.NotShown > 0 {
			fmt.Fprintf(w, "  it shows the first %d cases; %d more: duet report %s --format %s --cursor %s\n", len(r.Cases), win.NotShown, runID, f, win.NextCursor)
		}
	}
	return nil
}

// startRun starts a run through the catalog, so the CLI gets the same
// checks and audit as every transport.
func startRun(ctx context.Context, a *app.App, user string, in catalog.StartRunIn, origin *duet.RunOrigin) (catalog.StartRunOut, error) {
	in.IdempotencyKey = duet.NewID("cli")
	args, _ := json.Marshal(in)
	res, err := a.Catalog.Call(ctx, catalog.Request{Caller: duet.Caller{UserID: user, Source: duet.SourceCLI}, Tool: catalog.ToolStartRun, Args: args, Origin: origin})
	if err != nil {
		return catalog.StartRunOut{}, err
	}
	if res.IsError {
		var body struct{ Error catalog.ErrorBody }
		json.Unmarshal(res.Structured, &body)
		return catalog.StartRunOut{}, duet.Errorf(body.Error.Code, "%s", body.Error.Message)
	}
	var out catalog.StartRunOut
	return out, json.Unmarshal(res.Structured, &out)
}

// executeAndFollow executes the run in this process (unless another worker
// holds it) and prints each step as it finishes. Cancelling ctx (Ctrl-C)
// cancels the run.
func executeAndFollow(ctx context.Context, a *app.App, user, runID string, w io.Writer, progress bool) (*duet.Run, error) {
	execDone := make(chan struct{})
	go func() {
		defer close(execDone)
		// The run's own context outlives ctx so that Ctrl-C becomes a
		// cancellation request rather than an abandoned run.
		if _, err := a.Worker.ExecuteRun(context.WithoutCancel(ctx), runID); err != nil {
			a.Logger.Error("executing the run", "run", runID, "err", err)
		}
	}()
	printed := map[string]int{}
	started := time.Now()
	if progress {
		fmt.Fprintf(w, "run %s started\n", runID)
	}
	cancelled := false
	for {
		select {
		case <-ctx.Done():
			if !cancelled {
				cancelled = true
				if _, err := a.Store.RequestCancel(context.WithoutCancel(ctx), user, runID); err == nil && progress {
					fmt.Fprintln(w, "cancelling...")
				}
			}
		case <-time.After(150 * time.Millisecond):
		case <-execDone:
		}
		rctx := context.WithoutCancel(ctx)
		run, err := a.Store.FindRunByID(rctx, user, runID)
		if err != nil {
			return nil, err
		}
		if progress {
			execs, err := a.Store.FindExecutions(rctx, runID)
			if err == nil {
				duet.DiscloseRun(user, run, execs...)
				printProgress(w, run, execs, printed)
			}
		}
		if run.Status.Final() {
			<-execDone
			if progress {
				fmt.Fprintf(w, "run %s %s: %d passed, %d failed, %d error, %d cancelled of %d case(s) in %s\n", run.ID, strings.ToUpper(string(run.Status)),
					run.Totals.Passed, run.Totals.Failed, run.Totals.Error, run.Totals.Cancelled, run.Totals.Cases, time.Since(started).Round(time.Millisecond))
				if run.ErrorMessage != "" && run.Status != duet.StatusPassed {
					fmt.Fprintf(w, "  %s: %s\n", run.ErrorCode, escape.Text(run.ErrorMessage))
				}
			}
			return run, nil
		}
	}
}

func printProgress(w io.Writer, run *duet.Run, execs []*duet.Execution, printed map[string]int) {
	// The run's beforeAll and afterAll, as a case of their own each.
	hooks := map[string][]*duet.StepResult{}
	for _, r := range run.Hooks {
		hooks[r.Hook] = append(hooks[r.Hook], r)
	}
	printResults(w, "run:"+duet.HookBeforeAll, duet.HookBeforeAll, hooks[duet.HookBeforeAll], printed)
	for _, x := range execs {
		printResults(w, x.ID, x.CaseTitle, x.Results, printed)
	}
	printResults(w, "run:"+duet.HookAfterAll, duet.HookAfterAll, hooks[duet.HookAfterAll], printed)
}

// printResults prints the results not printed yet of one case (or hook),
// up to the first still running (a flow step in progress): each with the
// steps a flow step ran under it, indented, with their loop iteration.
func printResults(w io.Writer, id, title string, results []*duet.StepResult, printed map[string]int) {
	for _, r := range results[min(printed[id], len(results)):] {
		if !r.Status.Final() {
			return
		}
		printed[id]++
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

func runShowCmd(env Env) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use: "show RUN_ID", Short: "Show a run and its case executions (RUN_ID latest: the newest you can see)", Args: cobra.ExactArgs(1),
		RunE: withApp(env, func(cmd *cobra.Command, args []string, a *app.App, user string) error {
			id, err := runID(cmd.Context(), a, user, args[0])
			if err != nil {
				return err
			}
			run, err := a.Store.FindRunByID(cmd.Context(), user, id)
			if err != nil {
				return err
			}
			execs, err := a.Store.FindExecutions(cmd.Context(), run.ID)
			if err != nil {
				return err
			}
			// Outputs, variables and messages only for the run's executor.
			duet.DiscloseRun(user, run, execs...)
			if asJSON {
				return printJSON(env.Stdout, map[string]any{"run": run, "executions": execs})
			}
			fmt.Fprintf(env.Stdout, "run %s of task %s: %s (triggered by %s via %s)\n", run.ID, run.TaskID, run.Status, run.TriggeredBy, run.CallSource)
			if run.ErrorMessage != "" {
				fmt.Fprintf(env.Stdout, "%s: %s\n", run.ErrorCode, escape.Text(run.ErrorMessage))
			}
			printProgress(env.Stdout, run, execs, map[string]int{})
			printPostRunNotes(env.Stdout, run)
			return nil
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	addAs(cmd)
	return cmd
}

func runListCmd(env Env) *cobra.Command {
	var task, branch, commit string
	cmd := &cobra.Command{
		Use: "list", Short: "List recent runs you can see", Args: cobra.NoArgs,
		RunE: withApp(env, func(cmd *cobra.Command, _ []string, a *app.App, user string) error {
			f := duet.RunFilter{Viewer: user, Limit: 50, Branch: branch, Commit: commit}
			var err error
			if f.TaskID, err = taskIDOf(cmd.Context(), a, user, task); err != nil {
				return err
			}
			runs, _, err := a.Store.FindRuns(cmd.Context(), f)
			if err != nil {
				return err
			}
			for _, r := range runs {
				fmt.Fprintf(env.Stdout, "%s  %-9s %s  %d/%d passed  by %s via %s\n", r.ID, r.Status, r.CreatedAt.Local().Format("2006-01-02 15:04:05"), r.Totals.Passed, r.Totals.Cases, r.TriggeredBy, r.CallSource)
			}
			if len(runs) == 0 {
				fmt.Fprintf(env.Stdout, "no runs visible to %s\n", user)
				fmt.Fprintf(env.Stderr, "start one: duet run TASK %s(duet task list %sshows the tasks)\n", asFlag(a.Config, user), asFlag(a.Config, user))
				noneVisible(cmd, env)
			}
			return nil
		}),
	}
	cmd.Flags().StringVar(&task, "task", "", "only runs of this task")
	cmd.Flags().StringVar(&branch, "branch", "", "only runs whose origin (the CI job) has this branch")
	cmd.Flags().StringVar(&commit, "commit", "", "only runs whose origin has this commit")
	addAs(cmd)
	return cmd
}

func runCancelCmd(env Env) *cobra.Command {
	cmd := &cobra.Command{
		Use: "cancel RUN_ID", Short: "Cancel a queued or running run", Args: cobra.ExactArgs(1),
		RunE: withApp(env, func(cmd *cobra.Command, args []string, a *app.App, user string) error {
			actx, done := auditing(cmd.Context(), a, user, "run.cancel", "")
			run, err := a.Catalog.CancelRun(actx, duet.Caller{UserID: user, Source: duet.SourceCLI}, args[0])
			done(err)
			if err != nil {
				return err
			}
			if run.Status.Final() {
				fmt.Fprintf(env.Stdout, "run %s is %s\n", run.ID, run.Status)
				return nil
			}
			// Wait for its worker to stop it (it checks a few times a second).
			deadline := time.Now().Add(30 * time.Second)
			for time.Now().Before(deadline) {
				r, err := a.Store.FindRunByID(cmd.Context(), user, run.ID)
				if err != nil {
					return err
				}
				if r.Status.Final() {
					fmt.Fprintf(env.Stdout, "run %s is %s\n", r.ID, r.Status)
					return nil
				}
				select {
				case <-cmd.Context().Done():
					return nil
				case <-time.After(100 * time.Millisecond):
				}
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

// runID resolves a RUN_ID argument: an id, or "latest". Returns NOT_FOUND.
func runID(ctx context.Context, a *app.App, user, ref string) (string, error) {
	if ref != latestRun {
		return ref, nil
	}
	runs, _, err := a.Store.FindRuns(ctx, duet.RunFilter{Viewer: user, Limit: 1})
	if err != nil {
		return "", err
	}
	if len(runs) == 0 {
		return "", duet.Errorf(duet.CodeNotFound, "no runs visible to %s yet: start one with duet run TASK", user)
	}
	return runs[0].ID, nil
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
