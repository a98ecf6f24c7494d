package browser

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/chromedp/cdproto"
	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/duet-test/duet"
)

// Emulate changes what the session's pages report about the machine: the
// viewport, the position, the locale, the time zone and the colour scheme
// (the zero fields of e are left as they are). It holds for the session's
// tabs, the ones that open later too.
//
// Errors: CodeInvalidArgument for a value the browser refuses (an unknown
// time zone, a viewport out of bounds), CodeCancelled and CodeBrowserError.
func (s *Session) Emulate(ctx context.Context, e duet.Emulation) error {
	const op = "emulate"
	if e.Width < 0 || e.Height < 0 || e.Width > maxViewport || e.Height > maxViewport || (e.Width == 0) != (e.Height == 0) {
		return opError(duet.CodeInvalidArgument, op, nil, "emulate: a viewport needs a width and a height between 1 and %d", maxViewport)
	}
	if g := e.Geolocation; g != nil && (g.Latitude < -90 || g.Latitude > 90 || g.Longitude < -180 || g.Longitude > 180 || g.Accuracy < 0) {
		return opError(duet.CodeInvalidArgument, op, nil, "emulate: latitude must be in [-90, 90] and longitude in [-180, 180]")
	}
	if cs := e.ColorScheme; cs != "" && cs != "light" && cs != "dark" {
		return opError(duet.CodeInvalidArgument, op, nil, "emulate: colorScheme must be light or dark, got %q", cs)
	}
	c, err := s.begin(ctx, op, 0)
	if err != nil {
		return err
	}
	defer s.end(c)
	if e.Timezone != "" || e.Locale != "" {
		// The browser's own ICU says which names it knows.
		bad, err := chromedp.Run(c.c, chromedp.Evaluate[string](fmt.Sprintf(`(() => {
	try { if (%[1]q) new Intl.DateTimeFormat('en', {timeZone: %[1]q}); } catch (e) { return 'time zone ' + %[1]q; }
	try { if (%[2]q) Intl.getCanonicalLocales(%[2]q); } catch (e) { return 'locale ' + %[2]q; }
	return '';
})()`, e.Timezone, e.Locale)))
		if err != nil {
			return s.fail(c, err, nil)
		}
		if bad != "" {
			return opError(duet.CodeInvalidArgument, op, nil, "emulate: the browser does not know the %s", bad)
		}
	}
	s.mu.Lock()
	all := mergeEmulation(s.emulated, e)
	s.mu.Unlock()
	if e.Width > 0 {
		s.device.Width, s.device.Height = e.Width, e.Height
	}
	if e.Geolocation != nil {
		_, err := chromedp.CallBrowser(c.c, cdpbrowser.SetPermission, cdpbrowser.SetPermissionParams{
			Permission: &cdpbrowser.PermissionDescriptor{Name: "geolocation"}, Setting: cdpbrowser.PermissionSettingGranted,
			BrowserContextID: s.contextID,
		})
		if err != nil {
			return s.fail(c, err, nil)
		}
	}
	if err := chromedp.Do(c.c, s.emulationActs(all, &e)...); err != nil {
		var ce *cdproto.Error
		if errors.As(err, &ce) {
			return opError(duet.CodeInvalidArgument, op, err, "emulate: the browser refuses it: %s", ce.Message)
		}
		return s.fail(c, err, nil)
	}
	s.mu.Lock()
	s.emulated = all
	s.mu.Unlock()
	return nil
}

// maxViewport bounds a viewport's sides, in CSS pixels.
const maxViewport = 10000

func mergeEmulation(a, b duet.Emulation) duet.Emulation {
	if b.Width > 0 {
		a.Width, a.Height = b.Width, b.Height
	}
	if b.Geolocation != nil {
		a.Geolocation = b.Geolocation
	}
	if b.Locale != "" {
		a.Locale = b.Locale
	}
	if b.Timezone != "" {
		a.Timezone = b.Timezone
	}
	if b.ColorScheme != "" {
		a.ColorScheme = b.ColorScheme
	}
	return a
}

// emulationActs returns the commands that apply the fields of e set in
// only (all of them when only is nil).
func (s *Session) emulationActs(e duet.Emulation, only *duet.Emulation) []chromedp.Action[chromedp.Void] {
	if only == nil {
		only = &e
	}
	var acts []chromedp.Action[chromedp.Void]
	if only.Width > 0 {
		d := s.device
		d.Width, d.Height = e.Width, e.Height
		acts = append(acts, emulate(d)...)
	}
	if g := e.Geolocation; only.Geolocation != nil && g != nil {
		acc := g.Accuracy
		if acc == 0 {
			acc = 10
		}
		acts = append(acts, command(emulation.SetGeolocationOverride, emulation.SetGeolocationOverrideParams{
			Latitude: &g.Latitude, Longitude: &g.Longitude, Accuracy: &acc,
		}))
	}
	if only.Locale != "" {
		acts = append(acts, command(emulation.SetLocaleOverride, emulation.SetLocaleOverrideParams{Locale: strings.ReplaceAll(e.Locale, "-", "_")}),
			chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
				ua := s.device.UserAgent
				if ua == "" {
					v, err := cdp.Call(ctx, t, runtime.Evaluate, runtime.EvaluateParams{Expression: "navigator.userAgent", ReturnByValue: new(true)})
					if err != nil {
						return err
					}
					if v.Result != nil {
						_ = json.Unmarshal(v.Result.Value, &ua)
					}
				}
				_, err := cdp.Call(ctx, t, emulation.SetUserAgentOverride, emulation.SetUserAgentOverrideParams{UserAgent: ua, AcceptLanguage: e.Locale})
				return err
			}))
	}
	if only.Timezone != "" {
		acts = append(acts, command(emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: e.Timezone}))
	}
	if only.ColorScheme != "" {
		acts = append(acts, command(emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: e.ColorScheme}},
		}))
	}
	return acts
}

// MaxEvaluateBytes bounds the result of Evaluate, as JSON.
const MaxEvaluateBytes = 1 << 20

// Evaluate runs a JavaScript expression in the current page (the frame of
// the frame scope), with args as the object args, awaits it when it is a
// promise, and returns its value as JSON values (undefined is nil). The
// expression runs until ctx's deadline: one that loops is stopped there;
// a value over maxBytes as JSON (MaxEvaluateBytes when 0) is refused in the
// page, before it is sent.
//
// Errors: CodeStepTimeout past the deadline, CodeTooLarge for a value over
// its budget, CodeBrowserError when the expression throws (the message
// quotes it) or its value is not JSON (a cycle), CodeCancelled.
func (s *Session) Evaluate(ctx context.Context, expr string, args map[string]any, maxBytes int) (any, error) {
	const op = "evaluate"
	if maxBytes <= 0 || maxBytes > MaxEvaluateBytes {
		maxBytes = MaxEvaluateBytes
	}
	if args == nil {
		args = map[string]any{}
	}
	argsJSON, err := json.Marshal(args)
	if err != nil {
		return nil, opError(duet.CodeInvalidArgument, op, err, "evaluate: the args are not JSON: %v", err)
	}
	exprJSON, _ := json.Marshal(expr)
	c, err := s.begin(ctx, op, 0)
	if err != nil {
		return nil, err
	}
	defer s.end(c)
	w, err := s.world(c)
	if err != nil {
		return nil, err
	}
	defer s.releaseWorld(c, w)
	// The expression is compiled by an indirect eval of a string, inside
	// a function of Duet's: nothing it holds can step out of the checks
	// that follow it.
	src := fmt.Sprintf(`(async () => {
	const args = %s;
	const fn = (0, eval)("(async (args) => (\n" + %s + "\n))");
	const v = await fn(args);
	if (v === undefined) return {json: 'null'};
	let s;
	try { s = JSON.stringify(v); } catch (e) { return {err: 'its value is not JSON: ' + String((e && e.message) || e)}; }
	if (s === undefined) return {json: 'null'};
	if (s.length > %d) return {big: s.length};
	return {json: s};
})()`, argsJSON, exprJSON, maxBytes)
	var budget time.Duration
	if dl, ok := c.c.Deadline(); ok {
		budget = time.Until(dl)
	}
	wctx, cancel := w.bound(c.c)
	defer cancel()
	res, err := chromedp.Run(wctx, func(ctx context.Context, t *chromedp.Target) (runtime.EvaluateResult, error) {
		p := runtime.EvaluateParams{Expression: src, ContextID: w.id, ReturnByValue: new(true), AwaitPromise: new(true), UserGesture: new(true)}
		if budget > 0 {
			p.Timeout = runtime.TimeDelta(budget.Milliseconds())
		}
		return cdp.Call(ctx, t, runtime.Evaluate, p)
	})
	if err != nil {
		return nil, s.fail(c, err, func() *duet.Error {
			return opError(duet.CodeStepTimeout, op, nil, "evaluate: the expression ran past its time (%s)", c.elapsed())
		})
	}
	if ex := res.ExceptionDetails; ex != nil {
		msg := ex.Text
		if ex.Exception != nil && ex.Exception.Description != "" {
			msg = ex.Exception.Description
		}
		if strings.Contains(msg, "Execution was terminated") {
			return nil, opError(duet.CodeStepTimeout, op, nil, "evaluate: the expression ran past its time (%s) and was stopped", c.elapsed())
		}
		if i := strings.IndexByte(msg, '\n'); i > 0 {
			msg = msg[:i]
		}
		return nil, opError(duet.CodeBrowserError, op, nil, "evaluate: the expression threw: %s", msg)
	}
	var out struct {
		JSON *string `json:"json"`
		Big  int     `json:"big"`
		Err  string  `json:"err"`
	}
	if res.Result == nil || json.Unmarshal(res.Result.Value, &out) != nil {
		return nil, opError(duet.CodeBrowserError, op, nil, "evaluate: no result")
	}
	switch {
	case out.Err != "":
		return nil, opError(duet.CodeBrowserError, op, nil, "evaluate: %s", out.Err)
	case out.Big > 0:
		return nil, opError(duet.CodeTooLarge, op, nil, "evaluate: the value is %d characters as JSON, over the budget of %d", out.Big, maxBytes)
	case out.JSON == nil:
		return nil, opError(duet.CodeBrowserError, op, nil, "evaluate: no result")
	}
	var v any
	if err := json.Unmarshal([]byte(*out.JSON), &v); err != nil {
		return nil, opError(duet.CodeBrowserError, op, err, "evaluate: the value does not decode: %v", err)
	}
	return v, nil
}
