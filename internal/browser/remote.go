package browser

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/chromedp/cdproto"
	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/remote"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/netguard"
)

// Remote makes a Pool attach to a browser that runs already instead of
// starting Chromium: a Chromium started with --remote-debugging-port, a
// browser pool service that speaks the DevTools protocol, or Chrome on an
// Android phone through `adb forward`. Each connection counts as one of
// Options.MaxBrowsers; a connection that drops is made again on the next
// NewSession.
type Remote struct {
	// URL is the DevTools endpoint. Accepted forms:
	//   - ws://HOST:PORT/devtools/browser/ID (wss too): the address the
	//     browser prints; used as it is;
	//   - ws://HOST:PORT/PATH with another path: a pool's CDP address,
	//     used as it is;
	//   - http://HOST:PORT or ws://HOST:PORT (https too): the browser's
	//     /json/version names the WebSocket address.
	// The query is kept (a pool's token); user info is refused.
	URL string
	// Name names the browser in messages, such as "Android device R58M123
	// (Pixel 7)". Empty means "the remote browser at HOST:PORT".
	Name string
	// Guard, when set, checks the endpoint's address before connecting:
	// an endpoint a user named (a task's browser setting) gets the network
	// guard of every other outbound connection. Nil checks nothing (an
	// endpoint the operator configured).
	Guard *netguard.Policy
	// Real says the browser runs on a real device: sessions emulate no
	// device preset (NewSession accepts only the zero Device), and
	// Session.Device reports the device's own viewport, pixel ratio and
	// user agent.
	Real bool
	// SharedContext makes sessions use the browser's default context,
	// for browsers that cannot create isolated browser contexts (Chrome on
	// Android): each session is a fresh tab; cookies and the HTTP cache
	// are cleared when it opens, and the storage of every origin it
	// visited when it closes. Sessions then share one cookie jar, so the
	// caller runs one at a time (Options.MaxContextsPerBrowser 1).
	SharedContext bool
}

// MinChromeVersion is the oldest major version of Chrome (or Chromium, or
// Edge) a remote browser may run; older ones fail with
// CodeBrowserVersionUnsupported.
const MinChromeVersion = 100

// connectTimeout bounds the discovery and the WebSocket handshake of a
// remote browser.
const connectTimeout = 15 * time.Second

// endpoint is a parsed Remote.URL.
type endpoint struct {
	u    *url.URL
	name string // for messages: Remote.Name or "the remote browser at HOST:PORT"
}

// ParseRemoteURL checks the form of a DevTools endpoint URL: scheme ws, wss,
// http or https, a host, no user info. It returns CodeInvalidArgument
// naming what is wrong. When noQuery is true, a query is refused too (a URL
// that is stored with a task must not carry a token).
func ParseRemoteURL(raw string, noQuery bool) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Host == "" {
		return nil, duet.Errorf(duet.CodeInvalidArgument, "browser endpoint %q is not a URL such as ws://127.0.0.1:9222 or http://browsers.internal:9222", raw)
	}
	switch u.Scheme {
	case "ws", "wss", "http", "https":
	default:
		return nil, duet.Errorf(duet.CodeInvalidArgument, "browser endpoint %s: scheme %q, want ws, wss, http or https", u.Host, u.Scheme)
	}
	if u.User != nil {
		return nil, duet.Errorf(duet.CodeInvalidArgument, "browser endpoint %s: credentials do not belong in the URL", u.Host)
	}
	if noQuery && (u.RawQuery != "" || u.Fragment != "") {
		return nil, duet.Errorf(duet.CodeInvalidArgument, "browser endpoint %s: a query (such as a token) cannot be stored with a task; set DUET_BROWSER_URL instead", u.Host)
	}
	if u.Port() == "" {
		switch u.Scheme {
		case "ws", "http":
			u.Host = net.JoinHostPort(u.Hostname(), "80")
		default:
			u.Host = net.JoinHostPort(u.Hostname(), "443")
		}
	}
	return u, nil
}

func (r *Remote) endpoint() (*endpoint, error) {
	u, err := ParseRemoteURL(r.URL, false)
	if err != nil {
		return nil, err
	}
	name := r.Name
	if name == "" {
		name = "the remote browser at " + u.Host
	}
	return &endpoint{u: u, name: name}, nil
}

// wsURL finds the WebSocket address of the endpoint: the URL itself, or the
// webSocketDebuggerUrl of its /json/version. It also checks the browser
// version that /json/version reports.
func (r *Remote) wsURL(ctx context.Context, ep *endpoint, hc *http.Client) (string, error) {
	u := *ep.u
	direct := (u.Scheme == "ws" || u.Scheme == "wss") && strings.Trim(u.Path, "/") != ""
	if direct {
		return u.String(), nil
	}
	ver := u
	ver.Scheme = map[string]string{"ws": "http", "wss": "https", "http": "http", "https": "https"}[u.Scheme]
	ver.Path, ver.RawPath = strings.TrimRight(u.Path, "/")+"/json/version", ""
	ws, product, err := fetchVersion(ctx, hc, &ver, ep.name)
	if err != nil {
		if (u.Scheme == "ws" || u.Scheme == "wss") && duet.ErrorCode(err) == duet.CodeBrowserProtocolMismatch {
			// A pool that answers CDP at its root without the HTTP
			// discovery endpoints: try the WebSocket itself.
			return u.String(), nil
		}
		return "", err
	}
	if product != "" {
		if err := checkProduct(product, ep.name); err != nil {
			return "", err
		}
	}
	if u.RawQuery != "" && !strings.Contains(ws, "?") {
		ws += "?" + u.RawQuery
	}
	return ws, nil
}

// fetchVersion reads /json/version and returns webSocketDebuggerUrl and
// Browser.
func fetchVersion(ctx context.Context, hc *http.Client, u *url.URL, name string) (string, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return "", "", duet.WrapError(duet.CodeInvalidArgument, err, "%s: bad endpoint", name)
	}
	resp, err := hc.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			ue.URL = u.Scheme + "://" + u.Host + u.Path // the query may hold a pool's token; logs get no copy
		}
		return "", "", dialError(err, name, u.Host)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	var v struct {
		Browser string `json:"Browser"`
		WS      string `json:"webSocketDebuggerUrl"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &v) != nil || v.WS == "" {
		what := fmt.Sprintf("HTTP %d", resp.StatusCode)
		if mt != "" {
			what += " " + mt
		}
		return "", "", duet.Errorf(duet.CodeBrowserProtocolMismatch,
			"%s does not speak the DevTools protocol: %s answered %s, not a browser's version with its WebSocket address; point it at a Chromium started with --remote-debugging-port, or at its ws:// address",
			name, u.Path, what)
	}
	ws, err := url.Parse(v.WS)
	if err != nil || (ws.Scheme != "ws" && ws.Scheme != "wss") || ws.Host == "" {
		return "", "", duet.Errorf(duet.CodeBrowserProtocolMismatch, "%s named a WebSocket address that does not parse", name)
	}
	return v.WS, v.Browser, nil
}

// dialError turns a failed connection into CodeURLRefused (the guard),
// CodeBrowserUnavailable (nothing listens, no route) or
// CodeBrowserProtocolMismatch (something answered, but not a browser).
func dialError(err error, name, hostport string) error {
	if duet.ErrorCode(err) == duet.CodeURLRefused {
		return duet.WrapError(duet.CodeURLRefused, err, "%s: %s", name, duet.ErrorMessage(err))
	}
	var ne net.Error
	var oe *net.OpError
	var de *net.DNSError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return duet.WrapError(duet.CodeBrowserUnavailable, err,
			"cannot reach %s: nothing listens on %s (connection refused); start the browser with --remote-debugging-port, or fix the endpoint", name, hostport)
	case errors.As(err, &de):
		return duet.WrapError(duet.CodeBrowserUnavailable, err, "cannot reach %s: host %s not found", name, de.Name)
	case errors.As(err, &ne) && ne.Timeout(), errors.Is(err, context.DeadlineExceeded):
		return duet.WrapError(duet.CodeBrowserUnavailable, err, "cannot reach %s: %s did not answer in time", name, hostport)
	case errors.As(err, &oe):
		return duet.WrapError(duet.CodeBrowserUnavailable, err, "cannot reach %s: %v", name, oe.Err)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET):
		return duet.WrapError(duet.CodeBrowserUnavailable, err, "cannot reach %s: %s closed the connection", name, hostport)
	}
	msg := shortErr(err)
	if m := handshakeStatus.FindStringSubmatch(err.Error()); m != nil {
		msg = "the WebSocket handshake got " + m[1]
	} else if strings.Contains(err.Error(), "websocket handshake failed") {
		msg = "the WebSocket handshake failed"
	}
	return duet.WrapError(duet.CodeBrowserProtocolMismatch, err, "%s does not speak the DevTools protocol: %s", name, msg)
}

// handshakeStatus finds the status of a refused WebSocket handshake in the
// error of chromedp's dialer.
var handshakeStatus = regexp.MustCompile(`unexpected status "([^"]*)"`)

// shortErr is the innermost message of err.
func shortErr(err error) string {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err.Error()
		}
		err = u
	}
}

// checkProduct checks the product of a browser ("HeadlessChrome/156.0.8078.114",
// "Chrome/120.0.6099.230", "Edg/120.0.2210.91"): a Chromium-based browser of
// MinChromeVersion or later.
func checkProduct(product, name string) error {
	p, ver, ok := strings.Cut(product, "/")
	major, err := strconv.Atoi(strings.SplitN(ver, ".", 2)[0])
	if !ok || err != nil {
		return duet.Errorf(duet.CodeBrowserProtocolMismatch, "%s reports the browser %q, which Duet cannot identify as Chromium", name, product)
	}
	switch p {
	case "Chrome", "HeadlessChrome", "Chromium", "HeadlessChromium", "Edg", "HeadlessEdg", "Opera":
	default:
		return duet.Errorf(duet.CodeBrowserProtocolMismatch,
			"%s is %s, not a Chromium-based browser: Duet drives Chrome, Chromium and Edge over the DevTools protocol", name, product)
	}
	if major < MinChromeVersion {
		return duet.Errorf(duet.CodeBrowserVersionUnsupported,
			"%s runs %s; Duet needs Chrome %d or later: update the browser", name, product, MinChromeVersion)
	}
	return nil
}

// connect attaches to the remote browser of r under base: it finds the
// WebSocket address, connects, and checks the browser's version. The
// returned context is the browser's: it ends when the connection drops.
func (r *Remote) connect(base context.Context, logf, errf func(string, ...any), h *holder) (context.Context, context.CancelFunc, error) {
	ep, err := r.endpoint()
	if err != nil {
		return nil, nil, err
	}
	dctx, cancel := context.WithTimeout(base, connectTimeout)
	defer cancel()
	hc := &http.Client{Timeout: connectTimeout}
	if r.Guard != nil {
		hc = r.Guard.Client()
		hc.Timeout = connectTimeout
		if err := r.Guard.CheckURL(dctx, httpForm(ep.u)); err != nil {
			return nil, nil, duet.WrapError(duet.CodeURLRefused, err, "%s: %s", ep.name, duet.ErrorMessage(err))
		}
	}
	ws, err := r.wsURL(dctx, ep, hc)
	if err != nil {
		return nil, nil, err
	}
	wu, err := url.Parse(ws)
	if err != nil {
		return nil, nil, duet.Errorf(duet.CodeBrowserProtocolMismatch, "%s named a WebSocket address that does not parse", ep.name)
	}
	if r.Guard != nil {
		if err := r.Guard.CheckURL(dctx, httpForm(wu)); err != nil {
			return nil, nil, duet.WrapError(duet.CodeURLRefused, err, "%s: %s", ep.name, duet.ErrorMessage(err))
		}
	}
	if wu.Scheme == "ws" {
		// Chrome accepts DevTools connections only with a Host header that
		// is an IP address or localhost.
		if ip, err := resolveHost(dctx, wu.Hostname()); err == nil {
			wu.Host = net.JoinHostPort(ip, wu.Port())
		}
	}
	actx, acancel := chromedp.NewAllocatorContext(base, &dialer{url: wu.String(), hold: h})
	bctx, bcancel := chromedp.NewContext(actx, chromedp.WithLogf(logf), chromedp.WithErrorf(errf))
	stop := func() { bcancel(); acancel() }
	connected := make(chan error, 1)
	go func() { connected <- chromedp.Do(bctx) }()
	select {
	case err = <-connected:
	case <-dctx.Done():
		err = dctx.Err()
	}
	if err != nil {
		stop()
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, nil, duet.WrapError(duet.CodeBrowserProtocolMismatch, scrub(err, wu.RawQuery),
				"%s accepted the connection but did not answer as a browser within %s", ep.name, connectTimeout)
		}
		de := dialError(err, ep.name, wu.Host)
		var e *duet.Error
		if errors.As(de, &e) {
			e.Err = scrub(e.Err, wu.RawQuery)
		}
		return nil, nil, de
	}
	vctx, vcancel := context.WithTimeout(bctx, 10*time.Second)
	v, err := chromedp.CallBrowser(vctx, cdpbrowser.GetVersion, cdp.Empty{})
	vcancel()
	if err == nil {
		err = checkProduct(v.Product, ep.name)
	} else {
		err = duet.WrapError(duet.CodeBrowserProtocolMismatch, err, "%s did not answer Browser.getVersion", ep.name)
	}
	if err != nil {
		stop()
		return nil, nil, err
	}
	return bctx, stop, nil
}

// scrub returns err with its text cleaned of query (a pool's token), which
// chromedp's dialer quotes; the logs get the error, never the token.
func scrub(err error, query string) error {
	if err == nil || query == "" || !strings.Contains(err.Error(), query) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), query, "(query elided)"))
}

// httpForm is u with a ws scheme turned into http, for the guard.
func httpForm(u *url.URL) string {
	c := *u
	switch c.Scheme {
	case "ws":
		c.Scheme = "http"
	case "wss":
		c.Scheme = "https"
	}
	return c.String()
}

// resolveHost returns host as an IP address: itself, or its first address.
func resolveHost(ctx context.Context, host string) (string, error) {
	if net.ParseIP(host) != nil {
		return host, nil
	}
	addrs, err := net.DefaultResolver.LookupHost(ctx, host)
	if err != nil || len(addrs) == 0 {
		return "", fmt.Errorf("resolving %s: %w", host, err)
	}
	return addrs[0], nil
}

// dialer is the allocator of a remote browser: chromedp's remote allocator
// (the WebSocket at url, with no change to the address), which also gives
// hold the pool's handle on the connection (hold.go).
type dialer struct {
	url  string
	hold *holder
	wg   sync.WaitGroup
}

// Allocate connects to the browser.
func (a *dialer) Allocate(ctx context.Context, opts ...chromedp.BrowserOption) (*chromedp.Browser, error) {
	if chromedp.FromContext(ctx) == nil {
		return nil, chromedp.ErrInvalidContext
	}
	// The connection outlives ctx until the pages of the browser's
	// context are closed.
	wctx, cancel := context.WithCancel(context.Background())
	a.wg.Go(func() {
		<-ctx.Done()
		chromedp.Cancel(ctx)
		cancel()
	})
	dctx, dcancel := context.WithTimeout(wctx, connectTimeout)
	defer dcancel()
	conn, err := remote.DialContext(dctx, a.url)
	if err != nil {
		return nil, fmt.Errorf("could not dial %q: %w", a.url, err)
	}
	if a.hold == nil {
		return chromedp.NewBrowserTransport(wctx, conn, opts...)
	}
	a.hold.mu.Lock()
	a.hold.write = func(m *cdproto.Message) error { return conn.Write(wctx, m) } // Conn.Write is safe beside chromedp's
	a.hold.mu.Unlock()
	return chromedp.NewBrowserTransport(wctx, heldConn{conn, a.hold}, opts...)
}

// heldConn is the connection to a remote browser, which hands the replies
// to the holder's commands to the holder and the rest to chromedp.
type heldConn struct {
	*remote.Conn
	hold *holder
}

// Read reads the next message for chromedp.
func (c heldConn) Read(ctx context.Context, msg *cdproto.Message) error {
	for {
		if err := c.Conn.Read(ctx, msg); err != nil {
			return err
		}
		if !c.hold.deliver(msg) {
			return nil
		}
		*msg = cdproto.Message{}
	}
}

// Write sends chromedp's message msg, which the holder sees first.
func (c heldConn) Write(ctx context.Context, msg *cdproto.Message) error {
	c.hold.sending(msg.Method, msg.SessionID)
	return c.Conn.Write(ctx, msg)
}

// Wait waits until the connection is closed.
func (a *dialer) Wait() { a.wg.Wait() }

// Attaches tells chromedp that the browser runs already.
func (a *dialer) Attaches() bool { return true }
