package browser

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"

	"github.com/duet-test/duet"
)

// Actions that Act performs.
const (
	ActClick    = "click"    // a click (Action.Button, Action.Modifiers)
	ActDblClick = "dblclick" // a double click
	ActHover    = "hover"    // the mouse over the element
	ActCheck    = "check"    // click a checkbox or radio button unless it is checked
	ActUncheck  = "uncheck"  // click a checkbox unless it is not checked
	ActFill     = "fill"     // clear a field and insert Action.Value as one edit
	ActClear    = "clear"    // clear a field
	ActType     = "type"     // type Action.Value key by key into the element, Action.Delay apart
	ActPress    = "press"    // press the key Action.Value on the element
	ActSelect   = "select"   // choose the option Action.Value of a <select>
	ActFocus    = "focus"    // focus the element
	ActBlur     = "blur"     // take the focus from the element
	ActScroll   = "scroll"   // scroll the element into view
	ActUpload   = "upload"   // set Action.Files on a file input
	ActDrag     = "drag"     // drag the element and drop it on Action.To
)

// Action is what Act does to the element of a target.
type Action struct {
	Kind      string            // one of the Act* constants
	Button    string            // click: left (the default), right or middle
	Modifiers []string          // click, dblclick, hover: keys held (Shift, Control, Alt, Meta)
	Value     string            // fill, type, select: the text; press: the key
	Delay     time.Duration     // type: the pause after each key
	Files     []duet.UploadFile // upload
	To        *Locator          // drag: the drop target
}

// Limits of actions.
const (
	// MaxTypeDelay bounds the pause between the keys of a type action.
	MaxTypeDelay = time.Second
	// MaxUploadBytes bounds the files of one upload together.
	MaxUploadBytes = 4 << 20
	// MaxUploadFiles bounds the files of one upload.
	MaxUploadFiles = 20
)

// actOpts are the checks and the in-page part of an action (jsElement's o).
type actOpts struct {
	Read     bool         `json:"read,omitempty"`
	Kind     string       `json:"kind,omitempty"`
	Name     string       `json:"name,omitempty"`
	Wait     int64        `json:"wait,omitempty"`
	Visible  bool         `json:"visible,omitempty"`
	Enabled  bool         `json:"enabled,omitempty"`
	Editable bool         `json:"editable,omitempty"`
	Stable   bool         `json:"stable,omitempty"`
	Scroll   bool         `json:"scroll,omitempty"`
	Hit      bool         `json:"hit,omitempty"`
	Guard    string       `json:"guard,omitempty"` // click, hover or drag: watch the action's events (hit.go)
	Point    bool         `json:"point,omitempty"`
	Top      bool         `json:"top,omitempty"`
	Fit      string       `json:"fit,omitempty"`
	Op       string       `json:"op,omitempty"`
	Value    string       `json:"value,omitempty"`
	Files    []uploadFile `json:"files,omitempty"`
	Slice    int64        `json:"slice"`
	Loop     bool         `json:"loop"`
}

type uploadFile struct {
	Name string `json:"name"`
	Type string `json:"type,omitempty"`
	Data string `json:"data"` // base64
}

// actionOpts returns the checks of an action, as Playwright defines them:
// a pointer action needs the element visible, stable, enabled (but a
// hover) and receiving events at its centre; a field needs it editable.
func actionOpts(a Action) (actOpts, string, error) {
	pointer := actOpts{Visible: true, Enabled: true, Stable: true, Scroll: true, Hit: true}
	switch a.Kind {
	case ActClick, ActDblClick:
		pointer.Guard = "click"
		return pointer, "", nil
	case ActHover:
		pointer.Enabled, pointer.Guard = false, "hover"
		return pointer, "", nil
	case ActCheck, ActUncheck:
		pointer.Fit, pointer.Op, pointer.Guard = "check", "checked", "click"
		return pointer, "a checkbox, a radio button or an element with aria-checked", nil
	case ActFill, ActClear:
		return actOpts{Visible: true, Enabled: true, Editable: true, Fit: "text", Op: "fill", Value: a.Value}, "an input, textarea or contenteditable element", nil
	case ActType, ActPress:
		return actOpts{Visible: true, Op: "focus"}, "", nil
	case ActSelect:
		return actOpts{Visible: true, Enabled: true, Fit: "select", Op: "select", Value: a.Value}, "a <select> element", nil
	case ActFocus:
		return actOpts{Visible: true, Op: "focus"}, "", nil
	case ActBlur:
		return actOpts{Op: "blur"}, "", nil
	case ActScroll:
		return actOpts{Visible: true, Stable: true, Scroll: true}, "", nil
	case ActUpload:
		o := actOpts{Enabled: true, Fit: "file", Op: "upload"}
		total := 0
		for _, f := range a.Files {
			total += len(f.Data)
			o.Files = append(o.Files, uploadFile{Name: f.Name, Type: f.Type, Data: base64.StdEncoding.EncodeToString(f.Data)})
		}
		switch {
		case len(a.Files) == 0:
			return o, "", duet.Errorf(duet.CodeInvalidArgument, "upload: no file")
		case len(a.Files) > MaxUploadFiles:
			return o, "", duet.Errorf(duet.CodeTooLarge, "upload: %d files, more than %d", len(a.Files), MaxUploadFiles)
		case total > MaxUploadBytes:
			return o, "", duet.Errorf(duet.CodeTooLarge, "upload: the files hold %d bytes together, more than %d", total, MaxUploadBytes)
		}
		return o, "a file input (<input type=file>)", nil
	case ActDrag:
		if a.To == nil {
			return actOpts{}, "", duet.Errorf(duet.CodeInvalidArgument, "drag: no drop target")
		}
		pointer.Enabled, pointer.Guard = false, "drag"
		return pointer, "", nil
	}
	return actOpts{}, "", duet.Errorf(duet.CodeInvalidArgument, "unknown action %q", a.Kind)
}

// Act waits until the element of t can take the action a — attached,
// visible, stable across two animation frames, enabled, not covered at the
// point the mouse will use, editable for a field (each as the action
// needs) — and performs it, within ctx's deadline. The wait is driven by
// the page: it looks again when the DOM changes, or at the next animation
// frame for what moves. A click, double click, check, uncheck, hover or
// drag is then watched in the page event by event: one that would reach
// another element (the page moved the target in between) is stopped before
// the page sees it, and the action starts again (hit.go).
//
// Errors: CodeElementNotFound when nothing matches (or stays hidden) in
// time; CodeLocatorAmbiguous at once when a strict target matches several
// elements; CodeStepTimeout when the element stays covered, disabled,
// read-only or moving, or another element would keep receiving the click
// (the hover, the drag); CodeInvalidArgument for a bad locator, a bad key or
// an element the action does not fit (fill of a <div>); CodeTooLarge for an
// upload over its bounds; CodeCancelled and CodeBrowserError.
func (s *Session) Act(ctx context.Context, t Target, a Action) error {
	op := a.Kind
	o, want, err := actionOpts(a)
	if err != nil {
		return opErr(op, err)
	}
	var (
		keyText string
		keyMods []chromedp.Modifier
	)
	switch a.Kind {
	case ActPress:
		if keyText, keyMods, err = parseKey(a.Value); err != nil {
			return opErr(op, err)
		}
	case ActType:
		if a.Delay < 0 || a.Delay > MaxTypeDelay {
			return opError(duet.CodeInvalidArgument, op, nil, "type: delay %s is not between 0 and %s", a.Delay, MaxTypeDelay)
		}
	}
	mods, err := mouseModifiers(a.Modifiers)
	if err != nil {
		return opErr(op, err)
	}
	button := input.MouseButtonLeft
	switch a.Button {
	case "", "left":
	case "right":
		button = input.MouseButtonRight
	case "middle":
		button = input.MouseButtonMiddle
	default:
		return opError(duet.CodeInvalidArgument, op, nil, "%s: unknown mouse button %q (left, right or middle)", op, a.Button)
	}
	c, err := s.begin(ctx, op, 0)
	if err != nil {
		return err
	}
	defer s.end(c)
	w, err := s.world(c)
	if err != nil {
		return err
	}
	defer s.releaseWorld(c, w)
	o.Top = !w.frame
	if o.Guard != "" {
		return s.click(c, w, t, want, o, a, button, mods)
	}
	r, err := s.resolve(c, w, t, want, o)
	if err != nil {
		return err
	}
	switch a.Kind {
	case ActFill:
		if !r.Has && a.Value != "" {
			// One edit, as a paste or an input method commits text: the
			// page gets beforeinput and input (inputType insertText) once,
			// trusted, which is what frameworks (React, Vue) listen to;
			// change follows when the field loses the focus, as for a
			// person. Key by key is type's.
			err = chromedp.Do(c.c, command(input.InsertText, input.InsertTextParams{Text: a.Value}))
		}
	case ActType:
		err = s.typeKeys(c, a.Value, a.Delay)
	case ActPress:
		err = chromedp.Do(c.c, chromedp.KeyEvent(keyText, chromedp.KeyModifiers(keyMods...)))
	}
	return s.fail(c, err, nil)
}

// opErr gives a plain duet error the operation's name.
func opErr(op string, err error) error {
	var de *duet.Error
	if errors.As(err, &de) {
		return opError(de.Code, op, de.Err, "%s: %s", op, strings.TrimPrefix(de.Message, op+": "))
	}
	return err
}

// mouseModifiers reads the names of the keys held during a mouse action.
func mouseModifiers(names []string) ([]chromedp.Modifier, error) {
	var out []chromedp.Modifier
	for _, n := range names {
		m, ok := modifierNames[strings.ToLower(n)]
		if !ok {
			return nil, duet.Errorf(duet.CodeInvalidArgument, "unknown modifier %q (want Shift, Control, Alt or Meta)", n)
		}
		out = append(out, m)
	}
	return out, nil
}

// typeKeys types text key by key, delay apart.
func (s *Session) typeKeys(c *call, text string, delay time.Duration) error {
	if delay == 0 {
		return chromedp.Do(c.c, chromedp.KeyEvent(text))
	}
	for len(text) > 0 {
		_, n := utf8.DecodeRuneInString(text)
		if err := chromedp.Do(c.c, chromedp.KeyEvent(text[:n])); err != nil {
			return err
		}
		text = text[n:]
		if err := sleep(c.c, delay); err != nil {
			return err
		}
	}
	return nil
}

// awaitChecked waits until the element of t is (un)checked after a click:
// a page may update it a moment later; one that never does fails the step.
func (s *Session) awaitChecked(c *call, w *world, t Target, want bool) error {
	for wait := time.Duration(0); ; wait = 250 * time.Millisecond {
		r, err := s.resolve(c, w, t, "", actOpts{Read: true, Kind: "checked", Wait: wait.Milliseconds()})
		if err != nil {
			return err
		}
		if r.Has == want {
			return nil
		}
		if dl, ok := c.c.Deadline(); ok && time.Until(dl) < 300*time.Millisecond {
			verb := map[bool]string{true: "check", false: "uncheck"}[want]
			return opError(duet.CodeAssertionFailed, verb, nil, "%s: clicking %s did not %s it", verb, t, verb)
		}
	}
}

// drop drags from (x, y) to the centre of the element of to.
func (s *Session) drop(c *call, w *world, x, y float64, to Locator) error {
	t := Target{Locator: &to}
	r, err := s.resolve(c, w, t, "", actOpts{Visible: true, Stable: true, Point: true, Top: !w.frame})
	if err != nil {
		return err
	}
	tx, ty, err := s.toViewport(c, w, r.X, r.Y)
	if err != nil {
		return err
	}
	err = chromedp.Do(c.c, chromedp.DragAndDropXY(x, y, tx, ty))
	if errors.Is(err, chromedp.ErrDragOutsideViewport) {
		return opError(duet.CodeInvalidArgument, "drag", err, "drag: the element and %s are not in the viewport together; make the viewport taller (emulate:) or scroll first", t)
	}
	return err
}

// resolve looks for the element of t in the world until the script says
// it is ready (state ok), within the call's deadline. want says what the
// element must be, for the message of one that is not (unfit).
func (s *Session) resolve(c *call, w *world, t Target, want string, o actOpts) (jsResult, error) {
	q, roles, err := compileTarget(t)
	if err != nil {
		return jsResult{}, opErr(c.op, err)
	}
	o.Loop = len(roles) == 0
	var (
		last    jsResult
		lastErr error
	)
	for delay, first := 10*time.Millisecond, true; ; first = false {
		if err := c.c.Err(); err != nil {
			return last, s.targetFail(c, t, last, joinErr(err, lastErr))
		}
		// The script waits in the page at most until a moment before
		// the deadline, to say why the element is not ready yet.
		// The first look does not wait, so that even a loaded machine
		// says early why the element is not ready.
		o.Slice = maxSlice.Milliseconds()
		if dl, ok := c.c.Deadline(); ok {
			o.Slice = max(0, min(o.Slice, time.Until(dl).Milliseconds()-sliceMargin.Milliseconds()))
		}
		if first {
			o.Slice = 0
		}
		lk, err := s.prepare(c.c, w, q, roles)
		var r jsResult
		if err == nil {
			err = s.script(c.c, w, lk, jsElement, o, &r)
			if len(lk.objs) > 0 && r.State != "ambiguous" {
				s.release(c.c, w)
			}
		}
		if err == nil {
			if r.State == "nooption" {
				r.Str = o.Value
			}
			last = r
			switch r.State {
			case "ok":
				return r, nil
			case "invalid":
				if l := t.Locator; l.CSS != "" && l.Within == nil && l.Has == nil {
					return r, opError(duet.CodeInvalidArgument, c.op, nil, "%s: invalid CSS selector %q: %s", c.op, l.CSS, r.Msg)
				}
				return r, opError(duet.CodeInvalidArgument, c.op, nil, "%s: invalid locator %s: %s", c.op, t, r.Msg)
			case "unfit":
				what := r.Str
				if what == "" {
					what = want
				}
				return r, opError(duet.CodeInvalidArgument, c.op, nil, "%s: element %s is %s, not %s", c.op, t, r.Msg, what)
			case "ambiguous":
				if len(lk.objs) > 0 || lk.doc == "" {
					s.describeMatches(c.c, w, lk, r.Matches)
				}
				return r, ambiguous(c.op, t, r.N, r.Matches)
			case "error":
				return r, opError(duet.CodeBrowserError, c.op, nil, "%s: the page's script failed: %s", c.op, r.Msg)
			}
			if o.Slice == 0 {
				// Too close to the deadline for the page to wait.
				if err := sleep(c.c, 10*time.Millisecond); err != nil {
					return last, s.targetFail(c, t, last, err)
				}
			}
			continue // the script waited for the page to change
		}
		var de *duet.Error
		if errors.As(err, &de) {
			return last, err
		}
		// The page may be navigating: look again in a moment (a frame's
		// context goes with its document: find the frame again).
		lastErr = err
		if w.frame {
			if nw, werr := s.world(c); werr == nil {
				s.releaseWorld(c, w)
				*w = *nw
			}
		}
		if err := sleep(c.c, delay); err != nil {
			return last, s.targetFail(c, t, last, joinErr(err, lastErr))
		}
		delay = min(2*delay, 100*time.Millisecond)
	}
}

// maxSlice bounds how long one script waits in the page; it returns
// sliceMargin before the call's deadline.
const (
	maxSlice    = 2 * time.Second
	sliceMargin = 100 * time.Millisecond
)

// releaseTimeout bounds the release of a look's handles.
const releaseTimeout = 2 * time.Second

func joinErr(err, last error) error {
	if last == nil {
		return err
	}
	return fmt.Errorf("%w (last error: %w)", err, last)
}

// targetFail turns the error of a wait for the element of t into a
// *duet.Error, from the last state of the element: CodeElementNotFound when
// it is missing or hidden, CodeStepTimeout when it is covered, disabled,
// read-only or moving, or the page never answered.
func (s *Session) targetFail(c *call, t Target, last jsResult, err error) error {
	return s.fail(c, err, func() *duet.Error {
		switch last.State {
		case "hidden":
			return opError(duet.CodeElementNotFound, c.op, nil, "%s: element %s is not visible after %s", c.op, t, c.elapsed())
		case "covered":
			return opError(duet.CodeStepTimeout, c.op, nil, "%s: element %s is covered by %s after %s", c.op, t, last.Msg, c.elapsed())
		case "disabled":
			return opError(duet.CodeStepTimeout, c.op, nil, "%s: element %s is still disabled after %s", c.op, t, c.elapsed())
		case "readonly":
			return opError(duet.CodeStepTimeout, c.op, nil, "%s: element %s is still read-only after %s", c.op, t, c.elapsed())
		case "outside":
			return opError(duet.CodeStepTimeout, c.op, nil, "%s: element %s is still outside the viewport after %s", c.op, t, c.elapsed())
		case "moving":
			return opError(duet.CodeStepTimeout, c.op, nil, "%s: element %s is still moving (an animation) after %s", c.op, t, c.elapsed())
		case "nooption":
			return opError(duet.CodeElementNotFound, c.op, nil, "%s: %s has no option with value or label %q after %s (options: %s)", c.op, t, last.Str, c.elapsed(), strings.Join(last.List, ", "))
		case "":
			return opError(duet.CodeStepTimeout, c.op, nil, "%s: the page did not answer within %s", c.op, c.elapsed())
		}
		return opError(duet.CodeElementNotFound, c.op, nil, "%s: no element matches %s after %s", c.op, t, c.elapsed())
	})
}

// Query is what Query reads of the element of a target.
type Query struct {
	// Kind is text, value, attr, count, visible, enabled, editable,
	// checked, focused or css.
	Kind string
	// Name is the attribute (attr) or the CSS property (css).
	Name string
	// Wait makes the read wait first, at most this long, for the page to
	// change (a DOM mutation): how an assertion that did not hold looks
	// again without polling.
	Wait time.Duration
}

// Answer is what Query read.
type Answer struct {
	Str   string // text, value, attr, css
	Has   bool   // attr: the element has it; visible, enabled, editable, checked, focused
	Count int    // count
}

// Query reads the element of t, once it exists: its text (as rendered; ""
// when hidden), value, an attribute, a computed CSS property, or whether it
// is visible, enabled, editable, checked or focused; or how many elements t
// matches. count and visible do not wait: nothing matched is 0, and not
// visible.
//
// Errors: CodeElementNotFound; CodeLocatorAmbiguous for a strict target
// that matches several elements; CodeInvalidArgument for a bad locator or
// an element without what is read (the value of a <p>); CodeCancelled and
// CodeBrowserError.
func (s *Session) Query(ctx context.Context, t Target, q Query) (Answer, error) {
	op := q.Kind
	switch q.Kind {
	case "text", "value", "attr", "count", "visible", "enabled", "editable", "checked", "focused", "css":
	default:
		return Answer{}, opError(duet.CodeInvalidArgument, "query", nil, "unknown query %q", q.Kind)
	}
	if (q.Kind == "attr" || q.Kind == "css") && q.Name == "" {
		return Answer{}, opError(duet.CodeInvalidArgument, op, nil, "%s: no name", op)
	}
	c, err := s.begin(ctx, op, 0)
	if err != nil {
		return Answer{}, err
	}
	defer s.end(c)
	w, err := s.world(c)
	if err != nil {
		return Answer{}, err
	}
	defer s.releaseWorld(c, w)
	r, err := s.resolve(c, w, t, "", actOpts{Read: true, Kind: q.Kind, Name: q.Name, Wait: q.Wait.Milliseconds()})
	if err != nil {
		return Answer{}, err
	}
	return Answer{Str: r.Str, Has: r.Has, Count: r.N}, nil
}
