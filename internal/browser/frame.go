package browser

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/duet-test/duet"
)

// contexts tracks the JavaScript contexts of one target (a tab, or an
// out-of-process frame): the page world of each of its frames, where the
// scripts of a frame run, as the page's own scripts do. It is fed from the
// target's first message (chromedp.WithListener), so it misses none.
type contexts struct {
	mu      sync.Mutex
	byFrame map[cdp.FrameID]runtime.ExecutionContextID
	frameOf map[string]cdp.FrameID                // unique context id → frame
	idOf    map[string]runtime.ExecutionContextID // unique context id → id
	// scripts holds, by context, the handles of the element scripts made
	// in it (script.go, scriptIn): a function object each, held in the
	// object group scriptGroup until the context goes.
	scripts map[runtime.ExecutionContextID]map[string]runtime.RemoteObjectID
}

func newContexts() *contexts {
	return &contexts{
		byFrame: map[cdp.FrameID]runtime.ExecutionContextID{},
		frameOf: map[string]cdp.FrameID{},
		idOf:    map[string]runtime.ExecutionContextID{},
		scripts: map[runtime.ExecutionContextID]map[string]runtime.RemoteObjectID{},
	}
}

// listen is the target's listener: it runs on the goroutine that reads the
// target's messages, so it only updates the maps.
func (x *contexts) listen(ev any) {
	switch ev := ev.(type) {
	case *runtime.EventExecutionContextCreated:
		var aux struct {
			FrameID   cdp.FrameID `json:"frameId"`
			IsDefault bool        `json:"isDefault"`
		}
		if ev.Context == nil || json.Unmarshal(ev.Context.AuxData, &aux) != nil || !aux.IsDefault || aux.FrameID == "" {
			return
		}
		x.mu.Lock()
		x.byFrame[aux.FrameID] = ev.Context.ID
		x.frameOf[ev.Context.UniqueID] = aux.FrameID
		x.idOf[ev.Context.UniqueID] = ev.Context.ID
		x.mu.Unlock()
	case *runtime.EventExecutionContextDestroyed:
		x.mu.Lock()
		if id, ok := x.idOf[ev.ExecutionContextUniqueID]; ok {
			delete(x.idOf, ev.ExecutionContextUniqueID)
			delete(x.scripts, id)
		}
		if f, ok := x.frameOf[ev.ExecutionContextUniqueID]; ok {
			delete(x.frameOf, ev.ExecutionContextUniqueID)
			delete(x.byFrame, f)
		}
		x.mu.Unlock()
	case *runtime.EventExecutionContextsCleared:
		x.mu.Lock()
		clear(x.byFrame)
		clear(x.frameOf)
		clear(x.idOf)
		clear(x.scripts)
		x.mu.Unlock()
	}
}

func (x *contexts) get(f cdp.FrameID) (runtime.ExecutionContextID, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	id, ok := x.byFrame[f]
	return id, ok
}

// script returns the handle of element script fn made in context id, or "".
func (x *contexts) script(id runtime.ExecutionContextID, fn string) runtime.RemoteObjectID {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.scripts[id][fn]
}

// setScript notes (or, with "", forgets) the handle of element script fn
// in context id.
func (x *contexts) setScript(id runtime.ExecutionContextID, fn string, h runtime.RemoteObjectID) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if h == "" {
		delete(x.scripts[id], fn)
		return
	}
	if x.scripts[id] == nil {
		x.scripts[id] = map[string]runtime.RemoteObjectID{}
	}
	x.scripts[id][fn] = h
}

// frameLevel is one iframe of a frame scope, as the world of a call found
// it: the element in its parent's world, to measure where it is.
type frameLevel struct {
	parent *world
	elem   runtime.RemoteObjectID
}

// frameGroup holds the handles of the iframe elements of a call.
const frameGroup = "duet-frame"

// SetFrame scopes the element operations that follow to the iframe that
// chain names — each locator is an iframe (or frame) element, inside the
// frame of the locator before it; none is the top page. It waits, within
// ctx's deadline, until the frames are there. Open, a new tab and the
// switch to another tab go back to the top page.
//
// Errors: CodeElementNotFound when a frame is missing in time,
// CodeLocatorAmbiguous, CodeInvalidArgument for a locator that names
// something else than an iframe, CodeCancelled and CodeBrowserError.
func (s *Session) SetFrame(ctx context.Context, chain []*Locator) error {
	const op = "frame"
	for _, l := range chain {
		if l == nil {
			return opError(duet.CodeInvalidArgument, op, nil, "frame: an empty locator")
		}
	}
	c, err := s.begin(ctx, op, 0)
	if err != nil {
		return err
	}
	defer s.end(c)
	tb := s.current()
	tb.frames = chain
	if len(chain) == 0 {
		return nil
	}
	w, err := s.world(c)
	if err != nil {
		tb.frames = nil
		return err
	}
	s.releaseWorld(c, w)
	return nil
}

// world returns where the scripts of call c run: the page of the current
// tab, or the frame its frame scope names (found anew, as frames come and
// go).
func (s *Session) world(c *call) (*world, error) {
	tb := s.current()
	w := &world{tctx: tb.ctx, ctxs: tb.ctxs}
	for _, l := range tb.frames {
		next, err := s.enter(c, w, l)
		if err != nil {
			s.releaseWorld(c, w)
			return nil, err
		}
		w = next
	}
	return w, nil
}

// enter finds the iframe of l in w and returns the world of its document.
func (s *Session) enter(c *call, w *world, l *Locator) (*world, error) {
	t := Target{Locator: l}
	for {
		if _, err := s.resolve(c, w, t, "", actOpts{}); err != nil {
			return nil, err
		}
		obj, node, err := s.frameElement(c, w, t)
		if err != nil {
			return nil, s.fail(c, err, nil)
		}
		if node == nil {
			continue // gone since it was found
		}
		if node.NodeName != "IFRAME" && node.NodeName != "FRAME" {
			return nil, opError(duet.CodeInvalidArgument, c.op, nil, "%s: frame %s is a <%s>, not an <iframe>", c.op, t, strings.ToLower(node.NodeName))
		}
		next := &world{frame: true, levels: append(append([]frameLevel(nil), w.levels...), frameLevel{parent: w, elem: obj})}
		if id, ok := w.ctxs.get(node.FrameID); ok {
			next.tctx, next.ctxs, next.id = w.tctx, w.ctxs, id
			return next, nil
		}
		// Not a frame of this target: a frame of another site, which
		// Chromium runs in a process (a target) of its own.
		fctx, fctxs, err := s.attachFrame(c, node.FrameID)
		if err != nil {
			return nil, err
		}
		if fctx == nil {
			// Its document is not there yet: look again in a moment.
			if err := sleep(c.c, 20*time.Millisecond); err != nil {
				return nil, s.targetFail(c, t, jsResult{State: "missing"}, err)
			}
			continue
		}
		next.tctx, next.ctxs = fctx, fctxs
		return next, nil
	}
}

// frameElement returns a handle of the element of t in w and its node.
func (s *Session) frameElement(c *call, w *world, t Target) (runtime.RemoteObjectID, *cdp.Node, error) {
	q, roles, err := compileTarget(t)
	if err != nil {
		return "", nil, err
	}
	lk, err := s.prepare(c.c, w, q, roles)
	if err != nil {
		return "", nil, err
	}
	defer func() {
		if len(lk.objs) > 0 {
			s.release(c.c, w)
		}
	}()
	ctx, cancel := w.bound(c.c)
	defer cancel()
	type out struct {
		obj  runtime.RemoteObjectID
		node *cdp.Node
	}
	res, err := chromedp.Run(ctx, func(ctx context.Context, tg *chromedp.Target) (out, error) {
		r, err := lk.call(ctx, tg, w, "const f = $one(q, els); return f.state === 'ok' ? f.el : null;", frameGroup)
		if err != nil || r == nil || r.ObjectID == "" {
			return out{}, err
		}
		d, err := cdp.Call(ctx, tg, dom.DescribeNode, dom.DescribeNodeParams{ObjectID: r.ObjectID})
		if err != nil {
			return out{}, err
		}
		return out{obj: r.ObjectID, node: d.Node}, nil
	})
	return res.obj, res.node, err
}

// attachFrame attaches to the target of an out-of-process frame (once per
// session) and returns its context; nil when the frame has no target (yet).
func (s *Session) attachFrame(c *call, id cdp.FrameID) (context.Context, *contexts, error) {
	s.mu.Lock()
	if a, ok := s.attached[target.ID(id)]; ok && a.ctx.Err() == nil {
		s.mu.Unlock()
		return a.ctx, a.ctxs, nil
	}
	s.mu.Unlock()
	infos, err := chromedp.Targets(c.c)
	if err != nil {
		return nil, nil, s.fail(c, err, nil)
	}
	found := false
	for _, info := range infos {
		if info.TargetID == target.ID(id) && info.Type == "iframe" {
			found = true
		}
	}
	if !found {
		return nil, nil, nil
	}
	ctxs := newContexts()
	fctx, cancel := chromedp.NewContext(s.ctx, chromedp.WithTargetID(target.ID(id)), chromedp.WithDetachOnCancel(), chromedp.WithListener(ctxs.listen))
	if err := chromedp.Do(fctx); err != nil {
		cancel()
		return nil, nil, s.fail(c, err, nil)
	}
	s.mu.Lock()
	if s.attached == nil {
		s.attached = map[target.ID]*attachedTarget{}
	}
	s.attached[target.ID(id)] = &attachedTarget{ctx: fctx, cancel: cancel, ctxs: ctxs}
	s.mu.Unlock()
	return fctx, ctxs, nil
}

// attachedTarget is a frame of another process the session attached to.
type attachedTarget struct {
	ctx    context.Context
	cancel context.CancelFunc
	ctxs   *contexts
}

// releaseWorld frees the handles of the iframe elements of w.
func (s *Session) releaseWorld(c *call, w *world) {
	if w == nil {
		return
	}
	seen := map[context.Context]bool{}
	for _, lv := range w.levels {
		if seen[lv.parent.tctx] {
			continue
		}
		seen[lv.parent.tctx] = true
		ctx, cancel := lv.parent.bound(context.WithoutCancel(c.c))
		rctx, rcancel := context.WithTimeout(ctx, releaseTimeout)
		_, _ = chromedp.Run(rctx, func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
			_, err := cdp.Call(ctx, t, runtime.ReleaseObjectGroup, runtime.ReleaseObjectGroupParams{ObjectGroup: frameGroup})
			return chromedp.Void{}, err
		})
		rcancel()
		cancel()
	}
}

// jsFrameOffset returns where the content of an iframe element starts in
// its parent's viewport; at the top page, in the coordinates of the mouse
// (the visual viewport's).
const jsFrameOffset = `function (top) {
	const r = this.getBoundingClientRect();
	const cs = getComputedStyle(this);
	let x = r.left + this.clientLeft + parseFloat(cs.paddingLeft || '0');
	let y = r.top + this.clientTop + parseFloat(cs.paddingTop || '0');
	return [x, y];
}`

// toViewport turns a point of the world's viewport into one of the tab's,
// for the mouse: the offsets of the iframes, then the visual viewport.
func (s *Session) toViewport(c *call, w *world, x, y float64) (float64, float64, error) {
	if !w.frame {
		return x, y, nil
	}
	for i := len(w.levels) - 1; i >= 0; i-- {
		lv := w.levels[i]
		ctx, cancel := lv.parent.bound(c.c)
		off, err := chromedp.Run(ctx, func(ctx context.Context, t *chromedp.Target) ([2]float64, error) {
			r, err := cdp.Call(ctx, t, runtime.CallFunctionOn, runtime.CallFunctionOnParams{
				FunctionDeclaration: jsFrameOffset, ObjectID: lv.elem, ReturnByValue: new(true),
			})
			if err != nil {
				return [2]float64{}, err
			}
			if r.ExceptionDetails != nil {
				return [2]float64{}, &chromedp.ExceptionError{ExceptionDetails: r.ExceptionDetails}
			}
			var v [2]float64
			return v, json.Unmarshal(r.Result.Value, &v)
		})
		cancel()
		if err != nil {
			return 0, 0, err
		}
		x, y = x+off[0], y+off[1]
	}
	top := w.levels[0].parent
	ctx, cancel := top.bound(c.c)
	defer cancel()
	vv, err := chromedp.Run(ctx, chromedp.Evaluate[[3]float64](`(() => { const v = window.visualViewport; return v ? [v.offsetLeft, v.offsetTop, v.scale] : [0, 0, 1]; })()`))
	if err != nil {
		return 0, 0, err
	}
	return (x - vv[0]) * vv[2], (y - vv[1]) * vv[2], nil
}
