// Package browser drives headless Chromium for Duet's web sandbox, and
// browsers that run elsewhere over the same DevTools protocol: a Chromium
// started with remote debugging, a browser pool service, Chrome on a phone.
//
// A [Pool] owns a few long-lived browser processes, or connections to a
// remote browser ([Remote]). Each test execution gets a [Session]: an
// isolated browser context (its own cookies, storage and cache) with one tab
// and the emulation of a [Device]. Session methods take a context;
// cancelling it stops the browser work of the call at once. With
// Options.Guard, every document request of a session goes through the
// network guard.
//
// Errors are *duet.Error values with these codes:
//
//   - CodeBrowserUnavailable: no Chromium executable, it failed to start, or
//     a remote browser cannot be reached.
//   - CodeElementNotFound: no element matched a selector in time.
//   - CodeLocatorAmbiguous: a strict locator matched several elements.
//   - CodeTooLarge: an upload or an evaluated value over its bound.
//   - CodeNotFound: SwitchTab to a tab that is not there.
//   - CodeStepTimeout: a wait or an action ran out of time.
//   - CodeCancelled: the caller cancelled the context.
//   - CodeTimeout: NewSession ran out of time waiting for a browser.
//   - CodeInvalidArgument: a bad selector, key, URL, device or condition.
//   - CodeURLRefused: Open of a scheme other than http, https, about or data.
//   - CodeBrowserError: any other failure of the browser, such as a crash.
//   - CodeBrowserProtocolMismatch: a remote endpoint that does not speak the
//     DevTools protocol, or is not a Chromium-based browser.
//   - CodeBrowserVersionUnsupported: a remote browser older than
//     MinChromeVersion.
//   - CodeDeviceLost: the connection to a remote browser dropped mid-session.
//   - CodeURLRefused (with Options.Guard): a navigation the guard refused.
package browser

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/netguard"
)

// startTimeout bounds the start of one browser process.
const startTimeout = 60 * time.Second

// Pool is a set of browser processes shared by many sessions. Processes start
// on first use and are reused; at most Options.MaxBrowsers run at once, each
// with at most Options.MaxContextsPerBrowser sessions. A process that dies is
// replaced on the next NewSession. A Pool is safe for concurrent use.
type Pool struct {
	opts   Options
	log    *slog.Logger
	ctx    context.Context // ends when the pool closes
	cancel context.CancelFunc
	wg     sync.WaitGroup // one per browser process goroutine

	mu       sync.Mutex
	closed   bool
	browsers []*process
	sessions map[*Session]struct{}
	changed  chan struct{} // closed and replaced when a slot may have freed
	waiting  int
	started  int
	nextID   int

	// A session opened ahead (local browsers only): the next NewSession
	// for its device takes it, so that opening a context (its tab, the
	// protocol domains, the emulation, the guard) is done while the
	// previous case runs, not at the start of the next one.
	spare       *Session
	preparing   bool            // a spare is being opened,
	spareDev    Device          // for this device,
	claimed     bool            // and a NewSession waits for it
	lastDev     *Device         // the device of the last NewSession
	opened      int             // sessions NewSession returned
	spareCtx    context.Context // ends when the pool closes, before the processes stop
	spareCancel context.CancelFunc
	spareWG     sync.WaitGroup // preparations and discarded spares' teardowns
}

// process is one browser process of a Pool. Fields below ready are set
// before ready closes; sessions and dead are guarded by Pool.mu.
type process struct {
	id    int
	dir   string        // user data directory
	ready chan struct{} // closed when the start ends
	ctx   context.Context
	pid   int
	err   error // start error

	sessions int
	dead     bool // exited or shutting down: take no new session

	hold *holder // the pool's handle on the connection (hold.go)
}

// Stats is a snapshot of the counters of a Pool.
type Stats struct {
	Browsers int // browser processes running or starting
	Sessions int // sessions open
	Waiting  int // NewSession calls waiting for a free slot
	Started  int // browser processes started since NewPool
}

// NewPool returns a pool with the options. It starts no process: the first
// NewSession does. Call Close to stop the processes.
func NewPool(opts Options) *Pool {
	opts = opts.withDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	spareCtx, spareCancel := context.WithCancel(ctx)
	return &Pool{
		opts:        opts,
		log:         opts.Logger,
		ctx:         ctx,
		cancel:      cancel,
		sessions:    make(map[*Session]struct{}),
		changed:     make(chan struct{}),
		spareCtx:    spareCtx,
		spareCancel: spareCancel,
	}
}

// Available reports whether a Chromium executable can be found. It returns
// nil, or a *duet.Error with code CodeBrowserUnavailable whose message says
// how to install Chromium.
func (p *Pool) Available() error {
	if p.opts.Remote != nil {
		_, err := p.opts.Remote.endpoint()
		return err
	}
	_, err := findExec(p.opts.ExecPath)
	return err
}

// Stats returns the current counters of the pool.
func (p *Pool) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return Stats{Browsers: len(p.browsers), Sessions: len(p.sessions), Waiting: p.waiting, Started: p.started}
}

// NewSession opens an isolated browser context with one tab that emulates
// device; the zero Device means desktop. With Options.Guard, allow names the
// destinations its navigations may find on loopback or private addresses
// (the task's base URL, netguard.AllowURL); the session keeps it for its
// life. It starts a browser process when
// none has room, or waits for a free slot when the pool is full. The caller
// must Close the session; Pool.Close closes those still open.
//
// Errors: CodeBrowserUnavailable when no Chromium can be found or started, or
// the pool is closed; CodeCancelled or CodeTimeout when ctx ends first;
// CodeInvalidArgument for a bad device or Options.Flags; CodeBrowserError when
// the browser fails to open the tab.
func (p *Pool) NewSession(ctx context.Context, device Device, allow netguard.Allowance) (*Session, error) {
	if r := p.opts.Remote; r != nil && r.Real {
		if device != (Device{}) {
			return nil, duet.Errorf(duet.CodeInvalidArgument, "%s is a real device: it emulates no device preset (got %q)", p.remoteName(), device.Name)
		}
	} else {
		var err error
		if device, err = device.normalize(); err != nil {
			return nil, err
		}
	}
	for attempt := 1; ; attempt++ {
		b, spare, err := p.acquire(ctx, device)
		if err != nil {
			return nil, err
		}
		if spare != nil {
			// Opened ahead for nobody: the session becomes the
			// caller's, with its allowance.
			spare.allow(allow)
			if err := p.register(ctx, spare); err != nil {
				return nil, err
			}
			p.prepare(device)
			return spare, nil
		}
		s, err := p.open(ctx, b, device)
		if err == nil {
			s.allow(allow)
			if err := p.register(ctx, s); err != nil {
				return nil, err
			}
			p.prepare(device)
			return s, nil
		}
		p.release(b)
		if err := newSessionCtxError(ctx, err); err != nil {
			return nil, err
		}
		// The process may have died under us; the next attempt starts a
		// new one.
		if b.ctx.Err() != nil && p.ctx.Err() == nil && attempt < 3 {
			p.log.WarnContext(ctx, "browser: process died while opening a session; retrying", "browser", b.id, "err", err)
			continue
		}
		var de *duet.Error
		if errors.As(err, &de) {
			return nil, err
		}
		return nil, &duet.Error{Code: duet.CodeBrowserError, Message: "cannot open a browser tab", Op: "browser.Pool.NewSession", Err: err}
	}
}

// newSessionCtxError returns the error of NewSession when ctx ended, or nil.
func newSessionCtxError(ctx context.Context, err error) error {
	switch {
	case ctx.Err() == nil:
		return nil
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return &duet.Error{Code: duet.CodeTimeout, Message: "timed out waiting for a browser", Op: "browser.Pool.NewSession", Err: err}
	default:
		return &duet.Error{Code: duet.CodeCancelled, Message: "cancelled while waiting for a browser", Op: "browser.Pool.NewSession", Err: err}
	}
}

// acquire reserves a session slot in a running browser process, starting one
// when all are full and the cap allows, or waiting for a slot. When the
// pool has a spare session for device, it returns that instead (its slot
// is reserved already); a spare for another device stays, unless its slot
// is needed.
func (p *Pool) acquire(ctx context.Context, device Device) (*process, *Session, error) {
	claim := false // this call waits for the spare being opened
	defer func() {
		if claim {
			p.mu.Lock()
			p.claimed = false
			p.mu.Unlock()
		}
	}()
	for {
		if err := newSessionCtxError(ctx, ctx.Err()); err != nil {
			return nil, nil, err
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, nil, errPoolClosed()
		}
		if sp := p.spare; sp != nil {
			switch {
			case sp.proc.ctx.Err() != nil || sp.ctx.Err() != nil || sp.proc.dead:
				p.spare = nil
				p.discardLocked(sp)
			case sp.device == device:
				p.spare = nil
				p.mu.Unlock()
				return nil, sp, nil
			}
		}
		var b *process
		switch {
		case p.preparing && p.spareDev == device && (claim || !p.claimed):
			// The spare being opened for this device is ready sooner
			// than a new session would be: wait for it (one call
			// does; the others open their own).
			p.claimed, claim = true, true
		default:
			if claim {
				p.claimed, claim = false, false
			}
			b = p.pickLocked()
		}
		if b != nil && !claim && p.spreadLocked() {
			b = nil // a process of its own is worth its start
		}
		if sp := p.spare; b == nil && !claim && sp != nil {
			// A spare for another device: its slot is worth more now.
			p.spare = nil
			p.discardLocked(sp)
			b = p.pickLocked()
		}
		if b == nil && !claim && len(p.browsers) < p.opts.MaxBrowsers {
			var path string
			if p.opts.Remote == nil {
				var err error
				if path, err = findExec(p.opts.ExecPath); err != nil {
					p.mu.Unlock()
					return nil, nil, err
				}
			}
			b = p.startLocked(path)
		}
		if b != nil {
			b.sessions++
			p.mu.Unlock()
			if err := p.awaitReady(ctx, b); err != nil {
				p.release(b)
				return nil, nil, err
			}
			if b.ctx.Err() != nil { // died since it started
				p.release(b)
				continue
			}
			return b, nil, nil
		}
		changed := p.changed
		p.waiting++
		p.mu.Unlock()

		select {
		case <-changed:
		case <-ctx.Done():
		}
		p.mu.Lock()
		p.waiting--
		p.mu.Unlock()
	}
}

// prepare opens a spare session for device in the background, unless the
// pool has one or is opening one, has not opened two sessions yet, or no
// running process has room for it (it never starts a process). Remote browsers get none: a spare would
// hold a tab of someone else's browser, or of a phone, for nothing.
func (p *Pool) prepare(device Device) {
	if p.opts.Remote != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lastDev = &device
	if p.closed || p.spare != nil || p.preparing || p.opened < 2 {
		// (A pool used once, as by a command that runs one case,
		// would open a spare for nothing.)
		return
	}
	b := p.pickLocked()
	if b == nil || !isReady(b) || b.err != nil || b.ctx.Err() != nil || p.spreadLocked() {
		// (With room for another process, the next session starts it.)
		return
	}
	b.sessions++
	p.preparing, p.spareDev, p.claimed = true, device, false
	p.spareWG.Go(func() {
		ctx, cancel := context.WithTimeout(p.spareCtx, p.opts.DefaultTimeout)
		defer cancel()
		s, err := p.open(ctx, b, device)
		p.mu.Lock()
		defer p.mu.Unlock()
		p.preparing = false
		switch {
		case err != nil:
			if p.ctx.Err() == nil {
				p.log.Debug("browser: cannot open a spare session", "browser", b.id, "err", err)
			}
			b.sessions--
		case p.closed:
			p.discardLocked(s)
		default:
			p.spare = s
		}
		p.broadcastLocked()
	})
}

// discardLocked closes a spare session that nobody will take: its slot is
// free at once, its context goes in the background.
func (p *Pool) discardLocked(s *Session) {
	s.closed.Store(true)
	s.proc.sessions--
	p.broadcastLocked()
	p.spareWG.Go(s.teardown)
}

// pickLocked returns the live process with the fewest sessions among those
// with room, preferring processes that already run, or nil.
func (p *Pool) pickLocked() *process {
	var best *process
	for _, b := range p.browsers {
		if b.dead || b.sessions >= p.opts.MaxContextsPerBrowser {
			continue
		}
		if isReady(b) && b.err == nil && b.ctx.Err() != nil {
			continue // died; its goroutine is cleaning up
		}
		if best == nil || (isReady(b) && !isReady(best)) ||
			(isReady(b) == isReady(best) && b.sessions < best.sessions) {
			best = b
		}
	}
	return best
}

// spreadLocked reports whether a new session should start another browser
// process rather than share one (Options.Processes): fewer processes than
// that run, and each of them holds a session.
func (p *Pool) spreadLocked() bool {
	if p.opts.Processes <= 1 || len(p.browsers) >= p.opts.MaxBrowsers {
		return false
	}
	live := 0
	for _, b := range p.browsers {
		if b.dead || (isReady(b) && b.err == nil && b.ctx.Err() != nil) {
			continue // gone, or going
		}
		if b.sessions == 0 {
			return false
		}
		live++
	}
	return live < p.opts.Processes
}

func isReady(b *process) bool {
	select {
	case <-b.ready:
		return true
	default:
		return false
	}
}

// awaitReady waits until b has started. It returns CodeBrowserUnavailable
// when the start failed.
func (p *Pool) awaitReady(ctx context.Context, b *process) error {
	select {
	case <-b.ready:
	case <-ctx.Done():
		return newSessionCtxError(ctx, ctx.Err())
	}
	if b.err == nil {
		return nil
	}
	if p.ctx.Err() != nil {
		return errPoolClosed()
	}
	var de *duet.Error
	if errors.As(b.err, &de) {
		return b.err
	}
	if p.opts.Remote != nil {
		return &duet.Error{Code: duet.CodeBrowserUnavailable, Message: "cannot attach to " + p.remoteName(), Op: "browser.Pool.NewSession", Err: b.err}
	}
	return &duet.Error{Code: duet.CodeBrowserUnavailable, Message: "Chromium failed to start", Op: "browser.Pool.NewSession", Err: b.err}
}

func errPoolClosed() error {
	return &duet.Error{Code: duet.CodeBrowserUnavailable, Message: "the browser pool is closed", Op: "browser.Pool.NewSession"}
}

// release gives back a session slot of b.
func (p *Pool) release(b *process) {
	p.mu.Lock()
	b.sessions--
	p.broadcastLocked()
	p.mu.Unlock()
}

// broadcastLocked wakes every acquire that waits for a slot.
func (p *Pool) broadcastLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// startLocked adds a process to the pool and starts it in the background. The
// process belongs to the pool, so it keeps starting when the caller gives up.
func (p *Pool) startLocked(execPath string) *process {
	p.nextID++
	p.started++
	b := &process{id: p.nextID, ready: make(chan struct{})}
	p.browsers = append(p.browsers, b)
	p.wg.Add(1)
	if p.opts.Remote != nil {
		go p.runRemote(b)
	} else {
		go p.run(b, execPath)
	}
	return b
}

// runRemote connects b to the remote browser, waits until the connection
// drops or the pool closes, and then closes it. The remote browser keeps
// running.
func (p *Pool) runRemote(b *process) {
	defer p.wg.Done()
	begin := time.Now()
	b.hold = &holder{}
	bctx, stop, err := p.opts.Remote.connect(p.ctx, p.chromeLog(slog.LevelDebug, b.id), p.chromeErrors(b.id, b.hold), b.hold)
	if err == nil {
		p.log.Info("browser: attached to a remote browser", "browser", b.id, "name", p.remoteName(), "took", time.Since(begin).Round(time.Millisecond))
		p.holdPopups(b, bctx, b.hold)
	} else if p.ctx.Err() == nil {
		p.log.Warn("browser: cannot attach to a remote browser", "browser", b.id, "name", p.remoteName(), "err", err)
	}
	p.finishStart(b, bctx, 0, err)
	if err == nil {
		<-bctx.Done()
		if p.ctx.Err() == nil {
			p.log.Warn("browser: the connection to a remote browser was lost; the next session connects again", "browser", b.id, "name", p.remoteName())
		}
	}
	p.mu.Lock()
	b.dead = true
	p.mu.Unlock()
	if stop != nil {
		stop()
	}
	p.remove(b)
}

// remoteName names the remote browser of the pool in messages.
func (p *Pool) remoteName() string {
	if p.opts.Remote == nil {
		return "the browser"
	}
	if ep, err := p.opts.Remote.endpoint(); err == nil {
		return ep.name
	}
	return "the remote browser"
}

// run starts the browser process b, waits until it exits or the pool closes,
// and then frees its resources: the process and its user data directory.
func (p *Pool) run(b *process, execPath string) {
	defer p.wg.Done()
	begin := time.Now()

	dir, err := os.MkdirTemp(tempRoot, userDataPrefix)
	b.dir = dir
	var opts []chromedp.ExecAllocatorOption
	if err == nil {
		opts, err = p.opts.allocatorOptions(execPath, dir)
	}
	if err != nil {
		if dir != "" {
			os.RemoveAll(dir)
		}
		p.finishStart(b, nil, 0, err)
		p.remove(b)
		return
	}

	b.hold = &holder{lateAttach: p.opts.lateAttachReply}
	opts = append(opts, b.hold.relay())
	base, stop := context.WithCancel(p.ctx)
	actx, acancel := chromedp.NewExecAllocator(base, opts...)
	bctx, bcancel := chromedp.NewContext(actx,
		chromedp.WithLogf(p.chromeLog(slog.LevelDebug, b.id)),
		chromedp.WithErrorf(p.chromeErrors(b.id, b.hold)))
	timer := time.AfterFunc(startTimeout, stop)
	err = chromedp.Do(bctx) // starts the process; bctx bounds its life
	timer.Stop()
	pid := 0
	if err == nil {
		if proc := chromedp.FromContext(bctx).Browser.Process(); proc != nil {
			pid = proc.Pid
		}
		p.log.Info("browser: process started", "browser", b.id, "pid", pid, "exec", execPath, "took", time.Since(begin).Round(time.Millisecond))
		p.holdPopups(b, bctx, b.hold)
	} else if p.ctx.Err() == nil {
		p.log.Error("browser: process failed to start", "browser", b.id, "exec", execPath, "err", err)
	}
	p.finishStart(b, bctx, pid, err)

	if err == nil {
		<-bctx.Done() // the pool closed, or the process died
		if p.ctx.Err() == nil {
			p.log.Warn("browser: process exited unexpectedly; it will be replaced", "browser", b.id, "pid", pid)
		}
	}
	p.mu.Lock()
	b.dead = true
	p.mu.Unlock()

	stop()
	bcancel() // waits until the process has exited
	acancel()
	if err := removeAll(dir); err != nil {
		p.log.Warn("browser: cannot remove the user data directory", "browser", b.id, "dir", dir, "err", err)
	}
	p.remove(b)
	p.log.Debug("browser: process stopped", "browser", b.id, "pid", pid)
}

// finishStart publishes the result of the start of b.
func (p *Pool) finishStart(b *process, ctx context.Context, pid int, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if ctx == nil {
		ctx = p.ctx
	}
	b.ctx, b.pid, b.err = ctx, pid, err
	if err != nil {
		b.dead = true
	}
	close(b.ready)
	p.broadcastLocked()
}

// remove drops b from the pool, which frees its place under MaxBrowsers.
func (p *Pool) remove(b *process) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.browsers = slices.DeleteFunc(p.browsers, func(x *process) bool { return x == b })
	p.broadcastLocked()
}

// removeAll removes dir, retrying while helper processes of Chromium that
// outlive the browser still write into it.
func removeAll(dir string) error {
	deadline := time.Now().Add(3 * time.Second)
	for {
		err := os.RemoveAll(dir)
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// chromeLog adapts slog to chromedp's printf-style logging.
func (p *Pool) chromeLog(level slog.Level, id int) func(string, ...any) {
	return func(format string, args ...any) {
		p.log.Log(context.Background(), level, "browser: chromedp: "+fmt.Sprintf(format, args...), "browser", id)
	}
}

// register adds a session that open returned to those of the pool; when
// the pool has closed meanwhile, it closes the session and returns
// CodeBrowserUnavailable.
func (p *Pool) register(ctx context.Context, s *Session) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		s.teardown()
		p.release(s.proc)
		return errPoolClosed()
	}
	p.sessions[s] = struct{}{}
	p.opened++
	p.mu.Unlock()
	p.log.DebugContext(ctx, "browser: session opened", "browser", s.proc.id, "device", s.device.Name)
	return nil
}

// bind returns a context that carries the chromedp values of base, ends when
// base or ctx ends, and has ctx's deadline.
func bind(base, ctx context.Context) (context.Context, context.CancelFunc) {
	c, cancel := context.WithCancel(base)
	stop := context.AfterFunc(ctx, cancel)
	if d, ok := ctx.Deadline(); ok {
		var cancelD context.CancelFunc
		c, cancelD = context.WithDeadline(c, d)
		return c, func() { stop(); cancelD(); cancel() }
	}
	return c, func() { stop(); cancel() }
}

// forget drops a closed session from the pool and frees its slot, which
// may make room for a spare.
func (p *Pool) forget(s *Session) {
	p.mu.Lock()
	delete(p.sessions, s)
	last := p.lastDev
	p.mu.Unlock()
	p.release(s.proc)
	if last != nil {
		p.prepare(*last)
	}
}

// Close closes the open sessions, kills every browser process and removes
// their user data directories. It waits until all of that is done. Close is
// safe to call more than once; NewSession fails after it with
// CodeBrowserUnavailable.
func (p *Pool) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		p.wg.Wait()
		return
	}
	p.closed = true
	sessions := make([]*Session, 0, len(p.sessions))
	for s := range p.sessions {
		sessions = append(sessions, s)
	}
	if p.spare != nil {
		p.discardLocked(p.spare)
		p.spare = nil
	}
	p.broadcastLocked()
	p.mu.Unlock()

	p.spareCancel() // a spare being opened gives up
	var wg sync.WaitGroup
	for _, s := range sessions {
		wg.Go(s.Close)
	}
	wg.Wait()
	p.spareWG.Wait()
	p.cancel()
	p.wg.Wait()
}
