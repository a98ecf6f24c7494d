// Package cli is the duet command line: one cobra command per subcommand,
// each a thin layer over internal/app. Main returns the exit code: 0 success,
// 1 a failure (printed as "error: CODE: message"), 2 a usage or setup problem
// (one line naming what to fix).
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/app"
	"github.com/duet-test/duet/internal/config"
)

// Env is the process environment the commands use (injected for tests).
type Env struct {
	Getenv func(string) string
	Stdin  io.ReadCloser
	Stdout io.Writer
	Stderr io.Writer
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
func Main(ctx context.Context, args []string, env Env) int {
	root := newRoot(env)
	root.SetArgs(args)
	root.SetIn(env.Stdin)
	root.SetOut(env.Stdout)
	root.SetErr(env.Stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	var ee *exitError
	var ue *app.UsageError
	var ce *config.Error
	switch {
	case errors.As(err, &ee):
		if ee.err != nil && ee.err.Error() != "" {
			fmt.Fprintln(env.Stderr, "error:", ee.err.Error())
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
		return 2
	default:
		code := duet.ErrorCode(err)
		fmt.Fprintf(env.Stderr, "error: %s: %s\n", code, duet.ErrorMessage(err))
		return 1
	}
}

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
Run "duet config" to see every setting.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       app.Version,
	}
	root.AddCommand(
		serveCmd(env), workerCmd(env), mcpCmd(env),
		applyCmd(env), runCmd(env), taskCmd(env), caseCmd(env), tokenCmd(env), auditCmd(env),
		demoCmd(env), sampleCmd(env), configCmd(env),
		assetCmd(env), generateCmd(env), reportCmd(env),
		serverCmd(env), vaultCmd(env),
		deviceCmd(env),
		migrateCmd(env),
		scanCmd(env), teamCmd(env),
	)
	for _, c := range testCommands {
		root.AddCommand(c(env))
	}
	return root
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
	return app.Open(cmd.Context(), cfg, opts)
}

// asUser returns --as, or DUET_USER / the OS user.
func asUser(cmd *cobra.Command, cfg *config.Config) string {
	if f := cmd.Flag("as"); f != nil && f.Value.String() != "" {
		return f.Value.String()
	}
	return cfg.User
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
