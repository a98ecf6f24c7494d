// Package app wires Duet together: configuration → store → catalog →
// transports and workers. It holds no logic of its own.
package app

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/sync/errgroup"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/api"
	"github.com/duet-test/duet/internal/artifact"
	"github.com/duet-test/duet/internal/audit"
	"github.com/duet-test/duet/internal/auth"
	"github.com/duet-test/duet/internal/browser"
	"github.com/duet-test/duet/internal/browser/android"
	"github.com/duet-test/duet/internal/browser/devices"
	"github.com/duet-test/duet/internal/catalog"
	"github.com/duet-test/duet/internal/compiler"
	"github.com/duet-test/duet/internal/config"
	"github.com/duet-test/duet/internal/engine"
	"github.com/duet-test/duet/internal/httpapi"
	"github.com/duet-test/duet/internal/mcpclient"
	"github.com/duet-test/duet/internal/mcpserver"
	"github.com/duet-test/duet/internal/netguard"
	"github.com/duet-test/duet/internal/oauthserver"
	"github.com/duet-test/duet/internal/recorder"
	"github.com/duet-test/duet/internal/report"
	"github.com/duet-test/duet/internal/schedule"
	"github.com/duet-test/duet/internal/secret"
	"github.com/duet-test/duet/internal/telemetry"
	"github.com/duet-test/duet/internal/trace"
	"github.com/duet-test/duet/internal/vault"
	"github.com/duet-test/duet/internal/webhook"
	"github.com/duet-test/duet/internal/webui"
)

// Version is the build's version, set with -ldflags "-X ...app.Version=v1.2.3".
var Version = "dev"

// UsageError is a problem the user fixes by changing a setting or an
// argument: the command prints it on one line and exits 2.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// Options tune Open beyond the configuration.
type Options struct {
	Stderr io.Writer // logs; nil means os.Stderr
	// ExtraTools are mounted beside the product catalog (conformance
	// fixtures only).
	ExtraTools []*catalog.Tool
	// MCP, if set, adds features to the MCP server beside the tools
	// (resources, prompts, completion, subscriptions; conformance fixtures
	// only): see mcpserver.Options.Setup and ServerOptions.
	MCP *mcpserver.Options
	// OnEvent receives run progress from this process's engine.
	OnEvent func(engine.Event)
	// Getenv reads DUET_MASTER_KEY and friends; nil means os.Getenv.
	Getenv func(string) string
	// ReadOnly says the command only reads: an existing SQLite database it
	// cannot write (a read-only DUET_HOME) is opened read-only.
	ReadOnly bool
	// Telemetry replaces the metrics and tracing the configuration asks
	// for (tests: an in-memory span exporter).
	Telemetry *telemetry.Telemetry
	// PostgresTracer, if set, sees every statement sent to PostgreSQL
	// (postgres.RoundTrips counts them; the benchmark and its test).
	PostgresTracer pgx.QueryTracer
}

// App is a running Duet.
type App struct {
	Config  *config.Config
	Store   duet.Store // SQLite or PostgreSQL: the app never names the driver
	Catalog *catalog.Catalog
	MCP     *mcpserver.Server
	Audit   *audit.Writer
	Engine  *engine.Engine
	Worker  *engine.Worker
	Auth    *auth.Authenticator
	Logger  *slog.Logger
	Agent   AgentDeps // the test agent's MCP side and browser (agent.go)
	// Browsers is the pool of Chromium processes (or of connections to
	// DUET_BROWSER_URL) shared by every run of this process; Android holds
	// and drives phones; Artifacts keeps their screenshots.
	Browsers  *browser.Pool
	Android   *android.Driver
	Artifacts *artifact.Store
	// MCPClient is the one exit for calls to registered MCP servers.
	MCPClient *mcpclient.Client
	// API is every operation of the REST API and the web console.
	API *api.Service
	// Recorder holds the console's live recording sessions (recorder.go).
	Recorder *recorder.Manager
	// Scheduler fires the schedules (serve and worker run it).
	Scheduler *schedule.Scheduler
	// Webhooks sends the tasks' webhook deliveries (serve and worker run
	// it); CatalogSync syncs the registered MCP servers' catalogs on a
	// timer (DUET_MCP_SYNC_INTERVAL).
	Webhooks    *webhook.Deliverer
	CatalogSync *CatalogSyncer
	// Telemetry is the metrics registry and the tracer (telemetry.go).
	Telemetry *telemetry.Telemetry
	// OAuthIssuer verifies the company identity provider's tokens, and
	// OAuthServer is Duet's own authorization server (oauth.go); nil when
	// off.
	// Secrets are the users' named secrets (${secrets.NAME}), sealed under
	// the master key.
	Secrets *secret.Vault

	OAuthIssuer *auth.Verifier
	OAuthServer *oauthserver.Server

	resourceMetadata *oauthex.ProtectedResourceMetadata

	devices     func(string) error  // device preset check; nil accepts any
	getenv      func(string) string // Options.Getenv: the DUET_LLM_* of the agent
	self        *netguard.Self      // the addresses this process listens on
	browsers    *Browsers           // the engine's browser driver
	loadKeyring func() (*vault.Keyring, error)
	preflighted bool
	stopRelease stopRelease // what DUET_STOP_TOOL_USERS' teams were bound to at Open
}

// NewLogger returns the slog logger the configuration asks for, on w.
func NewLogger(cfg *config.Config, w io.Writer) *slog.Logger {
	var lvl slog.Level
	lvl.UnmarshalText([]byte(cfg.LogLevel))
	ho := &slog.HandlerOptions{Level: lvl}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, ho))
	}
	return slog.New(slog.NewTextHandler(w, ho))
}

// Open opens the store and builds every component. A database that cannot
// be opened is a *UsageError naming the path and the variables to set.
func Open(ctx context.Context, cfg *config.Config, opts Options) (*App, error) {
	if opts.Stderr == nil {
		opts.Stderr = os.Stderr
	}
	log := NewLogger(cfg, opts.Stderr)
	db, err := openStore(ctx, cfg, opts.ReadOnly, opts.PostgresTracer)
	if err != nil {
		return nil, err
	}
	a := &App{Config: cfg, Logger: log, devices: devices.Valid, self: &netguard.Self{}, getenv: opts.Getenv}
	if a.getenv == nil {
		a.getenv = os.Getenv
	}
	a.Telemetry = opts.Telemetry
	if a.Telemetry == nil {
		if a.Telemetry, err = NewTelemetry(cfg); err != nil {
			db.Close()
			return nil, err
		}
	}
	db = a.Telemetry.Store(db) // spans per store call; the run lifecycle as metrics and spans
	a.Store = db
	a.self.Add(cfg.Addr)
	a.self.AddURL(cfg.PublicURL)
	guard := NetPolicy(cfg, a.self) // http steps and browser navigations
	a.Audit = audit.NewWriter(db, 0, log)
	a.Browsers = NewBrowserPool(cfg, &guard, log)
	a.Android = NewAndroid(cfg, db, &guard, log)
	a.browsers = &Browsers{&devices.Router{Default: a.Browsers, Android: a.Android, Guard: &guard, Logger: log}}
	a.Recorder = a.newRecorder()
	a.Artifacts = NewArtifactStore(cfg)
	a.initMCPClient(opts)
	a.Secrets = secret.New(db, a.loadKeyring)
	stepClient := func(allow netguard.Allowance) *http.Client { // one per case, its guard allowing the task's base URL
		c := guard.Allowing(allow).Client()
		c.Transport = a.Telemetry.Transport(c.Transport, cfg.InTraceDomain) // http steps carry the run's traceparent into the trace domain
		return c
	}
	aiSteps, err := a.aiSteps(opts, db)
	if err != nil {
		db.Close()
		return nil, err
	}
	a.Engine = engine.New(db, engine.Options{
		StepTimeout: cfg.StepTimeout, CaseTimeout: cfg.CaseTimeout, Parallel: cfg.Parallel, MaxParallel: cfg.MaxParallel, MaxCallDepth: cfg.MaxCallDepth,
		Browser: a.browsers, Artifacts: a.Artifacts, HTTPClient: stepClient, AI: aiSteps,
		OnEvent: opts.OnEvent, Logger: log, Invoker: a.Agent.Invoker, Secrets: a.Secrets, Sessions: secret.NewSessions(db, a.Secrets),
		Trace: trace.Mode(cfg.Trace), TraceMaxBytes: int64(cfg.TraceMaxBytes), TraceReplay: trace.Replay(cfg.TraceReplay),
	})
	a.Worker = engine.NewWorker(db, a.Engine, engine.WorkerOptions{Concurrency: cfg.Workers, Lease: cfg.RunLease, Logger: log})
	a.Catalog = catalog.New(db, catalog.Options{
		Limits: catalog.Limits{
			MaxConcurrent: cfg.MaxConcurrent, MaxPerCaller: cfg.MaxPerCaller, Timeout: cfg.CallTimeout,
			MaxArgBytes: cfg.MaxArgBytes, MaxResultBytes: cfg.MaxResultBytes, IdempotencyTTL: cfg.IdempotencyTTL,
			MaxQueuedRuns: cfg.MaxQueuedRuns, MaxRunsPerMinute: cfg.MaxRunsPerMinute, MaxRetries: cfg.MaxRetries,
		},
		Auditor:    a.Telemetry.Auditor(a.Audit),
		Observe:    a.Telemetry.Observe,
		RunCreated: func(string) { a.Worker.Notify() },
		Extra:      opts.ExtraTools,
		Logger:     log,

		ValidDevice: a.validDevice,
		StopTool:    catalog.StopToolOptions{Users: cfg.StopToolUsers, ApprovalTTL: cfg.StopApprovalTTL},
		// Every instance with the same master key seals and opens the
		// request state of multi-round calls alike.
		StateKey: func() ([]byte, error) {
			kr, err := a.loadKeyring()
			if err != nil {
				return nil, err
			}
			return kr.DeriveKey("mcp request state"), nil
		},
		Review: func(ctx context.Context, executor string, task *duet.Task, c *duet.Case) (*catalog.CaseReview, error) {
			r, err := engine.ReviewCase(ctx, db, executor, task, c)
			if err != nil {
				return nil, err
			}
			return &catalog.CaseReview{Calls: r.Calls, Destinations: r.Destinations, DestinationsHash: r.DestinationsHash}, nil
		},
	})
	mo := mcpserver.Options{}
	if opts.MCP != nil {
		mo = *opts.MCP
	}
	extra, reports := mo.Setup, report.MCPResources(db, a.Artifacts)
	mo.Setup = func(s *mcp.Server) {
		reports(s)
		if extra != nil {
			extra(s)
		}
	}
	mo.Version, mo.Logger, mo.Prompts, mo.Codes = Version, log, a.agentPrompts(), httpapi.Codes
	if !cfg.MCPFastPath {
		mo.FastPath = mcpserver.FastPathOff // DUET_MCP_FAST_PATH=off: the go-sdk answers every request
	}
	a.MCP = mcpserver.New(a.Catalog, mo)
	a.Auth = auth.New(db, cfg.GatewayAPIKeys, cfg.GatewayFixedUser)
	a.Auth.EnableConsole(auth.ConsoleOptions{Sessions: db, SessionTTL: cfg.SessionTTL, SSOUserHeader: cfg.SSOUserHeader, SSOSecret: cfg.SSOSecret})
	a.Scheduler = schedule.New(schedule.Options{Store: db, Start: a.Catalog.StartScheduled, Logger: log})
	a.Webhooks = webhook.New(webhook.Options{Store: db, Keyring: a.loadKeyring, Client: guard.Client(), PublicURL: cfg.PublicURL, Logger: log,
		Attempts: cfg.WebhookAttempts, Backoff: cfg.WebhookBackoff, BackoffMax: cfg.WebhookBackoffMax})
	a.CatalogSync = newCatalogSyncer(a, cfg.MCPSyncInterval)
	a.API = api.New(api.Deps{
		Catalog: a.Catalog, Store: db, MCP: a.MCPClient, Artifacts: a.Artifacts, Admins: cfg.Admins, Tokens: auth.NewToken,
		ScheduleChanged: a.Scheduler.Wake,
		Secrets:         a.Secrets,
		Keyring:         a.loadKeyring, CheckURL: guard.CheckURL, DeliveryMade: a.Webhooks.Wake,
		NeedsApproval: func(ctx context.Context, executor, author string, m *duet.MCPCallStep) (bool, error) {
			return engine.NeedsApproval(ctx, db, executor, author, m)
		},
		Devices:  a.devicesOfThisMachine,
		Generate: a.generate,
		Compile: func(ctx context.Context, user string, src []byte, name string, files fs.FS) (*duet.Suite, error) {
			opts := a.CompilerOptions(ctx, user)
			opts.Files = files // upload steps read their files there
			return compiler.CompileSuite(ctx, src, name, opts)
		},
		CompileCase: func(ctx context.Context, user string, src []byte, task *duet.Task, testIDAttr string) (*duet.Case, error) {
			opts := a.CompilerOptions(ctx, user)
			opts.TestIDAttribute = testIDAttr
			return compiler.CompileCase(ctx, src, task, opts)
		},
	})
	a.initOAuth(&guard)
	a.watch()
	a.bindStopRelease(ctx)
	return a, nil
}

// stopRelease is what the teams DUET_STOP_TOOL_USERS names were bound to.
type stopRelease struct {
	bound   map[string]string // team name → id
	missing []string          // named teams that did not exist
	err     error
}

// bindStopRelease binds the teams DUET_STOP_TOOL_USERS names to the teams
// of those names that exist when Duet starts (catalog.BindStopRelease): a
// team made later, or deleted and re-made by someone else, grants nothing
// until a restart. ReportStopRelease logs the outcome.
func (a *App) bindStopRelease(ctx context.Context) {
	if !slices.ContainsFunc(a.Config.StopToolUsers, func(u string) bool { _, ok := duet.TeamOf(u); return ok }) {
		return
	}
	bound, missing, err := a.Catalog.BindStopRelease(ctx)
	a.stopRelease = stopRelease{bound: bound, missing: missing, err: err}
}

// ReportStopRelease logs, when a server starts (duet serve, duet mcp), the
// teams stop_test_run is released to, and warns of each team
// DUET_STOP_TOOL_USERS names that does not exist: it grants nothing (were it
// created later, by anyone, it would not be the team the configuration
// meant) until Duet restarts after it is created.
func (a *App) ReportStopRelease() {
	r := a.stopRelease
	if r.err != nil {
		a.Logger.Warn("DUET_STOP_TOOL_USERS: cannot read the teams it names; they grant nothing until a restart", "err", r.err)
	}
	for _, name := range slices.Sorted(maps.Keys(r.bound)) {
		a.Logger.Info("stop_test_run is released to the members of team "+name, "team", name, "teamId", r.bound[name])
	}
	for _, name := range r.missing {
		a.Logger.Warn("DUET_STOP_TOOL_USERS names team "+name+", which does not exist: it grants nothing. Create the team, check who owns it, and restart Duet; "+
			"a team is bound when Duet starts, so one someone else creates later gets nothing", "team", name)
	}
}

// Close flushes the audit trail, stops the browser processes and closes the
// store.
func (a *App) Close() {
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	a.Telemetry.Shutdown(sctx) // the spans still buffered
	cancel()
	a.MCPClient.Close()
	a.Audit.Close()
	if a.Recorder != nil {
		a.Recorder.Close()
	}
	a.browsers.Close()
	a.Browsers.Close()
	a.Store.Close()
}

// ServeOptions tune Serve.
type ServeOptions struct {
	Sessions bool
	Streams  func(tool string) bool
	// Wrap, if set, wraps the HTTP handler (test builds only: the
	// conformance fixtures give credential-less requests a test token).
	Wrap func(http.Handler) http.Handler
	// Ready is closed (if non-nil) once the listener accepts connections.
	Ready chan<- string
}

// Handler returns the HTTP handler of the app.
func (a *App) Handler(o ServeOptions) http.Handler {
	hosts := append([]string{}, a.Config.AllowedHosts...)
	if h, _, err := net.SplitHostPort(a.Config.Addr); err == nil && h != "" && h != "0.0.0.0" && h != "::" {
		hosts = append(hosts, h)
	}
	origins := a.Config.AllowedOrigins
	if pu := a.Config.PublicURL; pu != "" {
		// Duet's own public address: its OAuth pages (the consent form
		// posts to Duet from Duet's own origin) and its clients reach it
		// by that name.
		if u, err := url.Parse(pu); err == nil {
			hosts = append(hosts, u.Host)
		}
		origins = append(slices.Clone(origins), pu)
	}
	h := httpapi.New(httpapi.Options{
		Catalog: a.Catalog, MCP: a.MCP, Auth: a.Auth,
		AllowedHosts: hosts, AllowedOrigins: origins,
		MaxBodyBytes: a.Config.MaxBodyBytes, Sessions: o.Sessions, Streams: o.Streams,
		Ready: a.Store.Ping, Logger: a.Logger,
		API:              api.NewHandler(a.API, api.Options{MaxBodyBytes: a.Config.MaxBodyBytes, Codes: httpapi.Codes, Version: Version}),
		Console:          webui.New(webui.Options{Service: a.API, Auth: a.Auth, Recorder: a.Recorder, Codes: httpapi.Codes, MaxBodyBytes: a.Config.MaxBodyBytes, Logger: a.Logger, Version: Version}),
		ResourceMetadata: a.resourceMetadata, AuthServer: a.authServerHandler(),
		Metrics: a.metricsOnMainPort(), MetricsToken: a.Config.MetricsToken,
		Middleware:   []func(http.Handler) http.Handler{a.Telemetry.Middleware},
		MaxCallDepth: a.Config.MaxCallDepth,
	})
	if o.Wrap != nil {
		h = o.Wrap(h)
	}
	return h
}

// Serve serves HTTP on ln and runs the workers and the maintenance loop until
// ctx ends, then stops gracefully: in-flight HTTP requests finish, runs in
// flight are put back in the queue for the next start.
func (a *App) Serve(ctx context.Context, ln net.Listener, o ServeOptions) error {
	if err := a.Preflight(ctx); err != nil {
		return err
	}
	a.ReportStopRelease()
	srv := httpapi.NewServer(a.Handler(o), httpapi.ServerOptions{MaxConns: a.Config.MaxConnections, MaxUnauthenticated: a.Config.MaxUnauthenticated})
	g, gctx := errgroup.WithContext(ctx)
	a.self.Add(ln.Addr().String()) // tests may not call Duet's own API
	g.Go(func() error {
		if o.Ready != nil {
			o.Ready <- ln.Addr().String()
		}
		err := srv.Serve(ln)
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return err
	})
	g.Go(func() error {
		<-gctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return srv.Shutdown(sctx)
	})
	if err := a.serveMetrics(gctx, g); err != nil {
		return err
	}
	if a.Config.Workers > 0 {
		g.Go(func() error { return a.Worker.Run(gctx) })
	}
	a.runBackground(gctx, g)
	return g.Wait()
}

// runBackground starts, in g, what every instance runs beside serving and
// executing: maintenance, the scheduler, webhook delivery and catalog sync.
func (a *App) runBackground(gctx context.Context, g *errgroup.Group) {
	g.Go(func() error { a.maintain(gctx); return nil })
	g.Go(func() error { a.Scheduler.Run(gctx); return nil })
	g.Go(func() error { a.Webhooks.Run(gctx); return nil })
	g.Go(func() error { a.CatalogSync.Run(gctx); return nil })
}

// RunWorkers runs only the workers (duet worker) until ctx ends.
func (a *App) RunWorkers(ctx context.Context) error {
	if a.Config.Workers < 1 {
		return &UsageError{"DUET_WORKERS=0: a worker with no run slots would execute nothing; set DUET_WORKERS to 1 or more"}
	}
	if err := a.Preflight(ctx); err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	if err := a.serveMetrics(gctx, g); err != nil {
		return err
	}
	g.Go(func() error { return a.Worker.Run(gctx) })
	a.runBackground(gctx, g)
	return g.Wait()
}

// Preflight checks, before an instance starts serving or executing, what
// must be the same on every instance of a database: the master key opens
// the stored credentials. Serve and RunWorkers run it (once per App) if the
// caller did not. A failure is a *UsageError (exit 2, one line).
func (a *App) Preflight(ctx context.Context) error {
	if a.preflighted {
		return nil
	}
	if err := a.CheckMasterKey(ctx); err != nil {
		if duet.ErrorCode(err) == duet.CodeUnavailable {
			return err
		}
		return &UsageError{duet.ErrorMessage(err)}
	}
	a.preflighted = true
	return nil
}

// maintain deletes expired idempotency records and artifacts every few
// minutes.
func (a *App) maintain(ctx context.Context) {
	t := time.NewTicker(5 * time.Minute)
	defer t.Stop()
	for {
		if n, err := a.Store.DeleteExpiredIdempotency(ctx, time.Now()); err != nil && ctx.Err() == nil {
			a.Logger.WarnContext(ctx, "deleting expired idempotency keys", "err", err)
		} else if n > 0 {
			a.Logger.InfoContext(ctx, "deleted expired idempotency keys", "count", n)
		}
		if _, err := a.Store.DeleteExpiredSessions(ctx, time.Now()); err != nil && ctx.Err() == nil {
			a.Logger.WarnContext(ctx, "deleting expired console sessions", "err", err)
		}
		if n, err := a.Store.DeleteExpiredOAuth(ctx, time.Now()); err != nil && ctx.Err() == nil {
			a.Logger.WarnContext(ctx, "deleting expired OAuth tokens", "err", err)
		} else if n > 0 {
			a.Logger.InfoContext(ctx, "deleted expired OAuth tokens", "count", n)
		}
		if n, err := a.Artifacts.Cleanup(ctx, time.Now()); err != nil && ctx.Err() == nil {
			a.Logger.WarnContext(ctx, "deleting expired artifacts", "err", err)
		} else if n > 0 {
			a.Logger.InfoContext(ctx, "deleted expired artifacts", "runs", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// ResolveTask finds a task the user can see by id or by name (their own
// first, then the one shared with them): catalog.FindTask. Returns
// NOT_FOUND, INVALID_ARGUMENT (several shared tasks have the name).
func (a *App) ResolveTask(ctx context.Context, user, ref string) (*duet.Task, error) {
	return catalog.FindTask(ctx, a.Store, user, ref)
}
