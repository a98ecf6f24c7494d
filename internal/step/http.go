package step

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/eval"
)

// HTTP is the http step.
var HTTP = register(&Kind{
	Name:    duet.StepHTTP,
	Section: Data,
	Order:   10,
	Summary: "Send an HTTP request and save its response: {status, headers, body, durationMs}.",
	Form: Form{
		Short: &Short{Type: Template, Doc: `"METHOD URL", or just the URL (GET)`},
		Keys: []Key{
			{Name: "method", Type: Text, Doc: "GET (the default), HEAD, POST, PUT, PATCH, DELETE or OPTIONS"},
			{Name: "url", Type: Template, Doc: `"/..." is relative to the task's baseURL; or an absolute http(s) URL`},
			{Name: "path", Type: Template, Doc: "the same as url"},
			{Name: "headers", Type: MapOf(Template), Doc: "request headers"},
			{Name: "body", Type: Template, Doc: "a text body"},
			{Name: "json", Type: Any, Doc: "a JSON body (its strings are templates); not with body"},
			{Name: "saveAs", Type: Ident, Doc: "the variable the response is saved to"},
		},
		AtLeastOne: []string{"url", "path"},
	},
	Example: "- http: GET /api/orders/A1001\n" +
		"- http:\n" +
		"    method: POST\n" +
		"    url: /api/orders/${orderId}/cancel\n" +
		"    headers: {X-Request-Id: \"${run.id}\"}\n" +
		"    json: {reason: \"test ${orderId}\"}\n" +
		"    saveAs: resp\n",
	Doc: "`body` of the saved response is parsed JSON for JSON responses, else text; header names are lower-cased. " +
		"A status code is data: assert on it. Transport failures fail the step with `HTTP_REQUEST_FAILED`. " +
		"Secrets in saved values (cookies, tokens, passwords…) are redacted in stored results and reports — by key, " +
		"and by value wherever they appear later (a copy, a text body, an error; see docs/governance.md).",
	Agent: "`http: GET /api/orders/A1001` or\n" +
		"  `http: {method: POST, url: /api/orders, headers: {X-Trace: \"t\"}, json: {id: \"A1\"}, saveAs: resp}`\n" +
		"  (use `body:` for a text body instead of `json:`). The saved value is\n" +
		"  `{status, headers, body, durationMs}`; `body` is parsed JSON when the response is JSON.",
	Compile: compileHTTP,
	Run: func(ctx context.Context, env Env, st *duet.Step) (string, any, error) {
		h := st.HTTP
		if h == nil {
			return "", nil, noBody(st)
		}
		v, err := doHTTP(ctx, env, h)
		return h.SaveAs, v, err
	},
	Title: func(st *duet.Step) string {
		if st.HTTP == nil {
			return string(st.Kind)
		}
		return st.HTTP.Method + " " + st.HTTP.URL
	},
})

func compileHTTP(c *Compiler, st *duet.Step, n *Node) {
	h := &duet.HTTPStep{Method: "GET"}
	st.HTTP = h
	if s, ok := n.Str(); ok {
		// Shorthand: "GET /path".
		f := strings.Fields(s)
		switch len(f) {
		case 1:
			h.URL = f[0]
		case 2:
			h.Method, h.URL = strings.ToUpper(f[0]), f[1]
		default:
			c.Errf(n, `http shorthand is "METHOD URL", got %q`, s)
			return
		}
	} else if n.Type == MapNode {
		compileHTTPMap(c, h, n)
	} else {
		c.Errf(n, "http must be a mapping (method, url, headers, body|json, saveAs) or \"METHOD URL\"")
		return
	}
	switch h.Method {
	case "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS":
	default:
		c.Errf(n, "unsupported HTTP method %q", h.Method)
	}
	if h.URL != "" {
		c.Template(n, "url", h.URL)
		c.RelativeURL(n, "url", h.URL)
	}
}

func compileHTTPMap(c *Compiler, h *duet.HTTPStep, n *Node) {
	c.AllowKeys(n, "method", "url", "path", "headers", "body", "json", "saveAs")
	if m := c.String(n, "method", false); m != "" {
		h.Method = strings.ToUpper(m)
	}
	h.URL = c.String(n, "url", false)
	if h.URL == "" {
		h.URL = c.String(n, "path", false)
	}
	if h.URL == "" {
		c.Errf(n, "http needs url (or path)")
	}
	h.Headers = c.headerMap(n, "headers")
	if bn := n.Get("body"); bn != nil {
		s, ok := bn.Str()
		if !ok {
			c.Errf(bn, "body must be a string; use json: for a JSON body")
		}
		c.Template(bn, "body", s)
		h.Body = s
	}
	if jn := n.Get("json"); jn != nil {
		if n.Get("body") != nil {
			c.Errf(jn, "use either body or json, not both")
		}
		h.JSON = jn.Plain()
		if err := eval.CheckValue(h.JSON, c.Scope.Vars); err != nil {
			c.Errf(jn, "json: %v", err)
		}
	}
	h.SaveAs = c.SaveAs(n.Get("saveAs"))
}

// ResolveURL makes a step URL absolute against the task's base URL.
// Returns INVALID_ARGUMENT.
func ResolveURL(task *duet.Task, u string) (string, error) {
	if strings.HasPrefix(u, "/") && !strings.HasPrefix(u, "//") {
		if task.BaseURL == "" {
			return "", duet.Errorf(duet.CodeInvalidArgument, "%q is relative but the task has no base URL", u)
		}
		return task.BaseURL + u, nil
	}
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		return "", duet.Errorf(duet.CodeInvalidArgument, "%q is not an absolute http(s) URL", u)
	}
	return u, nil
}

// doHTTP sends the request of h and returns the response as saved.
func doHTTP(ctx context.Context, env Env, h *duet.HTTPStep) (any, error) {
	req, target, err := httpRequest(ctx, env, h)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	resp, err := env.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if c := duet.ErrorCode(err); c == duet.CodeURLRefused || c == duet.CodeCallDepthExceeded {
			return nil, duet.WrapError(c, err, "%s %s: %s", h.Method, target, duet.ErrorMessage(err))
		}
		return nil, duet.WrapError(duet.CodeHTTPRequestFailed, err, "%s %s: %s", h.Method, target, shortNetErr(err))
	}
	defer resp.Body.Close()
	limit := env.MaxBodyBytes()
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, duet.WrapError(duet.CodeHTTPRequestFailed, err, "%s %s: reading the response: %s", h.Method, target, shortNetErr(err))
	}
	truncated := int64(len(data)) > limit
	if truncated {
		data = data[:limit]
	}
	headers := map[string]any{}
	for _, k := range slices.Sorted(maps.Keys(resp.Header)) {
		headers[strings.ToLower(k)] = resp.Header.Get(k)
	}
	return map[string]any{
		"status":     float64(resp.StatusCode),
		"headers":    headers,
		"body":       responseBody(resp.Header.Get("Content-Type"), data, truncated),
		"durationMs": float64(time.Since(start).Milliseconds()),
	}, nil
}

// httpRequest builds the request of h, its templates rendered. What it
// carries under sensitive names (a token in the query, a password in the
// body, an Authorization header) is a secret of the run from now on.
func httpRequest(ctx context.Context, env Env, h *duet.HTTPStep) (req *http.Request, target string, err error) {
	raw, err := render(env, h.URL)
	if err != nil {
		return nil, "", err
	}
	target, err = ResolveURL(env.Task(), raw)
	if err != nil {
		return nil, "", err
	}
	secrets := env.Secrets()
	secrets.LearnText(target)
	var body io.Reader
	contentType := ""
	switch {
	case h.JSON != nil:
		v, err := eval.RenderValue(h.JSON, env.Vars())
		if err != nil {
			return nil, "", duet.WrapError(duet.CodeBindingFailed, err, "json body: %v", err)
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, "", duet.WrapError(duet.CodeBindingFailed, err, "json body: %v", err)
		}
		secrets.Learn(v)
		body, contentType = bytes.NewReader(b), "application/json"
	case h.Body != "":
		s, err := render(env, h.Body)
		if err != nil {
			return nil, "", err
		}
		secrets.LearnText(s)
		body = strings.NewReader(s)
	}
	req, err = http.NewRequestWithContext(ctx, h.Method, target, body)
	if err != nil {
		return nil, "", duet.WrapError(duet.CodeInvalidArgument, err, "bad request: %v", err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("User-Agent", "duet")
	for k, v := range h.Headers {
		s, err := render(env, v)
		if err != nil {
			return nil, "", err
		}
		secrets.AddHeader(k, s)
		req.Header.Set(k, s)
	}
	return req, target, nil
}

// responseBody is the body as saved: parsed JSON when the response is JSON
// (by its type, or by its look), else text.
func responseBody(contentType string, data []byte, truncated bool) any {
	var parsed any = string(data)
	mt, _, _ := mime.ParseMediaType(contentType)
	trimmed := bytes.TrimSpace(data)
	if !truncated && (mt == "application/json" || strings.HasSuffix(mt, "+json") || json.Valid(trimmed) && len(trimmed) > 0 && strings.ContainsAny(string(trimmed[:1]), "{[")) {
		var v any
		if json.Unmarshal(data, &v) == nil {
			parsed = v
		}
	}
	return parsed
}

func shortNetErr(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return err.Error()
}
