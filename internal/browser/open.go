package browser

import (
	"context"
	"errors"
	"fmt"
	"sync"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
)

// open creates the browser context and the tab of a new session on b.
//
// Opening a session is a score of protocol round trips, and on a busy
// machine each waits its turn for a CPU; so the commands that do not
// depend on each other go out together: the download policy of the new
// context while its tab is created and attached (chromedp's own sequence:
// the target, the attach and the domains it enables), then the device's
// emulation, the network guard's interception and the clearing of a shared
// context's data at once. None of them can wait until the first
// navigation: each changes what that navigation does.
func (p *Pool) open(ctx context.Context, b *process, device Device) (*Session, error) {
	cctx, cancel := bind(b.ctx, ctx)
	defer cancel()
	shared := p.opts.Remote != nil && p.opts.Remote.SharedContext
	var contextID cdp.BrowserContextID
	if !shared {
		res, err := chromedp.CallBrowser(cctx, target.CreateBrowserContext,
			target.CreateBrowserContextParams{DisposeOnDetach: new(true)})
		if err != nil {
			return nil, fmt.Errorf("create browser context: %w", err)
		}
		contextID = res.BrowserContextID
	}
	var (
		side  sync.WaitGroup
		dlErr error
	)
	// Pages under test must not write files to this machine.
	side.Go(func() {
		_, dlErr = chromedp.CallBrowser(cctx, cdpbrowser.SetDownloadBehavior, cdpbrowser.SetDownloadBehaviorParams{
			Behavior:         cdpbrowser.SetDownloadBehaviorBehaviorDeny,
			BrowserContextID: contextID,
		})
		if shared {
			dlErr = nil // a phone's browser may not know the command; it saves no file here anyway
		}
	})

	base, baseCancel := context.WithCancel(b.ctx)
	// The first Run binds the life of the tab to tctx, so it must be a
	// context of the session and not the caller's ctx.
	ctxs := newContexts()
	copts := []chromedp.ContextOption{chromedp.WithListener(ctxs.listen)}
	if contextID != "" {
		copts = append(copts, chromedp.WithExistingBrowserContext(contextID))
	}
	tctx, tcancel := chromedp.NewContext(base, copts...)
	s := &Session{
		pool:       p,
		proc:       b,
		device:     device,
		ctx:        tctx,
		cancel:     tcancel,
		baseCancel: baseCancel,
		contextID:  contextID,
		shared:     shared,
		turn:       make(chan struct{}, 1),

		tabsChanged: make(chan struct{}),
		dialogSeen:  make(chan struct{}),
	}
	s.cur = &tab{ctx: tctx, cancel: tcancel, ctxs: ctxs}
	s.tabs = []*tab{s.cur}
	stop := context.AfterFunc(ctx, baseCancel)
	err := chromedp.Do(tctx) // creates and attaches the tab
	if err == nil {
		err = p.setUp(s, tctx, device)
	}
	side.Wait()
	if err == nil && dlErr != nil {
		err = fmt.Errorf("deny downloads: %w", dlErr)
	}
	if !stop() && err == nil {
		err = ctx.Err()
	}
	if err != nil {
		s.teardown()
		return nil, fmt.Errorf("open tab: %w", err)
	}
	if t := chromedp.FromContext(tctx).Target; t != nil {
		s.cur.id = t.TargetID
	}
	s.handleDialogs(tctx)
	s.watchTabs()
	return s, nil
}

// setUp sends the commands that make the new tab of s the session's, at
// once: the emulation of device, the clearing of a shared context, the
// network guard; then reads a real device.
func (p *Pool) setUp(s *Session, tctx context.Context, device Device) error {
	real := p.opts.Remote != nil && p.opts.Remote.Real
	var acts []chromedp.Action[chromedp.Void]
	if !real {
		acts = emulate(device)
	}
	if s.shared {
		acts = append(acts, command(network.ClearBrowserCookies, cdp.Empty{}), command(network.ClearBrowserCache, cdp.Empty{}))
	}
	errs := make([]error, len(acts)+1)
	var wg sync.WaitGroup
	for i, a := range acts {
		wg.Go(func() { errs[i] = chromedp.Do(tctx, a) })
	}
	wg.Go(func() { errs[len(acts)] = s.startGuard(tctx, tctx) })
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if real {
		return s.readDevice(tctx)
	}
	return nil
}
