package step

import (
	"context"
	"fmt"
	"strings"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/eval"
)

var waitForResponseForm = urlForm(&Short{Type: Template, Doc: "a URL glob"},
	Key{Name: "status", Type: Int, Doc: "the status the response must have (default: any)"},
	Key{Name: "saveAs", Type: Ident, Doc: "the variable the response is saved to: {url, method, status, headers, body}"},
)

// WaitForResponse is the waitForResponse step.
var WaitForResponse = register(&Kind{
	Name:    "waitForResponse",
	Section: Browser,
	Order:   162,
	Summary: "Wait for a response of the page to a request that matches a URL pattern (and a method, a status), and save it: {url, method, status, headers, body}.",
	Form:    waitForResponseForm,
	Example: "- waitForResponse: \"**/api/products\"\n" +
		"- waitForResponse: {url: /api/orders, method: POST, status: 201, saveAs: created}\n",
	Doc: "A response that came before the step counts, so the step goes after the click that makes the request; " +
		"each response is returned once (two steps wait for two responses). " +
		"`body` of the saved response is parsed JSON for JSON responses, else text (1 MiB at most); header names are lower-cased. " +
		"Mocked responses (route) count like the network's.",
	Agent: "`waitForResponse: {url: \"**/api/orders\", method: POST, status: 201, saveAs: created}` — after the step that makes the request; saves {url, method, status, headers, body}",
	Compile: requestStep(&waitForResponseForm, func(c *Compiler, n *Node, bd *body, m *duet.RequestMatch) {
		if n.Get("status") != nil {
			m.Status = c.intIn(n, "status", 100, 999)
		}
		bd.b.SaveAs = c.SaveAs(n.Get("saveAs"))
	}),
	Title: requestTitle,
	Run: func(ctx context.Context, env Env, st *duet.Step) (string, any, error) {
		rt, f, err := requestFilter(ctx, env, st)
		if err != nil {
			return "", nil, err
		}
		resp, err := rt.WaitForResponse(ctx, f)
		if err != nil {
			return "", nil, err
		}
		headers := map[string]any{}
		for k, v := range resp.Headers {
			headers[strings.ToLower(k)] = v
		}
		ct := resp.Headers["content-type"]
		if ct == "" {
			ct = resp.MIMEType
		}
		out := map[string]any{"url": resp.URL, "method": resp.Method, "status": resp.Status, "headers": headers,
			"body": responseBody(ct, resp.Body, resp.Truncated)}
		if resp.Truncated {
			out["truncated"] = true
		}
		return st.Browser.SaveAs, out, nil
	},
})

// checkGlob records an error when glob (not a template) does not parse.
func checkGlob(c *Compiler, n *Node, glob string) {
	if glob == "" {
		c.Errf(n, "the URL pattern is empty")
		return
	}
	if _, err := GlobRegexp(glob); err != nil && !eval.IsTemplate(glob) {
		c.Errf(n, "url: %s", duet.ErrorMessage(err))
	}
}

var expectRequestForm = urlForm(&Short{Type: Template, Doc: "a URL glob (at least one request)"},
	Key{Name: "count", Type: Int, Doc: "how many requests (default: at least one)"},
	notKey,
)

// ExpectRequest is the expectRequest step.
var ExpectRequest = register(&Kind{
	Name:      "expectRequest",
	Section:   Browser,
	Order:     196,
	Assertion: true,
	Summary:   "Assert what the page sent: the requests that match a URL pattern (and a method) since the case's page opened — at least one, exactly count, or (not) none; retries until it holds.",
	Form:      expectRequestForm,
	Example: "- expectRequest: \"**/api/analytics\"\n" +
		"- expectRequest: {url: /api/orders, method: POST, count: 1}\n" +
		"- expectRequest: {url: \"**/tracking/**\", not: true}\n",
	Doc: "Every request counts, the ones a route fulfilled or aborted too (a redirect hop counts as a request). " +
		"A case's page remembers its first 5000 requests.",
	Agent: "`expectRequest: {url: /api/orders, method: POST, count: 1}` — assert the page sent (count) requests that match (`not: true`: none)",
	Compile: requestStep(&expectRequestForm, func(c *Compiler, n *Node, bd *body, m *duet.RequestMatch) {
		if n.Get("count") != nil {
			v := c.intIn(n, "count", 0, 100000)
			m.Count = &v
		}
		bd.compileNot()
		if bd.b.Not && m.Count != nil {
			c.Errf(n.Get("not"), "expectRequest: not goes without count (not: true means no request)")
		}
	}),
	Title: requestTitle,
	Run: func(ctx context.Context, env Env, st *duet.Step) (string, any, error) {
		rt, f, err := requestFilter(ctx, env, st)
		if err != nil {
			return "", nil, err
		}
		m := st.Browser.Request
		var got []string
		err = retry(ctx, st, func(context.Context) error {
			var unlogged int
			got, unlogged = rt.Requests(f)
			ok := len(got) > 0
			want := "at least one"
			switch {
			case st.Browser.Not:
				ok, want = len(got) == 0, "none"
			case m.Count != nil:
				ok, want = len(got) == *m.Count, fmt.Sprint(*m.Count)
			}
			if ok {
				return nil
			}
			msg := fmt.Sprintf("%d requests matched %s, want %s", len(got), urlTitle("", m.Method, m.URL, m.URLMatches)[1:], want)
			if len(got) > 0 {
				msg += ": " + strings.Join(got[:min(len(got), 5)], ", ")
				if len(got) > 5 {
					msg += ", ..."
				}
			}
			if unlogged > 0 {
				msg += fmt.Sprintf(" (%d later requests went past the log's bound)", unlogged)
			}
			return duet.Errorf(duet.CodeAssertionFailed, "%s", msg)
		})
		return "", len(got), err
	},
})

// compileRequestStep reads what waitForResponse and expectRequest share:
// the page they need and the request they match — a URL glob alone, or a
// mapping of keys with url/urlMatches and method. ok is false when there
// is nothing more to read (the short form, or an error reported).
func compileRequestStep(c *Compiler, st *duet.Step, n *Node, keys []string) (*body, *duet.RequestMatch, bool) {
	bd, ok := browserBody(c, st, n, false)
	if !ok {
		return nil, nil, false
	}
	bd.needPage()
	m := &duet.RequestMatch{}
	bd.b.Request = m
	if bd.isShort {
		m.URL = bd.short
		c.Template(n, "url", m.URL)
		checkGlob(c, n, m.URL)
		return bd, m, false
	}
	c.AllowKeys(n, keys...)
	m.URL, m.URLMatches, m.Method = compileURLMatch(c, st, n)
	return bd, m, true
}

// requestTitle names a step that matches requests (waitForResponse,
// expectRequest) after its kind and its pattern.
func requestTitle(st *duet.Step) string {
	if m := st.Browser.Request; m != nil {
		return urlTitle(st.Kind, m.Method, m.URL, m.URLMatches)
	}
	return string(st.Kind)
}

// requestStep is the Compile of a step that matches requests
// (waitForResponse, expectRequest) with the form f: what they share
// (compileRequestStep), then, in a mapping, more reads the rest.
func requestStep(f *Form, more func(c *Compiler, n *Node, bd *body, m *duet.RequestMatch)) func(*Compiler, *duet.Step, *Node) {
	return func(c *Compiler, st *duet.Step, n *Node) {
		if bd, m, ok := compileRequestStep(c, st, n, f.KeyNames()); ok {
			more(c, n, bd, m)
		}
	}
}

// requestFilter returns the case's page as a Router and the filter of the
// requests the step st (waitForResponse, expectRequest) waits for.
func requestFilter(ctx context.Context, env Env, st *duet.Step) (Router, RequestFilter, error) {
	if st.Browser == nil || st.Browser.Request == nil {
		return nil, RequestFilter{}, noBody(st)
	}
	m := st.Browser.Request
	re, err := urlPattern(env, m.URL, m.URLMatches)
	if err != nil {
		return nil, RequestFilter{}, err
	}
	rt, err := router(ctx, env, st)
	if err != nil {
		return nil, RequestFilter{}, err
	}
	return rt, RequestFilter{URL: re, Method: m.Method, Status: m.Status}, nil
}
