package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/calldepth"
	"github.com/duet-test/duet/internal/eval"
	"github.com/duet-test/duet/internal/netguard"
)

// resolveURL makes a step URL absolute against the task's base URL.
func (cr *caseRun) resolveURL(u string) (string, error) {
	if strings.HasPrefix(u, "/") && !strings.HasPrefix(u, "//") {
		if cr.task.BaseURL == "" {
			return "", duet.Errorf(duet.CodeInvalidArgument, "%q is relative but the task has no base URL", u)
		}
		return cr.task.BaseURL + u, nil
	}
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		return "", duet.Errorf(duet.CodeInvalidArgument, "%q is not an absolute http(s) URL", u)
	}
	return u, nil
}

func (cr *caseRun) render(s string) (string, error) {
	out, err := eval.RenderString(s, cr.vars)
	if err != nil {
		return "", duet.WrapError(duet.CodeBindingFailed, err, "%v", err)
	}
	return out, nil
}

func (cr *caseRun) http(ctx context.Context, h *duet.HTTPStep) (any, error) {
	raw, err := cr.render(h.URL)
	if err != nil {
		return nil, err
	}
	target, err := cr.resolveURL(raw)
	if err != nil {
		return nil, err
	}
	// What the request carries under sensitive names (a token in the query,
	// a password in the body, an Authorization header) is a secret of the
	// run from now on.
	cr.secrets.LearnText(target)
	var body io.Reader
	contentType := ""
	switch {
	case h.JSON != nil:
		v, err := eval.RenderValue(h.JSON, cr.vars)
		if err != nil {
			return nil, duet.WrapError(duet.CodeBindingFailed, err, "json body: %v", err)
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, duet.WrapError(duet.CodeBindingFailed, err, "json body: %v", err)
		}
		cr.secrets.Learn(v)
		body, contentType = bytes.NewReader(b), "application/json"
	case h.Body != "":
		s, err := cr.render(h.Body)
		if err != nil {
			return nil, err
		}
		cr.secrets.LearnText(s)
		body = strings.NewReader(s)
	}
	// The network guard of an injected client (Options.HTTPClient) lets
	// the task's own base URL host be loopback or private.
	req, err := http.NewRequestWithContext(netguard.AllowURL(ctx, cr.task.BaseURL), h.Method, target, body)
	if err != nil {
		return nil, duet.WrapError(duet.CodeInvalidArgument, err, "bad request: %v", err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("User-Agent", "duet")
	for k, v := range h.Headers {
		s, err := cr.render(v)
		if err != nil {
			return nil, err
		}
		cr.secrets.AddHeader(k, s)
		req.Header.Set(k, s)
	}
	// How deep in a chain of Duet calls the request is, whatever the case
	// wrote: a Duet it reaches refuses beyond its bound (calldepth).
	if err := calldepth.Set(ctx, req.Header, cr.e.opts.MaxCallDepth); err != nil {
		return nil, duet.WrapError(duet.CodeCallDepthExceeded, err, "%s %s: %s", h.Method, target, duet.ErrorMessage(err))
	}
	start := time.Now()
	resp, err := cr.e.opts.HTTPClient.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if duet.ErrorCode(err) == duet.CodeURLRefused {
			return nil, duet.WrapError(duet.CodeURLRefused, err, "%s %s: %s", h.Method, target, duet.ErrorMessage(err))
		}
		return nil, duet.WrapError(duet.CodeHTTPRequestFailed, err, "%s %s: %s", h.Method, target, shortNetErr(err))
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, cr.e.opts.MaxBodyBytes+1))
	if err != nil {
		return nil, duet.WrapError(duet.CodeHTTPRequestFailed, err, "%s %s: reading the response: %s", h.Method, target, shortNetErr(err))
	}
	truncated := int64(len(data)) > cr.e.opts.MaxBodyBytes
	if truncated {
		data = data[:cr.e.opts.MaxBodyBytes]
	}
	headers := map[string]any{}
	keys := make([]string, 0, len(resp.Header))
	for k := range resp.Header {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		headers[strings.ToLower(k)] = resp.Header.Get(k)
	}
	var parsed any = string(data)
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if !truncated && (mt == "application/json" || strings.HasSuffix(mt, "+json") || json.Valid(bytes.TrimSpace(data)) && len(bytes.TrimSpace(data)) > 0 && strings.ContainsAny(string(bytes.TrimSpace(data)[:1]), "{[")) {
		var v any
		if json.Unmarshal(data, &v) == nil {
			parsed = v
		}
	}
	return map[string]any{
		"status":     float64(resp.StatusCode),
		"headers":    headers,
		"body":       parsed,
		"durationMs": float64(time.Since(start).Milliseconds()),
	}, nil
}

func shortNetErr(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return err.Error()
}

func (cr *caseRun) assert(a *duet.AssertStep) error {
	ok, err := eval.EvalBool(a.Expr, cr.vars)
	if err != nil {
		return duet.WrapError(duet.CodeAssertionFailed, err, "cannot evaluate %s: %v", a.Expr, err)
	}
	if !ok {
		msg := "expected " + a.Expr
		if a.Message != "" {
			msg = a.Message + " (" + a.Expr + ")"
		}
		if got := cr.operands(a.Expr); got != "" {
			msg += "; " + got
		}
		return duet.Errorf(duet.CodeAssertionFailed, "%s", msg)
	}
	return nil
}

func (cr *caseRun) set(s *duet.SetStep) error {
	names := make([]string, 0, len(s.Vars))
	for k := range s.Vars {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, name := range names {
		v, err := eval.Eval(s.Vars[name], cr.vars)
		if err != nil {
			return duet.WrapError(duet.CodeBindingFailed, err, "set %s: %v", name, err)
		}
		if err := cr.keep(name, v); err != nil {
			return err
		}
		cr.vars[name], cr.saved[name] = v, v
		cr.secrets.Learn(map[string]any{name: v})
	}
	return nil
}

func (cr *caseRun) mcpCall(ctx context.Context, m *duet.MCPCallStep) (any, error) {
	if err := cr.checkApproval(ctx, m); err != nil {
		return nil, err
	}
	args := map[string]any{}
	names := make([]string, 0, len(m.InputBindings))
	for k := range m.InputBindings {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, name := range names {
		v, err := cr.bind(ctx, m.InputBindings[name])
		if err != nil {
			return nil, duet.WrapError(duet.CodeBindingFailed, err, "input %s: %s", name, duet.ErrorMessage(err))
		}
		args[name] = v
	}
	if cr.e.opts.Invoker == nil {
		return nil, duet.Errorf(duet.CodeMCPServerNotConfigured, "%s has not configured MCP server %s", cr.run.TriggeredBy, m.ServerKey)
	}
	cr.secrets.Learn(args)
	// The executor's credentials for the server are secrets of the run,
	// before the call (an error may quote them) and after it (a token may
	// have been renewed during it).
	cr.learnCredentials(ctx, m.ServerKey)
	res, err := cr.e.opts.Invoker.Invoke(ctx, duet.InvokeRequest{
		Executor: cr.run.TriggeredBy, ServerKey: m.ServerKey, Tool: m.ToolName,
		Arguments: args, Source: duet.SourceEngine, TraceID: cr.run.TraceID,
	})
	cr.learnCredentials(ctx, m.ServerKey)
	var saved any
	if res != nil {
		saved = toolResultValue(res)
	}
	return saved, err
}

// learnCredentials adds the executor's credential values for serverKey to
// the run's secrets, when the Invoker can name them. An Invoker that also
// reports a CredentialGeneration is asked again only when that moved since
// the values were read (a session opened, a token renewed): so a case reads
// them once per server, and again only when the values its calls send may
// have changed. Any other Invoker is asked every time.
func (cr *caseRun) learnCredentials(ctx context.Context, serverKey string) {
	src, ok := cr.e.opts.Invoker.(duet.SecretSource)
	if !ok {
		return
	}
	gen, watch := cr.e.opts.Invoker.(credentialGeneration)
	var at uint64
	if watch {
		at = gen.CredentialGeneration()
		if seen, ok := cr.credsAt[serverKey]; ok && seen == at {
			return
		}
	}
	vals, err := src.Secrets(context.WithoutCancel(ctx), cr.run.TriggeredBy, serverKey)
	if err != nil {
		cr.e.log.WarnContext(ctx, "cannot read the executor's credentials to scrub them", "run", cr.run.ID, "serverKey", serverKey, "err", duet.ErrorMessage(err))
		return
	}
	cr.secrets.Add(vals...)
	if watch {
		if cr.credsAt == nil {
			cr.credsAt = map[string]uint64{}
		}
		cr.credsAt[serverKey] = at
	}
}

// credentialGeneration is a duet.SecretSource whose values can have changed
// only when the counter moved (mcpclient.Client.CredentialGeneration).
type credentialGeneration interface {
	CredentialGeneration() uint64
}

// toolResultValue is what an mcpCall saves: the result as the server sent
// it, plus the joined text.
func toolResultValue(r *duet.ToolResult) any {
	out := map[string]any{"isError": r.IsError, "text": r.Text()}
	var content, structured any
	if len(r.Content) > 0 && json.Unmarshal(r.Content, &content) == nil {
		out["content"] = content
	}
	if len(r.StructuredContent) > 0 && json.Unmarshal(r.StructuredContent, &structured) == nil {
		out["structuredContent"] = structured
	}
	return out
}

func (cr *caseRun) bind(ctx context.Context, b duet.Binding) (any, error) {
	switch b.Source {
	case duet.BindValue:
		v, err := eval.RenderValue(b.Value, cr.vars)
		if err != nil {
			return nil, duet.WrapError(duet.CodeBindingFailed, err, "%v", err)
		}
		return v, nil
	case duet.BindVar:
		v, err := eval.Eval(b.Path, cr.vars)
		if err != nil {
			return nil, duet.WrapError(duet.CodeBindingFailed, err, "%s: %v", b.Path, err)
		}
		if v == nil {
			return nil, duet.Errorf(duet.CodeBindingFailed, "%s is null", b.Path)
		}
		return v, nil
	}
	s, err := cr.page(ctx)
	if err != nil {
		return nil, err
	}
	switch b.Source {
	case duet.BindPageURL:
		raw, err := s.URL(ctx)
		if err != nil {
			return nil, err
		}
		return urlPart(raw, b.Path, b.Segment)
	case duet.BindPageTitle:
		return s.Title(ctx)
	case duet.BindPageText:
		return s.Text(ctx, b.Selector)
	case duet.BindPageAttr:
		v, ok, err := s.Attr(ctx, b.Selector, b.Attr)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, duet.Errorf(duet.CodeBindingFailed, "%s has no attribute %s", b.Selector, b.Attr)
		}
		return v, nil
	}
	return nil, duet.Errorf(duet.CodeBindingFailed, "unknown binding source %q", b.Source)
}

// urlPart returns a query parameter (param != "") or a path segment of raw.
func urlPart(raw, param string, segment *int) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", duet.Errorf(duet.CodeBindingFailed, "the page URL %q does not parse", raw)
	}
	if param != "" {
		q := u.Query()
		if !q.Has(param) {
			return "", duet.Errorf(duet.CodeBindingFailed, "the page URL %s has no query parameter %q", raw, param)
		}
		return q.Get(param), nil
	}
	var segs []string
	for _, s := range strings.Split(u.Path, "/") {
		if s != "" {
			segs = append(segs, s)
		}
	}
	i := 0
	if segment != nil {
		i = *segment
	}
	if i < 0 {
		i += len(segs)
	}
	if i < 0 || i >= len(segs) {
		return "", duet.Errorf(duet.CodeBindingFailed, "the page URL %s has no path segment %d", raw, i)
	}
	seg, _ := url.PathUnescape(segs[i])
	return seg, nil
}

// page returns the execution's browser session, starting it when needed.
func (cr *caseRun) page(ctx context.Context) (BrowserSession, error) {
	if cr.session != nil {
		return cr.session, nil
	}
	if cr.e.opts.Browser == nil {
		return nil, duet.Errorf(duet.CodeBrowserUnavailable, "no browser is available: install Chromium (apt-get install -y chromium) or set DUET_CHROME_PATH")
	}
	device := cr.run.Device
	if device == "" {
		device = cr.task.Device
	}
	s, err := cr.e.opts.Browser.NewSession(netguard.AllowURL(ctx, cr.task.BaseURL), device)
	if err != nil {
		return nil, err
	}
	cr.session = s
	return s, nil
}

func (cr *caseRun) browser(ctx context.Context, st *duet.Step) (string, any, error) {
	b := st.Browser
	s, err := cr.page(ctx)
	if err != nil {
		return "", nil, err
	}
	// Render every template field once.
	r := func(v string) (string, error) {
		if v == "" {
			return "", nil
		}
		return cr.render(v)
	}
	sel, err := r(b.Selector)
	if err != nil {
		return "", nil, err
	}
	switch st.Kind {
	case duet.StepOpen:
		u, err := r(b.URL)
		if err != nil {
			return "", nil, err
		}
		if u, err = cr.resolveURL(u); err != nil {
			return "", nil, err
		}
		return "", nil, s.Open(ctx, u)
	case duet.StepClick:
		return "", nil, s.Click(ctx, sel)
	case duet.StepFill, duet.StepSelect:
		v, err := r(b.Value)
		if err != nil {
			return "", nil, err
		}
		if st.Kind == duet.StepFill {
			return "", nil, s.Fill(ctx, sel, v)
		}
		return "", nil, s.Select(ctx, sel, v)
	case duet.StepPress:
		return "", nil, s.Press(ctx, b.Key, sel)
	case duet.StepWaitFor:
		c := WaitCondition{Selector: sel, Visible: b.Visible != nil && *b.Visible}
		if c.Text, err = r(b.Text); err != nil {
			return "", nil, err
		}
		if c.URLContains, err = r(b.URLContains); err != nil {
			return "", nil, err
		}
		if c.URLMatches, err = r(b.URLMatches); err != nil {
			return "", nil, err
		}
		if dl, ok := ctx.Deadline(); ok {
			c.Timeout = time.Until(dl)
		}
		return "", nil, s.WaitFor(ctx, c)
	case duet.StepAssertText, duet.StepAssertURL:
		var got any // the last text or URL seen, kept as the step's output
		err := cr.retry(ctx, st, func(ctx context.Context) error {
			var v, what string
			var err error
			if st.Kind == duet.StepAssertText {
				v, err = s.Text(ctx, sel)
				what = fmt.Sprintf("text of %s", sel)
			} else {
				v, err = s.URL(ctx)
				what = "page URL"
			}
			if err != nil {
				return err
			}
			got = v
			return cr.compare(what, v, b)
		})
		return "", got, err
	case duet.StepAssertVisible:
		want := b.Visible == nil || *b.Visible
		if want {
			actx, cancel := assertContext(ctx, st)
			defer cancel()
			if err := s.WaitFor(actx, WaitCondition{Selector: sel, Visible: true}); err != nil {
				if c := duet.ErrorCode(err); c == duet.CodeStepTimeout || c == duet.CodeElementNotFound {
					return "", nil, duet.Errorf(duet.CodeAssertionFailed, "%s is not visible (%s)", sel, duet.ErrorMessage(err))
				}
				return "", nil, err
			}
			return "", true, nil
		}
		err := cr.retry(ctx, st, func(ctx context.Context) error {
			vis, err := s.Visible(ctx, sel)
			if err != nil {
				return err
			}
			if vis {
				return duet.Errorf(duet.CodeAssertionFailed, "%s is visible; expected it hidden", sel)
			}
			return nil
		})
		if err != nil {
			return "", nil, err
		}
		return "", false, nil
	case duet.StepExtract:
		var v string
		switch b.From {
		case "text":
			v, err = s.Text(ctx, sel)
		case "value":
			v, err = s.Value(ctx, sel)
		case "attr":
			var ok bool
			v, ok, err = s.Attr(ctx, sel, b.Attr)
			if err == nil && !ok {
				err = duet.Errorf(duet.CodeElementNotFound, "%s has no attribute %s", sel, b.Attr)
			}
		case "title":
			v, err = s.Title(ctx)
		case "url", "url.query", "url.segment":
			v, err = s.URL(ctx)
			if err == nil && b.From != "url" {
				v, err = urlPart(v, b.Param, b.Segment)
			}
		default:
			err = duet.Errorf(duet.CodeInvalidArgument, "unknown extract source %q", b.From)
		}
		if err != nil {
			return "", nil, err
		}
		return b.SaveAs, v, nil
	case duet.StepScreenshot:
		png, err := s.Screenshot(ctx, b.FullPage)
		if err != nil {
			return "", nil, err
		}
		if cr.e.opts.Artifacts == nil {
			return "", nil, nil
		}
		id, err := cr.e.opts.Artifacts.Save(ctx, cr.run.ID, cr.x.ID, st.Index, st.Name, png)
		if err != nil {
			return "", nil, err
		}
		return "", map[string]any{"artifact": id, "bytes": float64(len(png))}, nil
	}
	return "", nil, duet.Errorf(duet.CodeInternal, "unknown browser step %s", st.Kind)
}

// assertWait is how long an assertion step (assertText, assertURL,
// assertVisible) retries until it holds, when the step has no timeout of its
// own: pages render late, so assertions wait for them as a person would.
const assertWait = 5 * time.Second

// assertContext bounds an assertion: by the step's own timeout when it has
// one (ctx already carries it), else by assertWait within ctx.
func assertContext(ctx context.Context, st *duet.Step) (context.Context, context.CancelFunc) {
	if st.TimeoutMs > 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, assertWait)
}

// retry calls check until it returns nil or an error other than
// ASSERTION_FAILED, or until the assertion's time is up; it then returns the
// last assertion failure.
func (cr *caseRun) retry(ctx context.Context, st *duet.Step, check func(context.Context) error) error {
	actx, cancel := assertContext(ctx, st)
	defer cancel()
	var failure error
	for delay := 50 * time.Millisecond; ; delay = min(2*delay, 250*time.Millisecond) {
		err := check(actx)
		switch {
		case err == nil:
			return nil
		case duet.ErrorCode(err) == duet.CodeAssertionFailed:
			failure = err
		case failure != nil && (actx.Err() != nil || pastDeadline(actx)):
			// The time ran out while reading the page again: the
			// assertion failure is the news. (When the case ended or the
			// run was cancelled, runStep says so whatever this returns.)
			return failure
		default:
			return err
		}
		t := time.NewTimer(delay)
		select {
		case <-actx.Done():
			t.Stop()
			return failure
		case <-t.C:
		}
	}
}

func (cr *caseRun) compare(what, got string, b *duet.BrowserStep) error {
	switch {
	case b.Equals != "":
		want, err := cr.render(b.Equals)
		if err != nil {
			return err
		}
		if strings.TrimSpace(got) != strings.TrimSpace(want) {
			return duet.Errorf(duet.CodeAssertionFailed, "%s is %q, want %q", what, got, want)
		}
	case b.Contains != "":
		want, err := cr.render(b.Contains)
		if err != nil {
			return err
		}
		if !strings.Contains(got, want) {
			return duet.Errorf(duet.CodeAssertionFailed, "%s is %q, want it to contain %q", what, got, want)
		}
	case b.Matches != "":
		pat, err := cr.render(b.Matches)
		if err != nil {
			return err
		}
		re, err := regexp.Compile(pat)
		if err != nil {
			return duet.Errorf(duet.CodeInvalidArgument, "invalid regular expression %q: %v", pat, err)
		}
		if !re.MatchString(got) {
			return duet.Errorf(duet.CodeAssertionFailed, "%s is %q, want it to match %s", what, got, pat)
		}
	}
	return nil
}

// failedCall is what an mcpCall saves when it fails, whatever the reason —
// a tool error, a server the executor has not configured, a binding, a
// timeout: the result if the server sent one, with isError true and
// error {code, message}. One rule, so that a later step of a case that
// goes on (failurePolicy optional) can test order.isError or
// order.error.code instead of meeting an unknown variable.
func failedCall(v any, err error) any {
	if err == nil {
		return v
	}
	m, _ := v.(map[string]any)
	if m == nil {
		m = map[string]any{"text": ""}
	}
	m["isError"] = true
	m["error"] = map[string]any{"code": string(duet.ErrorCode(err)), "message": duet.ErrorMessage(err)}
	return m
}
