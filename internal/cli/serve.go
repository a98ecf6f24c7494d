package cli

import (
	"context"
	"fmt"
	"net"
	"runtime/debug"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/app"
)

// serveExtension adapts `duet serve` in a test build (build tag
// conformance: conformance.go); the product binary has none.
type serveExtension interface {
	// Flags adds the extension's flags.
	Flags(*pflag.FlagSet)
	// Prepare adjusts the app's options before it opens.
	Prepare(*app.Options)
	// Opened adjusts the serve options once the app is open.
	Opened(ctx context.Context, a *app.App, so *app.ServeOptions) error
}

// serveExtensions make one extension per serve command.
var serveExtensions []func() serveExtension

func serveCmd(env Env) *cobra.Command {
	var addr string
	var workers int
	var sessions bool
	var exts []serveExtension
	for _, mk := range serveExtensions {
		exts = append(exts, mk())
	}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve MCP over HTTP (/mcp/http, MCP-Lite) and execute runs",
		Long: `serve listens on DUET_ADDR (default 127.0.0.1:8420) and serves:
  /mcp/http          MCP Streamable HTTP (stateless; 2026-07-28 and the older handshake versions)
  /mcp/tools/list    MCP-Lite REST dialect
  /mcp/tools/call    MCP-Lite REST dialect
  /                  the web console (sign in with a personal access token)
  /api/v1            the REST API (OpenAPI 3.1 at /api/v1/openapi.json)
  /healthz, /readyz  liveness and readiness
It also runs DUET_WORKERS run workers (0: none, an API-only instance beside
"duet worker" processes). On SIGTERM it stops gracefully: it stops accepting
connections and claiming runs, lets requests and steps in flight finish (runs
still in flight after a short grace go back to the queue, where any worker
resumes them), flushes the audit trail and closes the database pool.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(env)
			if err != nil {
				return err
			}
			if addr != "" {
				cfg.Addr = addr
			}
			if workers > 0 {
				cfg.Workers = workers
			}
			opts, so := app.Options{Stderr: env.Stderr, Getenv: env.Getenv}, app.ServeOptions{Sessions: sessions}
			for _, e := range exts {
				e.Prepare(&opts)
			}
			tuneGC(env.Getenv)
			a, err := app.Open(cmd.Context(), cfg, opts)
			if err != nil {
				return err
			}
			defer a.Close()
			if err := a.Preflight(cmd.Context()); err != nil {
				return err
			}
			for _, e := range exts {
				if err := e.Opened(cmd.Context(), a, &so); err != nil {
					return err
				}
			}
			ln, err := net.Listen("tcp", cfg.Addr)
			if err != nil {
				return usage("cannot listen on %s: %v (set DUET_ADDR or --addr)", cfg.Addr, err)
			}
			a.Logger.Info("duet serving", "addr", ln.Addr().String(), "console", "http://"+ln.Addr().String()+"/", "mcp", "http://"+ln.Addr().String()+"/mcp/http", "home", cfg.Home,
				"database", cfg.Engine(), "workers", cfg.Workers, "worker", a.Worker.ID(), "sessions", sessions)
			if w := exposureWarning(cfg.Addr); w != "" {
				a.Logger.Warn(w, "addr", cfg.Addr)
			}
			return a.Serve(cmd.Context(), ln, so)
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "", "listen address (overrides DUET_ADDR)")
	cmd.Flags().IntVar(&workers, "workers", 0, "runs executed at once (overrides DUET_WORKERS)")
	cmd.Flags().BoolVar(&sessions, "sessions", false, "stateful MCP sessions (single instance only; enables server-to-client requests)")
	for _, e := range exts {
		e.Flags(cmd.Flags())
	}
	return cmd
}

// exposureWarning returns the warning for a listen address that is not
// loopback-only ("" for one that is): ":8420", "0.0.0.0:8420", "[::]:8420"
// or a host's own address lets every machine that can reach it knock.
func exposureWarning(addr string) string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return ""
	}
	if host == "localhost" {
		return ""
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return ""
	}
	where := "on " + host
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		where = "on every network interface"
	}
	return "listening " + where + ": every machine that can reach it can send requests. " +
		"Each request still needs a gateway key or a personal token; expose Duet only behind the company gateway " +
		"or a firewall, and set DUET_ALLOWED_HOSTS to the name clients use (bind 127.0.0.1 for local use)"
}

func workerCmd(env Env) *cobra.Command {
	return &cobra.Command{
		Use:   "worker",
		Short: "Execute queued runs without serving HTTP",
		Long: `worker executes queued runs (DUET_WORKERS at once) without serving HTTP: add
workers for more execution capacity on the same database (several machines on
one PostgreSQL: docs/deployment.md). On SIGTERM it stops claiming, gives runs in
flight a short grace to finish their step, puts the rest back in the queue and
closes the database pool.`,
		Args: cobra.NoArgs,
		RunE: withApp(env, func(cmd *cobra.Command, _ []string, a *app.App, _ string) error {
			if err := a.Preflight(cmd.Context()); err != nil {
				return err
			}
			a.Logger.Info("duet worker started", "id", a.Worker.ID(), "workers", a.Config.Workers)
			return a.RunWorkers(cmd.Context())
		}),
	}
}

func mcpCmd(env Env) *cobra.Command {
	return &cobra.Command{
		Use:   "mcp",
		Short: "Serve MCP over stdio (for desktop and CLI MCP clients)",
		Long: `mcp serves the tool catalog over stdin/stdout (newline-delimited JSON-RPC).
stdout carries only JSON-RPC; logs go to stderr. The caller is DUET_USER (default:
the operating-system user). It needs nothing else: data lives in DUET_HOME.

Client configuration (Claude Code, VS Code, Cursor, MCP Inspector):
  {"command": "duet", "args": ["mcp"], "env": {"DUET_USER": "alice"}}

Runs started here execute in this process while it runs; runs still queued when it
exits are executed by "duet serve" or "duet worker", or by the next "duet mcp".`,
		Args: cobra.NoArgs,
		RunE: withApp(env, func(cmd *cobra.Command, _ []string, a *app.App, _ string) error {
			ctx := cmd.Context()
			done := make(chan error, 1)
			wctx, stopWorkers := context.WithCancel(ctx)
			go func() {
				if a.Config.Workers == 0 {
					done <- nil // API only: `duet worker` processes execute the runs
					return
				}
				done <- a.Worker.Run(wctx)
			}()
			err := a.MCP.ServeStdio(ctx, duet.Caller{UserID: a.Config.User}, env.Stdin, nopWriteCloser{env.Stdout})
			stopWorkers()
			<-done
			if err != nil {
				return fmt.Errorf("stdio: %w", err)
			}
			return nil
		}),
	}
}

// tuneGC sets the garbage collector for a server's load, unless GOGC or
// GOMEMLIMIT say otherwise: collect at 400% heap growth (the MCP SDK
// allocates heavily per call; measured in docs/performance.md: about a fifth
// less CPU per call than the default 100%), with a soft memory limit of
// 1 GiB so a larger heap never costs more than that.
func tuneGC(getenv func(string) string) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	if getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(1 << 30)
	}
}
