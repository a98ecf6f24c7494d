package browser

import (
	"context"
	"net/url"
	"strings"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/storage"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/netguard"
)

// refusal is a navigation of the page that the network guard refused.
type refusal struct {
	url string
	err error
}

// startGuard intercepts the document requests of the tab — the page, its
// frames, and each hop of their redirects — and lets through only those
// that the pool's guard allows. A shared session also notes the origins it
// visits, to clear their storage at the end. The same handler applies the
// session's routes (route.go), after the guard. cctx bounds the commands.
func (s *Session) startGuard(tctx, cctx context.Context) error {
	if err := s.watchNetwork(tctx); err != nil {
		return err
	}
	if s.pool.opts.Guard == nil && !s.shared && !s.net.routing() {
		return nil
	}
	return s.intercept(tctx, cctx)
}

// judge lets a paused request of the tab of tctx go on, or fails it when
// the guard refuses its URL (a document: the guard judges navigations), or
// handles it as a route of the session says. The guard comes first: a
// route never answers a navigation the guard refused. The answer goes to
// the tab that paused the request (a popup's, not the first tab's).
func (s *Session) judge(tctx context.Context, ev fetch.EventRequestPaused, main bool) {
	raw := ev.Request.URL + ev.Request.URLFragment
	ctx, cancel := context.WithTimeout(tctx, 15*time.Second)
	defer cancel()
	if ev.ResourceType != network.ResourceTypeDocument {
		if !s.routeRequest(ctx, ev) {
			s.continueRequest(ctx, ev)
		}
		return
	}
	if err := s.checkNavigation(ctx, raw); err != nil {
		if main {
			var tab target.ID
			if c := chromedp.FromContext(tctx); c != nil && c.Target != nil {
				tab = c.Target.TargetID
			}
			s.refuse(tab, &refusal{url: raw, err: err})
		}
		s.pool.log.Info("browser: a navigation was refused by the network guard", "frame", map[bool]string{true: "main", false: "sub"}[main], "err", duet.ErrorMessage(err))
		_, err := chromedp.Call(ctx, fetch.FailRequest, fetch.FailRequestParams{RequestID: ev.RequestID, ErrorReason: network.ErrorReasonBlockedByClient})
		if err != nil && s.ctx.Err() == nil {
			s.pool.log.Warn("browser: cannot fail a refused request", "err", err)
		}
		return
	}
	if s.shared {
		if u, err := url.Parse(raw); err == nil && (u.Scheme == "http" || u.Scheme == "https") {
			s.mu.Lock()
			if s.origins == nil {
				s.origins = map[string]bool{}
			}
			s.origins[u.Scheme+"://"+u.Host] = true
			s.mu.Unlock()
		}
	}
	if !s.routeRequest(ctx, ev) {
		s.continueRequest(ctx, ev)
	}
}

// continueRequest lets a paused request go on as it is.
func (s *Session) continueRequest(ctx context.Context, ev fetch.EventRequestPaused) {
	p := fetch.ContinueRequestParams{RequestID: ev.RequestID}
	if s.net.wantsResponse(ev.RequestID) {
		p.InterceptResponse = new(true) // an early request of a popup (hold.go): its body is kept
	}
	_, err := chromedp.Call(ctx, fetch.ContinueRequest, p)
	if err != nil && s.ctx.Err() == nil {
		s.pool.log.Debug("browser: cannot continue a request", "err", err)
	}
}

// checkNavigation returns a CodeURLRefused error when the pool's guard
// refuses raw as a document to load, and nil when there is no guard. URLs
// that load nothing from the network (about:, data:, blob:) are fine; other
// schemes are refused.
func (s *Session) checkNavigation(ctx context.Context, raw string) error {
	g := s.pool.opts.Guard
	if g == nil {
		return nil
	}
	scheme, _, _ := strings.Cut(raw, ":")
	switch strings.ToLower(scheme) {
	case "about", "data", "blob":
		return nil
	}
	s.mu.Lock()
	allowed := s.allowed
	s.mu.Unlock()
	return g.Allowing(allowed).CheckURL(ctx, raw)
}

// allow makes a the destinations the guard lets the session's navigations
// find on loopback or private addresses.
func (s *Session) allow(a netguard.Allowance) {
	s.mu.Lock()
	s.allowed = a
	s.mu.Unlock()
}

// clearOrigins deletes the cookies, storage and cache of the origins the
// session visited, in a browser whose default context other sessions use
// after it.
func (s *Session) clearOrigins() {
	s.mu.Lock()
	origins := s.origins
	s.origins = nil
	s.mu.Unlock()
	if len(origins) == 0 || s.ctx.Err() != nil {
		return
	}
	// From the tab, which knows its storage partition; before it closes.
	ctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
	defer cancel()
	for o := range origins {
		_, err := chromedp.Call(ctx, storage.ClearDataForOrigin, storage.ClearDataForOriginParams{Origin: o, StorageTypes: "all"})
		if err != nil && s.ctx.Err() == nil {
			s.pool.log.Warn("browser: cannot clear the data of an origin", "origin", o, "err", err)
		}
	}
	_, _ = chromedp.Call(ctx, network.ClearBrowserCookies, cdp.Empty{})
}

// readDevice fills the session's Device with what the real device reports.
func (s *Session) readDevice(tctx context.Context) error {
	ctx, cancel := context.WithTimeout(tctx, 10*time.Second)
	defer cancel()
	v, err := evalJS[struct {
		W, H  float64
		DPR   float64
		UA    string
		Touch float64
	}](ctx, `function () { return {W: innerWidth, H: innerHeight, DPR: devicePixelRatio, UA: navigator.userAgent, Touch: navigator.maxTouchPoints || 0}; }`)
	if err != nil {
		return err
	}
	s.device = Device{
		Name: s.pool.remoteName(), Width: int(v.W), Height: int(v.H), DeviceScaleFactor: v.DPR,
		Mobile: v.Touch > 0, Touch: v.Touch > 0, UserAgent: v.UA,
	}
	if s.device.DeviceScaleFactor <= 0 {
		s.device.DeviceScaleFactor = 1
	}
	return nil
}
