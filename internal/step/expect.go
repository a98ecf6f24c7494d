package step

import (
	"context"
	"strings"
	"time"

	"github.com/duet-test/duet"
)

// What the element kinds share: their form (the locator keys and theirs),
// compiling it, acting on the element, and the assertions that retry a read
// until it holds.

// elementForm is the form of a kind whose body is an element: the CSS
// selector as its shorthand, or the locator keys and the kind's keys.
func elementForm(shortDoc string, keys ...Key) Form {
	f := Form{Keys: withLocator(keys...), AtLeastOne: append(locatorBases[:len(locatorBases):len(locatorBases)], "within", "has", "hasText")}
	if shortDoc != "" {
		f.Short = &Short{Type: Template, Doc: shortDoc}
	}
	return f
}

// compileElement compiles the body of an element kind of form f: the
// shorthand CSS selector (when f has one) or a mapping of its keys. It
// returns the body for the kind's own keys.
func compileElement(c *Compiler, st *duet.Step, n *Node, f *Form) (*body, bool) {
	bd, ok := browserBody(c, st, n, false)
	if !ok {
		return nil, false
	}
	bd.needPage()
	if !bd.isMap && f.Short == nil {
		c.Errf(n, "%s needs a mapping: {%s}", st.Kind, strings.Join(requiredKeys(f), ", "))
		return nil, false
	}
	if bd.isMap {
		c.AllowKeys(n, f.KeyNames()...)
	}
	bd.target(true)
	return bd, true
}

// elementStep is the Compile of a step that acts on one located element
// of the form f: more goes on with the keys of its mapping form (the
// shorthand has none).
func elementStep(f *Form, more func(c *Compiler, n *Node, bd *body)) func(*Compiler, *duet.Step, *Node) {
	return func(c *Compiler, st *duet.Step, n *Node) {
		if bd, ok := compileElement(c, st, n, f); ok && bd.isMap {
			more(c, n, bd)
		}
	}
}

// requiredKeys names what a form's mapping needs, for messages.
func requiredKeys(f *Form) []string {
	out := []string{"a locator"}
	for _, k := range f.Keys {
		if k.Required {
			out = append(out, k.Name)
		}
	}
	return out
}

// act runs an element action of the step.
func act(ctx context.Context, env Env, st *duet.Step, a Action) (string, any, error) {
	el, t, err := elements(ctx, env, st)
	if err != nil {
		return "", nil, err
	}
	return "", nil, el.Act(ctx, t, a)
}

// pageWait is how long a retried read of an assertion waits in the page
// for it to change before it reads again.
const pageWait = 250 * time.Millisecond

// retryPage calls check until it returns nil or an error other than
// ASSERTION_FAILED, within the assertion's time (see retry); each call but
// the first is told to wait in the page for a change first, so that an
// assertion looks again when the page changes, not on a clock.
func retryPage(ctx context.Context, st *duet.Step, check func(ctx context.Context, wait time.Duration) error) error {
	actx, cancel := assertContext(ctx, st)
	defer cancel()
	var failure error
	for wait := time.Duration(0); ; wait = pageWait {
		err := check(actx, wait)
		switch {
		case err == nil:
			return nil
		case duet.ErrorCode(err) == duet.CodeAssertionFailed:
			failure = err
		case failure != nil && (actx.Err() != nil || pastDeadline(actx)):
			// The time ran out while reading the page again: the
			// assertion failure is the news. (When the case ended or the
			// run was cancelled, the engine says so whatever this returns.)
			return failure
		default:
			return err
		}
		if actx.Err() != nil || pastDeadline(actx) {
			return failure
		}
	}
}

// expectState asserts a state of the step's element (visible, enabled,
// checked, focused, ...): want, or its opposite with not.
func expectState(ctx context.Context, env Env, st *duet.Step, kind string, yes, no string) (string, any, error) {
	el, t, err := elements(ctx, env, st)
	if err != nil {
		return "", nil, err
	}
	want := !st.Browser.Not
	var got bool
	err = retryPage(ctx, st, func(ctx context.Context, wait time.Duration) error {
		a, err := el.Query(ctx, t, Query{Kind: kind, Wait: wait})
		if err != nil {
			return err
		}
		got = a.Has
		switch {
		case got == want:
			return nil
		case want:
			return duet.Errorf(duet.CodeAssertionFailed, "%s is not %s", t, yes)
		}
		return duet.Errorf(duet.CodeAssertionFailed, "%s is %s; expected it %s", t, yes, no)
	})
	if err != nil {
		return "", nil, err
	}
	return "", got, nil
}

// expectCompare asserts a text the step's element shows (its text, value,
// an attribute, a CSS property: what read returns) as compare does, or
// its opposite with not. The last text read is the step's output.
func expectCompare(ctx context.Context, env Env, st *duet.Step, what func(t Target) string, q Query) (string, any, error) {
	el, t, err := elements(ctx, env, st)
	if err != nil {
		return "", nil, err
	}
	var got any
	err = retryPage(ctx, st, func(ctx context.Context, wait time.Duration) error {
		qq := q
		qq.Wait = wait
		a, err := el.Query(ctx, t, qq)
		if err != nil {
			return err
		}
		v := a.Str
		if q.Kind == "text" {
			v = strings.TrimSpace(v)
		}
		if q.Kind == "attr" && !a.Has {
			got = nil
			if st.Browser.Not {
				return nil // no attribute: it does not match
			}
			return duet.Errorf(duet.CodeAssertionFailed, "%s has no attribute %s", t, q.Name)
		}
		got = v
		return compareNot(env, what(t), v, st.Browser)
	})
	return "", got, err
}

// compareNot is compare, or its opposite when b.Not.
func compareNot(env Env, what, got string, b *duet.BrowserStep) error {
	err := compare(env, what, got, b)
	if !b.Not {
		return err
	}
	switch {
	case err == nil:
		op, want := "equal", b.Equals
		switch {
		case b.Contains != "":
			op, want = "contain", b.Contains
		case b.Matches != "":
			op, want = "match", b.Matches
		}
		w, rerr := render(env, want)
		if rerr != nil {
			return rerr
		}
		return duet.Errorf(duet.CodeAssertionFailed, "%s is %q; expected it not to %s %q", what, got, op, w)
	case duet.ErrorCode(err) == duet.CodeAssertionFailed:
		return nil
	}
	return err
}

// notKey is the key that inverts an assertion.
var notKey = Key{Name: "not", Type: Bool, Doc: "assert the opposite"}

// compileNot reads not.
func (bd *body) compileNot() {
	if v := bd.bool("not"); v != nil {
		bd.b.Not = *v
	}
}

// compileCompareOf reads equals, contains or matches (exactly one) of an
// assertion's mapping, and not.
func (bd *body) compileCompareNot() {
	bd.compileCompare()
	bd.compileNot()
}

// elementOnlyForm is the form of a kind whose body is an element and
// nothing else.
var elementOnlyForm = elementForm("the CSS selector")

// elementAction completes k, a kind that does one thing to an element and
// has no keys of its own (check, clear, focus, hover, ...): its body is
// the element, and running it is the element action named action.
func elementAction(action string, k *Kind) *Kind {
	k.Section, k.Form = Browser, elementOnlyForm
	k.Compile = func(c *Compiler, st *duet.Step, n *Node) { compileElement(c, st, n, &elementOnlyForm) }
	k.Run = func(ctx context.Context, env Env, st *duet.Step) (string, any, error) {
		return act(ctx, env, st, Action{Kind: action})
	}
	return k
}

// valueAction completes k, a kind whose body is an element and a value
// (fill, select; valueDoc says what the value is): running it is the
// element action named action with the value rendered.
func valueAction(action, valueDoc string, k *Kind) *Kind {
	k.Section = Browser
	k.Form = elementForm("", Key{Name: "value", Type: Template, Required: true, Doc: valueDoc})
	k.Compile = compileValue(&k.Form)
	k.Run = func(ctx context.Context, env Env, st *duet.Step) (string, any, error) {
		v, err := renderOpt(env, st.Browser.Value)
		if err != nil {
			return "", nil, err
		}
		return act(ctx, env, st, Action{Kind: action, Value: v})
	}
	return k
}

// stateForm is the form of the assertions of an element's state.
var stateForm = elementForm("the CSS selector", notKey)

// stateAssertion completes k, an assertion of a state of an element
// (checked, enabled, focused): its body is the element and not, and it
// holds when the element is in state (yes; no names the opposite), or,
// when inverse, when it is not (assertDisabled is assertEnabled with not).
func stateAssertion(state, yes, no string, inverse bool, k *Kind) *Kind {
	k.Section, k.Form, k.Assertion = Browser, stateForm, true
	k.Compile = elementStep(&stateForm, func(_ *Compiler, _ *Node, bd *body) { bd.compileNot() })
	k.Run = func(ctx context.Context, env Env, st *duet.Step) (string, any, error) {
		if inverse {
			st = inverted(st)
		}
		return expectState(ctx, env, st, state, yes, no)
	}
	return k
}

// inverted returns st with not flipped.
func inverted(st *duet.Step) *duet.Step {
	b := *st.Browser
	b.Not = !b.Not
	cp := *st
	cp.Browser = &b
	return &cp
}

// compareForm is the form of an assertion that compares a text an element
// shows: keys of its own, then equals, contains or matches (exactly one),
// the locator keys and not.
func compareForm(keys ...Key) Form {
	return Form{
		Keys:       append(append(append(keys, compareKeys...), locatorKeys...), notKey),
		ExactlyOne: []string{"equals", "contains", "matches"},
	}
}

// compareAssertion completes k, an assertion that compares a text read
// off an element (query: text, value, attr, css) with equals, contains or
// matches, or not. For attr and css, param is the step's key that names
// the attribute or the property, kept in the field that field points at;
// label names what is read, in messages, from that name ("" without one).
func compareAssertion(query string, f *Form, param string, field func(*duet.BrowserStep) *string, label func(name string) string, k *Kind) *Kind {
	k.Section, k.Form, k.Assertion = Browser, *f, true
	k.Compile = elementStep(f, func(_ *Compiler, _ *Node, bd *body) {
		if param != "" {
			*field(bd.b) = bd.field(param, true)
		}
		bd.compileCompareNot()
	})
	k.Run = func(ctx context.Context, env Env, st *duet.Step) (string, any, error) {
		var name string
		if param != "" {
			var err error
			if name, err = render(env, *field(st.Browser)); err != nil {
				return "", nil, err
			}
		}
		what := label(name)
		return expectCompare(ctx, env, st, func(t Target) string { return what + " of " + t.String() }, Query{Kind: query, Name: name})
	}
	return k
}
