// Package httpapi is Duet's HTTP front door: one list of routes (MCP
// Streamable HTTP, MCP-Lite, the REST API and the web console, health), and the middleware every request passes
// through: Host/Origin validation (DNS-rebinding protection), trace ids,
// authentication, and the mapping of error codes to HTTP statuses.
package httpapi

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/api"
	"github.com/duet-test/duet/internal/auth"
	"github.com/duet-test/duet/internal/calldepth"
	"github.com/duet-test/duet/internal/catalog"
	"github.com/duet-test/duet/internal/lite"
	"github.com/duet-test/duet/internal/mcpserver"
)

// Options configure the HTTP API.
type Options struct {
	Catalog *catalog.Catalog
	MCP     *mcpserver.Server
	Auth    *auth.Authenticator
	// AllowedHosts are accepted Host header values (host or host:port);
	// loopback names are always accepted; "*" accepts any.
	AllowedHosts []string
	// AllowedOrigins are accepted Origin header values; requests without an
	// Origin header are accepted.
	AllowedOrigins []string
	MaxBodyBytes   int64
	Sessions       bool
	// Streams reports whether calls to a tool emit notifications.
	Streams func(tool string) bool
	// NoFastPath sends every MCP request through the SDK (benchmarks and
	// equivalence tests).
	NoFastPath bool
	// Ready reports whether the service can serve (database reachable).
	Ready  func(context.Context) error
	Logger *slog.Logger
	// API is the REST API (/api/v1); nil serves none.
	API *api.Handler
	// Console is the web console (everything else under /); nil serves
	// none. It authenticates its own requests (internal/webui).
	Console interface{ Register(*http.ServeMux) }

	// ResourceMetadata, if set, turns on OAuth for /mcp/http: it is served
	// as RFC 9728 protected resource metadata (at the root and the
	// path-suffixed well-known addresses), and 401 and 403 answers name it
	// in WWW-Authenticate.
	ResourceMetadata *oauthex.ProtectedResourceMetadata
	// AuthServer, if set, is Duet's own authorization server
	// (internal/oauthserver): /oauth/ and its RFC 8414 metadata.
	AuthServer http.Handler
	// Metrics, if set, is served at GET /metrics, behind MetricsToken
	// (a bearer token) when that is set.
	Metrics      http.Handler
	MetricsToken string
	// Middleware wraps the whole handler (tracing, HTTP metrics); applied
	// outermost first.
	Middleware []func(http.Handler) http.Handler
	// MaxCallDepth is the deepest request in a chain of Duet calls served
	// (its Duet-Call-Depth header, internal/calldepth): a deeper one is
	// refused with CALL_DEPTH_EXCEEDED (HTTP 508). 0 means
	// calldepth.DefaultMax.
	MaxCallDepth int
}

type identityKey struct{}

// identity is how the request in r authenticated (see authed).
func identity(r *http.Request) auth.Identity {
	id, _ := r.Context().Value(identityKey{}).(auth.Identity)
	return id
}

// New returns the HTTP handler with every route.
func New(o Options) http.Handler {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	mcpH := o.MCP.HTTPHandler(mcpserver.HTTPOptions{MaxBodyBytes: o.MaxBodyBytes, Sessions: o.Sessions, Streams: o.Streams, NoFastPath: o.NoFastPath})
	l := lite.New(o.Catalog, lite.Options{MaxBodyBytes: o.MaxBodyBytes, Codes: Codes})

	mux := http.NewServeMux()
	if o.ResourceMetadata != nil {
		prm := sdkauth.ProtectedResourceMetadataHandler(o.ResourceMetadata)
		mux.Handle(PathResourceMetadata, prm)
		mux.Handle(PathResourceMetadata+"/mcp/http", prm)
	}
	if o.AuthServer != nil {
		mux.Handle("/oauth/", o.AuthServer)
		mux.Handle("GET /.well-known/oauth-authorization-server", o.AuthServer)
	}
	if o.Metrics != nil {
		mux.Handle("GET /metrics", bearerOnly(o.MetricsToken, o.Metrics))
	}
	mux.Handle("/mcp/http", authed(o, duet.SourceMCP, mcpH))
	mux.Handle("POST /mcp/tools/list", authed(o, duet.SourceMCPLite, http.HandlerFunc(l.List)))
	mux.Handle("POST /mcp/tools/call", authed(o, duet.SourceMCPLite, l.Call(identity)))
	if o.API != nil {
		o.API.Register(mux, func(h http.Handler) http.Handler { return authedAPI(o, h) })
	}
	if o.Console != nil {
		o.Console.Register(mux)
	}
	Probes(mux, o.Ready)
	h := traced(hostCheck(o, callDepth(o, mux)))
	for i := len(o.Middleware) - 1; i >= 0; i-- {
		h = o.Middleware[i](h)
	}
	return h
}

// Probes serves an orchestrator's probes on mux: GET /healthz answers "ok"
// while the process serves; GET /readyz answers "ready" once ready (nil:
// always) returns nil within 2 s, else 503 with its message. The API's
// listener and the metrics listener serve the same two.
func Probes(mux *http.ServeMux, ready func(context.Context) error) {
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if ready != nil {
			if err := ready(ctx); err != nil {
				http.Error(w, "not ready: "+duet.ErrorMessage(err), http.StatusServiceUnavailable)
				return
			}
		}
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte("ready\n"))
	})
}

// traced gives every request a trace id: from an incoming W3C traceparent
// header, else a new one, and returns it in X-Duet-Trace-Id.
func traced(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := mcpserver.TraceIDFromTraceparent(r.Header.Get("Traceparent"))
		if id == "" {
			id = duet.NewTraceID()
		}
		w.Header().Set("X-Duet-Trace-Id", id)
		ctx := duet.NewContextWithCaller(r.Context(), duet.Caller{TraceID: id})
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// callDepth reads how deep in a chain of Duet calls the request is (its
// Duet-Call-Depth header) into its caller — a run it starts keeps it, and
// that run's calls carry one more — and refuses a request deeper than
// Options.MaxCallDepth, or one whose header is not a number, before
// anything else is done.
func callDepth(o Options, next http.Handler) http.Handler {
	max := o.MaxCallDepth
	if max <= 0 {
		max = calldepth.DefaultMax
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d, err := calldepth.Parse(r.Header.Values(calldepth.Header), max)
		if err != nil {
			refuse(o, w, r, "", err)
			return
		}
		if d > 0 {
			c, _ := duet.CallerFromContext(r.Context())
			c.CallDepth = d
			r = r.WithContext(duet.NewContextWithCaller(r.Context(), c))
		}
		next.ServeHTTP(w, r)
	})
}

func isLoopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(h, "[]"))
	return ip != nil && ip.IsLoopback()
}

// hostCheck refuses requests whose Host (or Origin) is not allowed: a web
// page on another site cannot reach a Duet on localhost through DNS
// rebinding.
func hostCheck(o Options, next http.Handler) http.Handler {
	anyHost := slices.Contains(o.AllowedHosts, "*")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !anyHost && !hostAllowed(r.Host, o.AllowedHosts) {
			refuse(o, w, r, "", duet.Errorf(duet.CodePermissionDenied, "host %.200s is not allowed (see DUET_ALLOWED_HOSTS)", r.Host))
			return
		}
		if origin := r.Header.Get("Origin"); origin != "" && !originAllowed(origin, o.AllowedOrigins) && !sameOrigin(origin, r.Host) {
			refuse(o, w, r, "", duet.Errorf(duet.CodePermissionDenied, "origin %.200s is not allowed (see DUET_ALLOWED_ORIGINS)", origin))
			return
		}
		next.ServeHTTP(w, r)
	})
}

func hostAllowed(hostport string, allowed []string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	if isLoopbackHost(host) {
		return true
	}
	for _, a := range allowed {
		if strings.EqualFold(a, hostport) || strings.EqualFold(a, host) {
			return true
		}
	}
	return false
}

// sameOrigin reports whether origin names the host the request was sent
// to (which passed the Host check): the console's own pages, served under
// a name in DUET_ALLOWED_HOSTS, possibly behind a proxy that ends TLS.
func sameOrigin(origin, host string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	return strings.EqualFold(u.Host, host) || strings.EqualFold(u.Hostname(), host)
}

func originAllowed(origin string, allowed []string) bool {
	for _, a := range allowed {
		if a == "*" || strings.EqualFold(strings.TrimRight(a, "/"), origin) {
			return true
		}
	}
	// Loopback pages may call a loopback Duet (the Inspector, for example).
	if rest, ok := strings.CutPrefix(origin, "http://"); ok {
		host := rest
		if h, _, err := net.SplitHostPort(rest); err == nil {
			host = h
		}
		return isLoopbackHost(host)
	}
	return false
}

// authed authenticates the request and puts the caller (and the principal,
// to which an MCP session is bound) in its context.
func authed(o Options, source duet.CallSource, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := o.Auth.Authenticate(r.Context(), r)
		if err != nil && source == duet.SourceMCPLite && id.ViaGateway && id.UserID == "" {
			// MCP-Lite: the gateway injects the user into the body instead
			// of a header; the handler requires it there.
			err = nil
		}
		if err != nil {
			if duet.ErrorCode(err) == duet.CodeUnauthenticated {
				w.Header().Set("WWW-Authenticate", challenge(o, r.Header.Get("Authorization") != "", false))
			}
			refuse(o, w, r, source, err)
			return
		}
		if id.Access.Scoped && o.ResourceMetadata != nil {
			w = &scopeChallenger{ResponseWriter: w, challenge: challenge(o, true, true)}
		}
		c, _ := duet.CallerFromContext(r.Context())
		c.UserID, c.Source, c.Access, c.TokenID = id.UserID, source, id.Access, id.TokenID
		ctx := duet.NewContextWithCaller(r.Context(), c)
		ctx = context.WithValue(ctx, identityKey{}, id)
		ctx = mcpserver.WithPrincipal(ctx, id.Principal())
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// authedAPI authenticates a REST request: a personal token or a gateway
// key when the request carries one, else the console's session cookie or
// SSO proxy — credentials a browser sends by itself, so a state-changing
// request must then carry the session's CSRF token (X-Csrf-Token).
func authedAPI(o Options, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var id auth.Identity
		var err error
		if r.Header.Get("Authorization") != "" || r.Header.Get(auth.HeaderAPIKey) != "" {
			id, err = o.Auth.Authenticate(r.Context(), r)
			if err == nil && id.Access.Scoped {
				// An OAuth access token's audience is the MCP endpoint
				// (RFC 8707), and its scopes say what it allows there;
				// the REST API (tokens, servers, sharing) is another
				// resource. Refused, not read as full access.
				id, err = auth.Identity{}, duet.Errorf(duet.CodeUnauthenticated, "an OAuth access token is for Duet's MCP endpoint (/mcp/http), its audience; the REST API takes a personal access token, a gateway key or the console's sign-in")
			}
		} else if id, err = o.Auth.AuthenticateConsole(r.Context(), r, false); err == nil {
			if id.NewCookie != "" {
				auth.SetSessionCookie(w, r, id.NewCookie, id.Session.ExpiresAt)
			}
			err = auth.CheckCSRF(id, r.Method, r.Header.Get(auth.HeaderCSRF))
		} else if duet.ErrorCode(err) == duet.CodeUnauthenticated {
			err = duet.Errorf(duet.CodeUnauthenticated, "authentication required: send Authorization: Bearer <personal access token>, come through the gateway (X-Api-Key), or sign in to the console")
		}
		if err != nil {
			if id.UserID != "" { // a CSRF refusal: audited as the user it names
				c, _ := duet.CallerFromContext(r.Context())
				c.UserID = id.UserID
				r = r.WithContext(duet.NewContextWithCaller(r.Context(), c))
			}
			refuse(o, w, r, duet.SourceAPI, err)
			return
		}
		c, _ := duet.CallerFromContext(r.Context())
		c.UserID, c.Source, c.TokenID = id.UserID, duet.SourceAPI, id.TokenID
		ctx := duet.NewContextWithCaller(r.Context(), c)
		ctx = context.WithValue(ctx, identityKey{}, id)
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// refuse answers a request stopped before any tool ran, in the dialect of
// its endpoint, after the catalog audited it. A client that was refused
// its credentials gets its connection closed: an unauthenticated client
// does not keep a connection (and a file descriptor) open.
func refuse(o Options, w http.ResponseWriter, r *http.Request, source duet.CallSource, err error) {
	c, _ := duet.CallerFromContext(r.Context())
	if source == "" {
		source = duet.SourceMCP
		if strings.HasPrefix(r.URL.Path, "/mcp/tools/") {
			source = duet.SourceMCPLite
		}
		if strings.HasPrefix(r.URL.Path, api.Prefix+"/") {
			source = duet.SourceAPI
		}
	}
	c.Source = source
	code := duet.ErrorCode(o.Catalog.Refuse(catalog.Op{Caller: c, Method: "http " + r.Method + " " + r.URL.Path}, err))
	if code == duet.CodeUnauthenticated || code == duet.CodePermissionDenied {
		w.Header().Set("Connection", "close")
	}
	if strings.HasPrefix(r.URL.Path, "/mcp/tools/") {
		lite.WriteError(w, StatusOf(code), code, duet.ErrorMessage(err))
		return
	}
	if source == duet.SourceAPI || source == duet.SourceWeb || strings.HasPrefix(r.URL.Path, api.Prefix+"/") {
		api.WriteError(w, StatusOf(code), code, duet.ErrorMessage(err))
		return
	}
	mcpserver.WriteJSONRPCError(w, StatusOf(code), RPCCodeOf(code), string(code)+": "+duet.ErrorMessage(err), nil)
}
