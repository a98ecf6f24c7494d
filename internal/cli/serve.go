package cli

import (
	"context"
	"log/slog"
	"net"
	"runtime/debug"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

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
  /mcp/http          MCP Streamable HTTP, stateless: 2026-07-28, and the handshake
                     versions 2025-11-25, 2025-06-18, 2025-03-26 and 2024-11-05
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
			if cmd.Flags().Changed("workers") { // --workers 0 too: an API-only instance
				if workers < 0 || workers > 256 {
					return usage("--workers: want 0 to 256 runs at once (0: none, an API-only instance beside duet worker processes), got %d", workers)
				}
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
			defer logStopping(cmd.Context(), a.Logger, "duet serve")()
			return a.Serve(cmd.Context(), ln, so)
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "", "listen address (overrides DUET_ADDR)")
	cmd.Flags().IntVar(&workers, "workers", 0, "runs executed at once, 0 for none (overrides DUET_WORKERS)")
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

// logStopping logs, when ctx ends (SIGINT, SIGTERM), that what is stopping
// and how, then once the returned function is called, that it stopped: a
// server that goes quiet on Ctrl-C looks hung.
func logStopping(ctx context.Context, log *slog.Logger, what string) (stopped func()) {
	done := make(chan struct{})
	logged := make(chan bool, 1)
	go func() {
		select {
		case <-ctx.Done():
			log.Info(what+" stopping: finishing the requests and steps in flight; runs still running after a short grace go back to the queue",
				"cause", context.Cause(ctx).Error())
			logged <- true
		case <-done:
			logged <- false
		}
	}()
	return func() {
		close(done)
		if <-logged {
			log.Info(what + " stopped")
		}
	}
}
