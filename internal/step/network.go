package step

import (
	"golang.org/x/net/http/httpguts"

	"context"
	"regexp"
	"strings"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/eval"
)

// What the network kinds share (route, waitForResponse, expectRequest):
// the extension a driver implements, and URL patterns.

// Router is a Page whose requests a case can route (network mocking) and
// observe, through the browser's own protocol. internal/browser's sessions
// are Routers, on every kind of browser (local, remote, phones).
type Router interface {
	// AddRoute routes the requests that match r for the rest of the case.
	AddRoute(ctx context.Context, r PageRoute) error
	// WaitForResponse waits for a response f matches that no earlier
	// call returned (one that came before the call counts).
	WaitForResponse(ctx context.Context, f RequestFilter) (Response, error)
	// Requests returns "METHOD URL" of each request the case's pages sent
	// that f matches, and how many went past the log's bound unseen.
	Requests(f RequestFilter) (matched []string, unlogged int)
	// RequestsChanged is closed when the pages next send a request or
	// receive an answer.
	RequestsChanged() <-chan struct{}
}

// PageRoute is a route as a driver applies it (duet.Route, rendered).
type PageRoute struct {
	URL        *regexp.Regexp
	Method     string
	Times      int
	Fulfil     bool
	Status     int
	Headers    map[string]string
	Body       []byte
	Abort      string
	SetHeaders map[string]string
	Delay      time.Duration
}

// RequestFilter picks requests of the case's pages.
type RequestFilter struct {
	URL    *regexp.Regexp
	Method string
	Status int
}

// Response is a response a page received.
type Response struct {
	URL       string
	Method    string
	Status    int
	Headers   map[string]string
	MIMEType  string
	Body      []byte
	Truncated bool
}

// router returns the case's page as a Router.
func router(ctx context.Context, env Env, st *duet.Step) (Router, error) {
	return pageAs[Router](ctx, env, st, "cannot route requests (its driver lacks Router)")
}

// GlobRegexp returns the regular expression of a URL glob: ** matches any
// characters, * any but /, {a,b} either, and the rest itself; a glob that
// starts with / is a path, on any origin. The expression matches the
// whole URL.
func GlobRegexp(glob string) (*regexp.Regexp, error) {
	var b strings.Builder
	b.WriteString("^")
	if strings.HasPrefix(glob, "/") && !strings.HasPrefix(glob, "//") {
		b.WriteString(`[a-zA-Z][a-zA-Z0-9+.\-]*://[^/]*`)
	}
	depth := 0
	for i := 0; i < len(glob); i++ {
		switch ch := glob[i]; {
		case ch == '*' && i+1 < len(glob) && glob[i+1] == '*':
			b.WriteString(".*")
			i++
		case ch == '*':
			b.WriteString("[^/]*")
		case ch == '{':
			depth++
			b.WriteString("(?:")
		case ch == '}' && depth > 0:
			depth--
			b.WriteString(")")
		case ch == ',' && depth > 0:
			b.WriteString("|")
		default:
			b.WriteString(regexp.QuoteMeta(string(ch)))
		}
	}
	if depth != 0 {
		return nil, duet.Errorf(duet.CodeInvalidArgument, "URL pattern %q: a { without its }", glob)
	}
	b.WriteString("$")
	return regexp.Compile(b.String())
}

// urlKeys are the keys that say which URLs a network step is about.
var urlKeys = []Key{
	{Name: "url", Type: Template, Doc: "a glob the whole URL matches: `**` any characters, `*` any but `/`, `{a,b}` either; one that starts with `/` is a path on any origin"},
	{Name: "urlMatches", Type: Template, Doc: "a regular expression (RE2) the URL matches, instead of url"},
	{Name: "method", Type: Text, Doc: "only requests of this HTTP method (GET, POST, ...)"},
}

// urlForm is the form of a step that matches requests by their URL (and
// method): the URL keys, then keys; short is its shorthand (nil: none).
func urlForm(short *Short, keys ...Key) Form {
	return Form{Short: short, Keys: append(append([]Key{}, urlKeys...), keys...), AtLeastOne: []string{"url", "urlMatches"}}
}

// compileURLMatch reads url or urlMatches (exactly one) and method of the
// mapping n, checking the pattern when it is not a template.
func compileURLMatch(c *Compiler, st *duet.Step, n *Node) (glob, re, method string) {
	glob, re = c.String(n, "url", false), c.String(n, "urlMatches", false)
	if (glob == "") == (re == "") {
		c.Errf(n, "%s needs exactly one of url, urlMatches", st.Kind)
		return
	}
	if glob != "" {
		c.Template(n.Get("url"), "url", glob)
		if !eval.IsTemplate(glob) {
			if _, err := GlobRegexp(glob); err != nil {
				c.Errf(n.Get("url"), "url: %s", duet.ErrorMessage(err))
			}
		}
	}
	if re != "" {
		c.Template(n.Get("urlMatches"), "urlMatches", re)
		if !eval.IsTemplate(re) {
			if _, err := regexp.Compile(re); err != nil {
				c.Errf(n.Get("urlMatches"), "urlMatches: invalid regular expression: %v", err)
			}
		}
	}
	method = strings.ToUpper(c.String(n, "method", false))
	if method != "" && !httpguts.ValidHeaderFieldName(method) {
		c.Errf(n.Get("method"), "method %q is not an HTTP method", method)
	}
	return glob, re, method
}

// urlPattern renders a step's glob or regular expression.
func urlPattern(env Env, glob, re string) (*regexp.Regexp, error) {
	if glob != "" {
		g, err := render(env, glob)
		if err != nil {
			return nil, err
		}
		return GlobRegexp(g)
	}
	s, err := render(env, re)
	if err != nil {
		return nil, err
	}
	out, err := regexp.Compile(s)
	if err != nil {
		return nil, duet.Errorf(duet.CodeInvalidArgument, "invalid regular expression %q: %v", s, err)
	}
	return out, nil
}

// urlTitle names a network step after its pattern.
func urlTitle(kind duet.StepKind, method, glob, re string) string {
	s := string(kind)
	if method != "" {
		s += " " + method
	}
	if glob != "" {
		return s + " " + glob
	}
	return s + " /" + re + "/"
}
