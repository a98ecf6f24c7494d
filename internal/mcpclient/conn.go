package mcpclient

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/calldepth"
	"github.com/duet-test/duet/internal/oauthclient"
	"github.com/duet-test/duet/internal/redact"
	"github.com/duet-test/duet/internal/serverkey"
)

// sessionKey identifies a cached session: sessions are never shared between
// users, even for the same server.
type sessionKey struct {
	owner     string
	serverKey string
}

// session is one open MCP session.
type session struct {
	cs        *mcp.ClientSession
	transport string
	version   time.Time // registration UpdatedAt when connected
	done      chan struct{}
	// creds are the credential values the session was opened with and
	// those its OAuth handler (oauth, nil for none) obtained by the time
	// the client's credGen was credsAt: scrubbed from all it returns
	// (scrub.go).
	creds   *redact.Set
	oauth   *oauthclient.Handler
	credsAt atomic.Uint64
}

func (s *session) alive() bool {
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

// entry is a cache slot: a session being connected or connected.
type entry struct {
	ready    chan struct{} // closed when connecting ends
	s        *session      // set before ready is closed; nil on failure
	err      error
	inUse    atomic.Int32
	retired  atomic.Bool
	lastUsed atomic.Int64 // unix nanoseconds
	once     sync.Once
}

func (e *entry) idleSince(d time.Duration) bool {
	select {
	case <-e.ready:
	default:
		return false
	}
	return e.inUse.Load() == 0 && time.Since(time.Unix(0, e.lastUsed.Load())) > d
}

func (e *entry) close() {
	e.once.Do(func() {
		go func() {
			<-e.ready
			if e.s != nil {
				_ = e.s.cs.Close()
			}
		}()
	})
}

// acquire returns the cache entry of a live session of (reg.Owner,
// reg.ServerKey), connecting when there is none, the cached one died, or the
// registration changed since it connected. Call release when the call is
// done. An operation that may ask a person through a (not nil) gets a
// session of its own instead, whose OAuth handler asks through a, outside
// the cache: release closes it.
func (c *Client) acquire(ctx context.Context, reg *duet.MCPServer, a *Authorizer) (*entry, error) {
	if a != nil {
		s, err := c.connect(ctx, reg, a)
		if err != nil {
			return nil, err
		}
		e := &entry{ready: make(chan struct{}), s: s}
		close(e.ready)
		e.inUse.Add(1)
		e.retired.Store(true)
		return e, nil
	}
	k := sessionKey{reg.Owner, reg.ServerKey}
	for attempt := 0; ; attempt++ {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return nil, duet.WrapError(duet.CodeUnavailable, errClosed, "the MCP client is shutting down")
		}
		e := c.sessions[k]
		if e == nil {
			e = &entry{ready: make(chan struct{})}
			e.lastUsed.Store(time.Now().UnixNano())
			e.inUse.Add(1)
			c.sessions[k] = e
			c.mu.Unlock()
			s, err := c.connect(ctx, reg, nil)
			e.s, e.err = s, err
			close(e.ready)
			if err != nil {
				c.drop(k, e)
				e.inUse.Add(-1)
				return nil, err
			}
			return e, nil
		}
		e.inUse.Add(1)
		c.mu.Unlock()
		select {
		case <-e.ready:
		case <-ctx.Done():
			e.inUse.Add(-1)
			return nil, c.classify(ctx, reg, ctx.Err(), nil)
		}
		if e.s != nil && e.s.alive() && e.s.version.Equal(reg.UpdatedAt) {
			return e, nil
		}
		// Failed, dead or made with old credentials: replace it. Another
		// caller's failed connect is reported rather than repeated.
		c.release(e)
		c.retire(k, e)
		if e.s == nil && attempt > 0 {
			return nil, e.err
		}
	}
}

// release ends one use of e; a retired entry closes with its last use.
func (c *Client) release(e *entry) {
	e.lastUsed.Store(time.Now().UnixNano())
	if e.inUse.Add(-1) == 0 && e.retired.Load() {
		e.close()
	}
}

// retire removes e from the cache and closes its session once no call uses
// it.
func (c *Client) retire(k sessionKey, e *entry) {
	c.drop(k, e)
	e.retired.Store(true)
	if e.inUse.Load() == 0 {
		e.close()
	}
}

// drop removes e from the cache if it is still there.
func (c *Client) drop(k sessionKey, e *entry) {
	c.mu.Lock()
	if c.sessions[k] == e {
		delete(c.sessions, k)
	}
	c.mu.Unlock()
}

// connect opens a new session to reg with the owner's credentials: Streamable
// HTTP first (unless the last sync found only the legacy transport works),
// then legacy HTTP+SSE when the endpoint answers a 4xx that says it is not a
// Streamable HTTP endpoint. A failure is classified, probing the endpoint when
// needed. Returns MCP_CALL_TIMEOUT, MCP_AUTH_FAILED, MCP_UNREACHABLE,
// MCP_PROTOCOL_MISMATCH, URL_REFUSED, UNAVAILABLE, INTERNAL. The session's
// OAuth handler asks a person through a when the server wants a new
// authorization; a nil a asks nobody.
func (c *Client) connect(ctx context.Context, reg *duet.MCPServer, a *Authorizer) (*session, error) {
	sec, ver, err := c.loadSecret(ctx, reg)
	if err != nil {
		return nil, err
	}
	creds, at := sessionCreds(sec), c.credGen.Load()
	var oh *oauthclient.Handler
	if reg.Auth != "" {
		if sec.OAuth == nil {
			return nil, duet.Errorf(duet.CodeInternal, "the OAuth configuration of MCP server %s is missing from its credential; register it again", reg.Name)
		}
		oh = c.oauthFor(reg, sec, ver)
	}
	hc := c.httpClient(reg, sec.Headers)
	if oh != nil {
		hc.Transport.(*roundTripper).dpop = oh.BoundKey
	}
	opened := func(s *session) *session {
		s.creds, s.oauth = creds, oh
		s.credsAt.Store(at)
		if oh != nil {
			// What the handler obtained while connecting.
			c.scrubber(s, &observer{})
		}
		return s
	}
	// The SDK keeps the values of this context for the session's own
	// streams: they must not carry the first call's trace id.
	ctx = withTrace(ctx, "")
	order := []string{duet.TransportStreamableHTTP, duet.TransportSSE}
	if reg.Transport == duet.TransportSSE {
		order = []string{duet.TransportSSE, duet.TransportStreamableHTTP}
	}
	// The observer of the connect lives on in the session's own streams:
	// it stops noting what they send once the connect is over.
	obs := &observer{}
	defer obs.settled.Store(true)
	s, err := c.dial(withObserver(ctx, obs), reg, hc, oauthHandler(oh, a), order[0])
	if err == nil {
		return opened(s), nil
	}
	if ctx.Err() == nil && obs.notMCPStatus() {
		// A plain 4xx (not 401/403/429): the endpoint may speak the other
		// transport.
		obs2 := &observer{}
		defer obs2.settled.Store(true)
		if s, err2 := c.dial(withObserver(ctx, obs2), reg, hc, oauthHandler(oh, a), order[1]); err2 == nil {
			return opened(s), nil
		}
	}
	return nil, c.diagnose(ctx, reg, hc, err, obs, creds)
}

// dial connects over one transport. The OAuth handler oh, if any, supplies
// and renews the access token (Streamable HTTP only: the legacy transport
// predates MCP authorization).
func (c *Client) dial(ctx context.Context, reg *duet.MCPServer, hc *http.Client, oh auth.OAuthHandler, transport string) (*session, error) {
	var t mcp.Transport
	switch transport {
	case duet.TransportSSE:
		// The legacy transport's event stream lives in the context given
		// to Connect: give it one that lasts as long as the session.
		t = &lifetimeTransport{t: &mcp.SSEClientTransport{Endpoint: reg.URL, HTTPClient: hc}, life: c.ctx}
	default:
		t = &mcp.StreamableClientTransport{Endpoint: reg.URL, HTTPClient: hc, MaxRetries: 3, OAuthHandler: oh}
	}
	k := sessionKey{reg.Owner, reg.ServerKey}
	mc := mcp.NewClient(&mcp.Implementation{Name: "duet", Title: "Duet", Version: c.opts.Version}, &mcp.ClientOptions{
		Capabilities:       &mcp.ClientCapabilities{},
		ElicitationHandler: elicitDefaults,
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			c.scheduleResync(k)
		},
		Logger: c.log,
	})
	cs, err := mc.Connect(ctx, t, nil)
	if err != nil {
		return nil, err
	}
	s := &session{cs: cs, transport: transport, version: reg.UpdatedAt, done: make(chan struct{})}
	go func() {
		_ = cs.Wait()
		close(s.done)
	}()
	return s, nil
}

// oauthHandler is h as the SDK takes it, asking the person through a (nil:
// nobody): nil (no OAuth) when h is nil.
func oauthHandler(h *oauthclient.Handler, a *Authorizer) auth.OAuthHandler {
	if h == nil {
		return nil
	}
	return h.Authorizing(a)
}

// lifetimeTransport connects t with a context that keeps the values of the
// caller's but ends only when the connection is closed or life ends;
// connecting itself still stops when the caller's context ends.
type lifetimeTransport struct {
	t    mcp.Transport
	life context.Context
}

func (lt *lifetimeTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stopLife := context.AfterFunc(lt.life, cancel)
	stopCall := context.AfterFunc(ctx, cancel)
	conn, err := lt.t.Connect(cctx)
	if !stopCall() {
		// The caller's context ended while connecting.
		if err == nil {
			conn.Close()
			err = ctx.Err()
		}
	}
	if err != nil {
		stopLife()
		cancel()
		return nil, err
	}
	return &lifetimeConn{Connection: conn, stop: func() { stopLife(); cancel() }}, nil
}

type lifetimeConn struct {
	mcp.Connection
	stop func()
}

func (c *lifetimeConn) Close() error {
	err := c.Connection.Close()
	c.stop()
	return err
}

// httpClient returns a client over the shared guarded transport that adds
// headers to every request, records what it sees for the observer in the
// request's context, and never follows redirects (a redirect is diagnosed,
// and credentials never travel to another origin).
func (c *Client) httpClient(reg *duet.MCPServer, headers map[string]string) *http.Client {
	origin := ""
	if u, err := url.Parse(reg.URL); err == nil {
		origin = serverkey.Origin(u)
	}
	var base http.RoundTripper = c.http
	if c.opts.WrapTransport != nil {
		base = c.opts.WrapTransport(base)
	}
	static := make(map[string]bool, len(headers))
	for k := range headers {
		static[http.CanonicalHeaderKey(k)] = true
	}
	base = sentRecorder{next: base, static: static}
	return &http.Client{
		Transport: &roundTripper{base: base, headers: headers, origin: origin, traceDomain: c.opts.TraceDomain, maxDepth: c.opts.MaxCallDepth},
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

type roundTripper struct {
	base    http.RoundTripper
	headers map[string]string
	origin  string // credentials go to this origin only
	// dpop returns the key the access token is bound to (nil for a bearer
	// token): requests then carry DPoP proofs (dpop.go).
	dpop func() *oauthclient.DPoPKey
	// traceDomain says whether a host gets the traceparent (nil: none).
	traceDomain func(host string) bool
	// maxDepth bounds the Duet-Call-Depth requests carry.
	maxDepth int
}

func (rt *roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	// A RoundTripper must not change the request it is given: a copy
	// with its own headers, the only part changed below.
	r := new(http.Request)
	*r = *req
	r.Header = req.Header.Clone()
	if r.Header == nil {
		r.Header = http.Header{}
	}
	sameOrigin := serverkey.Origin(req.URL) == rt.origin
	if sameOrigin {
		for k, v := range rt.headers {
			r.Header.Set(k, v)
		}
	}
	setParamHeaders(r)
	// How deep in a chain of Duet calls this request is (calldepth): a
	// Duet it reaches refuses beyond its bound. Invoke refused deeper
	// calls before they got here.
	if err := calldepth.Set(req.Context(), r.Header, rt.maxDepth); err != nil {
		return nil, err
	}
	if tid := traceFromContext(req.Context()); tid != "" && r.Header.Get("Traceparent") == "" && rt.traceDomain != nil && rt.traceDomain(req.URL.Host) {
		r.Header.Set("Traceparent", "00-"+tid+"-"+spanID()+"-01")
	}
	var resp *http.Response
	var err error
	var k *oauthclient.DPoPKey
	if rt.dpop != nil && sameOrigin && r.Header.Get("Authorization") != "" {
		k = rt.dpop()
	}
	if k != nil {
		resp, err = oauthclient.DPoPRequest(rt.base, k, r)
	} else {
		resp, err = rt.base.RoundTrip(r)
	}
	if obs := observerFrom(req.Context()); obs != nil {
		obs.saw(req.Method, resp, err)
		if err == nil && req.Method == http.MethodPost && obs.capture {
			resp.Body = &teeBody{rc: resp.Body, obs: obs}
		}
	}
	return resp, err
}

// observer records the HTTP responses of one operation (a connect or a
// call), for classifying failures and, when capture is set, keeps the bytes
// of POST response bodies so that a tool result can be passed on exactly as
// the server sent it.
type observer struct {
	capture bool
	// sent are the secret values the operation's requests carried beyond
	// the session's (sentRecorder), until settled.
	sent    redact.Set
	settled atomic.Bool
	mu      sync.Mutex
	seen    []response
	body    bytes.Buffer
	ctype   string
	over    bool
	taken   bool // captured handed the body over: nothing more is kept
}

type response struct {
	method   string
	status   int
	ctype    string
	location string
	wwwAuth  string
	err      error
}

const maxCapture = 64 << 20

func (o *observer) saw(method string, resp *http.Response, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.seen) >= 64 {
		// A connect's observer lives on in the session's event stream
		// requests; the first answers are the ones that matter.
		return
	}
	r := response{method: method, err: err}
	if resp != nil {
		r.status, r.ctype = resp.StatusCode, resp.Header.Get("Content-Type")
		r.location, r.wwwAuth = resp.Header.Get("Location"), resp.Header.Get("Www-Authenticate")
		if method == http.MethodPost && resp.StatusCode/100 == 2 && o.ctype == "" {
			o.ctype = r.ctype
		}
	}
	o.seen = append(o.seen, r)
}

// status returns the first response with a status for which pick is true.
func (o *observer) find(pick func(response) bool) (response, bool) {
	if o == nil {
		return response{}, false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, r := range o.seen {
		if pick(r) {
			return r, true
		}
	}
	return response{}, false
}

// authFailure returns the last 401 or 403 response, if one was seen and
// no request succeeded after it (an OAuth client authorizes and retries).
func (o *observer) authFailure() (response, bool) {
	if o == nil {
		return response{}, false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for i := len(o.seen) - 1; i >= 0; i-- {
		switch r := o.seen[i]; {
		case r.status == http.StatusUnauthorized || r.status == http.StatusForbidden:
			return r, true
		case r.status/100 == 2 && r.method == http.MethodPost:
			return response{}, false
		}
	}
	return response{}, false
}

// notMCPStatus reports whether the endpoint answered a 4xx other than 401,
// 403 and 429, as a server without this transport does.
func (o *observer) notMCPStatus() bool {
	_, ok := o.find(func(r response) bool {
		return r.status >= 400 && r.status < 500 && r.status != 401 && r.status != 403 && r.status != 429
	})
	return ok
}

// transient returns a 429 or 5xx response, if one was seen.
func (o *observer) transient() (response, bool) {
	return o.find(func(r response) bool {
		return r.status == http.StatusTooManyRequests || r.status == http.StatusBadGateway ||
			r.status == http.StatusServiceUnavailable || r.status == http.StatusGatewayTimeout
	})
}

// delivered reports whether any request got an HTTP response.
func (o *observer) delivered() bool {
	_, ok := o.find(func(r response) bool { return r.status != 0 })
	return ok
}

// captured hands over the bytes kept of the POST response bodies and
// their content type; what the SDK reads after that (the rest of an event
// stream) is no longer kept, so the caller owns the bytes without a copy.
func (o *observer) captured() ([]byte, string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.over || o.taken {
		return nil, ""
	}
	o.taken = true
	return o.body.Bytes(), o.ctype
}

// teeBody copies what the SDK reads of a response body into the observer.
type teeBody struct {
	rc  io.ReadCloser
	obs *observer
}

func (t *teeBody) Read(p []byte) (int, error) {
	n, err := t.rc.Read(p)
	if n > 0 {
		t.obs.mu.Lock()
		if t.obs.body.Len()+n > maxCapture {
			t.obs.over = true
		} else if !t.obs.over && !t.obs.taken {
			t.obs.body.Write(p[:n])
		}
		t.obs.mu.Unlock()
	}
	return n, err
}

func (t *teeBody) Close() error { return t.rc.Close() }

type observerKey struct{}

func withObserver(ctx context.Context, o *observer) context.Context {
	return context.WithValue(ctx, observerKey{}, o)
}

func observerFrom(ctx context.Context) *observer {
	o, _ := ctx.Value(observerKey{}).(*observer)
	return o
}

type traceKey struct{}

func withTrace(ctx context.Context, traceID string) context.Context {
	return context.WithValue(ctx, traceKey{}, traceID)
}

func traceFromContext(ctx context.Context) string {
	s, _ := ctx.Value(traceKey{}).(string)
	if len(s) != 32 {
		return ""
	}
	return s
}

func spanID() string {
	return duet.NewTraceID()[16:] // the random half
}

// isSessionGone reports whether err says the server no longer knows the
// session (HTTP 404 for its id): the call did not run, so it is safe to
// retry on a new session.
func isSessionGone(err error) bool {
	return errors.Is(err, mcp.ErrSessionMissing)
}
