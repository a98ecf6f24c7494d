package recorder

import (
	"context"
	"fmt"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/engine"
)

// TryIn is steps of a case a tester tries on the session's page ("Try
// this step"): the case as compiled for the session's task, and the
// steps to run (1 the first of the case's own, To included; 0 From
// alone).
type TryIn struct {
	Executor string
	Task     *duet.Task
	Steps    []duet.Step
	From, To int
}

// Try runs steps of a case on the session's page as a run does (the
// engine's steps, Options.Try), without saving anything or starting a
// run: the page shows their effect, and the result says how each went,
// what they saved (what the tryouts of the session saved, redacted) and
// what the page looked like after them. What the steps do to the page is
// not recorded, and the tester's input waits (CONFLICT) until they are
// done. Returns BROWSER_UNAVAILABLE without a runner, CONFLICT while
// other steps are tried, and Options.Try's errors.
func (l *Live) Try(ctx context.Context, in TryIn) (*engine.TryResult, error) {
	l.touch()
	if l.m.o.Try == nil {
		return nil, duet.Errorf(duet.CodeBrowserUnavailable, "trying steps is not available in this process")
	}
	l.mu.Lock()
	switch {
	case l.closed:
		l.mu.Unlock()
		return nil, duet.Errorf(duet.CodeBrowserError, "the recording session is closed")
	case l.trying:
		l.mu.Unlock()
		return nil, duet.Errorf(duet.CodeConflict, "steps are being tried in this session: wait for them to finish")
	}
	l.trying = true
	l.pending = nil
	l.mu.Unlock()
	defer func() {
		l.settle(ctx)
		l.mu.Lock()
		l.trying, l.lastFill = false, 0
		l.mu.Unlock()
		l.touch()
	}()
	return l.m.o.Try(ctx, l.s, engine.Tryout{Executor: in.Executor, Task: in.Task, Environment: l.Environment, Steps: in.Steps,
		From: in.From, To: in.To, State: l.tries})
}

// notTrying is CONFLICT while steps are tried.
func (l *Live) notTrying() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.trying {
		return duet.Errorf(duet.CodeConflict, "steps are being tried in this session: wait for them to finish")
	}
	return nil
}

// settleWait bounds each wait of settle for the page's answer.
const settleWait = 5 * time.Second

// settle waits until the page's script has sent every event the tried
// steps caused: it asks the script of the current document to send a
// barrier through the binding, which arrives after them (the binding's
// calls come in order), and those before it are dropped as tried. A
// document that is loading says hello first; its world is then asked.
func (l *Live) settle(ctx context.Context) {
	for range 3 {
		l.mu.Lock()
		w := l.world
		l.syncN++
		n, synced, hello := l.syncN, make(chan struct{}), make(chan struct{})
		l.synced, l.hello = synced, hello
		l.mu.Unlock()
		var ok bool
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleWait)
		if w != 0 && l.s.EvaluateIn(wctx, w, fmt.Sprintf("(%s(JSON.stringify({t: 'sync', id: %d})), true)", binding, n), &ok) == nil {
			select {
			case <-synced:
			case <-wctx.Done():
			case <-l.ctx.Done():
			}
			cancel()
			return
		}
		// The world is gone (the page navigated): the new document's
		// script says hello, then is asked.
		select {
		case <-hello:
		case <-wctx.Done():
		case <-l.ctx.Done():
		}
		cancel()
	}
}
