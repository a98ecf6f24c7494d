package browser

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chromedp/cdproto"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/chromedp/cdproto/css"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/duet-test/duet"
)

// A popup's first requests — its document, the calls its page makes as it
// loads — leave before anyone could attach to it and set the network guard
// and the case's routes on it. So the pool asks each browser to hold every
// new page at its start (Target.setAutoAttach with waitForDebuggerOnStart,
// at the browser's level) and lets it run only when it is ready: a page
// that a session's tab opened becomes a tab of that session first (its
// own protocol session with the request log, and the Fetch handler of the
// guard and the routes, on), and only then runs; any other page runs at
// once.
//
// A held page waits on the session the browser auto-attached for it, and
// only a command on that session lets it run; and a page that has not run
// (a link's target=_blank page, which has no document yet) answers none of
// chromedp's attach, which waits for it. chromedp sends only its own
// commands, on the sessions it attached itself, so the pool keeps its own
// handle on the connection to the browser: a relay of the pipes of a local
// browser (hold_unix.go), a wrapper of the WebSocket of a remote one
// (remote.go). Through it go a few commands of the pool, in between
// chromedp's — the Network.enable and Fetch.enable of the tab's session
// while chromedp's attach waits, then, once chromedp has sent a command on
// that session (its target of it exists), the Runtime.runIfWaitingForDebugger
// of the held one —
// and the replies to them come back to the pool, not to chromedp.

// holder is the pool's handle on the connection to one browser.
type holder struct {
	mu    sync.Mutex                     // one message at a time on the connection
	write func(m *cdproto.Message) error // under mu; nil when there is no handle
	next  int64                          // under mu: ids of the messages sent here

	rmu     sync.Mutex
	replies map[int64]chan *cdproto.Message                         // under rmu: the calls waiting for their reply
	attach  map[target.ID]chan target.SessionID                     // under rmu: adoptions waiting for their session
	early   map[target.SessionID]func(ev *fetch.EventRequestPaused) // under rmu: the sessions whose early requests are watched (watchEarly)
	nearly  atomic.Int32                                            // len(early): the reader looks for paused requests only when > 0

	// holding is true once the browser holds new pages; set before the
	// process takes sessions.
	holding atomic.Bool

	// While an adoption is under way (adopting > 0), the sessions chromedp
	// sends commands on are noted (sentOn), and an adoption waits in
	// awaitChromedp until its session is one: chromedp routes a session's
	// events only to a target it has made, and drops those of any other
	// session, so a popup that ran before chromedp's target of it existed
	// lost its first paused request — its document waited forever, and the
	// attach with it (adoptTimeout). chromedp sends its first command on a
	// session only once its target of it is in place.
	adopting  atomic.Int32
	sentOn    map[target.SessionID]bool          // under rmu
	sentOrder []target.SessionID                 // under rmu: sentOn's sessions, oldest first
	sentWait  map[target.SessionID]chan struct{} // under rmu

	// lateAttach, in tests, holds chromedp's attach replies back (relay):
	// Options.lateAttachReply.
	lateAttach time.Duration
}

// maxSentOn bounds the sessions noted while adoptions are under way (a
// browser has far fewer); past it, the oldest noted is forgotten first, so
// the sessions of the adoptions in flight, which chromedp has just sent
// on, stay noted however long adoptions keep overlapping.
const maxSentOn = 4096

// heldIDs start far above chromedp's ids (which count up from 1): a reply
// with a larger id answers a message of the holder, and chromedp never
// sees it.
const heldIDs = 1 << 30

// send writes a command on the session sid; reply, when not nil, gets its
// reply.
func (h *holder) send(sid target.SessionID, method string, params any, reply chan *cdproto.Message) (int64, error) {
	var buf []byte
	if params != nil {
		var err error
		if buf, err = jsonv2.Marshal(params, chromedp.DefaultMarshalOptions); err != nil {
			return 0, err
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.write == nil {
		return 0, errors.New("no handle on the connection to the browser")
	}
	h.next++
	id := heldIDs + h.next
	if reply != nil {
		h.rmu.Lock()
		if h.replies == nil {
			h.replies = map[int64]chan *cdproto.Message{}
		}
		h.replies[id] = reply
		h.rmu.Unlock()
	}
	return id, h.write(&cdproto.Message{ID: id, SessionID: sid, Method: cdproto.MethodType(method), Params: buf})
}

// call sends a command on the session sid and waits for its reply within
// ctx's deadline.
func (h *holder) call(ctx context.Context, sid target.SessionID, method string, params any) error {
	reply := make(chan *cdproto.Message, 1)
	id, err := h.send(sid, method, params, reply)
	if err == nil {
		select {
		case m := <-reply:
			if m.Error != nil {
				return fmt.Errorf("%s: %w", method, m.Error)
			}
			return nil
		case <-ctx.Done():
			err = fmt.Errorf("no reply: %w", ctx.Err())
		}
	}
	h.rmu.Lock()
	delete(h.replies, id)
	h.rmu.Unlock()
	return fmt.Errorf("%s: %w", method, err)
}

// deliver hands a reply to the call that waits for it; it reports whether
// m answers a message of the holder (which chromedp must not see). The
// reader calls it with every message of the connection, in their order.
func (h *holder) deliver(m *cdproto.Message) bool {
	if m.Method == cdproto.MethodType(fetch.RequestPaused.Method) {
		h.paused(m)
		return false
	}
	if m.ID < heldIDs || m.Method != "" {
		return false
	}
	h.rmu.Lock()
	ch := h.replies[m.ID]
	delete(h.replies, m.ID)
	h.rmu.Unlock()
	if ch != nil {
		c := *m // the reader reuses m
		ch <- &c
	}
	return true
}

// watchEarly hands fn each request paused on the session sid (a held
// popup's, adoptHeld), as the connection brings them, until chromedp sends
// CSS.enable on sid or endEarly ends the watch.
//
// The page's renderer reports the requests it sends only once it has taken
// Network.enable, and the Fetch handler pauses them all; a request paused
// without a network id is one the Network domain does not report. Until
// CSS.enable, that is a request of the page; from then on, it may also be
// a load of the CSS domain's own (the page's document again, from the
// cache), which cannot leave before the command does.
func (h *holder) watchEarly(sid target.SessionID, fn func(ev *fetch.EventRequestPaused)) {
	h.rmu.Lock()
	defer h.rmu.Unlock()
	if h.early == nil {
		h.early = map[target.SessionID]func(ev *fetch.EventRequestPaused){}
	}
	h.early[sid] = fn
	h.nearly.Store(int32(len(h.early)))
}

// sending notes a command of chromedp's before it leaves: CSS.enable ends
// the watch of the early requests of its session.
func (h *holder) sending(method cdproto.MethodType, sid target.SessionID) {
	if sid != "" && h.adopting.Load() > 0 {
		h.noteSent(sid)
	}
	if h.nearly.Load() > 0 && method == css.CommandEnable {
		h.endEarly(sid)
	}
}

// noteSent notes that chromedp sent a command on sid, and wakes the
// adoption that waits for it.
func (h *holder) noteSent(sid target.SessionID) {
	h.rmu.Lock()
	defer h.rmu.Unlock()
	if h.sentOn[sid] {
		return
	}
	if h.sentOn == nil {
		h.sentOn = map[target.SessionID]bool{}
	}
	if len(h.sentOrder) >= maxSentOn {
		delete(h.sentOn, h.sentOrder[0])
		h.sentOrder = h.sentOrder[1:]
	}
	h.sentOn[sid] = true
	h.sentOrder = append(h.sentOrder, sid)
	if ch := h.sentWait[sid]; ch != nil {
		close(ch)
		delete(h.sentWait, sid)
	}
}

// awaitChromedp waits, within ctx, until chromedp has sent a command on
// sid: its target of the session exists, and the session's events reach
// it.
func (h *holder) awaitChromedp(ctx context.Context, sid target.SessionID) error {
	h.rmu.Lock()
	if h.sentOn[sid] {
		h.rmu.Unlock()
		return nil
	}
	if h.sentWait == nil {
		h.sentWait = map[target.SessionID]chan struct{}{}
	}
	ch := make(chan struct{})
	h.sentWait[sid] = ch
	h.rmu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		h.rmu.Lock()
		delete(h.sentWait, sid)
		h.rmu.Unlock()
		return fmt.Errorf("chromedp did not take the session of the new tab: %w", ctx.Err())
	}
}

// endEarly ends the watch of the early requests of sid.
func (h *holder) endEarly(sid target.SessionID) {
	h.rmu.Lock()
	defer h.rmu.Unlock()
	h.endEarlyLocked(sid)
}

func (h *holder) endEarlyLocked(sid target.SessionID) {
	delete(h.early, sid)
	h.nearly.Store(int32(len(h.early)))
}

// paused hands the request paused of the event m to the watch of its
// session, if any.
func (h *holder) paused(m *cdproto.Message) {
	if h.nearly.Load() == 0 {
		return
	}
	h.rmu.Lock()
	fn := h.early[m.SessionID]
	h.rmu.Unlock()
	if fn == nil {
		return
	}
	var ev fetch.EventRequestPaused
	if err := jsonv2.Unmarshal(m.Params, &ev, chromedp.DefaultUnmarshalOptions); err == nil && ev.Request != nil {
		fn(&ev)
	}
}

// resume lets the held page of the auto-attached session sid run.
func (h *holder) resume(sid target.SessionID) error {
	_, err := h.send(sid, cdpruntime.CommandRunIfWaitingForDebugger, nil, nil)
	return err
}

// expectAttach returns the channel that gets the next session attached to
// the page id other than held (the one an adoption asks for).
func (h *holder) expectAttach(id target.ID) chan target.SessionID {
	h.adopting.Add(1) // before chromedp's attach starts: no command of it is missed
	ch := make(chan target.SessionID, 1)
	h.rmu.Lock()
	defer h.rmu.Unlock()
	if h.attach == nil {
		h.attach = map[target.ID]chan target.SessionID{}
	}
	h.attach[id] = ch
	return ch
}

// forgetAttach drops the wait of expectAttach for the page id; the
// sessions noted for adoptions are forgotten when none is under way.
func (h *holder) forgetAttach(id target.ID) {
	h.rmu.Lock()
	defer h.rmu.Unlock()
	delete(h.attach, id)
	if h.adopting.Add(-1) == 0 {
		clear(h.sentOn)
		h.sentOrder = nil
	}
}

// attachedTo hands the session of ev to the adoption that waits for it.
func (h *holder) attachedTo(ev target.EventAttachedToTarget) {
	if ev.TargetInfo == nil || ev.WaitingForDebugger {
		return
	}
	h.rmu.Lock()
	defer h.rmu.Unlock()
	if ch := h.attach[ev.TargetInfo.TargetID]; ch != nil {
		ch <- ev.SessionID
		delete(h.attach, ev.TargetInfo.TargetID)
	}
}

// quiet returns errf without chromedp's complaint about the end of a
// session it did not attach: every page has one more, the one the browser
// attached it under to hold it.
func (h *holder) quiet(errf func(string, ...any)) func(string, ...any) {
	return func(format string, args ...any) {
		if h.holding.Load() && format == "executor for %q doesn't exist" {
			return
		}
		errf(format, args...)
	}
}

// holdPopups makes the browser of bctx hold the new pages and starts to let
// them run as they come (attached). It is called before the process takes
// sessions. Without a handle on the connection, or when the browser does
// not know the command, pages run at once as before: a popup is guarded
// from when a session makes it its tab.
func (p *Pool) holdPopups(b *process, bctx context.Context, h *holder) {
	if h == nil {
		return
	}
	h.mu.Lock()
	handle := h.write != nil
	h.mu.Unlock()
	if !handle {
		return
	}
	ctx, cancel := context.WithCancel(bctx)
	events := chromedp.BrowserEvents(ctx, target.AttachedToTarget) // subscribed now: no event is missed
	cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
	_, err := chromedp.CallBrowser(cctx, target.SetAutoAttach, target.SetAutoAttachParams{
		AutoAttach: true, WaitForDebuggerOnStart: true, Flatten: new(true),
		Filter: target.Filter{{Type: "page"}},
	})
	ccancel()
	if err != nil {
		cancel()
		p.log.Warn("browser: the browser cannot hold new pages; a popup's first requests are guarded and routed only once the session attaches to it", "browser", b.id, "err", err)
		return
	}
	h.holding.Store(true)
	go func() {
		defer cancel()
		for ev, err := range events {
			if err != nil {
				return
			}
			h.attachedTo(ev)
			if ev.WaitingForDebugger {
				p.attached(b, h, ev)
			}
		}
	}()
}

// attached lets the held page of ev run: at once, unless a tab of a
// session of b opened it; then once the session has made it its tab.
func (p *Pool) attached(b *process, h *holder, ev target.EventAttachedToTarget) {
	info := ev.TargetInfo
	if info != nil && info.Type == "page" && info.OpenerID != "" {
		p.mu.Lock()
		var sessions []*Session
		for s := range p.sessions {
			if s.proc == b {
				sessions = append(sessions, s)
			}
		}
		p.mu.Unlock()
		for _, s := range sessions {
			if tb := s.addPopup(info.TargetID, info.OpenerID); tb != nil {
				go s.adopt(tb, h, ev.SessionID)
				return
			}
		}
	}
	if err := h.resume(ev.SessionID); err != nil {
		p.log.Warn("browser: cannot let a new page run", "browser", b.id, "err", err)
	}
}

// addPopup adds the page id that the tab opener of s opened to the tabs of
// s, as a tab being made ready, and returns it; nil when opener is not a
// tab of s.
func (s *Session) addPopup(id, opener target.ID) *tab {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tabByID(opener) == nil || s.tabByID(id) != nil {
		return nil
	}
	tb := &tab{id: id, opener: opener, ready: make(chan struct{})}
	s.tabs = append(s.tabs, tb)
	close(s.tabsChanged)
	s.tabsChanged = make(chan struct{})
	return tb
}

// adoptTimeout bounds making a held popup a tab of its session.
const adoptTimeout = 30 * time.Second

// adopt makes the held popup tb a tab of s — attached, under the network
// guard and the session's routes, its requests logged — and then lets it
// run (the held session): its first requests are judged like any other.
// A popup that cannot be made ready never runs: it is closed, and a switch
// to it fails with the reason.
func (s *Session) adopt(tb *tab, h *holder, held target.SessionID) {
	defer close(tb.ready)
	ctx, cancel := context.WithTimeout(s.ctx, adoptTimeout)
	defer cancel()
	err := s.adoptHeld(ctx, tb, h, held)
	if err == nil {
		return
	}
	s.mu.Lock()
	tb.err = err
	s.mu.Unlock()
	if s.ctx.Err() != nil {
		return // the session closes, and its pages with it
	}
	s.pool.log.Warn("browser: a popup could not be made a tab of its session; it is closed before it ran", "err", err)
	cctx, ccancel := context.WithTimeout(s.ctx, 5*time.Second)
	defer ccancel()
	if _, err := chromedp.CallBrowser(cctx, target.CloseTarget, target.CloseTargetParams{TargetID: tb.id}); err != nil && s.ctx.Err() == nil {
		s.pool.log.Warn("browser: cannot close a popup that did not run", "err", err)
	}
}

// adoptHeld attaches to the held popup tb. A page that has not run cannot
// answer chromedp's attach (it evaluates a script in the page), so the
// attach goes on while the holder enables the Network domain (the request
// log) and the Fetch handler on chromedp's new session of the page; the
// handlers are the session's listeners from its first message. Then, once
// chromedp has its target of the session (awaitChromedp), the page runs,
// the attach ends, and the tab gets the session's emulation.
//
// The request log is the Network domain's, enabled before the page runs:
// it reports the page's document, and each request the page's renderer
// sends once it has taken the command. A page with no renderer yet (a
// link's target=_blank page) takes it only once its document is in, and
// its script may call before: the Fetch handler pauses every request of
// the page until the attach is done, and one paused without a network id
// is logged from there (watchEarly, logEarly) with its response's body
// (keepEarlyResponse). Not after chromedp's CSS.enable: the CSS domain
// then loads the page's document again from the cache (type Other, no
// network id, nothing reaches the server), which is no request of the
// page — a second pause of the popup's document, with another
// interception id, after its script has run.
func (s *Session) adoptHeld(ctx context.Context, tb *tab, h *holder, held target.SessionID) error {
	ctxs := newContexts()
	var (
		tctx  context.Context
		log   func(ev any)
		judge func(ev *fetch.EventRequestPaused)
	)
	listen := func(ev any) { // set before the attach starts
		log(ev)
		if e, ok := ev.(*fetch.EventRequestPaused); ok {
			judge(e)
		}
	}
	attached := h.expectAttach(tb.id)
	defer h.forgetAttach(tb.id)
	tctx, tcancel := chromedp.NewContext(s.ctx, chromedp.WithTargetID(tb.id), chromedp.WithListener(ctxs.listen), chromedp.WithListener(listen))
	s.net.watch(tctx)
	log = s.net.logger(tctx)
	s.net.startIntercepting(tctx)
	judge = s.judgeIn(tctx, string(tb.id))
	// The first Do binds the life of the tab to tctx; ctx bounds the wait.
	stop := context.AfterFunc(ctx, tcancel)
	done := make(chan error, 1)
	go func() { done <- chromedp.Do(tctx) }()
	fail := func(err error) error {
		tcancel()
		<-done
		return err
	}
	var sid target.SessionID
	select {
	case sid = <-attached:
	case err := <-done:
		if err == nil {
			err = errors.New("attached, but the browser did not report the session")
		}
		tcancel()
		return fmt.Errorf("attach to the new tab: %w", err)
	case <-ctx.Done():
		return fail(fmt.Errorf("attach to the new tab: %w", ctx.Err()))
	}
	// The page's renderer answers Network.enable and reports the requests
	// it sends from then on. A page that has not run may have none yet (a
	// link's target=_blank page): its renderer starts with its document
	// and takes the command only once the document is in (the browser
	// keeps a frame's commands while it navigates), when the page's
	// script may have sent its first calls. So the command is not waited
	// for, and until the attach is done every request of the page pauses
	// in the Fetch handler: one that the Network domain does not report
	// (no network id) is logged from there (watchEarly).
	h.watchEarly(sid, func(ev *fetch.EventRequestPaused) {
		if ev.NetworkID == "" {
			s.net.logEarly(tctx, ev)
		}
	})
	defer h.endEarly(sid)
	if _, err := h.send(sid, network.CommandEnable, network.EnableParams{}, nil); err != nil {
		return fail(err)
	}
	all := fetch.EnableParams{Patterns: []*fetch.RequestPattern{{URLPattern: "*", RequestStage: fetch.RequestStageRequest}}}
	if err := h.call(ctx, sid, fetch.CommandEnable, all); err != nil {
		return fail(err)
	}
	// The page runs only once chromedp takes the session's events: its
	// first paused request would be lost otherwise (holder.adopting).
	if err := h.awaitChromedp(ctx, sid); err != nil {
		return fail(err)
	}
	if err := h.resume(held); err != nil {
		return fail(err)
	}
	return s.attachEnded(ctx, stop, <-done, tctx, tcancel, tb, ctxs)
}

// attachTab attaches to the page of tb, emulates the session's device and
// settings in it, and starts the network guard and the session's routes on
// it, within ctx's deadline.
func (s *Session) attachTab(ctx context.Context, tb *tab) error {
	ctxs := newContexts()
	tctx, tcancel := chromedp.NewContext(s.ctx, chromedp.WithTargetID(tb.id), chromedp.WithListener(ctxs.listen))
	// The first Do binds the life of the tab to tctx; ctx bounds the wait.
	stop := context.AfterFunc(ctx, tcancel)
	return s.attachEnded(ctx, stop, chromedp.Do(tctx), tctx, tcancel, tb, ctxs)
}

// attachEnded ends the attach of tctx, bounded by ctx (stop ends the
// bound), that returned err: the tab is set up, or closed with the error.
func (s *Session) attachEnded(ctx context.Context, stop func() bool, err error, tctx context.Context, tcancel context.CancelFunc, tb *tab, ctxs *contexts) error {
	if !stop() && err == nil {
		err = ctx.Err()
	}
	if err != nil {
		tcancel()
		return fmt.Errorf("attach to the new tab: %w", err)
	}
	return s.setUpTab(ctx, tctx, tcancel, tb, ctxs)
}

// setUpTab emulates the session's device and settings in the attached tab
// tctx, starts the network guard and the session's routes on it (with the
// routes of now), and makes it the tab tb.
func (s *Session) setUpTab(ctx, tctx context.Context, tcancel context.CancelFunc, tb *tab, ctxs *contexts) error {
	acts := []chromedp.Action[chromedp.Void]{}
	if s.pool.opts.Remote == nil || !s.pool.opts.Remote.Real {
		acts = emulate(s.device)
	}
	if tb.ready != nil && s.pool.opts.Guard == nil && !s.shared && !s.net.routing() {
		// A held popup paused every request until its page's renderer
		// reported them (adoptHeld); nothing pauses them now.
		acts = append(acts, command(fetch.Disable, cdp.Empty{}))
	}
	s.mu.Lock()
	acts = append(acts, s.emulationActs(s.emulated, &duet.Emulation{Geolocation: s.emulated.Geolocation, Locale: s.emulated.Locale, Timezone: s.emulated.Timezone, ColorScheme: s.emulated.ColorScheme})...)
	s.mu.Unlock()
	bctx, bcancel := bind(tctx, ctx)
	defer bcancel()
	err := chromedp.Do(bctx, acts...)
	if err == nil {
		err = s.startGuard(tctx, bctx)
	}
	if err != nil {
		tcancel()
		return err
	}
	s.handleDialogs(tctx)
	s.mu.Lock()
	tb.ctx, tb.cancel, tb.ctxs = tctx, tcancel, ctxs
	s.mu.Unlock()
	return nil
}

// chromeErrors is the chromedp error logger of a browser of the pool.
func (p *Pool) chromeErrors(id int, h *holder) func(string, ...any) {
	return h.quiet(p.chromeLog(slog.LevelWarn, id))
}
