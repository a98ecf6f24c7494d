package step

import (
	"context"
	"regexp"
	"strings"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/eval"
)

// What the browser kinds share: reading a body that is a shorthand string
// or a mapping, and, when they run, the page with the step's selector
// rendered.

// body is the body of a browser step as its compile function reads it.
type body struct {
	c       *Compiler
	st      *duet.Step
	n       *Node
	b       *duet.BrowserStep
	short   string // the shorthand, when isShort
	isShort bool
	isMap   bool
}

// browserBody starts reading the body n of the browser step st: a scalar
// (the shorthand) or a mapping, or nothing at all when null allows it.
func browserBody(c *Compiler, st *duet.Step, n *Node, null bool) (*body, bool) {
	bd := &body{c: c, st: st, n: n, b: &duet.BrowserStep{}}
	st.Browser = bd.b
	bd.short, bd.isShort = n.Str()
	bd.isMap = n.Type == MapNode
	if !bd.isShort && !bd.isMap && !(null && n.Type == NullNode) {
		c.Errf(n, "%s must be a string or a mapping", st.Kind)
		return nil, false
	}
	return bd, true
}

// browserStep is the Compile of a browser step whose body is a text or a
// mapping (or nothing, with null): f goes on with the body bd once it is
// one of those.
func browserStep(null bool, f func(c *Compiler, st *duet.Step, n *Node, bd *body)) func(*Compiler, *duet.Step, *Node) {
	return func(c *Compiler, st *duet.Step, n *Node) {
		if bd, ok := browserBody(c, st, n, null); ok {
			f(c, st, n, bd)
		}
	}
}

// pageStep is browserStep for a step that acts on the page: an open step
// must come before it.
func pageStep(null bool, f func(c *Compiler, st *duet.Step, n *Node, bd *body)) func(*Compiler, *duet.Step, *Node) {
	return browserStep(null, func(c *Compiler, st *duet.Step, n *Node, bd *body) {
		bd.needPage()
		f(c, st, n, bd)
	})
}

// field reads a template key of the mapping form ("" in the shorthand).
func (bd *body) field(key string, required bool) string {
	if !bd.isMap {
		return ""
	}
	s := bd.c.String(bd.n, key, required)
	if s != "" {
		bd.c.Template(bd.n.Get(key), key, s)
	}
	return s
}

// text reads the step's one required key: the shorthand, or key of the
// mapping. A template (template) is checked against the scope, under the
// kind's name in the shorthand.
func (bd *body) text(key string, template bool) string {
	switch {
	case !bd.isMap:
		if template {
			bd.c.Template(bd.n, string(bd.st.Kind), bd.short)
		}
		return bd.short
	case template:
		return bd.field(key, true)
	}
	return bd.c.String(bd.n, key, true)
}

// needPage records an error when no open step came before.
func (bd *body) needPage() {
	if !bd.c.Scope.PageOpen {
		bd.c.Errf(bd.n, "%s needs a page: add an open step before it", bd.st.Kind)
	}
}

// checkRegexp records an error when re (not a template) does not compile.
func (bd *body) checkRegexp(key, re string) {
	if re != "" && !eval.IsTemplate(re) {
		if _, err := regexp.Compile(re); err != nil {
			bd.c.Errf(bd.n.Get(key), "%s: invalid regular expression: %v", key, err)
		}
	}
}

// bool reads an optional boolean key; nil when absent.
func (bd *body) bool(key string) *bool {
	v := bd.n.Get(key)
	if v == nil {
		return nil
	}
	vb, ok := v.Value.(bool)
	if !ok {
		bd.c.Errf(v, "%s must be true or false", key)
	}
	return &vb
}

// page returns the case's page, the step's browser parameters and its
// selector rendered.
func page(ctx context.Context, env Env, st *duet.Step) (Page, *duet.BrowserStep, string, error) {
	b := st.Browser
	if b == nil {
		return nil, nil, "", noBody(st)
	}
	p, err := env.Page(ctx)
	if err != nil {
		return nil, nil, "", err
	}
	sel, err := renderOpt(env, b.Selector)
	if err != nil {
		return nil, nil, "", err
	}
	return p, b, sel, nil
}

// pageAs returns the case's page as a T, the interface of the browser
// driver a kind needs beyond Page (Dialogs, Tabs, Emulator, ...). A driver
// without it fails the step: "KIND: this browser cannot ..." as cannot
// says.
func pageAs[T any](ctx context.Context, env Env, st *duet.Step, cannot string) (T, error) {
	var zero T
	if st.Browser == nil && st.Evidence == nil {
		return zero, noBody(st)
	}
	p, err := env.Page(ctx)
	if err != nil {
		return zero, err
	}
	t, ok := p.(T)
	if !ok {
		return zero, duet.Errorf(duet.CodeBrowserError, "%s: this browser %s", st.Kind, cannot)
	}
	return t, nil
}

// assertWait is how long an assertion step (assertText, assertURL,
// assertVisible) retries until it holds, when the step has no timeout of its
// own: pages render late, so assertions wait for them as a person would.
const assertWait = 5 * time.Second

// assertContext bounds an assertion: by the step's own timeout when it has
// one (ctx already carries it), else by assertWait within ctx.
func assertContext(ctx context.Context, st *duet.Step) (context.Context, context.CancelFunc) {
	if st.TimeoutMs > 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, assertWait)
}

// retry calls check until it returns nil or an error other than
// ASSERTION_FAILED, or until the assertion's time is up; it then returns the
// last assertion failure. It pauses between the calls (50 ms, doubling up to
// 250 ms): for what a page cannot be asked to wait on (retryPage).
func retry(ctx context.Context, st *duet.Step, check func(context.Context) error) error {
	delay := 25 * time.Millisecond
	return retryPage(ctx, st, func(ctx context.Context, wait time.Duration) error {
		if wait > 0 {
			delay = min(2*delay, 250*time.Millisecond)
			t := time.NewTimer(delay)
			select {
			case <-ctx.Done():
				t.Stop()
				return ctx.Err() // retryPage returns the last failure
			case <-t.C:
			}
		}
		return check(ctx)
	})
}

// pastDeadline reports whether ctx has a deadline that has passed.
func pastDeadline(ctx context.Context) bool {
	dl, ok := ctx.Deadline()
	return ok && !time.Now().Before(dl)
}

// Keys of the kinds that compare a text (assertText, assertURL).
var compareKeys = []Key{
	{Name: "equals", Type: Template, Doc: "the whole text, spaces at either end ignored"},
	{Name: "contains", Type: Template, Doc: "a part of the text"},
	{Name: "matches", Type: Template, Doc: "a regular expression (RE2) the text matches"},
}

// compileCompare reads equals, contains or matches (exactly one).
func (bd *body) compileCompare() {
	b, n := bd.b, bd.n
	b.Equals, b.Contains, b.Matches = bd.field("equals", false), bd.field("contains", false), bd.field("matches", false)
	bd.checkRegexp("matches", b.Matches)
	set := 0
	for _, s := range []string{"equals", "contains", "matches"} {
		if n.Get(s) != nil {
			set++
		}
	}
	if set != 1 {
		bd.c.Errf(n, "%s needs exactly one of equals, contains, matches", bd.st.Kind)
	}
}

// assertCompare retries reading what (the text of an element, the page
// URL) with read until it compares as b says; the last value read is the
// step's output.
func assertCompare(ctx context.Context, env Env, st *duet.Step, what string, read func(context.Context) (string, error)) (string, any, error) {
	var got any // the last text or URL seen, kept as the step's output
	err := retry(ctx, st, func(ctx context.Context) error {
		v, err := read(ctx)
		if err != nil {
			return err
		}
		got = v
		return compare(env, what, v, st.Browser)
	})
	return "", got, err
}

func compare(env Env, what, got string, b *duet.BrowserStep) error {
	switch {
	case b.Equals != "":
		want, err := render(env, b.Equals)
		if err != nil {
			return err
		}
		if strings.TrimSpace(got) != strings.TrimSpace(want) {
			return duet.Errorf(duet.CodeAssertionFailed, "%s is %q, want %q", what, got, want)
		}
	case b.Contains != "":
		want, err := render(env, b.Contains)
		if err != nil {
			return err
		}
		if !strings.Contains(got, want) {
			return duet.Errorf(duet.CodeAssertionFailed, "%s is %q, want it to contain %q", what, got, want)
		}
	case b.Matches != "":
		pat, err := render(env, b.Matches)
		if err != nil {
			return err
		}
		re, err := regexp.Compile(pat)
		if err != nil {
			return duet.Errorf(duet.CodeInvalidArgument, "invalid regular expression %q: %v", pat, err)
		}
		if !re.MatchString(got) {
			return duet.Errorf(duet.CodeAssertionFailed, "%s is %q, want it to match %s", what, got, pat)
		}
	}
	return nil
}
