package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/duet-test/duet"
)

// tab is one page of a session: the first one, or a page that one of the
// session's pages opened (a popup, a link with target=_blank).
type tab struct {
	id     target.ID
	ctx    context.Context // the chromedp context of the tab; nil until attached
	cancel context.CancelFunc
	ctxs   *contexts
	opener target.ID
	frames []*Locator // the frame scope of the element operations (SetFrame)
	taken  bool       // a WaitForPopup returned it, or a switch chose it

	// ready is closed when a popup the browser held is a tab of the
	// session, or could not be made one (err); nil for the other tabs.
	ready chan struct{}
	err   error
}

// current returns the tab the session's calls act on.
func (s *Session) current() *tab {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur
}

// watchTabs follows the pages that the session's pages open and close.
func (s *Session) watchTabs() {
	created := chromedp.Events(s.ctx, target.TargetCreated)
	destroyed := chromedp.Events(s.ctx, target.TargetDestroyed)
	if s.proc.hold != nil && s.proc.hold.holding.Load() {
		// The browser holds the new pages: the pool adds them as they
		// attach (hold.go), before they run.
		created = nil
	}
	s.dialogs.Go(func() {
		if created == nil {
			return
		}
		for ev, err := range created {
			if err != nil {
				return
			}
			info := ev.TargetInfo
			if info == nil || info.Type != "page" || info.OpenerID == "" {
				continue
			}
			s.mu.Lock()
			if s.tabByID(info.OpenerID) != nil && s.tabByID(info.TargetID) == nil {
				s.tabs = append(s.tabs, &tab{id: info.TargetID, opener: info.OpenerID})
				close(s.tabsChanged)
				s.tabsChanged = make(chan struct{})
			}
			s.mu.Unlock()
		}
	})
	s.dialogs.Go(func() {
		for ev, err := range destroyed {
			if err != nil {
				return
			}
			s.mu.Lock()
			for i, tb := range s.tabs {
				if i > 0 && tb.id == ev.TargetID {
					s.dropTabLocked(i)
					break
				}
			}
			s.mu.Unlock()
		}
	})
}

// tabContexts returns the contexts of the session's tabs that have one.
func (s *Session) tabContexts() []context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []context.Context
	for _, tb := range s.tabs {
		if tb.ctx != nil {
			out = append(out, tb.ctx)
		}
	}
	return out
}

// tabByID returns the tab of id, or nil. s.mu is held.
func (s *Session) tabByID(id target.ID) *tab {
	for _, tb := range s.tabs {
		if tb.id == id {
			return tb
		}
	}
	return nil
}

// dropTabLocked forgets the tab at i (not the first); when it was the
// current one, its opener (else the first tab) becomes current. s.mu is
// held.
func (s *Session) dropTabLocked(i int) {
	tb := s.tabs[i]
	s.tabs = append(s.tabs[:i:i], s.tabs[i+1:]...)
	if tb.cancel != nil {
		tb.cancel()
	}
	if s.cur == tb {
		s.cur = s.tabs[0]
		if o := s.tabByID(tb.opener); o != nil && o.ctx != nil {
			s.cur = o
		}
	}
	close(s.tabsChanged)
	s.tabsChanged = make(chan struct{})
}

// TabInfo describes a tab of a session.
type TabInfo struct {
	Number  int // 1 the first
	URL     string
	Title   string
	Current bool
}

// WaitForPopup waits until one of the session's pages has opened a page
// that no earlier WaitForPopup (or switch) took — window.open, a link with
// target=_blank — within ctx's deadline, and makes it the current tab:
// the calls that follow act on it. It returns the tab's number.
//
// Errors: CodeStepTimeout when no page opens in time, CodeURLRefused when
// the network guard refuses its address, CodeCancelled and
// CodeBrowserError.
func (s *Session) WaitForPopup(ctx context.Context) (int, error) {
	const op = "waitForPopup"
	c, err := s.begin(ctx, op, 0)
	if err != nil {
		return 0, err
	}
	defer s.end(c)
	for {
		s.mu.Lock()
		var next *tab
		for _, tb := range s.tabs[1:] {
			if !tb.taken {
				next = tb
				break
			}
		}
		changed := s.tabsChanged
		s.mu.Unlock()
		if next != nil {
			return s.switchTab(c, next)
		}
		select {
		case <-changed:
		case <-c.c.Done():
			return 0, s.fail(c, c.c.Err(), func() *duet.Error {
				return opError(duet.CodeStepTimeout, op, nil, "waitForPopup: no new tab opened within %s (a click that opens one comes before waitForPopup)", c.elapsed())
			})
		}
	}
}

// SwitchTab makes a tab current: the one numbered n (1 the first, in the
// order they opened), or, with n 0, the first whose URL contains
// urlContains. The calls that follow act on it, in its top page.
//
// Errors: CodeNotFound when there is no such tab (the message lists them),
// CodeURLRefused when the network guard refuses its address, CodeCancelled
// and CodeBrowserError.
func (s *Session) SwitchTab(ctx context.Context, n int, urlContains string) (int, error) {
	const op = "switchTo"
	c, err := s.begin(ctx, op, 0)
	if err != nil {
		return 0, err
	}
	defer s.end(c)
	var infos []TabInfo // the tabs as last seen
	notFound := func() *duet.Error {
		var list []string
		for _, in := range infos {
			list = append(list, fmt.Sprintf("%d. %s", in.Number, in.URL))
		}
		want := fmt.Sprintf("no tab %d", n)
		if n == 0 {
			want = fmt.Sprintf("no tab's URL contains %q", urlContains)
		}
		seen := strings.Join(list, "; ")
		if infos == nil {
			seen = "not listed in time"
		}
		return opError(duet.CodeNotFound, op, nil, "switchTo: %s after %s; the tabs: %s", want, c.elapsed(), seen)
	}
	for {
		s.mu.Lock()
		tabs := append([]*tab(nil), s.tabs...)
		changed := s.tabsChanged
		s.mu.Unlock()
		in, err := s.tabInfos(c, tabs)
		if err != nil {
			// Out of time while listing them: the tab did not come.
			return 0, s.fail(c, err, notFound)
		}
		infos = in
		for i, tb := range tabs {
			if (n > 0 && i+1 == n) || (n == 0 && strings.Contains(infos[i].URL, urlContains)) {
				return s.switchTab(c, tb)
			}
		}
		// The tab may be opening: wait for it until the deadline.
		select {
		case <-changed:
			continue
		case <-time.After(100 * time.Millisecond):
			continue
		case <-c.c.Done():
		}
		return 0, s.fail(c, c.c.Err(), notFound)
	}
}

// Tabs lists the session's tabs.
//
// Errors: CodeCancelled, CodeStepTimeout and CodeBrowserError.
func (s *Session) Tabs(ctx context.Context) ([]TabInfo, error) {
	c, err := s.begin(ctx, "tabs", 0)
	if err != nil {
		return nil, err
	}
	defer s.end(c)
	s.mu.Lock()
	tabs := append([]*tab(nil), s.tabs...)
	s.mu.Unlock()
	infos, err := s.tabInfos(c, tabs)
	return infos, s.fail(c, err, nil)
}

func (s *Session) tabInfos(c *call, tabs []*tab) ([]TabInfo, error) {
	all, err := chromedp.Targets(c.c)
	if err != nil {
		return nil, err
	}
	cur := s.current()
	out := make([]TabInfo, len(tabs))
	for i, tb := range tabs {
		out[i] = TabInfo{Number: i + 1, Current: tb == cur}
		for _, in := range all {
			if in.TargetID == tb.id {
				out[i].URL, out[i].Title = in.URL, in.Title
			}
		}
	}
	return out, nil
}

// switchTab attaches to tb when it is new (or waits until the pool has
// made a popup the browser held ready), checks its address against the
// network guard, and makes it current.
func (s *Session) switchTab(c *call, tb *tab) (int, error) {
	if tb.ready != nil {
		select {
		case <-tb.ready:
		case <-c.c.Done():
			return 0, s.fail(c, c.c.Err(), func() *duet.Error {
				return opError(duet.CodeStepTimeout, c.op, nil, "%s: the new tab was not ready within %s", c.op, c.elapsed())
			})
		}
		s.mu.Lock()
		err := tb.err
		s.mu.Unlock()
		if err != nil {
			return 0, opError(duet.CodeBrowserError, c.op, err, "%s: the new tab could not be attached: %v", c.op, err)
		}
	} else if tb.ctx == nil {
		if err := s.attachTab(c.c, tb); err != nil {
			return 0, s.fail(c, err, nil)
		}
	}
	// The page loaded before the guard watched it: check where it is.
	ectx, ecancel := bind(tb.ctx, c.c)
	u, err := chromedp.Run(ectx, chromedp.Evaluate[string](`location.href`))
	ecancel()
	if err != nil {
		return 0, s.fail(c, err, nil)
	}
	if err := s.checkNavigation(c.c, u); err != nil {
		return 0, opError(duet.CodeURLRefused, c.op, err, "%s: the new tab is at %s, which is refused: %s", c.op, u, duet.ErrorMessage(err))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	tb.taken, tb.frames = true, nil
	s.cur = tb
	for i, x := range s.tabs {
		if x == tb {
			return i + 1, nil
		}
	}
	return 0, opError(duet.CodeBrowserError, c.op, nil, "%s: the tab closed", c.op)
}

// CloseTab closes the current tab and makes its opener (else the first
// tab) current. The first tab closes with the session only.
//
// Errors: CodeInvalidArgument for the first tab, CodeCancelled and
// CodeBrowserError.
func (s *Session) CloseTab(ctx context.Context) error {
	const op = "closeTab"
	c, err := s.begin(ctx, op, 0)
	if err != nil {
		return err
	}
	defer s.end(c)
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, tb := range s.tabs {
		if tb != s.cur {
			continue
		}
		if i == 0 {
			return opError(duet.CodeInvalidArgument, op, nil, "closeTab: this is the first tab, which closes with the case; switch to another tab first")
		}
		s.dropTabLocked(i) // cancelling an attached tab's context closes it
		return nil
	}
	return nil
}

// History goes back or forward in the current tab's history, or reloads
// it, and waits for the page to load.
//
// Errors: CodeInvalidArgument for an unknown direction or no page to go
// back (forward) to, CodeStepTimeout, CodeCancelled and CodeBrowserError.
func (s *Session) History(ctx context.Context, direction string) error {
	op := direction
	var act chromedp.Action[chromedp.Void]
	switch direction {
	case "back", "forward":
		act = chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			h, err := cdp.Call(ctx, t, page.GetNavigationHistory, cdp.Empty{})
			if err != nil {
				return err
			}
			i := h.CurrentIndex - 1
			if direction == "forward" {
				i = h.CurrentIndex + 1
			}
			if i < 0 || i >= int64(len(h.Entries)) {
				return opError(duet.CodeInvalidArgument, op, nil, "%s: there is no page to go %s to", op, direction)
			}
			e := h.Entries[i]
			if _, err := cdp.Call(ctx, t, page.NavigateToHistoryEntry, page.NavigateToHistoryEntryParams{EntryID: e.ID}); err != nil {
				return err
			}
			// A page from the back-forward cache fires no load event:
			// wait until the tab shows the entry, loaded.
			return poll(ctx, func(ctx context.Context) (bool, error) {
				r, err := cdp.Call(ctx, t, runtime.Evaluate, runtime.EvaluateParams{Expression: "[location.href, document.readyState]", ReturnByValue: new(true)})
				if err != nil || r.Result == nil {
					return false, err
				}
				var v [2]string
				if json.Unmarshal(r.Result.Value, &v) != nil {
					return false, nil
				}
				return v[0] == e.URL && v[1] == "complete", nil
			})
		})
	case "reload":
		act = chromedp.Reload()
	default:
		return opError(duet.CodeInvalidArgument, "history", nil, "unknown history direction %q (back, forward or reload)", direction)
	}
	c, err := s.begin(ctx, op, 0)
	if err != nil {
		return err
	}
	defer s.end(c)
	tb := s.current()
	s.mu.Lock()
	tb.frames = nil
	s.mu.Unlock()
	return s.fail(c, chromedp.Do(c.c, act), func() *duet.Error {
		return opError(duet.CodeStepTimeout, op, nil, "%s: the page did not load within %s", op, c.elapsed())
	})
}
