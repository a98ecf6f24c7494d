package browser

import (
	"context"

	"github.com/chromedp/chromedp"
)

// PageMetrics returns the page-speed values of the current document, from
// the browser's own Navigation Timing and PerformanceObserver entries
// (buffered, so what happened before the call counts), in milliseconds but
// cls:
//
//	ttfb              the response's first byte, from the navigation's start
//	fcp               the first contentful paint
//	lcp               the largest contentful paint (its last candidate)
//	cls               the cumulative layout shift: the largest session window
//	                  (gaps under 1 s, at most 5 s) of shifts without recent input
//	inp               the interaction to next paint: the longest interaction
//	                  (only once the page was interacted with)
//	domContentLoaded  the DOMContentLoaded event's end
//	load              the load event's end
//
// It waits, within ctx, for the load event to finish first. A value the
// browser did not report is absent.
//
// Errors: CodeStepTimeout, CodeCancelled and CodeBrowserError.
func (s *Session) PageMetrics(ctx context.Context) (map[string]float64, error) {
	const op = "assertPerformance"
	c, err := s.begin(ctx, op, 0)
	if err != nil {
		return nil, err
	}
	defer s.end(c)
	err = poll(c.c, func(ctx context.Context) (bool, error) {
		return chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => { const n = performance.getEntriesByType('navigation')[0]; return document.readyState === 'complete' && (!n || n.loadEventEnd > 0); })()`))
	})
	if err != nil {
		return nil, s.fail(c, err, nil)
	}
	m, err := chromedp.Run(c.c, chromedp.Evaluate[map[string]float64](jsPageMetrics, chromedp.EvalAwaitPromise))
	if err != nil {
		return nil, s.fail(c, err, nil)
	}
	return m, nil
}

// jsPageMetrics collects the values PageMetrics documents; it lets the
// buffered entries of each observer arrive for 50 ms.
const jsPageMetrics = `(async () => {
	const out = {};
	const nav = performance.getEntriesByType('navigation')[0];
	if (nav) {
		out.ttfb = nav.responseStart - nav.startTime;
		if (nav.domContentLoadedEventEnd > 0) out.domContentLoaded = nav.domContentLoadedEventEnd - nav.startTime;
		if (nav.loadEventEnd > 0) out.load = nav.loadEventEnd - nav.startTime;
	}
	const collect = (init) => new Promise((resolve) => {
		let list = [];
		let po;
		try {
			po = new PerformanceObserver((l) => { list = list.concat(l.getEntries()); });
			po.observe(Object.assign({buffered: true}, init));
		} catch (e) { resolve([]); return; }
		setTimeout(() => { list = list.concat(po.takeRecords()); po.disconnect(); resolve(list); }, 50);
	});
	const [paints, lcps, shifts, events] = await Promise.all([
		collect({type: 'paint'}), collect({type: 'largest-contentful-paint'}),
		collect({type: 'layout-shift'}), collect({type: 'event', durationThreshold: 16})]);
	const fcp = paints.find((e) => e.name === 'first-contentful-paint');
	if (fcp) out.fcp = fcp.startTime;
	if (lcps.length) out.lcp = lcps[lcps.length - 1].startTime;
	let cls = 0, win = 0, first = 0, last = 0;
	for (const e of shifts) {
		if (e.hadRecentInput) continue;
		if (win > 0 && e.startTime - last < 1000 && e.startTime - first < 5000) {
			win += e.value;
		} else {
			win = e.value; first = e.startTime;
		}
		last = e.startTime;
		cls = Math.max(cls, win);
	}
	out.cls = cls;
	let inp = -1;
	for (const e of events) if (e.interactionId) inp = Math.max(inp, e.duration);
	if (inp >= 0) out.inp = inp;
	return out;
})()`
