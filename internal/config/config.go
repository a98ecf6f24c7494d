// Package config reads Duet's settings from DUET_* environment variables
// (and *_FILE variants for secrets), applies defaults and validates them.
// There are no globals: Load takes the environment as a function, and the
// table of options below is the documentation (docs/configuration.md is
// generated from it by `duet config --markdown`).
package config

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/duet-test/duet"
)

// Config is every setting of a Duet process.
type Config struct {
	Home        string // DUET_HOME
	DatabaseURL string // DUET_DATABASE_URL (a secret: it may hold a password)
	ArtifactDir string // DUET_ARTIFACT_DIR; "" means DUET_HOME/artifacts
	Addr        string // DUET_ADDR
	User        string // DUET_USER: the identity of stdio callers and of CLI commands without --as
	UserFrom    string // where User came from: "DUET_USER" or "the operating-system user"

	// The Duet server CLI commands act on (remote mode), and the personal
	// access token they authenticate with there.
	ServerURL string // DUET_SERVER_URL; "" is this machine's DUET_HOME
	Token     string // DUET_TOKEN (secret; also DUET_TOKEN_FILE)
	LogLevel  string
	LogFormat string

	Workers     int           // runs executed at once by `duet serve`
	Parallel    int           // cases executed at once within a run
	MaxParallel int           // the most a task's parallel: may ask
	MaxRetries  int           // the most retries a case or a run may have
	StepTimeout time.Duration // default per-step limit
	CaseTimeout time.Duration // default per-case limit

	GatewayAPIKeys   []string // secrets; never printed
	GatewayFixedUser string   // identity for gateway calls without SSO-Emp-Id (local debugging)
	AllowedHosts     []string // Host header values accepted by the HTTP endpoints
	AllowedOrigins   []string // Origin header values accepted by the HTTP endpoints

	MaxConcurrent  int
	MaxConnections int // open HTTP connections
	MaxPerCaller   int
	CallTimeout    time.Duration
	MaxBodyBytes   int64
	MaxArgBytes    int
	MaxResultBytes int
	IdempotencyTTL time.Duration
	MaxQueuedRuns  int  // runs one user may have waiting in the queue
	MCPFastPath    bool // DUET_MCP_FAST_PATH: the MCP server's fast paths answer plain tools/call requests

	StopToolUsers   []string      // who may see and call stop_test_run: user ids, team:NAME, *
	StopApprovalTTL time.Duration // how long a stop request waits for the run owner's approval

	ChromePath        string
	Browsers          int
	BrowserProcesses  int // 0: min(Browsers, Parallel, CPUs)
	ArtifactRetention time.Duration
	Trace             string // DUET_TRACE: the default trace mode (trace.Mode)
	TraceReplay       string // DUET_TRACE_REPLAY: which recordings run the screencast (trace.Replay)
	TraceMaxBytes     int    // DUET_TRACE_MAX_BYTES: the bound of one case's trace
	BrowserURL        string // DevTools endpoint to attach to instead of starting Chromium; may hold a token
	BrowserNoSandbox  bool   // DUET_BROWSER_SANDBOX=off: Chromium without its sandbox
	// The console's recorder (internal/recorder): live sessions per user,
	// and how long one with no input stays open.
	RecorderSessionsPerUser int
	RecorderIdleTimeout     time.Duration
	ADBPath                 string

	NetAllow []netip.Prefix // DUET_NET_ALLOW: destinations the network guard allows anyway

	MCPAllowPrivate  bool
	MCPAllowLoopback bool
	MCPCallTimeout   time.Duration

	// TraceDomain lists the hosts (a name, *.suffix, or *) inside the
	// operator's trace domain: only requests to them (registered MCP
	// servers, http steps) carry a W3C traceparent. Empty: none do.
	TraceDomain []string

	RunLease time.Duration // how long a worker holds a run without renewing it
	// Webhooks (docs/webhooks.md): attempts of a delivery, the first
	// retry's delay (doubled at each attempt) and its cap.
	WebhookAttempts   int
	WebhookBackoff    time.Duration
	WebhookBackoffMax time.Duration
	// MCPSyncInterval is how often each registered MCP server's catalog
	// is synced again (0: never on a timer).
	MCPSyncInterval time.Duration

	// Loops and slow clients (docs/governance.md, "Loop budgets" and
	// "Connections").
	MaxUnauthenticated int // requests of one address reading bodies before presenting credentials, at once
	MaxRunsPerMinute   int // runs one user may start in a minute, all instances together
	MaxCallDepth       int // deepest call in a chain of Duet calls (Duet-Call-Depth)

	// The web console.
	Admins        []string      // DUET_ADMINS: users who see everyone's audit and invocation records
	SSOUserHeader string        // DUET_SSO_USER_HEADER: the header an SSO proxy sets to the signed-in user
	SSOSecret     string        // DUET_SSO_SECRET: the shared secret that proxy sends (a secret)
	SessionTTL    time.Duration // DUET_SESSION_TTL: how long a console sign-in lasts
	// OAuth (docs/governance.md, "Signing in with OAuth").
	PublicURL             string        // DUET_PUBLIC_URL: Duet's canonical address; the resource is PublicURL + "/mcp/http"
	OAuthIssuer           string        // the company's identity provider
	OAuthAudience         string        // expected audience; "" means the resource URL
	OAuthUserClaim        string        // the claim that names the user
	OAuthScopeRead        string        // the scope that allows reading
	OAuthScopeRun         string        // the scope that allows starting and cancelling runs
	OAuthServer           bool          // Duet is the authorization server, delegating login to OAuthIssuer
	OAuthClientID         string        // Duet's client at the identity provider
	OAuthClientSecret     string        // secret
	OAuthLoginScopes      []string      // scopes Duet asks the identity provider for at login
	OAuthTokenTTL         time.Duration // access tokens Duet issues
	OAuthRefreshTTL       time.Duration // refresh tokens Duet issues
	OAuthMaxRegistrations int           // dynamic client registrations per address per hour

	// Operations (docs/operations.md).
	Metrics      string // "off", "on" (on DUET_ADDR) or a host:port of its own
	MetricsToken string // bearer token /metrics requires on DUET_ADDR (secret)
	OTLPEndpoint string // OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT + /v1/traces; "" means no traces
	OTLPHeaders  string // OTEL_EXPORTER_OTLP_HEADERS (secret)
	ServiceName  string // OTEL_SERVICE_NAME

	// PostgreSQL connection pool (ignored on SQLite). Zero values mean the
	// defaults of the table below.
	DBMaxConns        int
	DBMinConns        int
	DBReadLanes       int
	DBMaxConnLifetime time.Duration
	DBMaxConnIdleTime time.Duration
	DBConnectTimeout  time.Duration

	tracesOff    bool // OTEL_TRACES_EXPORTER=none
	otlpExplicit bool // OTEL_EXPORTER_OTLP_TRACES_ENDPOINT was set
}

// Option is one row of the settings table.
type Option struct {
	Env     string
	Default string // as the user would write it; "" means empty or computed
	Secret  bool   // never printed; also read from Env+"_FILE" unless NoFile
	NoFile  bool   // a secret without an Env+"_FILE" variant
	Doc     string
	// ReadBy names the package that reads the variable, for the settings
	// Load does not read itself (the model, the master key): they are rows
	// here so that this table, `duet config` and docs/configuration.md
	// name every setting.
	ReadBy string
	set    func(c *Config, v string) error
}

// Options is the table of settings, in documentation order.
func Options() []Option { return options }

var options = []Option{
	{Env: "DUET_HOME", Doc: "Data directory (database, master key, artifacts). Default: $XDG_DATA_HOME/duet, else ~/.local/share/duet.",
		set: func(c *Config, v string) error { c.Home = v; return nil }},
	{Env: "DUET_DATABASE_URL", Secret: true, Doc: "Database: a SQLite file path (or sqlite:PATH / file:PATH), or a PostgreSQL URL (postgres://USER:PASSWORD@HOST:PORT/DB?sslmode=...; postgresql:// too) " +
		"for several `duet serve` and `duet worker` processes on one database; the libpq variables (PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE, PGSSLMODE, ...) fill in what the URL leaves out. " +
		"Default: duet.db inside DUET_HOME. See docs/deployment.md.",
		set: func(c *Config, v string) error { c.DatabaseURL = strings.TrimSpace(v); return nil }},
	{Env: "DUET_DATABASE_MAX_CONNS", Default: "16", Doc: "PostgreSQL: most connections each process opens (size max_connections for every instance and worker).",
		set: intSet(func(c *Config) *int { return &c.DBMaxConns }, 1, 10000)},
	{Env: "DUET_DATABASE_MIN_CONNS", Default: "0", Doc: "PostgreSQL: connections each process keeps open while idle.",
		set: intSet(func(c *Config) *int { return &c.DBMinConns }, 0, 10000)},
	{Env: "DUET_DATABASE_READ_LANES", Default: "1", Doc: "PostgreSQL: reads of one kind (a task's overview for get_test_task, a run for get_test_run, a case for get_test_case) in flight at most; those that arrive while all are busy are read together in one statement, which costs the database a share of one statement each. One lane makes the largest statements and measured best at 4 and at 32 clients (docs/performance.md, part 11); more lanes wait less and cost the database more. 0 means 1; -1 reads each alone.",
		set: intSet(func(c *Config) *int { return &c.DBReadLanes }, -1, 10000)},
	{Env: "DUET_DATABASE_MAX_CONN_LIFETIME", Default: "1h", Doc: "PostgreSQL: a connection older than this is closed and replaced (after a failover, connections move to the new primary within this time).",
		set: durSet(func(c *Config) *time.Duration { return &c.DBMaxConnLifetime })},
	{Env: "DUET_DATABASE_MAX_CONN_IDLE_TIME", Default: "30m", Doc: "PostgreSQL: an idle connection is closed after this long.",
		set: durSet(func(c *Config) *time.Duration { return &c.DBMaxConnIdleTime })},
	{Env: "DUET_DATABASE_CONNECT_TIMEOUT", Default: "5s", Doc: "PostgreSQL: time limit of opening one connection (while the database is unreachable, calls fail with UNAVAILABLE after this).",
		set: durSet(func(c *Config) *time.Duration { return &c.DBConnectTimeout })},
	{Env: "DUET_ADDR", Default: "127.0.0.1:8420", Doc: "Address `duet serve` listens on (host:port).",
		set: func(c *Config, v string) error {
			if _, _, err := net.SplitHostPort(v); err != nil {
				return fmt.Errorf("want host:port, got %q", v)
			}
			c.Addr = v
			return nil
		}},
	{Env: "DUET_USER", Doc: "User id of CLI commands without --as, `duet mcp` (stdio) callers included. Default: the operating-system user. (Against a Duet server, DUET_SERVER_URL, commands act as the token's user.)",
		set: func(c *Config, v string) error {
			if err := duet.ValidUserID(v); err != nil {
				return errors.New(duet.ErrorMessage(err))
			}
			c.User = v
			return nil
		}},
	{Env: "DUET_SERVER_URL", Doc: "A Duet server (https://duet.example.com) for CLI commands to act on over its REST API, with a personal access token, instead of this machine's DUET_HOME (remote mode; the same as `duet --server URL`). " +
		"Commands that run Duet itself (serve, worker, migrate, mcp, demo, sample, vault, config) always act here. Default: none.",
		set: func(c *Config, v string) error { c.ServerURL = strings.TrimSpace(v); return nil }},
	{Env: "DUET_TOKEN", Secret: true, Doc: "The personal access token CLI commands send to the Duet server of DUET_SERVER_URL or --server (`duet token create` makes one; the server's user is whom they act as). " +
		"Also DUET_TOKEN_FILE. Default: the token `duet login URL` stored for that server.",
		set: func(c *Config, v string) error { c.Token = strings.TrimSpace(v); return nil }},
	{Env: "DUET_LOG_LEVEL", Default: "info", Doc: "debug, info, warn or error.", set: func(c *Config, v string) error {
		switch v {
		case "debug", "info", "warn", "error":
			c.LogLevel = v
			return nil
		}
		return fmt.Errorf("want debug, info, warn or error, got %q", v)
	}},
	{Env: "DUET_LOG_FORMAT", Default: "text", Doc: "text or json (logs go to stderr).", set: func(c *Config, v string) error {
		if v != "text" && v != "json" {
			return fmt.Errorf("want text or json, got %q", v)
		}
		c.LogFormat = v
		return nil
	}},
	{Env: "DUET_WORKERS", Default: "2", Doc: "Runs `duet serve` (and `duet worker`) executes at once. 0 makes `duet serve` an API-only instance: `duet worker` processes on the same PostgreSQL database execute the runs.", set: intSet(func(c *Config) *int { return &c.Workers }, 0, 256)},
	{Env: "DUET_PARALLEL", Default: "2", Doc: "Cases executed at once within one run.", set: intSet(func(c *Config) *int { return &c.Parallel }, 1, 64)},
	{Env: "DUET_MAX_PARALLEL", Default: "8", Doc: "The most cases of one run a task's parallel: may execute at once; a suite asking more is refused when applied.", set: intSet(func(c *Config) *int { return &c.MaxParallel }, 1, 64)},
	{Env: "DUET_MAX_RETRIES", Default: "3", Doc: "The most retries a case (retries:) or a run (start_test_run's retries) may have, 1 to 10; more is refused.", set: intSet(func(c *Config) *int { return &c.MaxRetries }, 1, 10)},
	{Env: "DUET_STEP_TIMEOUT", Default: "30s", Doc: "Default time limit of a step (a step's own timeout wins).", set: durSet(func(c *Config) *time.Duration { return &c.StepTimeout })},
	{Env: "DUET_CASE_TIMEOUT", Default: "10m", Doc: "Default time limit of a case.", set: durSet(func(c *Config) *time.Duration { return &c.CaseTimeout })},
	{Env: "DUET_GATEWAY_API_KEYS", Secret: true, Doc: "Comma-separated secrets a company MCP gateway sends as X-Api-Key (several, for rotation). Also DUET_GATEWAY_API_KEYS_FILE (one per line).",
		set: func(c *Config, v string) error { c.GatewayAPIKeys = splitList(v); return nil }},
	{Env: "DUET_GATEWAY_FIXED_USER", Doc: "User for requests with a valid gateway key but no SSO-Emp-Id header (local debugging only). Default: such requests get 401.",
		set: func(c *Config, v string) error {
			if err := duet.ValidUserID(v); err != nil {
				return errors.New(duet.ErrorMessage(err))
			}
			c.GatewayFixedUser = v
			return nil
		}},
	{Env: "DUET_ALLOWED_HOSTS", Doc: "Comma-separated Host header values the HTTP endpoints accept (DNS-rebinding protection), e.g. duet.internal.example,duet.internal.example:443. Default: loopback names only (localhost, 127.0.0.1, [::1]) plus the DUET_ADDR host; * accepts any (behind a gateway that checks hosts).",
		set: func(c *Config, v string) error { c.AllowedHosts = splitList(v); return nil }},
	{Env: "DUET_ALLOWED_ORIGINS", Doc: "Comma-separated browser Origin values accepted (e.g. https://copilot.example). Default: none; requests without an Origin header (non-browser clients) are always accepted.",
		set: func(c *Config, v string) error { c.AllowedOrigins = splitList(v); return nil }},
	{Env: "DUET_MAX_CONNECTIONS", Default: "1024", Doc: "Open HTTP connections at once. At the limit the connection idle the longest is closed to make room; when all are busy, new ones wait.", set: intSet(func(c *Config) *int { return &c.MaxConnections }, 8, 1000000)},
	{Env: "DUET_MAX_UNAUTHENTICATED_PER_ADDRESS", Default: "8", Doc: "Requests without credentials (console sign-in, OAuth client registration and token requests) that one client address — an IPv4 address, an IPv6 /64 — may have sending their bodies at once; another is refused (RATE_LIMITED, HTTP 429) and its connection closed, so that slow clients at one address cannot hold the connections others need. Behind a reverse proxy every client comes from the proxy's address and shares one budget: raise it there. See docs/governance.md, \"Connections\".",
		set: intSet(func(c *Config) *int { return &c.MaxUnauthenticated }, 1, 100000)},
	{Env: "DUET_MAX_CONCURRENT", Default: "64", Doc: "Tool calls in flight, all callers (excess: RATE_LIMITED, HTTP 429); and, counted apart, open streams (MCP subscriptions/listen, a run's live progress), all callers.", set: intSet(func(c *Config) *int { return &c.MaxConcurrent }, 1, 100000)},
	{Env: "DUET_MAX_PER_CALLER", Default: "8", Doc: "Tool calls in flight per caller; and, counted apart, open streams per caller.", set: intSet(func(c *Config) *int { return &c.MaxPerCaller }, 1, 100000)},
	{Env: "DUET_CALL_TIMEOUT", Default: "15s", Doc: "Time limit of one tool call.", set: durSet(func(c *Config) *time.Duration { return &c.CallTimeout })},
	{Env: "DUET_MAX_BODY_BYTES", Default: "4194304", Doc: "Largest HTTP request body (413 beyond).", set: func(c *Config, v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1024 {
			return fmt.Errorf("want a number of bytes >= 1024, got %q", v)
		}
		c.MaxBodyBytes = n
		return nil
	}},
	{Env: "DUET_MAX_ARG_BYTES", Default: "262144", Doc: "Largest tool-call arguments (TOO_LARGE beyond).", set: intSet(func(c *Config) *int { return &c.MaxArgBytes }, 256, 1<<30)},
	{Env: "DUET_MAX_RESULT_BYTES", Default: "4194304", Doc: "Largest tool result (TOO_LARGE beyond).", set: intSet(func(c *Config) *int { return &c.MaxResultBytes }, 1024, 1<<30)},
	{Env: "DUET_MCP_FAST_PATH", Default: "on", Doc: "on or off. On, the MCP server answers plain tools/call requests (stdio and /mcp/http, no progress token, a tool that does not stream) itself, byte for byte as the go-sdk would, without the SDK's per-request machinery (docs/architecture.md). Off sends every MCP request through the go-sdk alone — to rule the fast paths out when diagnosing, or while an SDK upgrade is checked: the replies are the same, each call costs more CPU (docs/performance.md).",
		set: func(c *Config, v string) error {
			switch v {
			case "on":
				c.MCPFastPath = true
			case "off":
				c.MCPFastPath = false
			default:
				return fmt.Errorf("want on or off, got %q", v)
			}
			return nil
		}},
	{Env: "DUET_MAX_QUEUED_RUNS", Default: "20", Doc: "Runs one user may have queued (waiting for a worker) at once; starting another is RATE_LIMITED until some have started. Workers take runs fairly across users: the user with the fewest runs running first, then the one served least recently.", set: intSet(func(c *Config) *int { return &c.MaxQueuedRuns }, 1, 1000000)},
	{Env: "DUET_MAX_RUNS_PER_MINUTE", Default: "60", Doc: "Runs one user may start in a minute, however they start them (MCP, MCP-Lite, REST, console, CLI) and on every instance of a PostgreSQL database together (counted in the database); the next is RATE_LIMITED, saying when one may start. A replayed start (same idempotency key) is never refused. See docs/governance.md, \"Loop budgets\".",
		set: intSet(func(c *Config) *int { return &c.MaxRunsPerMinute }, 1, 1000000)},
	{Env: "DUET_MAX_CALL_DEPTH", Default: "4", Doc: "The longest chain of Duet calls allowed: Duet sends Duet-Call-Depth on its MCP calls and http steps (one more than the call that started the run), a run keeps the depth of the request that started it, and a request or a call deeper than this is refused with CALL_DEPTH_EXCEEDED (HTTP 508), so no loop through one or more Duets grows without end. See docs/governance.md, \"Loop budgets\".",
		set: intSet(func(c *Config) *int { return &c.MaxCallDepth }, 1, 64)},
	{Env: "DUET_STOP_TOOL_USERS", Doc: "Who may see and call the stop_test_run MCP tool (stop a run; released gradually): comma-separated user ids, team:NAME for the members of a team, or * for everyone. A team is bound when Duet starts to the team of that name that exists then: one that does not exist grants nothing (a warning at start-up), nor does one created, or deleted and re-created, later, until a restart. Others do not see it in tools/list, and a call of it is PERMISSION_DENIED. Default: nobody. See docs/governance.md.",
		set: func(c *Config, v string) error {
			for _, u := range splitList(v) {
				if team, ok := duet.TeamOf(u); ok {
					if !duet.ValidTeamName(team) {
						return fmt.Errorf("%q is not a team name (lower-case letters, digits, '.', '_', '-')", u)
					}
				} else if u != "*" {
					if err := duet.ValidUserID(u); err != nil {
						return errors.New(duet.ErrorMessage(err))
					}
				}
				c.StopToolUsers = append(c.StopToolUsers, u)
			}
			return nil
		}},
	{Env: "DUET_STOP_APPROVAL_TTL", Default: "10m", Doc: "How long a stop request (a stop_test_run call the client could not confirm) waits for the approval of the run's owner (duet run approve-stop); after it the request is expired and nothing is stopped.",
		set: durSet(func(c *Config) *time.Duration { return &c.StopApprovalTTL })},
	{Env: "DUET_IDEMPOTENCY_TTL", Default: "24h", Doc: "How long start_test_run idempotency keys are remembered.", set: durSet(func(c *Config) *time.Duration { return &c.IdempotencyTTL })},
	{Env: "DUET_CHROME_PATH", Doc: "Chromium executable for browser steps. Default: the first of chromium-headless-shell (Chromium without its browser UI: about 0.57x the CPU per browser case), chromium, chromium-browser and google-chrome on PATH.",
		set: func(c *Config, v string) error { c.ChromePath = v; return nil }},
	{Env: "DUET_BROWSERS", Default: "2", Doc: "Browser processes in the shared pool.", set: intSet(func(c *Config) *int { return &c.Browsers }, 1, 64)},
	{Env: "DUET_BROWSER_PROCESSES", Default: "0", Doc: "How many Chromium processes the browser sessions that run at the same time are spread over: a session opened while each running process holds one starts another (up to DUET_BROWSERS); they start when first needed and are reused. 0 means the smallest of DUET_BROWSERS, DUET_PARALLEL and half the CPUs (at least 1); 1 puts every session in one process until it holds 8 (docs/performance.md).", set: intSet(func(c *Config) *int { return &c.BrowserProcesses }, 0, 64)},
	{Env: "DUET_BROWSER_URL", Secret: true, Doc: "DevTools endpoint of a browser that runs already — ws://HOST:PORT/devtools/browser/ID, or http://HOST:PORT of a Chromium started with --remote-debugging-port, or a browser pool's CDP address (its token may go in the query). Duet attaches to it instead of starting Chromium, with one isolated browser context per execution (docs/devices.md). Default: start Chromium.",
		set: func(c *Config, v string) error {
			u, err := url.Parse(v)
			if err != nil || u.Host == "" || (u.Scheme != "ws" && u.Scheme != "wss" && u.Scheme != "http" && u.Scheme != "https") {
				return errors.New("want a ws://, wss://, http:// or https:// address with a host")
			}
			c.BrowserURL = v
			return nil
		}},
	{Env: "DUET_BROWSER_SANDBOX", Default: "on", Doc: "Chromium's own sandbox: on, or off to start Chromium with --no-sandbox where the sandbox cannot start because unprivileged user namespaces are forbidden (the RuntimeDefault seccomp profile of containerd and Docker, AppArmor's user-namespace restriction): the container or the service's own confinement is then the only boundary between the pages tested and Duet. As root Chromium always runs without it. See docs/deployment.md.",
		set: func(c *Config, v string) error {
			switch v {
			case "on", "off":
				c.BrowserNoSandbox = v == "off"
				return nil
			}
			return fmt.Errorf("want on or off, got %q", v)
		}},
	{Env: "DUET_RECORDER_SESSIONS_PER_USER", Default: "1", Doc: "Live browser sessions of the console's recorder one user may have open at a time (docs/console.md).",
		set: intSet(func(c *Config) *int { return &c.RecorderSessionsPerUser }, 1, 16)},
	{Env: "DUET_RECORDER_IDLE_TIMEOUT", Default: "10m", Doc: "A recorder session that no input reached for this long closes (docs/console.md).",
		set: durSet(func(c *Config) *time.Duration { return &c.RecorderIdleTimeout })},
	{Env: "DUET_ADB_PATH", Doc: "adb executable for Android phones (--device android:SERIAL). Default: adb on PATH.",
		set: func(c *Config, v string) error { c.ADBPath = v; return nil }},
	{Env: "DUET_ARTIFACT_DIR", Doc: "Directory of run artifacts (screenshots). Several instances on one PostgreSQL database must all see the same directory (a shared volume): see docs/deployment.md. Default: artifacts inside DUET_HOME.",
		set: func(c *Config, v string) error {
			if !filepath.IsAbs(v) {
				return fmt.Errorf("want an absolute path (nothing depends on the working directory), got %q", v)
			}
			c.ArtifactDir = filepath.Clean(v)
			return nil
		}},
	{Env: "DUET_TRACE", Default: "on-failure", Doc: "When a case keeps a trace (screenshots, DOM snapshots, console, network, replay) if its task and run do not say: off, on-failure, on-first-retry (the first retry of a failed case only) or on.",
		set: func(c *Config, v string) error {
			switch v {
			case "off", "on-failure", "on-first-retry", "on":
				c.Trace = v
				return nil
			}
			return fmt.Errorf("want off, on-failure, on-first-retry or on, got %q", v)
		}},
	{Env: "DUET_TRACE_REPLAY", Default: "kept", Doc: "Which recorded attempts also record a replay (the page's screencast, and the steps' screenshots before and after): kept (every attempt under on and on-first-retry; under on-failure the retries, not a case's first attempt, which keeps the page's DOM after each step and the failure's screenshot instead) or always. The screencast is most of a recording's cost: about a quarter of a passing browser case's CPU (docs/performance.md).",
		set: func(c *Config, v string) error {
			switch v {
			case "kept", "always":
				c.TraceReplay = v
				return nil
			}
			return fmt.Errorf("want kept or always, got %q", v)
		}},
	{Env: "DUET_TRACE_MAX_BYTES", Default: "16777216", Doc: "The most one case's trace keeps, in bytes (16 MiB); what does not fit is left out and the trace says so.",
		set: intSet(func(c *Config) *int { return &c.TraceMaxBytes }, 1<<20, 1<<30)},
	{Env: "DUET_ARTIFACT_RETENTION", Default: "720h", Doc: "How long screenshots and traces are kept (0 keeps them forever; duet gc removes the expired ones now).", set: func(c *Config, v string) error {
		if v == "0" {
			c.ArtifactRetention = 0
			return nil
		}
		return durSet(func(c *Config) *time.Duration { return &c.ArtifactRetention })(c, v)
	}},
	{Env: "DUET_MCP_ALLOW_PRIVATE", Default: "false", Doc: "Let registered MCP servers, http steps and browser navigations reach private addresses (10/8, 172.16/12, 192.168/16, fc00::/7). A task's own base URL host is always allowed.", set: boolSet(func(c *Config) *bool { return &c.MCPAllowPrivate })},
	{Env: "DUET_MCP_ALLOW_LOOPBACK", Default: "false", Doc: "Let registered MCP servers, http steps and browser navigations reach loopback (development). A task's own base URL host is always allowed; Duet's own address never is.", set: boolSet(func(c *Config) *bool { return &c.MCPAllowLoopback })},
	{Env: "DUET_NET_ALLOW", Doc: "Comma-separated IP addresses and CIDR prefixes (e.g. 10.20.0.0/16,192.168.7.12) that MCP servers, http steps and browser navigations may reach although the network guard refuses their range (docs/governance.md). Cloud metadata and unspecified addresses stay refused. Default: none.",
		set: func(c *Config, v string) error {
			for _, e := range splitList(v) {
				e = strings.Trim(e, "[]")
				var p netip.Prefix
				var err error
				if strings.Contains(e, "/") {
					p, err = netip.ParsePrefix(e)
					p = p.Masked()
				} else {
					var a netip.Addr
					a, err = netip.ParseAddr(e)
					p = netip.PrefixFrom(a, a.BitLen())
				}
				if err != nil {
					return fmt.Errorf("%q is not an IP address or a CIDR prefix (host names are not accepted: list their addresses)", e)
				}
				c.NetAllow = append(c.NetAllow, p)
			}
			return nil
		}},
	{Env: "DUET_TRACE_DOMAIN", Doc: "Comma-separated hosts inside your trace domain — a host name, *.example.com for its subdomains, or * for every host: only requests to them (registered MCP servers, http steps) carry the W3C traceparent header, so those services join Duet's traces. A trace id links every call of a run and of the pipeline that started it: other companies' servers do not get it. Default: none (docs/governance.md).",
		set: func(c *Config, v string) error {
			for _, h := range splitList(v) {
				h = strings.ToLower(h)
				if a, err := netip.ParseAddr(strings.Trim(h, "[]")); err == nil {
					c.TraceDomain = append(c.TraceDomain, a.String())
					continue
				}
				name := strings.TrimPrefix(h, "*.")
				if h != "*" && (name == "" || strings.ContainsAny(name, "/:*@ ")) {
					return fmt.Errorf("%q is not a host name (want a host such as mcp.example.com, *.example.com, or *)", h)
				}
				c.TraceDomain = append(c.TraceDomain, h)
			}
			return nil
		}},
	{Env: "DUET_MCP_CALL_TIMEOUT", Default: "30s", Doc: "Time limit of one call to a registered MCP server.", set: durSet(func(c *Config) *time.Duration { return &c.MCPCallTimeout })},
	{Env: "DUET_ADMINS", Doc: "Comma-separated user ids with the administrator role: in the web console and the REST API they see everyone's audit and invocation records (everyone else sees their own). Default: none.",
		set: func(c *Config, v string) error {
			for _, u := range splitList(v) {
				if err := duet.ValidUserID(u); err != nil {
					return errors.New(duet.ErrorMessage(err))
				}
				c.Admins = append(c.Admins, u)
			}
			return nil
		}},
	{Env: "DUET_SSO_USER_HEADER", Doc: "Header an SSO proxy in front of the web console (a company gateway, oauth2-proxy) sets to the signed-in user id, e.g. X-Forwarded-User. Trusted only on requests that also carry DUET_SSO_SECRET in X-Duet-Proxy-Secret. Default: none (sign in with a personal access token).",
		set: func(c *Config, v string) error {
			if strings.TrimSpace(v) == "" || strings.ContainsAny(v, " :\t\r\n") {
				return fmt.Errorf("want a header name, got %q", v)
			}
			c.SSOUserHeader = strings.TrimSpace(v)
			return nil
		}},
	{Env: "DUET_SSO_SECRET", Secret: true, Doc: "The shared secret the SSO proxy sends in the X-Duet-Proxy-Secret header with DUET_SSO_USER_HEADER (at least 16 characters). Also DUET_SSO_SECRET_FILE.",
		set: func(c *Config, v string) error {
			v = strings.TrimSpace(v)
			if len(v) < 16 {
				return errors.New("want at least 16 characters")
			}
			c.SSOSecret = v
			return nil
		}},
	{Env: "DUET_SESSION_TTL", Default: "12h", Doc: "How long a web console sign-in lasts.", set: durSet(func(c *Config) *time.Duration { return &c.SessionTTL })},
	{Env: "DUET_PUBLIC_URL", Doc: "Duet's canonical address as clients reach it (https://duet.example.com, no path). OAuth needs it: the protected resource is this address + /mcp/http (RFC 8707), and Duet's own authorization server is this address. Default: none (OAuth off).",
		set: func(c *Config, v string) error {
			u, err := url.Parse(v)
			if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") || u.RawQuery != "" || u.Fragment != "" || u.User != nil || strings.Trim(u.Path, "/") != "" {
				return errors.New("want an http(s) address with a host and no path, query or user, e.g. https://duet.example.com")
			}
			if u.Scheme == "http" && !loopbackHost(u.Hostname()) {
				return errors.New("want https (http only for a loopback address)")
			}
			c.PublicURL = strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Host)
			return nil
		}},
	{Env: "DUET_OAUTH_ISSUER", Doc: "The company's identity provider (OpenID Connect or RFC 8414 issuer URL). Set, /mcp/http accepts its JWT access tokens whose audience is Duet's resource (DUET_PUBLIC_URL + /mcp/http); with DUET_OAUTH_SERVER=true it is where people sign in. Default: none.",
		set: func(c *Config, v string) error {
			u, err := url.Parse(v)
			if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") || u.RawQuery != "" || u.Fragment != "" {
				return errors.New("want an http(s) issuer URL with no query or fragment")
			}
			if u.Scheme == "http" && !loopbackHost(u.Hostname()) {
				return errors.New("want https (http only for a loopback address)")
			}
			c.OAuthIssuer = v
			return nil
		}},
	{Env: "DUET_OAUTH_AUDIENCE", Doc: "The audience (aud) the identity provider's access tokens must carry. Default: Duet's resource URL, DUET_PUBLIC_URL + /mcp/http (RFC 8707).",
		set: func(c *Config, v string) error { c.OAuthAudience = v; return nil }},
	{Env: "DUET_OAUTH_USER_CLAIM", Default: "sub", Doc: "The access-token (and ID-token) claim that names the user, e.g. sub, preferred_username, email or employee_id. Its value must be a valid user id.",
		set: func(c *Config, v string) error { c.OAuthUserClaim = v; return nil }},
	{Env: "DUET_OAUTH_SCOPE_READ", Default: "duet:read", Doc: "The OAuth scope that allows the read tools (list and get tasks, cases, runs, results; reports; prompts).",
		set: func(c *Config, v string) error { return scopeSet(&c.OAuthScopeRead, v) }},
	{Env: "DUET_OAUTH_SCOPE_RUN", Default: "duet:run", Doc: "The OAuth scope that allows starting and cancelling runs.",
		set: func(c *Config, v string) error { return scopeSet(&c.OAuthScopeRun, v) }},
	{Env: "DUET_OAUTH_SERVER", Default: "false", Doc: "Duet acts as the OAuth authorization server of /mcp/http itself (dynamic client registration, client ID metadata documents, authorization code + PKCE, consent, refresh tokens, revocation), and delegates the person's login to DUET_OAUTH_ISSUER with OpenID Connect: for identity providers that lack what MCP clients need. Needs DUET_PUBLIC_URL, DUET_OAUTH_ISSUER and DUET_OAUTH_CLIENT_ID.",
		set: boolSet(func(c *Config) *bool { return &c.OAuthServer })},
	{Env: "DUET_OAUTH_CLIENT_ID", Doc: "Duet's client id at the identity provider (DUET_OAUTH_SERVER: the login; register DUET_PUBLIC_URL/oauth/callback as its redirect URI).",
		set: func(c *Config, v string) error { c.OAuthClientID = v; return nil }},
	{Env: "DUET_OAUTH_CLIENT_SECRET", Secret: true, Doc: "Duet's client secret at the identity provider. Also DUET_OAUTH_CLIENT_SECRET_FILE.",
		set: func(c *Config, v string) error { c.OAuthClientSecret = strings.TrimSpace(v); return nil }},
	{Env: "DUET_OAUTH_LOGIN_SCOPES", Default: "openid", Doc: "Comma-separated scopes Duet asks the identity provider for at login (openid is always asked), e.g. openid,profile,email when the user claim needs them.",
		set: func(c *Config, v string) error { c.OAuthLoginScopes = splitList(v); return nil }},
	{Env: "DUET_OAUTH_TOKEN_TTL", Default: "1h", Doc: "Lifetime of the access tokens Duet's authorization server issues.", set: durSet(func(c *Config) *time.Duration { return &c.OAuthTokenTTL })},
	{Env: "DUET_OAUTH_REFRESH_TTL", Default: "720h", Doc: "Lifetime of the refresh tokens Duet's authorization server issues (each use replaces the token; a replayed one revokes the whole sign-in).", set: durSet(func(c *Config) *time.Duration { return &c.OAuthRefreshTTL })},
	{Env: "DUET_OAUTH_MAX_REGISTRATIONS", Default: "20", Doc: "Dynamic client registrations Duet's authorization server accepts per hour from one address (a burst of that many, then one every hour/N); the server as a whole takes ten times as many. Behind a reverse proxy every client comes from the proxy's address and shares one budget: raise it there.", set: intSet(func(c *Config) *int { return &c.OAuthMaxRegistrations }, 1, 100000)},
	{Env: "DUET_METRICS", Default: "off", Doc: "Prometheus metrics at /metrics: off; on (on DUET_ADDR, behind DUET_METRICS_TOKEN if set); or a host:port to serve them on a listener of their own (e.g. 127.0.0.1:9420). See docs/operations.md.",
		set: func(c *Config, v string) error {
			if v != "off" && v != "on" {
				if _, _, err := net.SplitHostPort(v); err != nil {
					return fmt.Errorf("want off, on or host:port, got %q", v)
				}
			}
			c.Metrics = v
			return nil
		}},
	{Env: "DUET_METRICS_TOKEN", Secret: true, Doc: "Bearer token a scraper must send for /metrics on DUET_ADDR (Authorization: Bearer ...). Default: none (anyone who reaches DUET_ADDR may scrape). Also DUET_METRICS_TOKEN_FILE.",
		set: func(c *Config, v string) error { c.MetricsToken = strings.TrimSpace(v); return nil }},
	{Env: "OTEL_EXPORTER_OTLP_ENDPOINT", Doc: "OpenTelemetry: the OTLP/HTTP collector (e.g. http://otel-collector:4318); traces go to its /v1/traces. Traces are off unless this or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set (and OTEL_TRACES_EXPORTER is not none). See docs/operations.md.",
		set: func(c *Config, v string) error { return otlpSet(c, strings.TrimRight(v, "/")+"/v1/traces", false) }},
	{Env: "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", Doc: "OpenTelemetry: the full OTLP/HTTP traces URL (wins over OTEL_EXPORTER_OTLP_ENDPOINT).",
		set: func(c *Config, v string) error { return otlpSet(c, v, true) }},
	{Env: "OTEL_EXPORTER_OTLP_HEADERS", Secret: true, Doc: "OpenTelemetry: headers sent to the collector, key=value,key2=value2 (e.g. an API key).",
		set: func(c *Config, v string) error { c.OTLPHeaders = v; return nil }},
	{Env: "OTEL_TRACES_EXPORTER", Doc: "OpenTelemetry: none turns traces off whatever the endpoint; otlp (the only exporter) is the default when an endpoint is set.",
		set: func(c *Config, v string) error {
			switch v {
			case "none":
				c.OTLPEndpoint = ""
				c.tracesOff = true
			case "otlp":
			default:
				return fmt.Errorf("want otlp or none, got %q", v)
			}
			return nil
		}},
	{Env: "OTEL_TRACES_SAMPLER", Doc: "OpenTelemetry: which traces are recorded (read by the tracing SDK): parentbased_always_on (the default: every trace, or as the caller's traceparent says), parentbased_traceidratio with OTEL_TRACES_SAMPLER_ARG (e.g. 0.1 records one trace in ten; the trace id still reaches the audit), always_on, always_off, traceidratio, parentbased_always_off.",
		set: func(c *Config, v string) error {
			switch v {
			case "always_on", "always_off", "traceidratio", "parentbased_always_on", "parentbased_always_off", "parentbased_traceidratio":
				return nil
			}
			return fmt.Errorf("want always_on, always_off, traceidratio or their parentbased_ forms, got %q", v)
		}},
	{Env: "OTEL_TRACES_SAMPLER_ARG", Doc: "OpenTelemetry: the ratio of the traceidratio samplers, from 0 to 1.",
		set: func(c *Config, v string) error {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || f < 0 || f > 1 {
				return fmt.Errorf("want a number from 0 to 1, got %q", v)
			}
			return nil
		}},
	{Env: "OTEL_SERVICE_NAME", Default: "duet", Doc: "OpenTelemetry: the service.name of the spans.",
		set: func(c *Config, v string) error { c.ServiceName = v; return nil }},
	{Env: "DUET_RUN_LEASE", Default: "30s", Doc: "How long a worker holds a run between heartbeats (it renews every third of this). A run whose worker died (kill -9, lost machine) is resumed by another worker after this.",
		set: func(c *Config, v string) error {
			d, err := time.ParseDuration(v)
			if err != nil || d < time.Second {
				return fmt.Errorf("want a duration of at least 1s, got %q", v)
			}
			c.RunLease = d
			return nil
		}},
	{Env: "DUET_WEBHOOK_ATTEMPTS", Default: "8", Doc: "How many times a webhook delivery is tried before it is marked failed (docs/webhooks.md).",
		set: func(c *Config, v string) error {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 50 {
				return fmt.Errorf("want a number from 1 to 50, got %q", v)
			}
			c.WebhookAttempts = n
			return nil
		}},
	{Env: "DUET_WEBHOOK_BACKOFF", Default: "10s", Doc: "The delay before a failed webhook delivery's first retry; each later retry waits twice the one before, up to DUET_WEBHOOK_BACKOFF_MAX.",
		set: func(c *Config, v string) error {
			d, err := time.ParseDuration(v)
			if err != nil || d < 10*time.Millisecond {
				return fmt.Errorf("want a duration of at least 10ms, got %q", v)
			}
			c.WebhookBackoff = d
			return nil
		}},
	{Env: "DUET_WEBHOOK_BACKOFF_MAX", Default: "1h", Doc: "The longest wait between two attempts of a webhook delivery.",
		set: func(c *Config, v string) error {
			d, err := time.ParseDuration(v)
			if err != nil || d < 10*time.Millisecond {
				return fmt.Errorf("want a duration of at least 10ms, got %q", v)
			}
			c.WebhookBackoffMax = d
			return nil
		}},
	{Env: "DUET_MCP_SYNC_INTERVAL", Default: "1h", Doc: "How often every registered MCP server's catalog is synced again (as its owner), so that a changed tool flags the cases it breaks (contract alerts) without anyone pressing sync; 0 turns the timer off (docs/schedules.md).",
		set: func(c *Config, v string) error {
			d, err := time.ParseDuration(v)
			if err != nil || (d != 0 && d < time.Second) {
				return fmt.Errorf("want 0 or a duration of at least 1s, got %q", v)
			}
			c.MCPSyncInterval = d
			return nil
		}},
	{Env: "DUET_MASTER_KEY", Secret: true, NoFile: true, ReadBy: "internal/vault", Doc: "The master key (32 bytes, standard base64 or hex) that encrypts registered MCP servers' credentials (AES-256-GCM). " +
		"Default: the key file DUET_MASTER_KEY_FILE names, else master.key in DUET_HOME, generated at first use (back it up). Several instances on one PostgreSQL database need the same key: docs/deployment.md."},
	{Env: "DUET_MASTER_KEY_FILE", ReadBy: "internal/vault", Doc: "A master key file (the format `duet vault rotate` writes: the primary key, then previous keys), used when DUET_MASTER_KEY is not set. Default: master.key in DUET_HOME."},
	{Env: "DUET_MASTER_KEY_PREVIOUS", Secret: true, NoFile: true, ReadBy: "internal/vault", Doc: "Comma-separated previous master keys, still accepted for decryption after a rotation of DUET_MASTER_KEY (`duet vault rotate --rewrap-only` re-encrypts under the new key)."},
	{Env: "DUET_LLM_BASE_URL", ReadBy: "internal/llm", Doc: "The model of the test agent and of the AI steps: an OpenAI-compatible API root, e.g. https://api.openai.com/v1 or http://127.0.0.1:11434/v1 (Ollama). Default: none; `duet generate`, and AI steps, then fail with LLM_NOT_CONFIGURED (docs/agent.md, docs/ai-steps.md)."},
	{Env: "DUET_LLM_MODEL", ReadBy: "internal/llm", Doc: "The model name the agent asks for, e.g. gpt-4.1-mini or qwen3:8b. Needed with DUET_LLM_BASE_URL."},
	{Env: "DUET_LLM_API_KEY", Secret: true, ReadBy: "internal/llm", Doc: "API key sent as Authorization: Bearer (optional for local servers). Also DUET_LLM_API_KEY_FILE (the key, white space trimmed)."},
	{Env: "DUET_LLM_TIMEOUT", Default: "120s", ReadBy: "internal/llm", Doc: "Time limit of one request to the model (a local model on a CPU may need 300s)."},
	{Env: "DUET_LLM_STEP_TOKENS", Default: "20000", ReadBy: "internal/app", Doc: "The token budget of an AI step (aiAssert, aiQuery, aiWaitFor, ai, aiTap, aiFill) without its own maxTokens: prompts and answers of all its model calls (docs/ai-steps.md)."},
	{Env: "DUET_LLM_RUN_TOKENS", Default: "0", ReadBy: "internal/app", Doc: "The token budget of all the AI steps of a run together, on top of each step's (0: none); a step whose next call would pass it fails with LLM_BUDGET_EXCEEDED (docs/ai-steps.md)."},
	{Env: "DUET_LLM_RUN_TIME", Default: "0", ReadBy: "internal/app", Doc: "How long all the AI steps of a run may wait for the model together, a Go duration such as 5m (0: no bound but each step's timeout); a call it cuts short, or one made after, fails with LLM_BUDGET_EXCEEDED (docs/ai-steps.md)."},
	{Env: "DUET_LLM_USER_DAY_TOKENS", Default: "0", ReadBy: "internal/app", Doc: "The token budget of each user's AI steps per UTC day, over all their runs, workers and instances (counted in the database; 0: none); a call that would pass it is refused with LLM_BUDGET_EXCEEDED before it is made (docs/ai-steps.md)."},
	{Env: "DUET_LLM_VISION", Default: "false", ReadBy: "internal/app", Doc: "true: AI steps also show the model a screenshot of the page (a JPEG of at most 1280 pixels and 256 KiB), for a model that takes images. Pixels cannot be scrubbed of secrets by value; off by default (docs/ai-steps.md)."},
	{Env: "DUET_SAMPLE_TOKEN", Secret: true, NoFile: true, ReadBy: "internal/cli", Doc: "The bearer token `duet sample order-server` requires (the demo's order service). Default: a random one, printed when the server is listening."},
}

func loopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(h, "[]"))
	return ip != nil && ip.IsLoopback()
}

func scopeSet(dst *string, v string) error {
	if strings.ContainsAny(v, " \t\r\n\"\\") {
		return fmt.Errorf("a scope has no spaces or quotes, got %q", v)
	}
	*dst = v
	return nil
}

// otlpSet records a traces endpoint: the specific variable wins over the
// generic one, and OTEL_TRACES_EXPORTER=none over both.
func otlpSet(c *Config, v string, explicit bool) error {
	u, err := url.Parse(v)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return errors.New("want an http(s) URL")
	}
	if c.tracesOff || (c.otlpExplicit && !explicit) {
		return nil
	}
	c.OTLPEndpoint, c.otlpExplicit = v, explicit
	return nil
}

// checkOAuth checks the OAuth settings together.
func (c *Config) checkOAuth() error {
	if c.OAuthIssuer == "" && !c.OAuthServer {
		return nil
	}
	if c.PublicURL == "" {
		return &Error{"DUET_PUBLIC_URL", errors.New("OAuth (DUET_OAUTH_ISSUER, DUET_OAUTH_SERVER) needs Duet's canonical address: set DUET_PUBLIC_URL")}
	}
	if c.OAuthServer && (c.OAuthIssuer == "" || c.OAuthClientID == "") {
		return &Error{"DUET_OAUTH_SERVER", errors.New("the authorization server Duet runs delegates login to the company's identity provider: set DUET_OAUTH_ISSUER and DUET_OAUTH_CLIENT_ID (and DUET_OAUTH_CLIENT_SECRET)")}
	}
	return nil
}

// ResourceURL is Duet's canonical resource for OAuth: DUET_PUBLIC_URL +
// /mcp/http ("" without DUET_PUBLIC_URL).
func (c *Config) ResourceURL() string {
	if c.PublicURL == "" {
		return ""
	}
	return c.PublicURL + "/mcp/http"
}

func splitList(v string) []string {
	var out []string
	for _, s := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == '\n' || r == '\r' }) {
		if s = strings.TrimSpace(s); s != "" && !strings.HasPrefix(s, "#") {
			out = append(out, s)
		}
	}
	return out
}

func intSet(f func(*Config) *int, min, max int) func(*Config, string) error {
	return func(c *Config, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < min || n > max {
			return fmt.Errorf("want a whole number from %d to %d, got %q", min, max, v)
		}
		*f(c) = n
		return nil
	}
}

func durSet(f func(*Config) *time.Duration) func(*Config, string) error {
	return func(c *Config, v string) error {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return fmt.Errorf("want a duration such as 30s or 5m, got %q", v)
		}
		*f(c) = d
		return nil
	}
}

func boolSet(f func(*Config) *bool) func(*Config, string) error {
	return func(c *Config, v string) error {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("want true or false, got %q", v)
		}
		*f(c) = b
		return nil
	}
}

// Error is a setting that cannot be used; it names the variable.
type Error struct {
	Env string
	Err error
}

func (e *Error) Error() string { return e.Env + ": " + e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Load reads the configuration from getenv (os.Getenv in production).
// Errors are *Error naming the variable; secrets are never quoted.
func Load(getenv func(string) string) (*Config, error) {
	c := &Config{}
	for _, o := range options {
		if o.set == nil {
			continue // read by o.ReadBy
		}
		v := getenv(o.Env)
		if o.Secret {
			if f := getenv(o.Env + "_FILE"); f != "" {
				if v != "" {
					return nil, &Error{o.Env, fmt.Errorf("set either %s or %s_FILE, not both", o.Env, o.Env)}
				}
				b, err := os.ReadFile(f)
				if err != nil {
					return nil, &Error{o.Env + "_FILE", fmt.Errorf("cannot read %s: %v", f, errors.Unwrap(err))}
				}
				v = string(b)
			}
		}
		if v == "" {
			v = o.Default
		}
		if v == "" {
			continue
		}
		if err := o.set(c, v); err != nil {
			if o.Secret {
				err = secretError(err, v)
			}
			return nil, &Error{o.Env, err}
		}
	}
	if c.Home == "" {
		home, err := DefaultHome(getenv)
		if err != nil {
			return nil, &Error{"DUET_HOME", err}
		}
		c.Home = home
	}
	if !filepath.IsAbs(c.Home) {
		abs, err := filepath.Abs(c.Home)
		if err != nil {
			return nil, &Error{"DUET_HOME", err}
		}
		c.Home = abs
	}
	if (c.SSOUserHeader == "") != (c.SSOSecret == "") {
		return nil, &Error{"DUET_SSO_USER_HEADER", errors.New("set DUET_SSO_USER_HEADER and DUET_SSO_SECRET together (the proxy proves itself with the secret)")}
	}
	c.UserFrom = "DUET_USER"
	if err := c.checkOAuth(); err != nil {
		return nil, err
	}
	if c.User == "" {
		c.User, c.UserFrom = osUser(getenv), "the operating-system user"
		if err := duet.ValidUserID(c.User); err != nil {
			return nil, &Error{"DUET_USER", fmt.Errorf("the operating-system user cannot be a user id (%s); set DUET_USER", duet.ErrorMessage(err))}
		}
	}
	return c, nil
}

// secretError is the error of a secret setting that cannot be used: the
// setter's reason (a secret's setter says what is wrong without quoting
// the value: TestSecretErrorsGiveTheReason), with the value removed all the
// same should a reason ever carry it — redacted by value, not by name.
func secretError(err error, v string) error {
	msg := err.Error()
	for _, s := range []string{v, strings.TrimSpace(v)} {
		if len(s) >= 4 && strings.Contains(msg, s) {
			msg = strings.ReplaceAll(msg, s, "[the value]")
		}
	}
	if t := strings.TrimSpace(v); t != "" && len(t) < 4 && strings.Contains(msg, t) {
		msg = "invalid value" // too short to cut out of the message safely
	}
	return errors.New(msg)
}

// DefaultHome is $XDG_DATA_HOME/duet, else $HOME/.local/share/duet.
func DefaultHome(getenv func(string) string) (string, error) {
	if x := getenv("XDG_DATA_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "duet"), nil
	}
	home := getenv("HOME")
	if home == "" {
		if u, err := user.Current(); err == nil {
			home = u.HomeDir
		}
	}
	if home == "" {
		return "", errors.New("no home directory to put the data in; set DUET_HOME")
	}
	return filepath.Join(home, ".local", "share", "duet"), nil
}

func osUser(getenv func(string) string) string {
	for _, k := range []string{"USER", "LOGNAME", "USERNAME"} {
		if v := getenv(k); v != "" {
			return v
		}
	}
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return "local"
}

// Database engines (Config.Engine).
const (
	EngineSQLite   = "sqlite"
	EnginePostgres = "postgres"
)

// Engine returns the database engine DUET_DATABASE_URL selects: postgres for
// a postgres:// or postgresql:// URL, sqlite otherwise.
func (c *Config) Engine() string {
	if IsPostgresURL(c.DatabaseURL) {
		return EnginePostgres
	}
	return EngineSQLite
}

// IsPostgresURL reports whether u names a PostgreSQL database.
func IsPostgresURL(u string) bool {
	l := strings.ToLower(u)
	return strings.HasPrefix(l, "postgres://") || strings.HasPrefix(l, "postgresql://")
}

// DatabaseDescription names the database for messages and logs without
// any secret: the SQLite path, or "PostgreSQL" (the URL may hold a
// password and is never printed).
func (c *Config) DatabaseDescription() string {
	if c.Engine() == EnginePostgres {
		return "PostgreSQL (DUET_DATABASE_URL)"
	}
	p, err := c.DatabasePath()
	if err != nil {
		return "(invalid DUET_DATABASE_URL)"
	}
	return p
}

// ArtifactPath returns the artifact directory: DUET_ARTIFACT_DIR, else
// DUET_HOME/artifacts.
func (c *Config) ArtifactPath() string {
	if c.ArtifactDir != "" {
		return c.ArtifactDir
	}
	return filepath.Join(c.Home, "artifacts")
}

// DatabasePath returns the SQLite file the configuration names.
func (c *Config) DatabasePath() (string, error) {
	u := c.DatabaseURL
	switch {
	case u == "":
		return filepath.Join(c.Home, "duet.db"), nil
	case IsPostgresURL(u):
		return "", &Error{"DUET_DATABASE_URL", errors.New("names a PostgreSQL database, not a SQLite file")}
	case strings.HasPrefix(u, "sqlite://"):
		u = strings.TrimPrefix(u, "sqlite://")
	case strings.HasPrefix(u, "sqlite:"):
		u = strings.TrimPrefix(u, "sqlite:")
	case strings.HasPrefix(u, "file:"):
		u = strings.TrimPrefix(u, "file:")
	}
	if i := strings.IndexByte(u, '?'); i >= 0 {
		u = u[:i]
	}
	if u == "" {
		return "", &Error{"DUET_DATABASE_URL", errors.New("empty path")}
	}
	if !filepath.IsAbs(u) {
		return "", &Error{"DUET_DATABASE_URL", fmt.Errorf("want an absolute path (nothing depends on the working directory), got %q", u)}
	}
	return u, nil
}

// Setting is one row of `duet config`: a setting's effective value (a
// secret only as "(set)") and where it came from.
type Setting struct {
	Env    string `json:"env"`
	Value  string `json:"value"`
	Source string `json:"source"` // "environment", "file NAME", "default", "not set", or who chose it
}

// Settings returns every setting of the table, in its order, with its
// value in c (loaded from getenv) and its source. Secrets are never
// returned, only whether they are set.
func (c *Config) Settings(getenv func(string) string) []Setting {
	out := make([]Setting, 0, len(options))
	for _, o := range options {
		s := Setting{Env: o.Env}
		v := getenv(o.Env)
		file := ""
		if o.Secret && !o.NoFile {
			file = getenv(o.Env + "_FILE")
		}
		switch {
		case o.Env == "DUET_DATABASE_URL" && (v != "" || file != ""):
			s.Value, s.Source = "(set: PostgreSQL)", "environment"
			if c.Engine() == EngineSQLite {
				s.Value = "(set: " + c.DatabaseDescription() + ")"
			}
			if v == "" {
				s.Source = "file " + file
			}
		case v != "" && o.Secret:
			s.Value, s.Source = "(set)", "environment"
		case v != "":
			s.Value, s.Source = v, "environment"
		case file != "":
			s.Value, s.Source = "(set)", "file "+file
		case o.Env == "DUET_HOME":
			s.Value, s.Source = c.Home, "default"
		case o.Env == "DUET_DATABASE_URL":
			s.Value, s.Source = c.DatabaseDescription(), "default (duet.db in DUET_HOME)"
		case o.Env == "DUET_USER":
			s.Value, s.Source = c.User, c.UserFrom
		case o.Env == "DUET_ARTIFACT_DIR":
			s.Value, s.Source = c.ArtifactPath(), "default (artifacts in DUET_HOME)"
		case o.Env == "DUET_MASTER_KEY_FILE" && getenv("DUET_MASTER_KEY") == "":
			s.Value, s.Source = filepath.Join(c.Home, "master.key"), "default (master.key in DUET_HOME)"
		case o.Default != "":
			s.Value, s.Source = o.Default, "default"
		default:
			s.Value, s.Source = "-", "not set"
		}
		out = append(out, s)
	}
	return out
}

// Document renders docs/configuration.md.
func Document() string {
	return "# Configuration\n\nEvery setting is an environment variable, listed below; most secrets can also come from a file named by the same variable with `_FILE` appended. " +
		"Precedence: defaults < environment < command-line flags. Nothing depends on the working directory. " +
		"`duet config` shows every setting's effective value (secrets only as \"(set)\") and where it came from. " +
		"This page is generated by `duet config --markdown` (a test keeps it current and complete: every variable Duet reads has a row).\n\n" + Markdown()
}

// Markdown renders the settings table.
func Markdown() string {
	var b strings.Builder
	b.WriteString("| Variable | Default | Meaning |\n|---|---|---|\n")
	for _, o := range options {
		d := o.Default
		if d == "" {
			d = "—"
		}
		doc := o.Doc
		switch {
		case o.Secret && o.NoFile:
			doc += " (secret: never printed)"
		case o.Secret && !strings.Contains(doc, o.Env+"_FILE"):
			doc += " (secret: never printed; or from the file " + o.Env + "_FILE names)"
		case o.Secret:
			doc += " (secret: never printed)"
		}
		fmt.Fprintf(&b, "| `%s` | `%s` | %s |\n", o.Env, d, strings.ReplaceAll(doc, "|", "\\|"))
	}
	return b.String()
}

// InTraceDomain reports whether requests to host (a URL's host, with or
// without a port) may carry a traceparent: host is listed in TraceDomain,
// or is a subdomain of a listed *.suffix, or the list holds *.
func (c *Config) InTraceDomain(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	for _, d := range c.TraceDomain {
		switch {
		case d == "*", d == host:
			return true
		case strings.HasPrefix(d, "*.") && strings.HasSuffix(host, d[1:]):
			return true
		}
	}
	return false
}
