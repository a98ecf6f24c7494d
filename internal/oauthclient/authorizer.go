package oauthclient

import (
	"context"
	"errors"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/escape"
)

// An Authorizer shows a person the authorization server's page and brings
// back its answer: the authorization code flow needs one. It is given to
// the operation that may ask the person, explicitly: [Handler.Login], or
// [Handler.Authorizing] for the session an operation opens. Without one, an
// operation that needs the person's authorization fails with
// MCP_AUTH_FAILED asking them to run `duet server login`.
type Authorizer struct {
	// RedirectURL is where the authorization server sends the browser back.
	RedirectURL string
	// Fetch directs the person to the authorization URL and returns the code
	// and state the authorization server redirected back with.
	Fetch auth.AuthorizationCodeFetcher
}

// AutoApprover returns an Authorizer for authorization servers that approve
// at once without asking anyone (test and conformance servers): it requests
// the authorization URL itself with hc (through the SSRF guard), and takes
// the code from the redirect it answers with.
func AutoApprover(hc *http.Client) *Authorizer {
	return &Authorizer{RedirectURL: "http://127.0.0.1/callback", Fetch: func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, args.URL, nil)
		if err != nil {
			return nil, err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return nil, err
		}
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		loc, err := resp.Location()
		if resp.StatusCode/100 != 3 || err != nil {
			return nil, fmt.Errorf("the authorization endpoint answered %d without a redirect: it wants a person at a browser", resp.StatusCode)
		}
		return authorizationResult(loc.Query())
	}}
}

func authorizationResult(q url.Values) (*auth.AuthorizationResult, error) {
	if e := q.Get("error"); e != "" {
		msg := "the authorization server refused: " + escape.Line(e, 60)
		if d := q.Get("error_description"); d != "" {
			msg += ": " + escape.Line(d, 200)
		}
		return nil, errors.New(msg)
	}
	if q.Get("code") == "" {
		return nil, errors.New("the authorization server redirected back without a code")
	}
	return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
}

// LoopbackListener receives the authorization server's redirect on
// 127.0.0.1, the way a command-line client does (RFC 8252 section 7.3).
type LoopbackListener struct {
	a    *Authorizer
	ln   net.Listener
	srv  *http.Server
	show func(authURL string)
	mu   sync.Mutex
	want string // the state awaited
	got  chan url.Values
}

// ListenLoopback listens on 127.0.0.1:port (0: a free port) for the
// redirect to http://127.0.0.1:PORT/callback. show is called with each
// authorization URL, for the person to open. Close it when done.
func ListenLoopback(port int, show func(authURL string)) (*LoopbackListener, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return nil, duet.WrapError(duet.CodeUnavailable, err, "cannot listen on 127.0.0.1:%d for the authorization redirect", port)
	}
	l := &LoopbackListener{ln: ln, show: show, got: make(chan url.Values, 1)}
	l.a = &Authorizer{RedirectURL: fmt.Sprintf("http://127.0.0.1:%d/callback", ln.Addr().(*net.TCPAddr).Port), Fetch: l.fetch}
	l.srv = &http.Server{Handler: l, ReadHeaderTimeout: 10 * time.Second}
	go l.srv.Serve(ln)
	return l, nil
}

// Authorizer returns the Authorizer that waits for the redirect.
func (l *LoopbackListener) Authorizer() *Authorizer { return l.a }

// Close stops listening.
func (l *LoopbackListener) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return l.srv.Shutdown(ctx)
}

func (l *LoopbackListener) fetch(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
	u, err := url.Parse(args.URL)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.want = u.Query().Get("state")
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		l.want = ""
		l.mu.Unlock()
	}()
	l.show(args.URL)
	select {
	case q := <-l.got:
		return authorizationResult(q)
	case <-ctx.Done():
		return nil, fmt.Errorf("no authorization arrived: %w", ctx.Err())
	}
}

func (l *LoopbackListener) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/callback" {
		http.NotFound(w, r)
		return
	}
	q := r.URL.Query()
	l.mu.Lock()
	want := l.want
	ok := want != "" && q.Get("state") == want
	if ok {
		l.want = "" // one answer per authorization
	}
	l.mu.Unlock()
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if !ok {
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, page("Duet is not waiting for this authorization (unknown or used state). Start again with duet server login."))
		return
	}
	l.got <- q
	if e := q.Get("error"); e != "" {
		io.WriteString(w, page("The authorization server refused: "+e+". You can close this tab."))
		return
	}
	io.WriteString(w, page("Duet is authorized. You can close this tab and return to the terminal."))
}

func page(msg string) string {
	return "<!doctype html><html><head><title>Duet</title></head><body><p>" + html.EscapeString(msg) + "</p></body></html>\n"
}
