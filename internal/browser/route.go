package browser

import (
	"golang.org/x/net/http/httpguts"

	"context"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/duet-test/duet"
)

// Network mocking and the requests a page sent (route, waitForResponse,
// expectRequest steps), through the browser's own protocol: the Fetch
// domain pauses the requests, the Network domain reports what was sent and
// answered. Both work the same in local Chromium, a remote browser and
// Chrome on a phone.
//
// A session's routes and the network guard share one Fetch handler per
// tab (guard.go): a paused document request is judged by the guard first,
// and a refused one fails whatever a route says, so a route never opens a
// way the guard closed (a page fulfilled by a mock at a refused origin
// would run with that origin's rights in the browser). A route changes no
// request's destination: it answers itself, fails the request, or lets it
// go where the page sent it, with other headers.

// Route is what the session does to the requests that match it.
type Route struct {
	// URL must match the whole request URL (without its fragment).
	URL *regexp.Regexp
	// Method limits the route to one method ("" any), case-insensitive.
	Method string
	// Times is how many requests the route handles; 0 means no end.
	Times int

	// Fulfil answers the request with Status (200 when 0), Headers and
	// Body; no request leaves the browser.
	Fulfil  bool
	Status  int
	Headers map[string]string
	Body    []byte
	// Abort fails the request with a network error (lower-case names:
	// failed, aborted, timedout, connectionrefused, ...; see AbortReasons).
	Abort string
	// SetHeaders adds or replaces request headers of a request that goes
	// on to the network.
	SetHeaders map[string]string
	// Delay holds the request first.
	Delay time.Duration
}

// AbortReasons are the names Route.Abort accepts.
var AbortReasons = []string{"failed", "aborted", "timedout", "accessdenied", "connectionclosed", "connectionreset",
	"connectionrefused", "connectionaborted", "connectionfailed", "namenotresolved", "internetdisconnected",
	"addressunreachable", "blockedbyclient", "blockedbyresponse"}

// RequestFilter picks requests of the session's pages.
type RequestFilter struct {
	URL    *regexp.Regexp // matches the whole URL (without its fragment)
	Method string         // "" any, case-insensitive
	Status int            // WaitForResponse: the status the response must have (0 any)
}

// Response is a response a page received, as WaitForResponse returns it.
type Response struct {
	URL       string
	Method    string
	Status    int
	Headers   map[string]string // names lower-cased
	MIMEType  string
	Body      []byte
	Truncated bool // the body was longer than MaxResponseBody
}

// Bounds of the request log of a session.
const (
	// MaxLoggedRequests bounds the requests a session remembers; later ones
	// are counted, not kept.
	MaxLoggedRequests = 5000
	// MaxResponseBody bounds the body WaitForResponse returns.
	MaxResponseBody = 1 << 20
	// maxRoutes bounds the routes of one session.
	maxRoutes = 100
)

// netRequest is one request of the log.
type netRequest struct {
	id       network.RequestID
	tab      context.Context // the chromedp context of its tab
	url      string
	method   string
	status   int // 0 until the response arrives
	headers  network.Headers
	mime     string
	done     bool // the body has arrived, or loading failed
	failed   bool
	consumed bool // a WaitForResponse returned it
	early    bool // logged from the Fetch handler (logEarly); id "" until its response
	paired   bool // a popup's early request seen both by the Fetch handler and the Network domain

	// An early request: its interception id, and its response's body,
	// which the Network domain does not keep for it, taken in the Fetch
	// handler (keepResponse).
	interception fetch.RequestID
	body         []byte
	hasBody      bool
}

// route is a Route of the session, with what is left of its Times.
type route struct {
	Route
	left int // -1: no end
}

// netState is the network state of a session: its routes and its request
// log. Its own lock: the event handlers must not wait for a session call.
type netState struct {
	mu           sync.Mutex
	routes       []*route
	intercepting map[context.Context]bool // tabs whose Fetch handler runs
	watching     map[context.Context]bool // tabs whose requests are logged
	reqs         []*netRequest
	byID         map[network.RequestID]*netRequest
	unlogged     int
	unpaired     int           // early requests the Network domain may still report (pairLocked)
	changed      chan struct{} // closed and replaced when the log changes
}

func (n *netState) routing() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.routes) > 0
}

// changedLocked returns the channel closed at the next change of the log.
func (n *netState) changedLocked() chan struct{} {
	if n.changed == nil {
		n.changed = make(chan struct{})
	}
	return n.changed
}

func (n *netState) notifyLocked() {
	if n.changed != nil {
		close(n.changed)
		n.changed = nil
	}
}

// watchNetwork logs the requests of the tab of tctx (once per tab).
func (s *Session) watchNetwork(tctx context.Context) error {
	if !s.net.watch(tctx) {
		return nil
	}
	return chromedp.Listen(tctx, s.net.logger(tctx))
}

// watch notes that the requests of the tab of tctx are logged from now on;
// false when they were already.
func (n *netState) watch(tctx context.Context) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.watching[tctx] {
		return false
	}
	if n.watching == nil {
		n.watching, n.byID = map[context.Context]bool{}, map[network.RequestID]*netRequest{}
	}
	n.watching[tctx] = true
	return true
}

// logger returns the listener that logs the requests of the tab of tctx.
func (n *netState) logger(tctx context.Context) func(ev any) {
	return func(ev any) {
		n.mu.Lock()
		defer n.mu.Unlock()
		switch e := ev.(type) {
		case *network.EventRequestWillBeSent:
			if e.Request == nil {
				return
			}
			if old := n.byID[e.RequestID]; old != nil && e.RedirectResponse != nil {
				// A redirect hop: it ends here, the next goes under the id.
				old.status, old.headers, old.mime, old.done = int(e.RedirectResponse.Status), e.RedirectResponse.Headers, e.RedirectResponse.MimeType, true
				old.id = ""
			}
			if r := n.pairLocked(tctx, e.Request.URL, e.Request.Method, true); r != nil {
				r.id = e.RequestID
				n.byID[e.RequestID] = r
				return
			}
			if len(n.reqs) >= MaxLoggedRequests {
				n.unlogged++
				return
			}
			r := &netRequest{id: e.RequestID, tab: tctx, url: e.Request.URL, method: e.Request.Method}
			n.reqs = append(n.reqs, r)
			n.byID[e.RequestID] = r
		case *network.EventResponseReceived:
			r := n.byID[e.RequestID]
			if r == nil && e.Response != nil {
				r = n.claimLocked(tctx, e.RequestID, e.Response.URL)
			}
			if r != nil && r.id != "" && e.Response != nil {
				r.status, r.headers, r.mime = int(e.Response.Status), e.Response.Headers, e.Response.MimeType
			}
		case *network.EventLoadingFinished:
			if r := n.byID[e.RequestID]; r != nil && r.id != "" {
				r.done = true
			}
		case *network.EventLoadingFailed:
			if r := n.byID[e.RequestID]; r != nil && r.id != "" {
				r.done, r.failed = true, true
			}
		default:
			return
		}
		n.notifyLocked()
	}
}

// logEarly logs a request of the tab of tctx that the Fetch handler paused
// and the Network domain does not report: its page sent it before its
// renderer took Network.enable (hold.go). The domain reports its response,
// under an id the log learns then (claimLocked).
func (n *netState) logEarly(tctx context.Context, ev *fetch.EventRequestPaused) {
	if ev.ResponseStatusCode != 0 || ev.ResponseErrorReason != "" {
		return // its response, paused to keep its body (keepEarlyResponse)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.earlyLocked(ev.RequestID) != nil {
		return
	}
	if r := n.pairLocked(tctx, ev.Request.URL, ev.Request.Method, false); r != nil {
		r.early, r.interception = true, ev.RequestID
		return
	}
	if len(n.reqs) >= MaxLoggedRequests {
		n.unlogged++
		return
	}
	n.reqs = append(n.reqs, &netRequest{tab: tctx, url: ev.Request.URL, method: ev.Request.Method, early: true, interception: ev.RequestID})
	n.unpaired++
	n.notifyLocked()
}

// pairLocked finds the request of the tab of tctx to url with method that
// the other side logged and did not pair yet, and pairs it: one the Fetch
// handler logged early (early true, from the Network domain's report), or
// one the Network domain reported (from the Fetch handler's early pause).
// A request the page's renderer prepared before it took Network.enable
// and sent after pauses without a network id, and is reported too.
func (n *netState) pairLocked(tctx context.Context, url, method string, early bool) *netRequest {
	if early && n.unpaired == 0 {
		return nil
	}
	for _, r := range n.reqs {
		if r.tab == tctx && !r.paired && r.early == early && (!early || r.id == "") && r.url == url && r.method == method {
			r.paired = true
			if early {
				n.unpaired--
			}
			return r
		}
	}
	return nil
}

// earlyLocked returns the early request of the interception id, or nil.
func (n *netState) earlyLocked(id fetch.RequestID) *netRequest {
	for i := len(n.reqs) - 1; i >= 0; i-- {
		if r := n.reqs[i]; r.early && r.interception == id {
			return r
		}
	}
	return nil
}

// wantsResponse reports whether the paused request id is an early one
// whose response the Fetch handler must pause too, to keep its body.
func (n *netState) wantsResponse(id fetch.RequestID) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	r := n.earlyLocked(id)
	return r != nil && !r.hasBody
}

// keepResponse keeps the response of the early request of the
// interception id: what WaitForResponse returns for it.
func (n *netState) keepResponse(id fetch.RequestID, status int, headers []*fetch.HeaderEntry, body []byte) {
	n.mu.Lock()
	defer n.mu.Unlock()
	r := n.earlyLocked(id)
	if r == nil {
		return
	}
	r.status, r.headers, r.body, r.hasBody, r.done = status, network.Headers{}, body, true, true
	for _, h := range headers {
		r.headers[h.Name] = h.Value
		if strings.EqualFold(h.Name, "Content-Type") {
			r.mime, _, _ = strings.Cut(h.Value, ";")
			r.mime = strings.TrimSpace(r.mime)
		}
	}
	n.notifyLocked()
}

// keepEarlyResponse keeps the body of the response of an early request
// paused at its response (continueRequest asked for the pause), and lets
// the response go on.
func (s *Session) keepEarlyResponse(tctx context.Context, ev fetch.EventRequestPaused) {
	ctx, cancel := context.WithTimeout(tctx, 15*time.Second)
	defer cancel()
	if ev.ResponseErrorReason == "" && (ev.ResponseStatusCode < 300 || ev.ResponseStatusCode >= 400) {
		if res, err := chromedp.Call(ctx, fetch.GetResponseBody, fetch.GetResponseBodyParams{RequestID: ev.RequestID}); err == nil {
			s.net.keepResponse(ev.RequestID, int(ev.ResponseStatusCode), ev.ResponseHeaders, res.Body)
		}
	}
	_, err := chromedp.Call(ctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: ev.RequestID})
	if err != nil && s.ctx.Err() == nil {
		s.pool.log.Debug("browser: cannot continue a response", "err", err)
	}
}

// claimLocked gives the id of a response the log has no request for to
// the first request of the tab of tctx to url that logEarly logged and
// that has no response yet; nil when there is none.
func (n *netState) claimLocked(tctx context.Context, id network.RequestID, url string) *netRequest {
	for _, r := range n.reqs {
		if r.early && r.id == "" && !r.done && r.tab == tctx && r.url == url {
			r.id = id
			n.byID[id] = r
			return r
		}
	}
	return nil
}

// intercept starts the Fetch handler of the tab of tctx (once per tab) and
// sets what it pauses: the document requests for the guard, and every
// request when the session has routes.
func (s *Session) intercept(tctx context.Context, cctx context.Context) error {
	first := s.net.startIntercepting(tctx)
	if first {
		events := chromedp.Events(tctx, fetch.RequestPaused)
		mainFrame := ""
		if c := chromedp.FromContext(tctx); c != nil && c.Target != nil {
			mainFrame = string(c.Target.TargetID)
		}
		judge := s.judgeIn(tctx, mainFrame)
		s.dialogs.Go(func() {
			for ev, err := range events {
				if err != nil {
					return
				}
				judge(&ev)
			}
		})
	}
	ctx, cancel := bind(tctx, cctx)
	defer cancel()
	return chromedp.Do(ctx, command(fetch.Enable, s.net.fetchParams()))
}

// startIntercepting notes that the Fetch handler of the tab of tctx runs
// from now on; false when it already did.
func (n *netState) startIntercepting(tctx context.Context) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	first := !n.intercepting[tctx]
	if n.intercepting == nil {
		n.intercepting = map[context.Context]bool{}
	}
	n.intercepting[tctx] = true
	return first
}

// fetchParams is the Fetch.enable of a tab of the session: the document
// requests for the guard, and every request when the session has routes.
func (n *netState) fetchParams() fetch.EnableParams {
	pattern := &fetch.RequestPattern{URLPattern: "*", RequestStage: fetch.RequestStageRequest}
	if !n.routing() {
		pattern.ResourceType = network.ResourceTypeDocument
	}
	return fetch.EnableParams{Patterns: []*fetch.RequestPattern{pattern}}
}

// judgeIn returns the Fetch handler of the tab of tctx, whose top frame is
// mainFrame: each paused request judged on its own, so that a name lookup
// or a route's delay does not hold the others.
func (s *Session) judgeIn(tctx context.Context, mainFrame string) func(ev *fetch.EventRequestPaused) {
	return func(ev *fetch.EventRequestPaused) {
		if ev.ResponseStatusCode != 0 || ev.ResponseErrorReason != "" {
			s.dialogs.Go(func() { s.keepEarlyResponse(tctx, *ev) })
			return
		}
		s.dialogs.Go(func() { s.judge(tctx, *ev, string(ev.FrameID) == mainFrame) })
	}
}

// AddRoute adds a route to the session: from now on, in every tab of the
// session, the requests that match it are fulfilled, aborted or sent with
// other headers. A later route that matches a request wins over an earlier
// one. Errors: CodeInvalidArgument, CodeTooLarge (more than 100 routes),
// CodeCancelled, CodeBrowserError.
func (s *Session) AddRoute(ctx context.Context, r Route) error {
	const op = "route"
	switch {
	case r.URL == nil:
		return opError(duet.CodeInvalidArgument, op, nil, "route: no URL pattern")
	case r.Abort != "" && !slices.Contains(AbortReasons, r.Abort):
		return opError(duet.CodeInvalidArgument, op, nil, "route: abort %q is not one of %s", r.Abort, strings.Join(AbortReasons, ", "))
	case r.Abort != "" && r.Fulfil:
		return opError(duet.CodeInvalidArgument, op, nil, "route: a route fulfils or aborts, not both")
	case r.Fulfil && (r.Status < 0 || r.Status > 999 || (r.Status > 0 && r.Status < 100)):
		return opError(duet.CodeInvalidArgument, op, nil, "route: status %d is not an HTTP status", r.Status)
	}
	for name := range r.SetHeaders {
		if !httpguts.ValidHeaderFieldName(name) || strings.EqualFold(name, "host") {
			return opError(duet.CodeInvalidArgument, op, nil, "route: cannot set the request header %q", name)
		}
	}
	c, err := s.begin(ctx, op, 0)
	if err != nil {
		return err
	}
	defer s.end(c)
	s.net.mu.Lock()
	if len(s.net.routes) >= maxRoutes {
		s.net.mu.Unlock()
		return opError(duet.CodeTooLarge, op, nil, "route: a case has at most %d routes", maxRoutes)
	}
	rt := &route{Route: r, left: -1}
	if r.Times > 0 {
		rt.left = r.Times
	}
	s.net.routes = append(s.net.routes, rt)
	s.net.mu.Unlock()
	// Every tab pauses every request from now on.
	for _, tctx := range s.tabContexts() {
		if err := s.intercept(tctx, c.c); err != nil {
			return s.fail(c, err, nil)
		}
	}
	return nil
}

// match returns the route that handles a request (the latest that
// matches), counting the request against its Times; nil when none does.
func (n *netState) match(u, method string) *route {
	n.mu.Lock()
	defer n.mu.Unlock()
	for i := len(n.routes) - 1; i >= 0; i-- {
		r := n.routes[i]
		if r.left == 0 || (r.Method != "" && !strings.EqualFold(r.Method, method)) || !r.URL.MatchString(u) {
			continue
		}
		if r.left > 0 {
			r.left--
		}
		return r
	}
	return nil
}

// routeRequest handles a paused request with the session's route for it;
// false when no route matches (the request goes on as it is).
func (s *Session) routeRequest(ctx context.Context, ev fetch.EventRequestPaused) bool {
	r := s.net.match(ev.Request.URL, ev.Request.Method)
	if r == nil {
		return false
	}
	if r.Delay > 0 {
		t := time.NewTimer(r.Delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return true
		}
	}
	var err error
	switch {
	case r.Abort != "":
		_, err = chromedp.Call(ctx, fetch.FailRequest, fetch.FailRequestParams{RequestID: ev.RequestID, ErrorReason: abortReason(r.Abort)})
	case r.Fulfil:
		status := r.Status
		if status == 0 {
			status = http.StatusOK
		}
		var hs []*fetch.HeaderEntry
		acao := false
		for k, v := range r.Headers {
			hs = append(hs, &fetch.HeaderEntry{Name: k, Value: v})
			acao = acao || strings.EqualFold(k, "Access-Control-Allow-Origin")
		}
		if origin := headerValue(ev.Request.Headers, "Origin"); origin != "" && !acao {
			// A mocked API of another origin answers the page as the
			// real one would have to (CORS).
			hs = append(hs, &fetch.HeaderEntry{Name: "Access-Control-Allow-Origin", Value: origin})
		}
		slices.SortFunc(hs, func(a, b *fetch.HeaderEntry) int { return strings.Compare(a.Name, b.Name) })
		_, err = chromedp.Call(ctx, fetch.FulfillRequest, fetch.FulfillRequestParams{RequestID: ev.RequestID, ResponseCode: int64(status), ResponseHeaders: hs, Body: r.Body})
		if err == nil {
			s.net.keepResponse(ev.RequestID, status, hs, r.Body)
		}
	default:
		var hs []*fetch.HeaderEntry
		for k, v := range ev.Request.Headers {
			if _, set := lookupFold(r.SetHeaders, k); !set {
				if sv, ok := v.(string); ok {
					hs = append(hs, &fetch.HeaderEntry{Name: k, Value: sv})
				}
			}
		}
		for k, v := range r.SetHeaders {
			hs = append(hs, &fetch.HeaderEntry{Name: k, Value: v})
		}
		p := fetch.ContinueRequestParams{RequestID: ev.RequestID}
		if s.net.wantsResponse(ev.RequestID) {
			p.InterceptResponse = new(true)
		}
		if len(r.SetHeaders) > 0 {
			p.Headers = hs
		}
		_, err = chromedp.Call(ctx, fetch.ContinueRequest, p)
	}
	if err != nil && s.ctx.Err() == nil {
		s.pool.log.Debug("browser: cannot answer a routed request", "err", err)
	}
	return true
}

func abortReason(name string) network.ErrorReason {
	for _, r := range []network.ErrorReason{network.ErrorReasonFailed, network.ErrorReasonAborted, network.ErrorReasonTimedOut,
		network.ErrorReasonAccessDenied, network.ErrorReasonConnectionClosed, network.ErrorReasonConnectionReset,
		network.ErrorReasonConnectionRefused, network.ErrorReasonConnectionAborted, network.ErrorReasonConnectionFailed,
		network.ErrorReasonNameNotResolved, network.ErrorReasonInternetDisconnected, network.ErrorReasonAddressUnreachable,
		network.ErrorReasonBlockedByClient, network.ErrorReasonBlockedByResponse} {
		if strings.EqualFold(string(r), name) {
			return r
		}
	}
	return network.ErrorReasonFailed
}

func lookupFold(m map[string]string, k string) (string, bool) {
	for mk, v := range m {
		if strings.EqualFold(mk, k) {
			return v, true
		}
	}
	return "", false
}

func headerValue(h network.Headers, name string) string {
	for k, v := range h {
		if strings.EqualFold(k, name) {
			s, _ := v.(string)
			return s
		}
	}
	return ""
}

func (f RequestFilter) matches(r *netRequest) bool {
	return (f.Method == "" || strings.EqualFold(f.Method, r.method)) && f.URL != nil && f.URL.MatchString(r.url)
}

// Requests returns the URLs of the requests the session's pages sent that
// f matches (a redirect hop counts as a request), and how many requests
// were past the log's bound (MaxLoggedRequests) and not seen.
func (s *Session) Requests(f RequestFilter) (matched []string, unlogged int) {
	s.net.mu.Lock()
	defer s.net.mu.Unlock()
	for _, r := range s.net.reqs {
		if f.matches(r) {
			matched = append(matched, r.method+" "+r.url)
		}
	}
	return matched, s.net.unlogged
}

// RequestsChanged returns a channel closed when the session's pages next
// send a request or receive an answer.
func (s *Session) RequestsChanged() <-chan struct{} {
	s.net.mu.Lock()
	defer s.net.mu.Unlock()
	return s.net.changedLocked()
}

// WaitForResponse waits for a response that f matches and that no earlier
// WaitForResponse returned — one that came before the call counts, so a
// click that starts the request may come first — and returns it with its
// body (MaxResponseBody at most). Errors: CodeStepTimeout when none comes
// in time (naming the responses seen), CodeCancelled, CodeBrowserError.
func (s *Session) WaitForResponse(ctx context.Context, f RequestFilter) (Response, error) {
	const op = "waitForResponse"
	if f.URL == nil {
		return Response{}, opError(duet.CodeInvalidArgument, op, nil, "waitForResponse: no URL pattern")
	}
	c, err := s.begin(ctx, op, 0)
	if err != nil {
		return Response{}, err
	}
	defer s.end(c)
	for {
		s.net.mu.Lock()
		var hit *netRequest
		var seen []string
		for _, r := range s.net.reqs {
			if r.consumed || r.status == 0 || !f.matches(r) {
				continue
			}
			if f.Status != 0 && r.status != f.Status {
				seen = append(seen, r.method+" "+r.url+" → "+http.StatusText(r.status))
				continue
			}
			if r.done {
				hit = r
				break
			}
		}
		if hit != nil {
			hit.consumed = true
		}
		ch := s.net.changedLocked()
		s.net.mu.Unlock()
		if hit != nil {
			return s.response(c, hit)
		}
		select {
		case <-ch:
		case <-c.c.Done():
			if e := ctxCancelled(c.ctx, op, c.c.Err()); e != nil {
				return Response{}, e
			}
			msg := "waitForResponse: no response matched in " + c.elapsed().String()
			if len(seen) > 0 {
				msg += "; seen with another status: " + strings.Join(seen[:min(len(seen), 5)], ", ")
			}
			return Response{}, opError(duet.CodeStepTimeout, op, c.c.Err(), "%s", msg)
		}
	}
}

// response reads the body of a logged response.
func (s *Session) response(c *call, r *netRequest) (Response, error) {
	out := Response{URL: r.url, Method: r.method, Status: r.status, MIMEType: r.mime, Headers: map[string]string{}}
	for k, v := range r.headers {
		if sv, ok := v.(string); ok {
			out.Headers[strings.ToLower(k)] = sv
		}
	}
	if r.hasBody {
		out.Body = r.body
		if len(out.Body) > MaxResponseBody {
			out.Body, out.Truncated = out.Body[:MaxResponseBody], true
		}
		return out, nil
	}
	if r.failed || r.id == "" || r.method == http.MethodHead {
		return out, nil
	}
	bctx, cancel := bind(r.tab, c.c)
	defer cancel()
	body, err := chromedp.Call(bctx, network.GetResponseBody, network.GetResponseBodyParams{RequestID: r.id})
	if err != nil {
		// A body the browser no longer keeps (or never had, as for a
		// redirect): the response without it.
		return out, nil //nolint:nilerr // the status and headers are the answer
	}
	data := body.Body
	if len(data) > MaxResponseBody {
		data, out.Truncated = data[:MaxResponseBody], true
	}
	out.Body = data
	return out, nil
}
