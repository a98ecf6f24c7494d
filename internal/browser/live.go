package browser

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/duet-test/duet"
)

// A live session is a session a person drives from the console (the
// recorder, internal/recorder): the page's screencast goes to them, their
// mouse and keyboard come back as input events, and a script of an
// isolated world (which the page cannot see) tells what they did. These
// are the session's public calls for it; they act on the session's
// current tab.

// LiveFrame is one frame of a live screencast: a JPEG, and the size in CSS
// pixels of the viewport it shows (where input events' coordinates are).
type LiveFrame struct {
	JPEG          []byte
	Width, Height float64
	At            time.Time
}

// StartScreencast starts the current tab's screencast at quality (1-100)
// and calls fn with each frame, from one goroutine, until stop is called
// or the session closes. Frames are acknowledged once fn returns: a slow
// fn slows the browser's frames, it never queues them.
//
// Errors: CodeCancelled, CodeBrowserError.
func (s *Session) StartScreencast(ctx context.Context, quality int, fn func(LiveFrame)) (stop func(), err error) {
	c, err := s.begin(ctx, "screencast", 0)
	if err != nil {
		return nil, err
	}
	defer s.end(c)
	tctx := s.current().ctx
	lctx, cancel := context.WithCancel(tctx)
	frames := chromedp.Events(lctx, page.ScreencastFrame)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev, err := range frames {
			if err != nil {
				return
			}
			f := LiveFrame{JPEG: ev.Data, At: time.Now()}
			if ev.Metadata != nil {
				f.Width, f.Height = ev.Metadata.DeviceWidth, ev.Metadata.DeviceHeight
			}
			fn(f)
			actx, acancel := context.WithTimeout(lctx, 5*time.Second)
			_, _ = chromedp.Call(actx, page.ScreencastFrameAck, page.ScreencastFrameAckParams{SessionID: ev.SessionID})
			acancel()
		}
	}()
	q := int64(max(1, min(quality, 100)))
	if _, err := chromedp.Call(c.c, page.StartScreencast, page.StartScreencastParams{
		Format: page.StartScreencastFormatJpeg, Quality: &q,
		MaxWidth: int64(s.device.Width), MaxHeight: int64(s.device.Height), EveryNthFrame: 1,
	}); err != nil {
		cancel()
		<-done
		return nil, s.fail(c, err, nil)
	}
	return func() {
		if tctx.Err() == nil {
			sctx, scancel := context.WithTimeout(tctx, 5*time.Second)
			_, _ = chromedp.Call(sctx, page.StopScreencast, cdp.Empty{})
			scancel()
		}
		cancel()
		<-done
	}, nil
}

// MouseInput is a mouse event of a person's, in the viewport's CSS pixels.
type MouseInput struct {
	Type       string // pressed, released, moved, wheel
	X, Y       float64
	Button     string // left, right, middle ("" for moved and wheel)
	ClickCount int
	DeltaX     float64 // wheel
	DeltaY     float64
	Modifiers  int // Alt=1, Ctrl=2, Meta=4, Shift=8
}

// KeyInput is a key event of a person's.
type KeyInput struct {
	Type      string // down, up, char
	Key       string // the DOM key ("a", "Enter", "ArrowLeft")
	Code      string // the DOM code ("KeyA")
	Text      string // the text the key types, for down and char
	Modifiers int
}

// DispatchMouse sends a mouse event to the current tab as the browser's
// own input (Input.dispatchMouseEvent).
//
// Errors: CodeInvalidArgument (an unknown type or button), CodeCancelled,
// CodeBrowserError.
func (s *Session) DispatchMouse(ctx context.Context, m MouseInput) error {
	const op = "mouse"
	p := input.DispatchMouseEventParams{X: m.X, Y: m.Y, ClickCount: int64(m.ClickCount), DeltaX: m.DeltaX, DeltaY: m.DeltaY, Modifiers: int64(m.Modifiers & 15)}
	switch m.Type {
	case "pressed":
		p.Type = input.DispatchMouseEventTypeMousePressed
	case "released":
		p.Type = input.DispatchMouseEventTypeMouseReleased
	case "moved":
		p.Type = input.DispatchMouseEventTypeMouseMoved
	case "wheel":
		p.Type = input.DispatchMouseEventTypeMouseWheel
	default:
		return opError(duet.CodeInvalidArgument, op, nil, "%s: unknown mouse event %q", op, m.Type)
	}
	switch m.Button {
	case "":
		p.Button = input.MouseButtonNone
	case "left":
		p.Button, p.Buttons = input.MouseButtonLeft, 1
	case "right":
		p.Button, p.Buttons = input.MouseButtonRight, 2
	case "middle":
		p.Button, p.Buttons = input.MouseButtonMiddle, 4
	default:
		return opError(duet.CodeInvalidArgument, op, nil, "%s: unknown button %q", op, m.Button)
	}
	if p.Type == input.DispatchMouseEventTypeMouseReleased {
		p.Buttons = 0
	}
	return s.do(ctx, op, command(input.DispatchMouseEvent, p))
}

// DispatchKey sends a key event to the current tab (Input.dispatchKeyEvent).
//
// Errors: CodeInvalidArgument (an unknown type), CodeCancelled,
// CodeBrowserError.
func (s *Session) DispatchKey(ctx context.Context, k KeyInput) error {
	const op = "key"
	p := input.DispatchKeyEventParams{Key: k.Key, Code: k.Code, Modifiers: int64(k.Modifiers & 15)}
	if d, ok := keyDefs()[k.Key]; ok {
		p.WindowsVirtualKeyCode, p.NativeVirtualKeyCode = d.Windows, d.Native
		if p.Code == "" {
			p.Code = d.Code
		}
	}
	switch k.Type {
	case "down":
		p.Type = input.DispatchKeyEventTypeKeyDown
		if k.Text == "" {
			p.Type = input.DispatchKeyEventTypeRawKeyDown
		}
		p.Text, p.UnmodifiedText = k.Text, k.Text
	case "up":
		p.Type = input.DispatchKeyEventTypeKeyUp
	case "char":
		p.Type, p.Text = input.DispatchKeyEventTypeChar, k.Text
	default:
		return opError(duet.CodeInvalidArgument, op, nil, "%s: unknown key event %q", op, k.Type)
	}
	return s.do(ctx, op, command(input.DispatchKeyEvent, p))
}

// Bind runs script in an isolated world named world of every document the
// current tab loads (and of the one it shows now), where a function named
// name sends a string to fn with the id of the world's context. The page's
// own scripts see neither the script nor the function.
//
// Errors: CodeCancelled, CodeBrowserError.
func (s *Session) Bind(ctx context.Context, world, name, script string, fn func(contextID int64, payload string)) error {
	c, err := s.begin(ctx, "bind", 0)
	if err != nil {
		return err
	}
	defer s.end(c)
	tctx := s.current().ctx
	calls := chromedp.Events(tctx, runtime.BindingCalled)
	go func() {
		for ev, err := range calls {
			if err != nil {
				return
			}
			if ev.Name == name {
				fn(int64(ev.ExecutionContextID), ev.Payload)
			}
		}
	}()
	if _, err := chromedp.Call(c.c, runtime.AddBinding, runtime.AddBindingParams{Name: name, ExecutionContextName: world}); err != nil {
		return s.fail(c, err, nil)
	}
	_, err = chromedp.Call(c.c, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{
		Source: script, WorldName: world, RunImmediately: new(true),
	})
	return s.fail(c, err, nil)
}

// EvaluateIn evaluates expr in the execution context contextID (a world of
// Bind's) and decodes its value (awaited when a promise) into out.
//
// Errors: CodeCancelled, CodeBrowserError (the script threw, or the
// context is gone: the page navigated).
func (s *Session) EvaluateIn(ctx context.Context, contextID int64, expr string, out any) error {
	c, err := s.begin(ctx, "evaluate", 0)
	if err != nil {
		return err
	}
	defer s.end(c)
	r, err := chromedp.Call(c.c, runtime.Evaluate, runtime.EvaluateParams{
		Expression: expr, ContextID: runtime.ExecutionContextID(contextID), ReturnByValue: new(true), AwaitPromise: new(true),
	})
	if err == nil && r.ExceptionDetails != nil {
		err = &chromedp.ExceptionError{ExceptionDetails: r.ExceptionDetails}
	}
	if err == nil && (r.Result == nil || len(r.Result.Value) == 0) {
		err = errors.New("the script returned nothing")
	}
	if err != nil {
		return s.fail(c, err, nil)
	}
	return json.Unmarshal(r.Result.Value, out)
}

// AXNode is an element as the browser's accessibility tree has it: its
// ARIA role (as a locator names it) and its accessible name.
type AXNode struct {
	Role, Name string
}

// AccessibleNode returns the role and accessible name the browser computes
// for the element expr evaluates to in the execution context contextID
// (the same tree role locators resolve through). A role is "" when the
// element has none a locator can name (generic, none, ignored).
//
// Errors: CodeElementNotFound when expr is not an element, CodeCancelled,
// CodeBrowserError.
func (s *Session) AccessibleNode(ctx context.Context, contextID int64, expr string) (AXNode, error) {
	const op = "accessibleNode"
	c, err := s.begin(ctx, op, 0)
	if err != nil {
		return AXNode{}, err
	}
	defer s.end(c)
	const group = "duet-live"
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(c.c), releaseTimeout)
		_, _ = chromedp.Call(rctx, runtime.ReleaseObjectGroup, runtime.ReleaseObjectGroupParams{ObjectGroup: group})
		cancel()
	}()
	r, err := chromedp.Call(c.c, runtime.Evaluate, runtime.EvaluateParams{Expression: expr, ContextID: runtime.ExecutionContextID(contextID), ObjectGroup: group})
	if err == nil && r.ExceptionDetails != nil {
		err = &chromedp.ExceptionError{ExceptionDetails: r.ExceptionDetails}
	}
	if err != nil {
		return AXNode{}, s.fail(c, err, nil)
	}
	if r.Result == nil || r.Result.ObjectID == "" || r.Result.Subtype != "node" {
		return AXNode{}, opError(duet.CodeElementNotFound, op, nil, "%s: no element", op)
	}
	ax, err := chromedp.Call(c.c, accessibility.GetPartialAXTree, accessibility.GetPartialAXTreeParams{ObjectID: r.Result.ObjectID, FetchRelatives: new(false)})
	if err != nil {
		return AXNode{}, s.fail(c, err, nil)
	}
	var n AXNode
	if len(ax.Nodes) == 0 || ax.Nodes[0].Ignored {
		return n, nil
	}
	n.Name = normSpace(axString(ax.Nodes[0].Name))
	role := axString(ax.Nodes[0].Role)
	if r, ok := ariaRoles[role]; ok {
		role = r
	}
	if duet.IsRole(role) && role != "generic" {
		n.Role = role
	}
	return n, nil
}

// LiveURL returns the URL of the current tab's page without waiting for
// a call of the session: what a live view shows in its address bar.
func (s *Session) LiveURL(ctx context.Context) (string, error) {
	ctx, cancel := bind(s.current().ctx, ctx)
	defer cancel()
	r, err := chromedp.Call(ctx, runtime.Evaluate, runtime.EvaluateParams{Expression: "location.href", ReturnByValue: new(true)})
	if err != nil {
		return "", opError(duet.CodeBrowserError, "url", err, "url: %v", err)
	}
	var u string
	if r.Result != nil {
		_ = json.Unmarshal(r.Result.Value, &u)
	}
	return u, nil
}

// keyDefs are package kb's keys by their DOM key value, for the key codes
// a page's handlers read (event.keyCode of Enter is 13).
var keyDefs = sync.OnceValue(func() map[string]*kb.Key {
	m := map[string]*kb.Key{}
	for _, k := range kb.Keys {
		if old, ok := m[k.Key]; !ok || (old.Shift && !k.Shift) {
			m[k.Key] = k
		}
	}
	return m
})
