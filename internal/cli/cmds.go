package cli

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/app"
	"github.com/duet-test/duet/internal/auth"
	"github.com/duet-test/duet/internal/compiler"
	"github.com/duet-test/duet/internal/config"
)

func addAs(cmd *cobra.Command) {
	cmd.Flags().Var(new(userIDFlag), "as", "act as this user id (default: DUET_USER or the operating-system user)")
}

// userIDFlag is a flag holding a user id, checked by the one rule
// (duet.ValidUserID) when it is parsed.
type userIDFlag string

func (f *userIDFlag) String() string { return string(*f) }
func (f *userIDFlag) Type() string   { return "user" }
func (f *userIDFlag) Set(v string) error {
	if err := duet.ValidUserID(v); err != nil {
		return errors.New(duet.ErrorMessage(err))
	}
	*f = userIDFlag(v)
	return nil
}

// audited records a CLI action in the audit trail.
func audited(a *app.App, user, method string, start time.Time, err error) {
	outcome := duet.OutcomeOK
	if err != nil {
		outcome = duet.ErrorCode(err)
	}
	a.Audit.Record(&duet.AuditRecord{Time: start, TraceID: duet.NewTraceID(), CallSource: duet.SourceCLI, Caller: user,
		Method: method, Outcome: outcome, DurationUs: time.Since(start).Microseconds()})
}

func applyCmd(env Env) *cobra.Command {
	var file, baseURL string
	var dryRun, asJSON bool
	cmd := &cobra.Command{
		Use:   "apply -f FILE",
		Short: "Create or update a task and its cases from a suite file (YAML)",
		Long: `apply compiles a suite file (see docs/suite-format.md) and creates or updates
the task it declares, owned by --as, and its cases. Re-applying an unchanged file
changes nothing. Cases no longer in the file are archived. Errors name the line
and column.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" {
				return usage("apply needs -f FILE")
			}
			src, err := os.ReadFile(file)
			if err != nil {
				return usage("cannot read %s: %v", file, err)
			}
			a, err := openApp(cmd, env, app.Options{})
			if err != nil {
				return err
			}
			defer a.Close()
			user := asUser(cmd, a.Config)
			start := time.Now()
			suite, err := compiler.CompileSuite(cmd.Context(), src, file, a.CompilerOptions(cmd.Context(), user))
			if err != nil {
				audited(a, user, "apply", start, err)
				fmt.Fprintln(env.Stderr, duet.ErrorMessage(err))
				return &exitError{1, fmt.Errorf("%s has errors; nothing was applied", file)}
			}
			if baseURL != "" {
				suite.Task.BaseURL = strings.TrimRight(baseURL, "/")
			}
			if dryRun {
				fmt.Fprintf(env.Stdout, "%s compiles: task %q with %d case(s); nothing applied (--dry-run)\n", file, suite.Task.Name, len(suite.Cases))
				return nil
			}
			res, err := a.Store.ApplySuite(cmd.Context(), user, suite)
			audited(a, user, "apply", start, err)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(env.Stdout, res)
			}
			fmt.Fprintf(env.Stdout, "task %s %q: %s\n", res.Task.ID, res.Task.Name, res.TaskAction)
			for _, c := range res.Cases {
				fmt.Fprintf(env.Stdout, "  case %s %q v%d: %s\n", c.ID, c.Key, c.Version, c.Action)
			}
			if !res.Changed() {
				fmt.Fprintln(env.Stdout, "nothing changed")
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "suite file (YAML)")
	cmd.Flags().StringVar(&baseURL, "base-url", "", "override the task's baseURL")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "compile and report, change nothing")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	addAs(cmd)
	return cmd
}

func taskCmd(env Env) *cobra.Command {
	cmd := &cobra.Command{Use: "task", Short: "List, show and share tasks"}
	list := &cobra.Command{
		Use: "list", Short: "List the tasks you can access", Args: cobra.NoArgs,
		RunE: withApp(env, func(cmd *cobra.Command, _ []string, a *app.App, user string) error {
			tasks, _, total, err := a.Store.FindTasks(cmd.Context(), duet.TaskFilter{Viewer: user, Limit: 100})
			if err != nil {
				return err
			}
			if j, _ := cmd.Flags().GetBool("json"); j {
				return printJSON(env.Stdout, tasks)
			}
			tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tNAME\tOWNER\tBASE URL")
			for _, t := range tasks {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.ID, t.Name, t.Owner, t.BaseURL)
			}
			tw.Flush()
			fmt.Fprintf(env.Stdout, "%d task(s)\n", total)
			return nil
		}),
	}
	list.Flags().Bool("json", false, "print JSON")
	show := &cobra.Command{
		Use: "show TASK", Short: "Show a task and its cases", Args: cobra.ExactArgs(1),
		RunE: withApp(env, func(cmd *cobra.Command, args []string, a *app.App, user string) error {
			t, err := a.ResolveTask(cmd.Context(), user, args[0])
			if err != nil {
				return err
			}
			cases, _, _, err := a.Store.FindCases(cmd.Context(), duet.CaseFilter{TaskID: t.ID, IncludeDrafts: true, Limit: 200})
			if err != nil {
				return err
			}
			fmt.Fprintf(env.Stdout, "%s %s\nowner %s; shared with %s\nbase URL %s\n%s\ncases:\n", t.ID, t.Name, t.Owner, orNone(strings.Join(t.SharedWith, ", ")), orNone(t.BaseURL), t.Description)
			for _, c := range cases {
				fmt.Fprintf(env.Stdout, "  %s  %s (key %s, v%d, %d steps, %s)\n", c.ID, c.Title, c.Key, c.Version, len(c.Steps), c.Status)
			}
			return printPostRun(cmd.Context(), env.Stdout, a, user, t) // postrun.go
		}),
	}
	share := &cobra.Command{
		Use: "share TASK --with USER", Short: "Share a task you own with a user", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return shareTask(cmd, env, args[0], true) },
	}
	unshare := &cobra.Command{
		Use: "unshare TASK --with USER", Short: "Stop sharing a task with a user", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return shareTask(cmd, env, args[0], false) },
	}
	for _, c := range []*cobra.Command{share, unshare} {
		c.Flags().String("with", "", "user id, or team:NAME for every member of a team")
		c.MarkFlagRequired("with")
	}
	for _, c := range []*cobra.Command{list, show, share, unshare} {
		addAs(c)
	}
	cmd.AddCommand(list, show, share, unshare, taskTransferCmd(env), taskApprovePostRunCmd(env))
	return cmd
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func shareTask(cmd *cobra.Command, env Env, ref string, share bool) error {
	a, err := openApp(cmd, env, app.Options{})
	if err != nil {
		return err
	}
	defer a.Close()
	user := asUser(cmd, a.Config)
	with, _ := cmd.Flags().GetString("with")
	start := time.Now()
	t, err := a.Store.FindTaskByName(cmd.Context(), user, ref)
	if err != nil {
		t, err = a.Store.FindTaskByID(cmd.Context(), user, ref)
	}
	if err == nil {
		if share {
			err = a.Store.ShareTask(cmd.Context(), user, t.ID, with)
		} else {
			err = a.Store.UnshareTask(cmd.Context(), user, t.ID, with)
		}
	}
	method := "task.share"
	if !share {
		method = "task.unshare"
	}
	audited(a, user, method, start, err)
	if err != nil {
		return err
	}
	verb := "shared with"
	if !share {
		verb = "no longer shared with"
	}
	fmt.Fprintf(env.Stdout, "task %s %s %s\n", t.ID, verb, with)
	return nil
}

func tokenCmd(env Env) *cobra.Command {
	cmd := &cobra.Command{Use: "token", Short: "Personal access tokens for HTTP clients (Authorization: Bearer)"}
	var user, name string
	var expires time.Duration
	create := &cobra.Command{
		Use: "create --user USER", Short: "Create a token (printed once; only its hash is stored)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !auth.ValidUserID(user) {
				return usage("--user must be a user id")
			}
			a, err := openApp(cmd, env, app.Options{})
			if err != nil {
				return err
			}
			defer a.Close()
			plain, hash := auth.NewToken()
			t := &duet.Token{UserID: user, Name: name, Hash: hash}
			if expires > 0 {
				e := time.Now().Add(expires)
				t.ExpiresAt = &e
			}
			start := time.Now()
			err = a.Store.CreateToken(cmd.Context(), t)
			audited(a, user, "token.create", start, err)
			if err != nil {
				return err
			}
			fmt.Fprintln(env.Stdout, plain)
			fmt.Fprintf(env.Stderr, "token %s for %s created; it is shown only this once\n", t.ID, user)
			return nil
		},
	}
	create.Flags().StringVar(&user, "user", "", "the user the token acts as")
	create.Flags().StringVar(&name, "name", "", "a label (e.g. laptop)")
	create.Flags().DurationVar(&expires, "expires", 0, "lifetime (e.g. 720h); default: no expiry")
	list := &cobra.Command{
		Use: "list --user USER", Short: "List a user's tokens", Args: cobra.NoArgs,
		RunE: withApp(env, func(cmd *cobra.Command, _ []string, a *app.App, _ string) error {
			toks, err := a.Store.FindTokens(cmd.Context(), user)
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tNAME\tCREATED\tEXPIRES")
			for _, t := range toks {
				exp := "never"
				if t.ExpiresAt != nil {
					exp = t.ExpiresAt.Format(time.RFC3339)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.ID, t.Name, t.CreatedAt.Format(time.RFC3339), exp)
			}
			return tw.Flush()
		}),
	}
	list.Flags().StringVar(&user, "user", "", "user id")
	revoke := &cobra.Command{
		Use: "revoke ID --user USER", Short: "Revoke a token", Args: cobra.ExactArgs(1),
		RunE: withApp(env, func(cmd *cobra.Command, args []string, a *app.App, _ string) error {
			start := time.Now()
			err := a.Store.DeleteToken(cmd.Context(), user, args[0])
			audited(a, user, "token.revoke", start, err)
			if err != nil {
				return err
			}
			fmt.Fprintf(env.Stdout, "token %s revoked\n", args[0])
			return nil
		}),
	}
	revoke.Flags().StringVar(&user, "user", "", "user id")
	for _, c := range []*cobra.Command{create, list, revoke} {
		c.MarkFlagRequired("user")
	}
	cmd.AddCommand(create, list, revoke)
	return cmd
}

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
	cmd.Flags().StringVar(&source, "source", "", "only this call source (mcp, mcp-lite, stdio, cli, api, web)")
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

func configCmd(env Env) *cobra.Command {
	var markdown bool
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Show the effective settings (secrets masked) or the settings table",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if markdown {
				fmt.Fprint(env.Stdout, config.Document())
				return nil
			}
			cfg, err := loadConfig(env)
			if err != nil {
				return err
			}
			db := cfg.DatabaseDescription()
			fmt.Fprintf(env.Stdout, "DUET_HOME=%s\ndatabase=%s\nDUET_ADDR=%s\nDUET_USER=%s\ngateway keys=%d configured\n", cfg.Home, db, cfg.Addr, cfg.User, len(cfg.GatewayAPIKeys))
			for _, o := range config.Options() {
				v := env.Getenv(o.Env)
				if v == "" {
					continue
				}
				if o.Secret {
					v = "(set)"
				}
				fmt.Fprintf(env.Stdout, "%s=%s\n", o.Env, v)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&markdown, "markdown", false, "print the table of every setting as Markdown")
	return cmd
}
