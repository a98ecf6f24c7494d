package browser

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/netguard"
)

// Session is one isolated browser context with one tab, used by one test
// execution. Its cookies, storage and cache are its own.
//
// Every method takes a ctx; cancelling it stops the browser work of the call
// at once and the method returns CodeCancelled. A method that waits for an
// element waits until ctx's deadline, or Options.DefaultTimeout when ctx has
// none. The older element methods (Click, Fill, Text, ...) take a CSS
// selector and act on its first match; Act and Query take any locator
// (locator.go). The methods of one Session run one at a
// time (a call waits for the previous one, within its ctx); Close may be
// called at any time from any goroutine.
type Session struct {
	pool       *Pool
	proc       *process
	device     Device
	ctx        context.Context    // chromedp context of the tab
	cancel     context.CancelFunc // closes the tab and waits
	baseCancel context.CancelFunc
	contextID  cdp.BrowserContextID

	shared  bool               // a tab in the browser's default context (Remote.SharedContext)
	allowed netguard.Allowance // what the guard lets be loopback or private (NewSession's allow); under mu

	turn      chan struct{} // holds a token while a call runs: one at a time
	closed    atomic.Bool
	closeOnce sync.Once
	dialogs   sync.WaitGroup // the dialog and request handlers

	refused  atomic.Pointer[refusal] // a main-frame navigation the guard refused, not yet reported
	inflight atomic.Pointer[call]    // the call running (begin to end), which such a refusal on its tab ends at once

	rec atomic.Pointer[recorder] // the trace being recorded (trace.go), or nil

	captureRetries atomic.Int64 // screenshots asked again because a navigation replaced their document (capture.go)

	net netState // routes and the request log (route.go)

	mu      sync.Mutex
	origins map[string]bool // origins visited (shared sessions clear their storage)

	// The tabs: the first one (ctx) and the pages the session's pages
	// opened, in that order; cur is the one calls act on.
	tabs        []*tab
	cur         *tab
	tabsChanged chan struct{} // closed and replaced when a tab opens or closes
	attached    map[target.ID]*attachedTarget

	emulated     duet.Emulation // what Emulate set, for the tabs that open later
	dialogPolicy dialogPolicy
	dialogLog    []Dialog
	dialogSeen   chan struct{} // closed and replaced when a dialog opens
}

// WaitCondition is what WaitFor waits for. Every field that is set must hold
// at the same time; at least one of Selector, Text, URLContains and
// URLMatches must be set.
type WaitCondition struct {
	// Selector is a CSS selector that must match an element.
	Selector string
	// Text must appear in the visible text of the page body, or of the
	// element of Selector when it is set.
	Text string
	// URLContains must be a substring of the page URL.
	URLContains string
	// URLMatches is a regular expression (RE2 syntax) that the page URL
	// must match.
	URLMatches string
	// Visible requires the element of Selector to be visible.
	Visible bool
	// Timeout bounds the wait. Zero means ctx's deadline, or
	// Options.DefaultTimeout when ctx has none.
	Timeout time.Duration
}

// Device returns the device that the session emulates.
func (s *Session) Device() Device { return s.device }

// call is one method call of a Session.
type call struct {
	op     string
	ctx    context.Context // the caller's
	c      context.Context // chromedp context bound to ctx and the deadline
	tab    target.ID       // the tab it acts on
	start  time.Time
	cancel func()
}

func (c *call) elapsed() time.Duration { return time.Since(c.start).Round(time.Millisecond) }

// begin waits for the turn of the call and prepares it. The deadline of the
// call is now+timeout when timeout > 0, else ctx's deadline, else the pool's
// DefaultTimeout. The caller must call end.
func (s *Session) begin(ctx context.Context, op string, timeout time.Duration) (*call, error) {
	select {
	case s.turn <- struct{}{}:
	case <-ctx.Done():
		if err := ctxCancelled(ctx, op, ctx.Err()); err != nil {
			return nil, err
		}
		return nil, opError(duet.CodeStepTimeout, op, ctx.Err(), "%s: timed out waiting for another call on the session", op)
	}
	if err := ctxCancelled(ctx, op, ctx.Err()); err != nil {
		<-s.turn
		return nil, err
	}
	if s.closed.Load() {
		<-s.turn
		return nil, opError(duet.CodeBrowserError, op, errSessionClosed, "%s: the session is closed", op)
	}
	cur := s.current()
	c, cancel := context.WithCancel(cur.ctx)
	stop := context.AfterFunc(ctx, cancel)
	deadline, ok := ctx.Deadline()
	if timeout > 0 || !ok {
		if timeout <= 0 {
			timeout = s.pool.opts.DefaultTimeout
		}
		if d := time.Now().Add(timeout); !ok || d.Before(deadline) {
			deadline = d
		}
	}
	c, cancelD := context.WithDeadline(c, deadline)
	cl := &call{op: op, ctx: ctx, c: c, tab: cur.id, start: time.Now(), cancel: func() { stop(); cancelD(); cancel() }}
	s.inflight.Store(cl)
	return cl, nil
}

// end releases the call.
func (s *Session) end(c *call) {
	s.inflight.CompareAndSwap(c, nil)
	c.cancel()
	<-s.turn
}

// refuse notes a navigation of tab's page that the guard refused and ends
// the call running on that tab at once: the page it waits on is gone, and
// fail reports the refusal (URL_REFUSED) instead of the timeout the call
// would otherwise reach.
func (s *Session) refuse(tab target.ID, r *refusal) {
	s.refused.Store(r)
	if c := s.inflight.Load(); c != nil && tab != "" && c.tab == tab {
		c.cancel()
	}
}

// fail turns the error of a call into a *duet.Error. timeout builds the error
// of a call that ran out of time; nil means a plain CodeStepTimeout.
func (s *Session) fail(c *call, err error, timeout func() *duet.Error) error {
	if err == nil {
		return nil
	}
	if e := ctxCancelled(c.ctx, c.op, err); e != nil {
		return e
	}
	if r := s.refused.Swap(nil); r != nil {
		// The page went where the guard refused to follow: that, and not
		// the missing element that came of it, is the news.
		return opError(duet.CodeURLRefused, c.op, r.err, "%s: the page navigated to %s, which is refused: %s", c.op, r.url, duet.ErrorMessage(r.err))
	}
	var de *duet.Error
	if errors.As(err, &de) {
		return err
	}
	switch {
	case s.closed.Load():
		return opError(duet.CodeBrowserError, c.op, err, "%s: the session was closed", c.op)
	case s.pool.ctx.Err() != nil:
		return opError(duet.CodeBrowserError, c.op, err, "%s: the browser pool was closed", c.op)
	case s.proc.ctx.Err() != nil && s.pool.opts.Remote != nil:
		return opError(duet.CodeDeviceLost, c.op, err, "%s: the connection to %s was lost", c.op, s.pool.remoteName())
	case s.proc.ctx.Err() != nil:
		return opError(duet.CodeBrowserError, c.op, err, "%s: the browser process exited", c.op)
	case s.ctx.Err() != nil || s.current().ctx.Err() != nil:
		return opError(duet.CodeBrowserError, c.op, err, "%s: the browser tab is gone", c.op)
	case timedOut(c.ctx, c.c):
		if timeout != nil {
			e := timeout()
			e.Err = err
			return e
		}
		return opError(duet.CodeStepTimeout, c.op, err, "%s: timed out after %s", c.op, c.elapsed())
	}
	return opError(duet.CodeBrowserError, c.op, err, "%s: %v", c.op, err)
}

// do runs action on the current tab as one call named op (begin's
// deadline, end, and its error as fail makes it): a call that is nothing
// but one action.
func (s *Session) do(ctx context.Context, op string, action chromedp.Action[chromedp.Void]) error {
	c, err := s.begin(ctx, op, 0)
	if err != nil {
		return err
	}
	defer s.end(c)
	return s.fail(c, chromedp.Do(c.c, action), nil)
}

func emptySelector(op string) error {
	return opError(duet.CodeInvalidArgument, op, nil, "%s: selector is empty", op)
}

// Open loads url in the tab and waits for its load event. Only http, https,
// about and data URLs are opened.
//
// Errors: CodeInvalidArgument for a malformed URL, CodeURLRefused for another
// scheme, CodeStepTimeout when the page does not load in time, CodeCancelled,
// and CodeBrowserError when the page cannot be loaded (for example
// net::ERR_CONNECTION_REFUSED).
func (s *Session) Open(ctx context.Context, rawURL string) error {
	const op = "open"
	if err := checkURL(rawURL); err != nil {
		return err
	}
	c, err := s.begin(ctx, op, 0)
	if err != nil {
		return err
	}
	defer s.end(c)
	s.refused.Store(nil)
	s.mu.Lock()
	s.cur.frames = nil
	s.mu.Unlock()
	if err := s.checkNavigation(c.c, rawURL); err != nil {
		return opError(duet.CodeURLRefused, op, err, "open %s: %s", rawURL, duet.ErrorMessage(err))
	}
	err = chromedp.Do(c.c, chromedp.Navigate(rawURL))
	if r := s.refused.Swap(nil); r != nil && ctxCancelled(c.ctx, op, err) == nil {
		return opError(duet.CodeURLRefused, op, r.err, "open %s: redirected to %s, which is refused: %s", rawURL, r.url, duet.ErrorMessage(r.err))
	}
	if err == nil {
		return nil
	}
	if tctx := s.current().ctx; c.c.Err() != nil && tctx.Err() == nil {
		// Stop the load that the caller gave up on.
		sctx, cancel := context.WithTimeout(tctx, time.Second)
		_, _ = chromedp.Call(sctx, page.StopLoading, cdp.Empty{})
		cancel()
	}
	var le *chromedp.LoadError
	if errors.As(err, &le) && c.c.Err() == nil {
		return opError(duet.CodeBrowserError, op, err, "open %s: %s", rawURL, le.ErrorText)
	}
	return s.fail(c, err, func() *duet.Error {
		return opError(duet.CodeStepTimeout, op, nil, "open %s: the page did not load within %s", rawURL, c.elapsed())
	})
}

// checkURL returns CodeInvalidArgument for a malformed URL and CodeURLRefused
// for a scheme that Open does not load.
func checkURL(rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil || rawURL == "" || u.Scheme == "" {
		return opError(duet.CodeInvalidArgument, "open", err, "open: %q is not an absolute URL", rawURL)
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
		if u.Host == "" {
			return opError(duet.CodeInvalidArgument, "open", nil, "open: URL %q has no host", rawURL)
		}
	case "about", "data":
	default:
		return opError(duet.CodeURLRefused, "open", nil, "open: URL scheme %q is not allowed (want http or https)", u.Scheme)
	}
	return nil
}

// Click waits until the first element of selector is visible, enabled,
// stable and not covered by another element, scrolls it into view and
// clicks its centre with the mouse: Act with a CSS target.
//
// Errors: CodeElementNotFound when no visible element matches in time,
// CodeStepTimeout when it stays covered or disabled, CodeInvalidArgument for a
// bad selector, CodeCancelled and CodeBrowserError.
func (s *Session) Click(ctx context.Context, selector string) error {
	if selector == "" {
		return emptySelector(ActClick)
	}
	return s.Act(ctx, CSS(selector), Action{Kind: ActClick})
}

// Hover waits until the first element of selector is visible, stable and
// not covered by another element, scrolls it into view and moves the mouse
// over its centre: what opens a menu or a tooltip that opens on hover. A
// disabled element can be hovered.
//
// Errors: CodeElementNotFound when no visible element matches in time,
// CodeStepTimeout when it stays covered, CodeInvalidArgument for a bad
// selector, CodeCancelled and CodeBrowserError.
func (s *Session) Hover(ctx context.Context, selector string) error {
	if selector == "" {
		return emptySelector(ActHover)
	}
	return s.Act(ctx, CSS(selector), Action{Kind: ActHover})
}

// Fill replaces the content of an input, textarea or contenteditable element:
// it focuses the element, clears it and inserts value as one edit, as a
// paste does: the page gets one trusted beforeinput and input event
// (inputType insertText), which frameworks such as React and Vue take as
// the user's, and change when the field loses the focus. No key events:
// Type types key by key. Inputs of type date, time, month, week,
// datetime-local, range and color get value set directly, with input and
// change.
//
// Errors: CodeElementNotFound when no visible element matches in time,
// CodeInvalidArgument for a bad selector or an element that takes no text,
// CodeStepTimeout when it stays disabled or read-only, CodeCancelled and
// CodeBrowserError.
func (s *Session) Fill(ctx context.Context, selector, value string) error {
	if selector == "" {
		return emptySelector(ActFill)
	}
	return s.Act(ctx, CSS(selector), Action{Kind: ActFill, Value: value})
}

// Press presses a key: a name such as "Enter", "Tab", "Escape", "Backspace",
// "ArrowDown" or "PageDown", or a single character, optionally with modifiers
// as in "Shift+Tab" or "Control+a". When selector is not empty, Press first
// waits for that element and focuses it; otherwise the key goes to the
// focused element.
//
// Errors: CodeInvalidArgument for an unknown key or a bad selector,
// CodeElementNotFound, CodeCancelled, CodeStepTimeout and CodeBrowserError.
func (s *Session) Press(ctx context.Context, key, selector string) error {
	if selector != "" {
		return s.Act(ctx, CSS(selector), Action{Kind: ActPress, Value: key})
	}
	return s.PressKey(ctx, key)
}

// PressKey presses a key (as Press names them) on the focused element.
//
// Errors: CodeInvalidArgument for an unknown key, CodeCancelled,
// CodeStepTimeout and CodeBrowserError.
func (s *Session) PressKey(ctx context.Context, key string) error {
	const op = "press"
	text, mods, err := parseKey(key)
	if err != nil {
		return err
	}
	return s.do(ctx, op, chromedp.KeyEvent(text, chromedp.KeyModifiers(mods...)))
}

// Select chooses the option of the <select> element of selector whose value
// is value, or else whose visible label is value, and fires the input and
// change events. It waits for the option too, for lists that load late.
//
// Errors: CodeElementNotFound when the select or the option is missing in
// time, CodeInvalidArgument for a bad selector or an element that is not a
// <select>, CodeStepTimeout when it stays disabled, CodeCancelled and
// CodeBrowserError.
func (s *Session) Select(ctx context.Context, selector, value string) error {
	if selector == "" {
		return emptySelector(ActSelect)
	}
	return s.Act(ctx, CSS(selector), Action{Kind: ActSelect, Value: value})
}

// WaitFor waits until cond holds.
//
// Errors: CodeStepTimeout when it does not hold in time (the message says
// which part failed), CodeInvalidArgument for an empty condition, Visible
// without Selector, a bad selector or regular expression, CodeCancelled and
// CodeBrowserError.
func (s *Session) WaitFor(ctx context.Context, cond WaitCondition) error {
	const op = "wait"
	if cond.Selector == "" && cond.Text == "" && cond.URLContains == "" && cond.URLMatches == "" {
		return opError(duet.CodeInvalidArgument, op, nil, "wait: the condition is empty: set a selector, a text or a URL")
	}
	if cond.Visible && cond.Selector == "" {
		return opError(duet.CodeInvalidArgument, op, nil, "wait: visible needs a selector")
	}
	if cond.Timeout < 0 {
		return opError(duet.CodeInvalidArgument, op, nil, "wait: negative timeout %s", cond.Timeout)
	}
	var re *regexp.Regexp
	if cond.URLMatches != "" {
		var err error
		if re, err = regexp.Compile(cond.URLMatches); err != nil {
			return opError(duet.CodeInvalidArgument, op, err, "wait: bad URL pattern %q: %v", cond.URLMatches, err)
		}
	}
	c, err := s.begin(ctx, op, cond.Timeout)
	if err != nil {
		return err
	}
	defer s.end(c)

	seen := "" // a URL that does not match URLMatches
	var last jsResult
	err = s.awaitPage(c, func(ctx context.Context, slice time.Duration) (bool, error) {
		r, err := evalJS[jsResult](ctx, jsWait, jsWaitArgs{Sel: cond.Selector, Text: cond.Text, Visible: cond.Visible,
			URLContains: cond.URLContains, Seen: seen, Slice: slice.Milliseconds()})
		if err != nil {
			return false, err
		}
		if r.State == "invalid" {
			return false, opError(duet.CodeInvalidArgument, op, nil, "wait: invalid CSS selector %q: %s", cond.Selector, r.Msg)
		}
		last = r
		if r.Has && re != nil && !re.MatchString(r.Str) {
			// The page waits for another URL than this one next.
			last.State, seen = "url", r.Str
			return false, nil
		}
		return r.Has, nil
	})
	return s.fail(c, err, func() *duet.Error {
		var why string
		switch last.State {
		case "missing":
			why = fmt.Sprintf("no element matches %q", cond.Selector)
		case "hidden":
			why = fmt.Sprintf("element %q is not visible", cond.Selector)
		case "notext":
			why = fmt.Sprintf("text %q not found", cond.Text)
		case "url":
			why = fmt.Sprintf("the URL is %s", last.Str)
		default:
			why = "the page did not answer"
		}
		return opError(duet.CodeStepTimeout, op, nil, "wait for %s: %s after %s", describe(cond), why, c.elapsed())
	})
}

// describe returns the condition in words.
func describe(cond WaitCondition) string {
	var parts []string
	if cond.Selector != "" {
		p := fmt.Sprintf("element %q", cond.Selector)
		if cond.Visible {
			p = "visible " + p
		}
		parts = append(parts, p)
	}
	if cond.Text != "" {
		parts = append(parts, fmt.Sprintf("text %q", cond.Text))
	}
	if cond.URLContains != "" {
		parts = append(parts, fmt.Sprintf("URL containing %q", cond.URLContains))
	}
	if cond.URLMatches != "" {
		parts = append(parts, fmt.Sprintf("URL matching %q", cond.URLMatches))
	}
	return strings.Join(parts, " and ")
}

// Text returns the visible text of the first element of selector, trimmed;
// it is empty when the element is hidden. Text waits for the element to
// exist.
//
// Errors: CodeElementNotFound, CodeInvalidArgument for a bad selector,
// CodeCancelled and CodeBrowserError.
func (s *Session) Text(ctx context.Context, selector string) (string, error) {
	r, err := s.read(ctx, "text", selector, "")
	return strings.TrimSpace(r.Str), err
}

// Visible reports whether an element of selector exists and the first one
// is visible. It does not wait: a missing element is not visible.
//
// Errors: CodeInvalidArgument for a bad selector, CodeCancelled,
// CodeStepTimeout when the page does not answer, and CodeBrowserError.
func (s *Session) Visible(ctx context.Context, selector string) (bool, error) {
	r, err := s.read(ctx, "visible", selector, "")
	return r.Has, err
}

// Attr returns the attribute name of the first element of selector, and
// whether the element has it. Attr waits for the element to exist.
//
// Errors: CodeElementNotFound, CodeInvalidArgument for a bad selector,
// CodeCancelled and CodeBrowserError.
func (s *Session) Attr(ctx context.Context, selector, name string) (string, bool, error) {
	r, err := s.read(ctx, "attr", selector, name)
	return r.Str, r.Has, err
}

// Value returns the value property of the first element of selector, such
// as the current text of an input or the chosen value of a select. Value
// waits for the element to exist.
//
// Errors: CodeElementNotFound, CodeInvalidArgument for a bad selector or an
// element without a value, CodeCancelled and CodeBrowserError.
func (s *Session) Value(ctx context.Context, selector string) (string, error) {
	r, err := s.read(ctx, "value", selector, "")
	return r.Str, err
}

// read is Query of the first element of a CSS selector.
func (s *Session) read(ctx context.Context, kind, selector, name string) (Answer, error) {
	if selector == "" {
		return Answer{}, emptySelector(kind)
	}
	return s.Query(ctx, CSS(selector), Query{Kind: kind, Name: name})
}

// URL returns the URL of the page.
//
// Errors: CodeCancelled, CodeStepTimeout when the page does not answer, and
// CodeBrowserError.
func (s *Session) URL(ctx context.Context) (string, error) {
	r, err := s.page(ctx, "url")
	return r.Str, err
}

// Title returns the title of the page.
//
// Errors: CodeCancelled, CodeStepTimeout when the page does not answer, and
// CodeBrowserError.
func (s *Session) Title(ctx context.Context) (string, error) {
	r, err := s.page(ctx, "title")
	return r.Msg, err
}

func (s *Session) page(ctx context.Context, op string) (jsResult, error) {
	c, err := s.begin(ctx, op, 0)
	if err != nil {
		return jsResult{}, err
	}
	defer s.end(c)
	var r jsResult
	err = poll(c.c, func(ctx context.Context) (bool, error) {
		var err error
		r, err = evalJS[jsResult](ctx, jsPage)
		return err == nil, err
	})
	return r, s.fail(c, err, nil)
}

// Screenshot returns a PNG image of the viewport, at the device's pixel
// ratio.
//
// Errors: CodeCancelled, CodeStepTimeout and CodeBrowserError.
func (s *Session) Screenshot(ctx context.Context) ([]byte, error) {
	c, err := s.begin(ctx, "screenshot", 0)
	if err != nil {
		return nil, err
	}
	defer s.end(c)
	data, err := s.capture(c, page.CaptureScreenshotParams{
		Format:      page.CaptureScreenshotFormatPng,
		FromSurface: new(true),
	})
	if err != nil {
		return nil, s.fail(c, err, nil)
	}
	return data, nil
}

// maxImagePixels bounds the height and width of a full-page screenshot in
// device pixels; Chromium cannot capture larger surfaces.
const maxImagePixels = 16384

// FullScreenshot returns a PNG image of the whole page, beyond the viewport,
// at the device's pixel ratio. Very long pages are cut at 16384 device pixels.
//
// Errors: CodeCancelled, CodeStepTimeout and CodeBrowserError.
func (s *Session) FullScreenshot(ctx context.Context) ([]byte, error) {
	c, err := s.begin(ctx, "screenshot", 0)
	if err != nil {
		return nil, err
	}
	defer s.end(c)
	m, err := chromedp.Call(c.c, page.GetLayoutMetrics, cdp.Empty{})
	if err != nil {
		return nil, s.fail(c, err, nil)
	}
	limit := math.Floor(maxImagePixels / s.device.DeviceScaleFactor)
	w, h := float64(s.device.Width), float64(s.device.Height)
	if cs := m.CSSContentSize; cs != nil {
		w, h = max(w, math.Ceil(cs.Width)), max(h, math.Ceil(cs.Height))
	}
	data, err := s.capture(c, page.CaptureScreenshotParams{
		Format:                page.CaptureScreenshotFormatPng,
		Clip:                  &page.Viewport{Width: min(w, limit), Height: min(h, limit), Scale: 1},
		CaptureBeyondViewport: new(true),
		FromSurface:           new(true),
	})
	if err != nil {
		return nil, s.fail(c, err, nil)
	}
	return data, nil
}

// Close closes the tab and its browser context, which deletes the session's
// cookies and storage, and gives its slot back to the pool. Close is safe to
// call more than once and from any goroutine; later calls of other methods
// return CodeBrowserError.
func (s *Session) Close() {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		s.teardown()
		s.pool.forget(s)
	})
}

// teardown closes the tab and disposes of the browser context; a shared
// session clears the storage of the origins it visited.
func (s *Session) teardown() {
	if s.shared {
		s.clearOrigins()
	}
	s.mu.Lock()
	tabs, attached := s.tabs, s.attached
	s.attached = nil
	s.mu.Unlock()
	for _, a := range attached {
		a.cancel()
	}
	for _, tb := range tabs[min(1, len(tabs)):] {
		if tb.cancel != nil {
			tb.cancel() // closes a popup the session attached to
		} else if s.shared {
			s.closeTarget(tb.id)
		}
	}
	s.cancel() // closes the tab, bounded by chromedp
	s.baseCancel()
	s.dialogs.Wait()
	if s.proc.ctx.Err() != nil || s.contextID == "" {
		return // the process is gone, and its contexts with it; or there is no context of our own
	}
	ctx, cancel := context.WithTimeout(s.proc.ctx, 5*time.Second)
	defer cancel()
	_, err := chromedp.CallBrowser(ctx, target.DisposeBrowserContext,
		target.DisposeBrowserContextParams{BrowserContextID: s.contextID})
	if err != nil && s.proc.ctx.Err() == nil {
		s.pool.log.Warn("browser: cannot dispose of a browser context", "browser", s.proc.id, "err", err)
	}
}

// emulate returns the actions that make the tab look like d.
func emulate(d Device) []chromedp.Action[chromedp.Void] {
	orientation := &emulation.ScreenOrientation{Type: emulation.ScreenOrientationTypePortraitPrimary}
	if d.Width > d.Height {
		orientation = &emulation.ScreenOrientation{Type: emulation.ScreenOrientationTypeLandscapePrimary, Angle: 90}
	}
	var touchPoints int64
	if d.Touch {
		touchPoints = 5
	}
	var acts []chromedp.Action[chromedp.Void]
	if d.UserAgent != "" {
		acts = append(acts, command(emulation.SetUserAgentOverride, emulation.SetUserAgentOverrideParams{UserAgent: d.UserAgent}))
	}
	return append(acts,
		command(emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{
			Width:             int64(d.Width),
			Height:            int64(d.Height),
			DeviceScaleFactor: d.DeviceScaleFactor,
			Mobile:            d.Mobile,
			ScreenWidth:       int64(d.Width),
			ScreenHeight:      int64(d.Height),
			ScreenOrientation: orientation,
		}),
		command(emulation.SetTouchEmulationEnabled, emulation.SetTouchEmulationEnabledParams{Enabled: d.Touch, MaxTouchPoints: touchPoints}),
		// Sessions run side by side in windows of one process; each page
		// must behave as the focused one.
		command(emulation.SetFocusEmulationEnabled, emulation.SetFocusEmulationEnabledParams{Enabled: true}),
	)
}

// command returns an action that sends one protocol command to the tab.
func command[P, R any](cmd cdp.Command[P, R], params P) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, cmd, params)
		return err
	})
}
