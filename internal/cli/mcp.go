package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/app"
)

func mcpCmd(env Env) *cobra.Command {
	var serveStdio func(*cobra.Command, []string) error
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve MCP over stdio (for desktop and CLI MCP clients)",
		Long: `mcp serves the tool catalog over stdin/stdout (newline-delimited JSON-RPC).
stdout carries only JSON-RPC; logs go to stderr. The caller is --as, else DUET_USER,
else the operating-system user. It needs nothing else: data lives in DUET_HOME.

Client configuration (Claude Code, VS Code, Cursor, MCP Inspector):
  {"command": "duet", "args": ["mcp"], "env": {"DUET_USER": "alice"}}

Runs started here execute in this process while it runs; runs still queued when it
exits are executed by "duet serve" or "duet worker", or by the next "duet mcp".`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			// A server for as long as its client runs: the collector
			// settings of duet serve, from the start (fewer collections
			// while the catalog and the database are set up).
			tuneGC(env.Getenv)
			return serveStdio(cmd, args)
		},
	}
	serveStdio = withApp(env, func(cmd *cobra.Command, _ []string, a *app.App, user string) error {
		ctx := cmd.Context()
		a.ReportStopRelease()
		done := make(chan error, 1)
		wctx, stopWorkers := context.WithCancel(ctx)
		go func() {
			if a.Config.Workers == 0 {
				done <- nil // API only: `duet worker` processes execute the runs
				return
			}
			done <- a.Worker.Run(wctx)
		}()
		// stdout is JSON-RPC for a program: written as it is (Main
		// escapes what commands print for people).
		stdout := env.raw
		if stdout == nil {
			stdout = env.Stdout
		}
		err := a.MCP.ServeStdio(ctx, duet.Caller{UserID: user}, env.Stdin, nopWriteCloser{stdout})
		stopWorkers()
		<-done
		if err != nil {
			return fmt.Errorf("stdio: %w", err)
		}
		return nil
	})
	addAs(cmd)
	return cmd
}
