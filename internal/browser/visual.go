package browser

import (
	"context"
	"math"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/duet-test/duet"
)

// ComparableScreenshot returns a PNG of the viewport, or of the element of
// selector when it is not "", taken for a visual comparison: CSS
// animations and transitions finished or stopped, the text caret hidden,
// and the elements of mask covered by opaque magenta boxes (what changes
// on every load — a clock, an advert — does not fail a comparison). The
// page is left as it was afterwards. It waits for the element of selector
// to be visible.
//
// Errors: CodeElementNotFound, CodeInvalidArgument for a bad selector,
// CodeStepTimeout, CodeCancelled and CodeBrowserError.
func (s *Session) ComparableScreenshot(ctx context.Context, selector string, mask []string) ([]byte, error) {
	const op = "assertScreenshot"
	c, err := s.begin(ctx, op, 0)
	if err != nil {
		return nil, err
	}
	defer s.end(c)
	if mask == nil {
		mask = []string{}
	}
	var r freezeResult
	err = poll(c.c, func(ctx context.Context) (bool, error) {
		var err error
		r, err = evalJS[freezeResult](ctx, jsFreeze, selector, mask)
		if err != nil {
			return false, err
		}
		switch r.State {
		case "ok":
			return true, nil
		case "invalid":
			return false, opError(duet.CodeInvalidArgument, op, nil, "%s: invalid CSS selector: %s", op, r.Msg)
		}
		return false, nil
	})
	defer func() {
		// Put the page back: the animations run again, the masks go.
		uctx, cancel := context.WithTimeout(s.ctx, 5*time.Second)
		defer cancel()
		_, _ = evalJS[bool](uctx, jsThaw)
	}()
	if err != nil {
		return nil, s.targetFail(c, CSS(selector), jsResult{State: r.State, Msg: r.Msg}, err)
	}
	// Two frames: the page paints without its animations and with the masks.
	if _, err := chromedp.Run(c.c, chromedp.Evaluate[bool](`new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))`, chromedp.EvalAwaitPromise)); err != nil {
		return nil, s.fail(c, err, nil)
	}
	params := page.CaptureScreenshotParams{Format: page.CaptureScreenshotFormatPng, FromSurface: new(true)}
	if selector != "" {
		if r.W < 1 || r.H < 1 {
			return nil, opError(duet.CodeElementNotFound, op, nil, "%s: element %q has no size", op, selector)
		}
		params.Clip = &page.Viewport{X: math.Floor(r.X), Y: math.Floor(r.Y), Width: math.Ceil(r.W), Height: math.Ceil(r.H), Scale: 1}
		params.CaptureBeyondViewport = new(true)
	}
	data, err := s.capture(c, params)
	if err != nil {
		return nil, s.fail(c, err, nil)
	}
	return data, nil
}

// freezeResult is what jsFreeze returns.
type freezeResult struct {
	State string  `json:"state"`
	Msg   string  `json:"msg"`
	X     float64 `json:"x"`
	Y     float64 `json:"y"`
	W     float64 `json:"w"`
	H     float64 `json:"h"`
}

// jsFreeze stops the page's animations, covers the mask elements and
// returns the rectangle of the element of sel in page coordinates ("" for
// the viewport): the state "missing" or "hidden" until it is visible.
const jsFreeze = `function (sel, mask) {
	let rect = {x: 0, y: 0, w: innerWidth, h: innerHeight};
	if (sel) {
		const f = $find(sel, true);
		if (f.state !== 'ok') return f;
		const b = f.el.getBoundingClientRect();
		rect = {x: b.left + scrollX, y: b.top + scrollY, w: b.width, h: b.height};
	}
	let style = document.getElementById('__duet_freeze');
	if (!style) {
		style = document.createElement('style');
		style.id = '__duet_freeze';
		style.textContent = '*, *::before, *::after { animation-delay: 0s !important; animation-duration: 0s !important; animation-iteration-count: 1 !important; transition: none !important; caret-color: transparent !important; scroll-behavior: auto !important }';
		(document.head || document.documentElement).appendChild(style);
	}
	for (const a of document.getAnimations()) {
		try { a.finish(); } catch (e) { a.cancel(); }
	}
	document.querySelectorAll('[data-duet-mask]').forEach((el) => el.remove());
	for (const m of mask) {
		let els;
		try { els = document.querySelectorAll(m); } catch (e) { return {state: 'invalid', msg: m + ': ' + String((e && e.message) || e)}; }
		for (const el of els) {
			const b = el.getBoundingClientRect();
			const box = document.createElement('div');
			box.setAttribute('data-duet-mask', '');
			box.style.cssText = 'position:absolute;z-index:2147483647;background:#ff00ff;pointer-events:none;' +
				'left:' + (b.left + scrollX) + 'px;top:' + (b.top + scrollY) + 'px;width:' + b.width + 'px;height:' + b.height + 'px';
			document.documentElement.appendChild(box);
		}
	}
	return {state: 'ok', x: rect.x, y: rect.y, w: rect.w, h: rect.h};
}`

// jsThaw undoes jsFreeze.
const jsThaw = `function () {
	document.querySelectorAll('[data-duet-mask], #__duet_freeze').forEach((el) => el.remove());
	return true;
}`
