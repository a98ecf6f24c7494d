// Package recorder is the console's case recorder: a live browser session
// on the server that a tester drives from the console (the page's
// screencast frames go to them, their mouse and keyboard come back as the
// browser's input events), recording what they do as steps of the suite
// format — open, click, fill, select, check, uncheck, press — with the most
// robust locator that names the element alone on the page, and the
// assertions they add by picking an element. The steps are ordinary
// steps: the case a recording saves is a case like any other.
//
// A Manager holds the sessions: each is its owner's alone (another user
// gets NOT_FOUND), a user has at most Options.MaxPerUser at a time, a
// session idle for Options.IdleTimeout closes, and frames are sent at most
// Options.FPS a second and never stored.
package recorder

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/browser"
	"github.com/duet-test/duet/internal/engine"
)

//go:embed recorder.js
var script string

// world and binding are the names of the recorder's isolated world and of
// its function there.
const (
	world   = "duet-recorder"
	binding = "__duetRecord"
)

// MaxSteps bounds the steps of one recording.
const MaxSteps = 500

// Live is one recording session.
type Live struct {
	ID          string
	Owner       string
	TaskID      string
	Environment string
	BaseURL     string
	Device      string
	Started     time.Time

	m          *Manager
	s          *browser.Session
	closeFn    func()
	testIDAttr string
	stopCast   func()
	ctx        context.Context // ends when the session closes
	cancel     context.CancelFunc
	events     chan func() // the page's events, handled in order
	idle       *time.Timer
	ready      bool // open and started (Manager.mu)

	mu        sync.Mutex
	steps     []Step
	world     int64 // the context of the recorder's world in the current document
	pending   *Step // a click whose release has not come yet
	swallow   bool  // the release of a press the page did not get
	lastFill  int   // the element of the last fill step (0: none)
	frame     *browser.LiveFrame
	sent      time.Time     // when viewers were last woken for a frame
	frameDue  bool          // a wake-up for a frame is scheduled
	frameSeen chan struct{} // closed and replaced when a frame or the steps change
	version   int           // counts changes of the steps
	lastErr   string
	closed    bool

	tries  *engine.TryState // what the tried steps saved
	trying bool             // steps are being tried: the page's events are not recorded
	syncN  int              // the last barrier asked of the page (settle)
	synced chan struct{}    // closed when barrier syncN comes back
	hello  chan struct{}    // closed and replaced when a document's script says hello
}

// TestIDAttr is the attribute the session's testId locators name (the
// task's testIdAttribute; "" data-testid).
func (l *Live) TestIDAttr() string { return l.testIDAttr }

// Frame returns the newest frame of the page, nil before the first.
func (l *Live) Frame() *browser.LiveFrame {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.frame
}

// Changed returns a channel closed at the next frame or change of the
// steps (or when the session closes), and whether it is closed now.
func (l *Live) Changed() (<-chan struct{}, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.frameSeen, l.closed
}

// Done is closed when the session has closed.
func (l *Live) Done() <-chan struct{} { return l.ctx.Done() }

// notifyLocked wakes the viewers.
func (l *Live) notifyLocked() {
	close(l.frameSeen)
	l.frameSeen = make(chan struct{})
}

// State is what a viewer shows beside the live view.
type State struct {
	ID      string `json:"id"`
	TaskID  string `json:"taskId"`
	Steps   []Step `json:"steps"`
	Version int    `json:"version"`
	Error   string `json:"error,omitempty"` // the last step that could not be recorded, and why
}

// State returns the recording's steps.
func (l *Live) State() State {
	l.mu.Lock()
	defer l.mu.Unlock()
	return State{ID: l.ID, TaskID: l.TaskID, Steps: slices.Clone(l.steps), Version: l.version, Error: l.lastErr}
}

// Steps returns the recorded steps.
func (l *Live) Steps() []Step {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.steps)
}

// touch records activity: the idle timeout starts again (it starts once
// the session has started).
func (l *Live) touch() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.idle != nil {
		l.idle.Reset(l.m.o.IdleTimeout)
	}
}

// add appends a step.
func (l *Live) add(s Step) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.addLocked(s)
}

func (l *Live) addLocked(s Step) {
	if len(l.steps) >= MaxSteps {
		l.lastErr = fmt.Sprintf("a recording has at most %d steps", MaxSteps)
	} else {
		l.steps = append(l.steps, s)
		l.lastErr = ""
	}
	l.lastFill = 0
	l.version++
	l.notifyLocked()
}

func (l *Live) failLocked(what string, err error) {
	l.lastErr = what + ": " + duet.ErrorMessage(err)
	l.version++
	l.notifyLocked()
}

// Delete removes step i (0 the first). Returns INVALID_ARGUMENT for an
// index out of range.
func (l *Live) Delete(i int) error {
	l.touch()
	l.mu.Lock()
	defer l.mu.Unlock()
	if i < 0 || i >= len(l.steps) {
		return duet.Errorf(duet.CodeInvalidArgument, "there is no step %d (the recording has %d)", i+1, len(l.steps))
	}
	l.steps = slices.Delete(l.steps, i, i+1)
	l.lastFill = 0
	l.version++
	l.notifyLocked()
	return nil
}

// SetValue changes the value of step i: the text a fill types, the option
// a select chooses, the key pressed, the text or URL part an assertion
// expects, the URL an open loads. Returns INVALID_ARGUMENT for an index
// out of range or a step without a value (a click).
func (l *Live) SetValue(i int, v string) error {
	l.touch()
	l.mu.Lock()
	defer l.mu.Unlock()
	if i < 0 || i >= len(l.steps) {
		return duet.Errorf(duet.CodeInvalidArgument, "there is no step %d (the recording has %d)", i+1, len(l.steps))
	}
	if k := l.steps[i].Kind; valueKey[k] == "" && k != KindOpen {
		return duet.Errorf(duet.CodeInvalidArgument, "a %s step has no value to change", k)
	}
	l.steps[i].Value = v
	l.lastFill = 0
	l.version++
	l.notifyLocked()
	return nil
}

// relative writes u relative to the base URL when it is under it, as a
// suite writes its opens.
func (l *Live) relative(u string) string {
	base := strings.TrimRight(l.BaseURL, "/")
	if base != "" && strings.HasPrefix(u, base) {
		rest := u[len(base):]
		if rest == "" {
			return "/"
		}
		if strings.HasPrefix(rest, "/") || strings.HasPrefix(rest, "?") {
			return rest
		}
	}
	return u
}

// Open loads u (relative to the base URL, or absolute) and records an
// open step. The session's network guard refuses what it refuses in a
// run.
func (l *Live) Open(ctx context.Context, u string) error {
	l.touch()
	u = strings.TrimSpace(u)
	if u == "" {
		u = "/"
	}
	abs := u
	if strings.HasPrefix(u, "/") {
		abs = strings.TrimRight(l.BaseURL, "/") + u
	}
	if _, err := url.Parse(abs); err != nil {
		return duet.Errorf(duet.CodeInvalidArgument, "%q is not a URL", u)
	}
	if err := l.s.Open(ctx, abs); err != nil {
		return err
	}
	l.add(Step{Kind: KindOpen, Value: l.relative(abs)})
	return nil
}

// Mouse passes a mouse event of the tester's to the page. A left press
// records a click on the element under it (found before the page gets
// the event, so that a click that navigates is recorded with the page it
// clicked); the click is added when the button is released. A press on a
// field records nothing: its own events (fill, select, check) do.
func (l *Live) Mouse(ctx context.Context, m browser.MouseInput) error {
	l.touch()
	if err := l.notTrying(); err != nil {
		return err
	}
	if m.Type == "pressed" && m.Button == "left" && m.ClickCount <= 1 {
		// In the queue of the page's events, so that the click comes
		// after the fill typed before it.
		done := make(chan struct{})
		var focused bool
		find := func() {
			defer close(done)
			focused = l.clickAt(ctx, m.X, m.Y)
		}
		select {
		case l.events <- find:
		case <-ctx.Done():
			return duet.Errorf(duet.CodeCancelled, "cancelled")
		case <-l.ctx.Done():
			return duet.Errorf(duet.CodeBrowserError, "the recording session is closed")
		}
		select {
		case <-done:
		case <-ctx.Done():
			return duet.Errorf(duet.CodeCancelled, "cancelled")
		}
		if focused {
			l.mu.Lock()
			l.swallow = true
			l.mu.Unlock()
			return nil
		}
	}
	if m.Type == "released" {
		l.mu.Lock()
		sw := l.swallow
		l.swallow = false
		l.mu.Unlock()
		if sw {
			return nil
		}
	}
	if err := l.s.DispatchMouse(ctx, m); err != nil {
		return err
	}
	if m.Type == "released" && m.Button == "left" {
		l.mu.Lock()
		if p := l.pending; p != nil {
			l.pending = nil
			l.addLocked(*p)
		}
		l.mu.Unlock()
	}
	return nil
}

// clickAt makes the click on the element at x, y the pending one. A
// <select> is focused instead, and focused reports it: its list of
// options would open in a window of its own, which the page's screencast
// does not show; focused, its option is chosen with the arrow keys.
func (l *Live) clickAt(ctx context.Context, x, y float64) (focused bool) {
	l.mu.Lock()
	w := l.world
	l.pending = nil
	l.mu.Unlock()
	if w == 0 {
		return false
	}
	var at struct {
		ID     int  `json:"id"`
		Field  bool `json:"field"`
		Select bool `json:"select"`
	}
	if err := l.s.EvaluateIn(ctx, w, fmt.Sprintf("__duetRec.at(%g, %g)", x, y), &at); err != nil || at.ID == 0 {
		return false
	}
	if at.Select {
		var ok bool
		return l.s.EvaluateIn(ctx, w, fmt.Sprintf("(__duetRec.el(%d).focus(), true)", at.ID), &ok) == nil
	}
	if at.Field {
		return false
	}
	loc, _, err := l.locate(ctx, w, at.ID)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.failLocked("click", err)
		return
	}
	l.pending = &Step{Kind: KindClick, Locator: loc}
	return false
}

// Key passes a key event of the tester's to the focused element.
func (l *Live) Key(ctx context.Context, k browser.KeyInput) error {
	l.touch()
	if err := l.notTrying(); err != nil {
		return err
	}
	return l.s.DispatchKey(ctx, k)
}

// Assertions a tester adds by picking an element.
const (
	AssertVisible = "visible"
	AssertText    = "text"
)

// Pick adds an assertion on the element at x, y (the viewport's CSS
// pixels): visible, or text (equals its text as shown now). The page gets
// no event. Returns ELEMENT_NOT_FOUND when nothing is there,
// INVALID_ARGUMENT for another assertion.
func (l *Live) Pick(ctx context.Context, x, y float64, assert string) (Step, error) {
	l.touch()
	if assert != AssertVisible && assert != AssertText {
		return Step{}, duet.Errorf(duet.CodeInvalidArgument, "an assertion picked on the page is %s or %s, not %q", AssertVisible, AssertText, assert)
	}
	l.mu.Lock()
	w := l.world
	l.mu.Unlock()
	if w == 0 {
		return Step{}, duet.Errorf(duet.CodeElementNotFound, "the page is not ready yet")
	}
	var at struct {
		ID int `json:"id"`
	}
	if err := l.s.EvaluateIn(ctx, w, fmt.Sprintf("__duetRec.at(%g, %g)", x, y), &at); err != nil {
		return Step{}, err
	}
	if at.ID == 0 {
		return Step{}, duet.Errorf(duet.CodeElementNotFound, "no element at %g, %g", x, y)
	}
	loc, _, err := l.locate(ctx, w, at.ID)
	if err != nil {
		return Step{}, err
	}
	st := Step{Kind: KindAssertVisible, Locator: loc}
	if assert == AssertText {
		a, err := l.s.Query(ctx, browser.Target{Locator: loc, First: loc.CSS != ""}, browser.Query{Kind: "text"})
		if err != nil {
			return Step{}, err
		}
		st.Kind, st.Value = KindAssertText, strings.TrimSpace(a.Str)
	}
	l.add(st)
	return st, nil
}

// AssertURL adds an assertion that the page's URL contains its path and
// query as they are now.
func (l *Live) AssertURL(ctx context.Context) (Step, error) {
	l.touch()
	u, err := l.s.URL(ctx)
	if err != nil {
		return Step{}, err
	}
	part := l.relative(u)
	if pu, err := url.Parse(u); err == nil && part == u {
		part = pu.Path
	}
	st := Step{Kind: KindAssertURL, Value: part}
	l.add(st)
	return st, nil
}

// pageEvent is what the page's script sends (recorder.js).
type pageEvent struct {
	T     string `json:"t"`
	ID    int    `json:"id"`
	Value string `json:"value"`
	Key   string `json:"key"`
	Field bool   `json:"field"`
}

// onBinding takes a message of the page's script; the work that asks the
// browser is queued, so that events are recorded in the order they came.
func (l *Live) onBinding(contextID int64, payload string) {
	var ev pageEvent
	if len(payload) > 1<<20 || json.Unmarshal([]byte(payload), &ev) != nil {
		return
	}
	l.mu.Lock()
	switch {
	case ev.T == "hello":
		l.world = contextID
		if l.hello != nil {
			close(l.hello)
			l.hello = nil
		}
		l.mu.Unlock()
		return
	case ev.T == "sync":
		if ev.ID == l.syncN && l.synced != nil {
			close(l.synced)
			l.synced = nil
		}
		l.mu.Unlock()
		return
	case l.trying:
		// What tried steps did to the page is not the tester's doing.
		l.mu.Unlock()
		return
	}
	l.mu.Unlock()
	select {
	case l.events <- func() { l.record(contextID, ev) }:
	case <-l.ctx.Done():
	}
}

// record turns an event of the page into a step.
func (l *Live) record(contextID int64, ev pageEvent) {
	ctx, cancel := context.WithTimeout(l.ctx, l.m.o.LocateTimeout)
	defer cancel()
	var st Step
	switch ev.T {
	case "fill", "select", "check", "uncheck":
		st = Step{Kind: ev.T, Value: ev.Value}
		if ev.T == "check" || ev.T == "uncheck" {
			st.Value = ""
		}
	case "press":
		// On the focused element, which a step before focused: the key
		// may submit a form, and the page it leaves cannot be asked for
		// a locator.
		l.add(Step{Kind: KindPress, Value: ev.Key})
		return
	default:
		return
	}
	l.mu.Lock()
	if ev.T == "fill" && l.lastFill == ev.ID && len(l.steps) > 0 && l.steps[len(l.steps)-1].Kind == KindFill {
		// Typing goes on in the same field: one fill, its value the
		// field's.
		l.steps[len(l.steps)-1].Value = ev.Value
		l.version++
		l.notifyLocked()
		l.mu.Unlock()
		return
	}
	l.mu.Unlock()
	loc, _, err := l.locate(ctx, contextID, ev.ID)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.failLocked(ev.T, err)
		return
	}
	st.Locator = loc
	l.addLocked(st)
	if ev.T == "fill" {
		l.lastFill = ev.ID
	}
}

// Save returns the YAML of the recording as a case (an item of a suite's
// cases) with key and title.
func (l *Live) YAML(key, title string) string {
	return CaseYAML(key, title, l.Steps())
}

// Close ends the session: the screencast, the browser context, the
// viewers' streams.
func (l *Live) Close() {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.closed = true
	l.notifyLocked()
	if l.idle != nil {
		l.idle.Stop()
	}
	l.mu.Unlock()
	l.m.forget(l)
	if l.stopCast != nil {
		l.stopCast()
	}
	l.closeFn()
	l.cancel()
}

// loop handles the page's events in order until the session closes.
func (l *Live) loop() {
	for {
		select {
		case f := <-l.events:
			f()
		case <-l.ctx.Done():
			return
		}
	}
}

// onFrame keeps the newest frame; viewers are woken at most FPS times a
// second (a viewer wants the page as it is now, not every frame).
func (l *Live) onFrame(f browser.LiveFrame) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	l.frame = &f
	if l.frameDue {
		return // a wake-up is due: it shows this frame
	}
	interval := time.Second / time.Duration(l.m.o.FPS)
	if wait := interval - time.Since(l.sent); wait > 0 {
		l.frameDue = true
		time.AfterFunc(wait, func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.frameDue, l.sent = false, time.Now()
			if !l.closed {
				l.notifyLocked()
			}
		})
		return
	}
	l.sent = time.Now()
	l.notifyLocked()
}
