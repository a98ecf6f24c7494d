package browser

import (
	"context"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"

	"github.com/duet-test/duet"
)

// click clicks, double-clicks, checks, unchecks, hovers or drags the
// element of t, and makes sure that the click (the hover, the drag's press)
// lands on it. The actionability checks pass a
// moment before the mouse goes down, and a page can move the element in
// between — the press itself can: a field that loses the focus shows a
// hint above a checkbox. So the check script leaves a guard in the page
// ($guardHits) that looks again, at each event of the click, at what is
// under the mouse; a click that would reach another element is stopped
// there (no handler of the page sees it, no default action), and the
// action starts again — the checks, then a new click — until it lands or
// the call's time is up, which fails with "another element would receive
// the click", as Playwright says.
func (s *Session) click(c *call, w *world, t Target, want string, o actOpts, a Action, button input.MouseButton, mods []chromedp.Modifier) error {
	var missed string // what the last click would have reached instead
	what := map[string]string{"hover": "the hover", "drag": "the drag"}[o.Guard]
	if what == "" {
		what = "the click"
	}
	missedErr := func(err error) error {
		return opError(duet.CodeStepTimeout, c.op, err, "%s: element %s did not receive %s: another element would receive %s: %s (after %s)", c.op, t, what, what, missed, c.elapsed())
	}
	for delay := time.Duration(0); ; delay = min(max(2*delay, 20*time.Millisecond), 500*time.Millisecond) {
		r, err := s.resolve(c, w, t, want, o)
		if err != nil {
			if missed != "" && ctxCancelled(c.ctx, c.op, err) == nil && timedOut(c.ctx, c.c) {
				return missedErr(err)
			}
			return err
		}
		x, y, err := s.toViewport(c, w, r.X, r.Y)
		if err != nil {
			s.hitVerdict(c, w)
			return s.fail(c, err, nil)
		}
		checked := a.Kind == ActCheck
		switch a.Kind {
		case ActClick:
			err = chromedp.Do(c.c,
				chromedp.MouseEvent(chromedp.MouseMoved, x, y, chromedp.ButtonModifiers(mods...)),
				chromedp.MouseClickXY(x, y, chromedp.ButtonType(button), chromedp.ButtonModifiers(mods...)))
		case ActDblClick:
			err = chromedp.Do(c.c,
				chromedp.MouseEvent(chromedp.MouseMoved, x, y, chromedp.ButtonModifiers(mods...)),
				chromedp.MouseClickXY(x, y, chromedp.ButtonModifiers(mods...)),
				chromedp.MouseClickXY(x, y, chromedp.ClickCount(2), chromedp.ButtonModifiers(mods...)))
		case ActCheck, ActUncheck:
			if r.Has == checked {
				s.hitVerdict(c, w) // no click: take the guard away
				return nil
			}
			err = chromedp.Do(c.c, chromedp.MouseEvent(chromedp.MouseMoved, x, y), chromedp.MouseClickXY(x, y))
		case ActHover:
			err = chromedp.Do(c.c, chromedp.MouseEvent(chromedp.MouseMoved, x, y, chromedp.ButtonModifiers(mods...)))
		case ActDrag:
			err = s.drop(c, w, x, y, *a.To)
		}
		v := s.hitVerdict(c, w) // also takes the guard away after a failed click
		if err != nil {
			if v != "" {
				missed = v
			}
			if missed != "" && ctxCancelled(c.ctx, c.op, err) == nil && timedOut(c.ctx, c.c) {
				return missedErr(err)
			}
			return s.fail(c, err, nil)
		}
		if v == "" {
			if a.Kind == ActCheck || a.Kind == ActUncheck {
				return s.awaitChecked(c, w, t, checked)
			}
			return nil
		}
		missed = v
		s.pool.log.Debug("browser: an action would have reached another element; acting again", "op", c.op, "target", t.String(), "instead", v)
		if err := sleep(c.c, delay); err != nil {
			if e := ctxCancelled(c.ctx, c.op, err); e != nil {
				return e
			}
			return missedErr(err)
		}
	}
}

// jsHitVerdict takes the guard of the last click away and returns what it
// saw: the element that would have received the click instead of the
// target (str), or nothing when every event reached the target.
const jsHitVerdict = `function () {
	const st = window[$hitGuardKey];
	if (!st) return {state: 'ok'};
	st.stop();
	return {state: 'ok', str: st.verdict};
}`

// hitVerdict returns what the guard of the last click in w saw: "" when
// the click reached the target. A page that went away with the click (a
// link) or does not answer had it.
func (s *Session) hitVerdict(c *call, w *world) string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.c), releaseTimeout)
	defer cancel()
	var r jsResult
	if err := s.script(ctx, w, &look{}, jsHitVerdict, nil, &r); err != nil {
		return ""
	}
	return r.Str
}
