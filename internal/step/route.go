package step

import (
	"golang.org/x/net/http/httpguts"

	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"mime"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/eval"
)

// Bounds of a route step.
const (
	// maxRouteBody bounds the body a route answers with (a file of the
	// suite's folder, a text, JSON), kept with the step.
	maxRouteBody = 1 << 20
	// maxRouteDelay bounds how long a route holds a request.
	maxRouteDelay = 10 * time.Second
	// maxRouteTimes bounds times:.
	maxRouteTimes = 10000
)

// routeFulfil are the keys of a route that answers the request itself.
var routeFulfil = []string{"status", "headers", "json", "body", "file", "contentType"}

var routeForm = urlForm(nil,
	Key{Name: "times", Type: Int, Doc: "how many requests the route handles before it stops matching (default: all)"},
	Key{Name: "status", Type: Int, Doc: "fulfil with this HTTP status (default 200 with a body)"},
	Key{Name: "headers", Type: MapOf(Template), Doc: "fulfil with these response headers"},
	Key{Name: "json", Type: Any, Doc: "fulfil with this JSON body (its strings are templates; Content-Type application/json)"},
	Key{Name: "body", Type: Template, Doc: "fulfil with this text body"},
	Key{Name: "file", Type: Text, Doc: "fulfil with a file of the suite's folder (a path relative to it; 1 MiB at most), read when the suite compiles"},
	Key{Name: "contentType", Type: Text, Doc: "the body's Content-Type (default: by json, the file's extension, or text/plain)"},
	Key{Name: "abort", Type: Enum(abortReasons...), Doc: "fail the request with this network error"},
	Key{Name: "setHeaders", Type: MapOf(Template), Doc: "let the request go on with these request headers added or replaced"},
	Key{Name: "delay", Type: Duration, Doc: "hold the request this long first (at most 10s)"},
)

// RouteKind is the route step.
var RouteKind = register(&Kind{
	Name:    "route",
	Section: Browser,
	Order:   105,
	Summary: "Mock the network of the case's page: the requests that match a URL pattern (and a method) are fulfilled (status, headers, a JSON, text or file body), aborted with a network error, delayed, or sent with other headers — from this step to the end of the case, in every tab.",
	Form:    routeForm,

	Example: "- route: {url: \"**/api/products\", json: []}\n" +
		"- route: {url: /api/products, method: GET, status: 500, json: {error: down}, times: 1}\n" +
		"- route: {url: \"**/*.{png,jpg}\", abort: blockedbyclient}\n" +
		"- route: {urlMatches: \"/api/.*\", delay: 300ms, setHeaders: {X-Test-Run: \"${run.id}\"}}\n",
	Doc: "A route holds from its step to the end of the case, in every tab of the case's page; " +
		"put it before the step that makes the requests (usually before `open`). When several routes match a request, the latest wins; " +
		"`times: N` makes a route stop after N requests, so the next one reaches the earlier route or the network. " +
		"A route that fulfils answers in the browser: no request leaves it (a request from another origin gets " +
		"`Access-Control-Allow-Origin` set to its origin unless `headers` say otherwise). " +
		"A route never changes where a request goes, and the network guard judges the page's navigations before any route: " +
		"a destination the guard refuses stays refused, mocked or not (docs/governance.md). " +
		"Routes work through the browser's own protocol (the DevTools `Fetch` domain), on local Chromium, remote browsers and Chrome on phones.",
	Agent: "`route: {url: \"**/api/products\", json: [], status: 200}` — mock the requests that match (also `file: data/x.json`, `body:`, `headers:`, `abort: failed`, `delay: 500ms`, `setHeaders:`, `method:`, `times:`); before `open`",
	Compile: browserStep(false, func(c *Compiler, st *duet.Step, n *Node, bd *body) {
		if !bd.isMap {
			c.Errf(n, "route needs a mapping: {url, json|body|file|status|abort|setHeaders|delay, ...}")
			return
		}
		c.AllowKeys(n, routeForm.KeyNames()...)
		r := &duet.Route{}
		bd.b.Route = r
		r.URL, r.URLMatches, r.Method = compileURLMatch(c, st, n)
		if tn := n.Get("times"); tn != nil {
			r.Times = c.intIn(n, "times", 1, maxRouteTimes)
		}
		if sn := n.Get("status"); sn != nil {
			r.Status = c.intIn(n, "status", 100, 999)
		}
		r.Headers = c.headerMap(n, "headers")
		r.SetHeaders = c.headerMap(n, "setHeaders")
		for name := range r.SetHeaders {
			if strings.EqualFold(name, "host") {
				c.Errf(n.Get("setHeaders"), "setHeaders: a route cannot change Host (it never changes where a request goes)")
			}
		}
		bodies := 0
		if bn := n.Get("body"); bn != nil {
			bodies++
			r.Body = c.String(n, "body", false)
			c.Template(bn, "body", r.Body)
			if len(r.Body) > maxRouteBody {
				c.Errf(bn, "body: more than %d bytes", maxRouteBody)
			}
		}
		if jn := n.Get("json"); jn != nil {
			bodies++
			r.JSON = jn.Plain()
			if r.JSON == nil {
				c.Errf(jn, "json: give a value (a null body is body: \"null\" with contentType: application/json)")
			}
			if err := eval.CheckValue(r.JSON, c.Scope.Vars); err != nil {
				c.Errf(jn, "json: %v", err)
			}
			if b, _ := json.Marshal(r.JSON); len(b) > maxRouteBody {
				c.Errf(jn, "json: more than %d bytes", maxRouteBody)
			}
		}
		if fn := n.Get("file"); fn != nil {
			bodies++
			r.File = c.String(n, "file", true)
			r.FileData = c.routeFile(fn, r.File)
			if r.ContentType == "" {
				r.ContentType = mime.TypeByExtension(path.Ext(r.File))
			}
		}
		if bodies > 1 {
			c.Errf(n, "route: use one of json, body, file")
		}
		if ct := c.String(n, "contentType", false); ct != "" {
			if _, _, err := mime.ParseMediaType(ct); err != nil {
				c.Errf(n.Get("contentType"), "contentType %q is not a media type: %v", ct, err)
			}
			r.ContentType = ct
		}
		if an := n.Get("abort"); an != nil {
			r.Abort = c.String(n, "abort", true)
			if !slices.Contains(abortReasons, r.Abort) {
				c.Errf(an, "abort must be one of %s, got %q", strings.Join(abortReasons, ", "), r.Abort)
			}
			for _, k := range append([]string{"setHeaders"}, routeFulfil...) {
				if n.Get(k) != nil {
					c.Errf(n.Get(k), "route: %s does not go with abort (an aborted request gets no answer)", k)
				}
			}
		}
		if r.SetHeaders != nil {
			for _, k := range routeFulfil {
				if n.Get(k) != nil {
					c.Errf(n.Get(k), "route: %s does not go with setHeaders (setHeaders changes a request that goes on to the network; %s answers it)", k, k)
				}
			}
		}
		if dn := n.Get("delay"); dn != nil {
			r.DelayMs = c.Timeout(dn, maxRouteDelay)
		}
		if !r.Fulfils() && r.Abort == "" && r.SetHeaders == nil && r.DelayMs == 0 && n.Get("headers") == nil && n.Get("contentType") == nil {
			c.Errf(n, "route needs what to do: json, body, file or status (fulfil), abort, setHeaders or delay")
		}
		if (n.Get("headers") != nil || n.Get("contentType") != nil) && !r.Fulfils() && r.Abort == "" && r.SetHeaders == nil {
			c.Errf(n, "route: headers and contentType are of a response: add status, json, body or file (setHeaders changes the request)")
		}
	}),
	Title: func(st *duet.Step) string {
		if r := st.Browser.Route; r != nil {
			return urlTitle("route", r.Method, r.URL, r.URLMatches)
		}
		return "route"
	},
	Run: func(ctx context.Context, env Env, st *duet.Step) (string, any, error) {
		if st.Browser == nil || st.Browser.Route == nil {
			return "", nil, noBody(st)
		}
		r := st.Browser.Route
		pr, err := pageRoute(env, r)
		if err != nil {
			return "", nil, err
		}
		rt, err := router(ctx, env, st)
		if err != nil {
			return "", nil, err
		}
		return "", nil, rt.AddRoute(ctx, pr)
	},
})

var abortReasons = []string{"failed", "aborted", "timedout", "accessdenied", "connectionclosed", "connectionreset",
	"connectionrefused", "connectionaborted", "connectionfailed", "namenotresolved", "internetdisconnected",
	"addressunreachable", "blockedbyclient", "blockedbyresponse"}

// pageRoute renders a route's templates into what the driver applies.
func pageRoute(env Env, r *duet.Route) (PageRoute, error) {
	re, err := urlPattern(env, r.URL, r.URLMatches)
	if err != nil {
		return PageRoute{}, err
	}
	pr := PageRoute{URL: re, Method: r.Method, Times: r.Times, Abort: r.Abort, Delay: time.Duration(r.DelayMs) * time.Millisecond}
	if pr.SetHeaders, err = renderMap(env, r.SetHeaders); err != nil {
		return PageRoute{}, err
	}
	if !r.Fulfils() {
		return pr, nil
	}
	pr.Fulfil, pr.Status = true, r.Status
	if pr.Headers, err = renderMap(env, r.Headers); err != nil {
		return PageRoute{}, err
	}
	if pr.Headers == nil {
		pr.Headers = map[string]string{}
	}
	ct := r.ContentType
	switch {
	case r.JSON != nil:
		v, err := eval.RenderValue(r.JSON, env.Vars())
		if err != nil {
			return PageRoute{}, duet.WrapError(duet.CodeBindingFailed, err, "json: %v", err)
		}
		if pr.Body, err = json.Marshal(v); err != nil {
			return PageRoute{}, duet.WrapError(duet.CodeBindingFailed, err, "json: %v", err)
		}
		if ct == "" {
			ct = "application/json"
		}
	case r.File != "":
		pr.Body = r.FileData
	case r.Body != "":
		s, err := render(env, r.Body)
		if err != nil {
			return PageRoute{}, err
		}
		pr.Body = []byte(s)
		if ct == "" {
			ct = "text/plain; charset=utf-8"
		}
	}
	if len(pr.Body) > maxRouteBody {
		return PageRoute{}, duet.Errorf(duet.CodeTooLarge, "route: the body is %d bytes, more than the %d of a route", len(pr.Body), maxRouteBody)
	}
	if _, set := lookupFold(pr.Headers, "Content-Type"); !set && ct != "" {
		pr.Headers["Content-Type"] = ct
	}
	return pr, nil
}

// renderMap renders the values of a map of templates; nil stays nil.
func renderMap(env Env, m map[string]string) (map[string]string, error) {
	if m == nil {
		return nil, nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		s, err := render(env, v)
		if err != nil {
			return nil, err
		}
		out[k] = s
	}
	return out, nil
}

func lookupFold(m map[string]string, k string) (string, bool) {
	for mk, v := range m {
		if strings.EqualFold(mk, k) {
			return v, true
		}
	}
	return "", false
}

// headerMap reads a mapping of header names to templates (nil when the key
// is absent).
func (c *Compiler) headerMap(n *Node, key string) map[string]string {
	return c.templateMap(n, key, "header ", func(name string) error {
		if !httpguts.ValidHeaderFieldName(name) {
			return fmt.Errorf("%q is not a header name", name)
		}
		return nil
	})
}

// templateMap reads the mapping under key of n (nil when it is absent):
// names to templates, each checked against the scope. A value is called
// label+name in messages; check, when not nil, refuses a name, which is
// left out.
func (c *Compiler) templateMap(n *Node, key, label string, check func(name string) error) map[string]string {
	mn := n.Get(key)
	if mn == nil {
		return nil
	}
	if mn.Type != MapNode {
		c.Errf(mn, "%s must be a mapping of name: value", key)
		return nil
	}
	out := map[string]string{}
	for j, k := range mn.Keys {
		name, _ := k.Str()
		if check != nil {
			if err := check(name); err != nil {
				c.Errf(k, "%s: %v", key, err)
				continue
			}
		}
		v, ok := mn.Vals[j].Str()
		if !ok {
			c.Errf(mn.Vals[j], "%s%s must be a string", label, name)
			continue
		}
		c.Template(mn.Vals[j], label+name, v)
		out[name] = v
	}
	return out
}

// routeFile reads the file of a route: a path in the suite's folder (the
// folder's fs.FS, rooted like uploads' so that no path leaves it).
func (c *Compiler) routeFile(n *Node, p string) []byte {
	switch {
	case p == "":
		return nil
	case c.Files == nil:
		c.Errf(n, "file: %q is a file of the suite's folder, which this suite has not (apply it with duet apply -f FILE, or give json: or body:)", p)
		return nil
	case !fs.ValidPath(p) || p == ".":
		c.Errf(n, "file: %q must be a path inside the suite's folder (no leading /, no ..)", p)
		return nil
	}
	info, err := fs.Stat(c.Files, p)
	switch {
	case err != nil:
		c.Errf(n, "file: cannot read %s in the suite's folder: %v", p, errorsUnwrap(err))
		return nil
	case !info.Mode().IsRegular():
		c.Errf(n, "file: %s is not a file", p)
		return nil
	case info.Size() > maxRouteBody:
		c.Errf(n, "file: %s has %d bytes, more than the %d of a route", p, info.Size(), maxRouteBody)
		return nil
	}
	data, err := fs.ReadFile(c.Files, p)
	if err != nil {
		c.Errf(n, "file: cannot read %s: %v", p, errorsUnwrap(err))
		return nil
	}
	if len(data) > maxRouteBody {
		c.Errf(n, "file: %s has more than %d bytes", p, maxRouteBody)
		return nil
	}
	return data
}
