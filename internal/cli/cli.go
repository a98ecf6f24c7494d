// Package cli is the duet command line: one cobra command per subcommand.
// What a person does to Duet's data goes through client.Client — the app's
// api.Service in this process, or a Duet server's REST API (connect.go);
// only the commands that run Duet itself open the app. Main returns the
// exit code: 0 success,
// 1 a failure (printed as "error: CODE: message"), 2 a usage or setup problem
// (one line naming what to fix); duet run also exits 3 on an infrastructure
// error (report.ExitCode, docs/ci.md).
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/spf13/cobra"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/app"
	"github.com/duet-test/duet/internal/config"
	"github.com/duet-test/duet/internal/escape"
)

// Env is the process environment the commands use (injected for tests).
type Env struct {
	Getenv func(string) string
	Stdin  io.ReadCloser
	Stdout io.Writer
	Stderr io.Writer

	// raw is Stdout as given to Main, for the one stream that is a
	// protocol and not text for a person: `duet mcp`'s JSON-RPC.
	raw io.Writer
}

// exitError carries an exit code through cobra.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }

func usage(format string, args ...any) error {
	return &exitError{2, fmt.Errorf(format, args...)}
}

// Main runs the command line and returns the exit code.
//
// Everything the commands print goes through one path, escape.Writer: a
// name, a description, a skill, a message or a tool's text that another
// party wrote — a colleague, a registered MCP server, a system under test —
// reaches the terminal with its control characters escaped (no title,
// clipboard or screen changes, no reordered text), whichever command prints
// it. Commands that print such text on one line of a table or a listing
// still pass it through escape.Text first, so that it cannot start a line
// of its own.
func Main(ctx context.Context, args []string, env Env) int {
	out, errOut := escape.NewWriter(env.Stdout), escape.NewWriter(env.Stderr)
	defer func() {
		out.Flush()
		errOut.Flush()
	}()
	env.raw, env.Stdout, env.Stderr = env.Stdout, out, errOut
	root := newRoot(env)
	root.SetArgs(args)
	root.SetIn(env.Stdin)
	root.SetOut(env.Stdout)
	root.SetErr(env.Stderr)
	who := &acting{}
	cmd, err := root.ExecuteContextC(context.WithValue(ctx, actingKey{}, who))
	if err == nil {
		return 0
	}
	var ee *exitError
	var ue *app.UsageError
	var ce *config.Error
	switch {
	case errors.As(err, &ee) && isDuetError(ee.err):
		// A failure with its own exit code (duet run: 2 or 3).
		printFailure(env.Stderr, ee.err, who)
		return ee.code
	case errors.As(err, &ee):
		if ee.err != nil && ee.err.Error() != "" {
			fmt.Fprintln(env.Stderr, "error:", ee.err.Error())
		}
		if ee.code == 2 {
			printUsage(env.Stderr, cmd)
		}
		return ee.code
	case errors.As(err, &ue):
		fmt.Fprintln(env.Stderr, "error:", ue.Msg)
		return 2
	case errors.As(err, &ce):
		fmt.Fprintln(env.Stderr, "error:", ce.Error())
		return 2
	case isFlagError(err):
		fmt.Fprintln(env.Stderr, "error:", err.Error())
		printUsage(env.Stderr, cmd)
		return 2
	default:
		printFailure(env.Stderr, err, who)
		return 1
	}
}

func isDuetError(err error) bool {
	var de *duet.Error
	return errors.As(err, &de)
}

// printFailure prints "error: CODE: message" and what to do about it.
func printFailure(w io.Writer, err error, who *acting) {
	code := duet.ErrorCode(err)
	fmt.Fprintf(w, "error: %s: %s\n", code, duet.ErrorMessage(err))
	var he *hintError
	switch {
	case errors.As(err, &he):
		fmt.Fprintln(w, he.hint)
	case code == duet.CodeNotFound && who.user != "":
		fmt.Fprintln(w, who.notFoundHint())
	}
}

// hintError is a failure and what to do about it: commands to paste,
// printed after the error line.
type hintError struct {
	err  error
	hint string
}

func (e *hintError) Error() string { return e.err.Error() }
func (e *hintError) Unwrap() error { return e.err }

// printUsage ends a usage error with the command's usage line and where
// its help is.
func printUsage(w io.Writer, cmd *cobra.Command) {
	switch {
	case cmd == nil:
	case !cmd.HasParent():
		fmt.Fprintf(w, "run `%s --help` for the list of commands\n", cmd.CommandPath())
	case cmd.HasSubCommands() && cmd.Use == cmd.Name(): // a group of commands
		var names []string
		for _, c := range cmd.Commands() {
			if c.IsAvailableCommand() {
				names = append(names, c.Name())
			}
		}
		fmt.Fprintf(w, "usage: %s COMMAND (%s)\nrun `%s --help` for more\n", cmd.CommandPath(), strings.Join(names, ", "), cmd.CommandPath())
	default:
		fmt.Fprintf(w, "usage: %s\nrun `%s --help` for more\n", cmd.UseLine(), cmd.CommandPath())
	}
}

// actingKey keys the *acting of one command line in its context.
type actingKey struct{}

// acting is the user a command acts as, and where that came from: "--as",
// "DUET_USER" or "the operating-system user" — or, against a Duet server
// (remote), the token. asUser and dialServer record it, so that a
// NOT_FOUND can say whom the command looked as, and a printed command
// needs --as only when pasting it would act as someone else.
type acting struct {
	user, from string
	remote     bool
	// byDefault: user is whom a command without --as acts as here anyway
	// (the operating-system user; DUET_USER may not be set where the
	// command is pasted).
	byDefault bool
}

func (a *acting) notFoundHint() string {
	switch {
	case a.remote:
		return fmt.Sprintf("note: looked as %s (%s): only what %s owns or was shared with is visible", a.user, a.from, a.user)
	case a.from == "--as":
		return fmt.Sprintf("note: looked as %s (--as): only what %s owns or was shared with is visible", a.user, a.user)
	}
	return fmt.Sprintf("note: looked as %s (%s); to act as another user, add --as USER or set DUET_USER", a.user, a.from)
}

// isFlagError reports whether err is one of cobra's usage errors (unknown
// command, missing required flag) that reach Main unwrapped.
func isFlagError(err error) bool {
	s := err.Error()
	for _, p := range []string{"unknown flag", "unknown command", "unknown shorthand", "required flag", "accepts ", "requires at least", "invalid argument", "flag needs an argument"} {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}

func newRoot(env Env) *cobra.Command {
	root := &cobra.Command{
		Use:   "duet",
		Short: "Duet: an AI testing platform that is both an MCP server and an MCP client",
		Long: `Duet runs test cases for web products (HTTP, browser and MCP tool steps)
and exposes its tasks, cases and runs as a governed MCP tool catalog.

Data lives in DUET_HOME (default $XDG_DATA_HOME/duet or ~/.local/share/duet).
With --server URL (or DUET_SERVER_URL) the same commands act on a Duet server
instead, over its REST API, as the user of a personal token (duet login URL).
Run "duet config" to see every setting.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       app.Version,
	}
	root.AddCommand(
		serveCmd(env), workerCmd(env), mcpCmd(env),
		applyCmd(env), lintCmd(env), runCmd(env), taskCmd(env), caseCmd(env), tokenCmd(env), auditCmd(env),
		demoCmd(env), sampleCmd(env), configCmd(env),
		assetCmd(env), generateCmd(env), reportCmd(env), gcCmd(env), baselineCmd(env),
		serverCmd(env), vaultCmd(env),
		deviceCmd(env),
		migrateCmd(env),
		scanCmd(env), teamCmd(env),
		scheduleCmd(env), webhookCmd(env),
		schemaCmd(env),
		loginCmd(env), logoutCmd(env),
	)
	root.PersistentFlags().String("server", "", "act on the Duet server at this URL (its REST API, with DUET_TOKEN or the token of duet login URL) instead of this machine's DUET_HOME; default DUET_SERVER_URL")
	for _, c := range testCommands {
		root.AddCommand(c(env))
	}
	for _, path := range readOnlyCommands {
		c, args, err := root.Find(strings.Fields(path))
		if err != nil || len(args) > 0 {
			continue // TestReadOnlyCommandsExist
		}
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		c.Annotations[readOnlyAnnotation] = "true"
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usage("%s", err) })
	strictUsage(root)
	return root
}

// readOnlyCommands only read the database: they work on a DUET_HOME the
// user cannot write (opened read-only: app.Options.ReadOnly).
var readOnlyCommands = []string{
	"task list", "task show", "run list", "run show", "report", "audit",
	"server list", "server show", "server invocations", "token list",
	"case show", "case approvals", "asset list", "asset show", "generate list", "baseline list",
	"schedule list", "task check", "server diff",
}

const readOnlyAnnotation = "duet.readOnly"

// strictUsage makes every usage mistake below c an exit-2 error that names
// what is wrong: an unknown subcommand of a command that only groups others
// (cobra would print the help and exit 0), and a wrong number of
// arguments (named after the command's usage line: "missing TASK").
func strictUsage(c *cobra.Command) {
	for _, sub := range c.Commands() {
		strictUsage(sub)
	}
	if c.HasParent() && c.HasSubCommands() && !c.Runnable() {
		c.Args = cobra.ArbitraryArgs
		c.RunE = func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return cmd.Help()
			}
			msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
			if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
				msg += "; did you mean " + strings.Join(s, " or ") + "?"
			}
			return usage("%s", msg)
		}
		return
	}
	if check := c.Args; check != nil {
		c.Args = func(cmd *cobra.Command, args []string) error {
			if err := check(cmd, args); err != nil {
				return usage("%s", argsError(cmd, args, err))
			}
			return nil
		}
	}
}

// optional matches the optional parts of a usage line: "[--args JSON]".
var optional = regexp.MustCompile(`\[[^\]]*\]`)

// argsError says what is wrong with the arguments of cmd by the
// placeholders of its usage line ("run TASK": "missing TASK").
func argsError(cmd *cobra.Command, args []string, err error) string {
	var want []string
	fields := strings.Fields(optional.ReplaceAllString(cmd.Use, ""))
	for i := 1; i < len(fields); i++ {
		switch f := fields[i]; {
		case strings.HasPrefix(f, "-"):
			i++ // a flag and its value
		case f == strings.ToUpper(f):
			want = append(want, f)
		}
	}
	switch {
	case len(want) == 0 && len(args) > 0:
		return fmt.Sprintf("%s takes no arguments, got %q", cmd.CommandPath(), args[0])
	case len(args) < len(want):
		return fmt.Sprintf("%s: missing %s", cmd.CommandPath(), strings.Join(want[len(args):], " "))
	case len(want) > 0 && len(args) > len(want):
		return fmt.Sprintf("%s takes %s, got an extra argument %q (quote arguments that contain spaces)", cmd.CommandPath(), strings.Join(want, " "), args[len(want)])
	}
	return err.Error()
}

// testCommands are added by test builds only (build tag conformance:
// conformance.go); the product binary has none.
var testCommands []func(Env) *cobra.Command

// loadConfig reads the configuration from the environment.
func loadConfig(env Env) (*config.Config, error) {
	return config.Load(env.Getenv)
}

// openApp loads the configuration and opens the app. One-shot commands log
// only warnings unless DUET_LOG_LEVEL says otherwise.
func openApp(cmd *cobra.Command, env Env, opts app.Options) (*app.App, error) {
	if f := cmd.Flag("server"); f != nil && f.Changed {
		return nil, usage("%s runs Duet on this machine: --server is for the commands that act on a Duet server", cmd.CommandPath())
	}
	cfg, err := loadConfig(env)
	if err != nil {
		return nil, err
	}
	if env.Getenv("DUET_LOG_LEVEL") == "" && cmd.Name() != "worker" {
		cfg.LogLevel = "warn"
	}
	if opts.Stderr == nil {
		opts.Stderr = env.Stderr
	}
	if opts.Getenv == nil {
		opts.Getenv = env.Getenv
	}
	if cmd.Annotations[readOnlyAnnotation] != "" {
		opts.ReadOnly = true
	}
	return app.Open(cmd.Context(), cfg, opts)
}

// asUser returns the user a command acts as on this machine — the one
// rule of every command: --as, else DUET_USER, else the operating-system
// user — and records it as the command's acting user.
func asUser(cmd *cobra.Command, cfg *config.Config) string {
	user, from := cfg.User, cfg.UserFrom
	if f := cmd.Flag("as"); f != nil && f.Value.String() != "" {
		user, from = f.Value.String(), "--as"
	}
	if a, ok := cmd.Context().Value(actingKey{}).(*acting); ok {
		a.user, a.from, a.remote = user, from, false
		a.byDefault = user == cfg.User && cfg.UserFrom != "DUET_USER"
	}
	return user
}

// asFlag is what a command printed for pasting needs to act as the same
// user: "--as USER ", unless a command without it acts as that user anyway
// (the operating-system user here; the token's user against a server).
func asFlag(cmd *cobra.Command) string {
	a, ok := cmd.Context().Value(actingKey{}).(*acting)
	if !ok || a.user == "" || a.remote || a.byDefault {
		return ""
	}
	return "--as " + a.user + " "
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// noneVisible follows an empty listing with whom it was listed as, when
// that is not what the user asked for explicitly: the commonest reason for
// an empty list is acting as the operating-system user by mistake.
func noneVisible(cmd *cobra.Command, env Env) {
	a, ok := cmd.Context().Value(actingKey{}).(*acting)
	switch {
	case !ok || a.from == "--as":
	case a.remote:
		fmt.Fprintf(env.Stderr, "note: listed as %s (%s)\n", a.user, a.from)
	default:
		fmt.Fprintf(env.Stderr, "note: listed as %s (%s); to act as another user, add --as USER or set DUET_USER\n", a.user, a.from)
	}
}
