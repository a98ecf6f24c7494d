package browser

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/duet-test/duet"
)

// Locator finds elements of a page: see duet.Locator. The methods that take
// one (Act, Query) resolve it in the page each time they look: a role and an
// accessible name through the browser's accessibility tree, everything else
// with a script in the page. A locator that matches several elements where
// one is needed fails with CodeLocatorAmbiguous, listing them; a bare CSS
// selector passed to the older methods (Click, Text, ...) takes the first
// match instead, as those methods always did.
type Locator = duet.Locator

// Target is what an element operation acts on: a locator, and whether it
// takes the first of its matches (the older methods' CSS selectors) rather
// than requiring exactly one.
type Target struct {
	Locator *Locator
	First   bool
}

// CSS returns the target of the older methods: the first element a CSS
// selector matches.
func CSS(selector string) Target { return Target{Locator: &Locator{CSS: selector}, First: true} }

// String describes the target in messages: a CSS selector quoted as
// before, any other locator in its YAML words.
func (t Target) String() string {
	if t.Locator == nil {
		return "(no locator)"
	}
	return t.Locator.String()
}

// jsLoc is a locator as the page's scripts read it (jsLocate): Role is the
// index of the role's candidate set.
type jsLoc struct {
	CSS         *string `json:"css,omitempty"`
	XPath       *string `json:"xpath,omitempty"`
	Role        *int    `json:"role,omitempty"`
	Name        *string `json:"name,omitempty"`
	Text        *string `json:"text,omitempty"`
	Label       *string `json:"label,omitempty"`
	Placeholder *string `json:"placeholder,omitempty"`
	Alt         *string `json:"alt,omitempty"`
	Title       *string `json:"title,omitempty"`
	TestID      *string `json:"testId,omitempty"`
	TestIDAttr  string  `json:"testIdAttr,omitempty"`
	Exact       bool    `json:"exact,omitempty"`
	Within      *jsLoc  `json:"within,omitempty"`
	Has         *jsLoc  `json:"has,omitempty"`
	HasText     *string `json:"hasText,omitempty"`
	Nth         *int    `json:"nth,omitempty"`
}

// jsQuery is what the scripts' $one and $all take: the locator, the names
// of each role set (the elements follow in the script's arguments), and
// whether one match is required.
type jsQuery struct {
	Loc    *jsLoc     `json:"loc"`
	Roles  [][]string `json:"roles,omitempty"`
	Strict bool       `json:"strict,omitempty"`
	First  bool       `json:"first,omitempty"`
}

// roleQuery is a role base of a locator, resolved through the
// accessibility tree before each look.
type roleQuery struct {
	role, name string
	exact      bool
}

func opt(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// compileTarget turns t into the scripts' query and the role lookups it
// needs, checking what the page cannot: an empty locator, a role that is
// not one, a regular expression that does not compile.
func compileTarget(t Target) (*jsQuery, []roleQuery, error) {
	if t.Locator == nil {
		return nil, nil, duet.Errorf(duet.CodeInvalidArgument, "no locator")
	}
	var roles []roleQuery
	var conv func(l *Locator, depth int) (*jsLoc, error)
	conv = func(l *Locator, depth int) (*jsLoc, error) {
		if depth > maxLocatorDepth {
			return nil, duet.Errorf(duet.CodeInvalidArgument, "the locator nests more than %d levels", maxLocatorDepth)
		}
		if err := l.Check(); err != nil {
			return nil, err
		}
		j := &jsLoc{
			CSS: opt(l.CSS), XPath: opt(l.XPath), Name: opt(l.Name), Text: opt(l.Text), Label: opt(l.Label),
			Placeholder: opt(l.Placeholder), Alt: opt(l.Alt), Title: opt(l.Title), TestID: opt(l.TestID),
			TestIDAttr: l.TestIDAttr, Exact: l.Exact, HasText: opt(l.HasText), Nth: l.Nth,
		}
		if l.Role != "" {
			i := len(roles)
			j.Role = &i
			roles = append(roles, roleQuery{role: l.Role, name: l.Name, exact: l.Exact})
		}
		var err error
		if l.Within != nil {
			if j.Within, err = conv(l.Within, depth+1); err != nil {
				return nil, err
			}
		}
		if l.Has != nil {
			if j.Has, err = conv(l.Has, depth+1); err != nil {
				return nil, err
			}
		}
		return j, nil
	}
	j, err := conv(t.Locator, 0)
	if err != nil {
		return nil, nil, err
	}
	return &jsQuery{Loc: j, Strict: !t.First, First: t.First}, roles, nil
}

// maxLocatorDepth bounds the nesting of within and has.
const maxLocatorDepth = 8

// chromeRoles are the ARIA roles Chromium's accessibility tree names
// otherwise.
var chromeRoles = map[string]string{"img": "image"}

// ariaRoles maps Chromium's names back.
var ariaRoles = map[string]string{"image": "img"}

// normSpace folds runs of white space and trims, as the page's $norm.
func normSpace(s string) string { return strings.Join(strings.Fields(s), " ") }

// objectGroup holds the handles a look makes, released after it.
const objectGroup = "duet-locator"

// world is where the scripts of a call run: the page of the tab, or a
// frame of it.
type world struct {
	tctx   context.Context            // the chromedp context of the target (the tab, or an out-of-process frame)
	ctxs   *contexts                  // the target's frames' contexts
	id     runtime.ExecutionContextID // 0: the target's page world
	frame  bool                       // inside an iframe: points need the frames' offsets
	levels []frameLevel               // the iframes, outermost first
}

// bound returns a context of the world's target that ends with ctx.
func (w *world) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if w.tctx == nil {
		return ctx, func() {}
	}
	return bind(w.tctx, ctx)
}

// look is one resolution of a target in a world, ready for a script: the
// query, and the handles of the role candidates.
type look struct {
	q    *jsQuery
	doc  runtime.RemoteObjectID // the document, when handles are passed
	objs []runtime.RemoteObjectID
}

// call runs body, a function body over q (the look's query) and els (its
// handles) after the locating script, in w's document; its result, a
// handle in the object group group, is what body returns.
func (lk *look) call(ctx context.Context, t *chromedp.Target, w *world, body, group string) (*runtime.RemoteObject, error) {
	qj, err := json.Marshal(lk.q)
	if err != nil {
		return nil, err
	}
	args := []*runtime.CallArgument{{Value: qj}}
	for _, o := range lk.objs {
		args = append(args, &runtime.CallArgument{ObjectID: o})
	}
	fn := "function (q, ...els) {\n" + jsPrelude + jsLocate + "\n" + body + "\n}"
	p := runtime.CallFunctionOnParams{FunctionDeclaration: fn, Arguments: args, ObjectID: lk.doc, ObjectGroup: group}
	if lk.doc == "" {
		doc, err := cdp.Call(ctx, t, runtime.Evaluate, runtime.EvaluateParams{Expression: "document", ObjectGroup: group, ContextID: w.id})
		if err != nil {
			return nil, err
		}
		if doc.Result == nil || doc.Result.ObjectID == "" {
			return nil, errors.New("the frame has no document")
		}
		p.ObjectID = doc.Result.ObjectID
	}
	r, err := cdp.Call(ctx, t, runtime.CallFunctionOn, p)
	if err != nil {
		return nil, err
	}
	if r.ExceptionDetails != nil {
		return nil, &chromedp.ExceptionError{ExceptionDetails: r.ExceptionDetails}
	}
	return r.Result, nil
}

// prepare resolves the role bases of a target through the accessibility
// tree of the world's document. With no role, it does nothing (the script
// runs with Runtime.evaluate, as the older methods did).
func (s *Session) prepare(ctx context.Context, w *world, q *jsQuery, roles []roleQuery) (*look, error) {
	lk := &look{q: q}
	if len(roles) == 0 {
		return lk, nil
	}
	q.Roles = make([][]string, len(roles))
	ctx, cancel := w.bound(ctx)
	defer cancel()
	_, err := chromedp.Run(ctx, func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		doc, err := cdp.Call(ctx, t, runtime.Evaluate, runtime.EvaluateParams{Expression: "document", ObjectGroup: objectGroup, ContextID: w.id})
		if err != nil {
			return chromedp.Void{}, err
		}
		if doc.ExceptionDetails != nil || doc.Result == nil || doc.Result.ObjectID == "" {
			return chromedp.Void{}, errors.New("the page has no document")
		}
		lk.doc = doc.Result.ObjectID
		for i, rq := range roles {
			p := accessibility.QueryAXTreeParams{ObjectID: lk.doc, Role: rq.role}
			if r, ok := chromeRoles[rq.role]; ok {
				p.Role = r
			}
			_, _, isRe := duet.Pattern(rq.name)
			if rq.exact && !isRe && rq.name != "" {
				p.AccessibleName = normSpace(rq.name)
			}
			res, err := cdp.Call(ctx, t, accessibility.QueryAXTree, p)
			if err != nil {
				return chromedp.Void{}, err
			}
			names := []string{}
			for _, n := range res.Nodes {
				if n.Ignored || n.BackendDOMNodeID == 0 {
					continue
				}
				name := axString(n.Name)
				if rq.name != "" && !isRe && !rq.exact && !strings.Contains(strings.ToLower(normSpace(name)), strings.ToLower(normSpace(rq.name))) {
					continue
				}
				obj, err := cdp.Call(ctx, t, dom.ResolveNode, dom.ResolveNodeParams{BackendNodeID: n.BackendDOMNodeID, ObjectGroup: objectGroup, ExecutionContextID: w.id})
				if err != nil || obj.Object == nil || obj.Object.ObjectID == "" {
					continue // gone since the query
				}
				names = append(names, name)
				lk.objs = append(lk.objs, obj.Object.ObjectID)
				if len(lk.objs) > maxRoleCandidates {
					return chromedp.Void{}, duet.Errorf(duet.CodeInvalidArgument, "role=%s matches more than %d elements: add a name, or within:", rq.role, maxRoleCandidates)
				}
			}
			q.Roles[i] = names
		}
		return chromedp.Void{}, nil
	})
	if err != nil {
		s.release(ctx, w)
		return nil, err
	}
	return lk, nil
}

// maxRoleCandidates bounds the elements of the role bases of one look.
const maxRoleCandidates = 2000

// release frees the handles of the looks of a call.
func (s *Session) release(ctx context.Context, w *world) {
	ctx, cancel := w.bound(context.WithoutCancel(ctx))
	defer cancel()
	rctx, rcancel := context.WithTimeout(ctx, releaseTimeout)
	defer rcancel()
	_, _ = chromedp.Run(rctx, func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := cdp.Call(ctx, t, runtime.ReleaseObjectGroup, runtime.ReleaseObjectGroupParams{ObjectGroup: objectGroup})
		return chromedp.Void{}, err
	})
}

func axString(v *accessibility.Value) string {
	if v == nil || len(v.Value) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(v.Value, &s) != nil {
		return ""
	}
	return s
}

// script runs the element script fn in the world with the look's query and
// opts as its first two arguments (and the role candidates after them),
// awaiting its promise, and decodes its result into out.
//
// The script's ~18 KB (its helpers: the locator's resolution, the
// actionability checks) go to each execution context once: the first look
// in a context makes the script a function object there, held by a handle
// (scriptIn), and every look after it calls that function with the query
// and the options as arguments, in a call of a few bytes. A script sent
// with each look cost Chromium a compilation when its text differed (the
// options carry the time left, so every look's did: 2–5 ms of CPU) and
// about 0.8 ms to take in and look up when it did not
// (TestElementScriptsGoToAContextOnce; BenchmarkLook; docs/performance.md,
// part 13). A world whose context is not known, or whose context has just
// gone with a navigation, is asked the old way: the whole script, on the
// document's handle when the look has role candidates, else with
// Runtime.evaluate, which runs in the current document.
func (s *Session) script(ctx context.Context, w *world, lk *look, fn string, opts any, out any) error {
	qj, err := json.Marshal(lk.q)
	if err != nil {
		return err
	}
	oj, err := json.Marshal(opts)
	if err != nil {
		return err
	}
	args := []*runtime.CallArgument{{Value: qj}, {Value: oj}}
	for _, o := range lk.objs {
		args = append(args, &runtime.CallArgument{ObjectID: o})
	}
	ctx, cancel := w.bound(ctx)
	defer cancel()
	_, err = chromedp.Run(ctx, func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		res, exc, err := s.scriptIn(ctx, t, w, fn, args)
		switch {
		case err != nil && ctx.Err() != nil:
			return chromedp.Void{}, err
		case err != nil || (res == nil && exc == nil):
			// No handle: the whole script, as before.
			if len(lk.objs) > 0 {
				r, err := cdp.Call(ctx, t, runtime.CallFunctionOn, runtime.CallFunctionOnParams{
					FunctionDeclaration: scriptDecl(fn), ObjectID: lk.doc, Arguments: args, ReturnByValue: new(true), AwaitPromise: new(true),
				})
				if err != nil {
					return chromedp.Void{}, err
				}
				res, exc = r.Result, r.ExceptionDetails
				break
			}
			r, err := cdp.Call(ctx, t, runtime.Evaluate, runtime.EvaluateParams{
				Expression: scriptCall(fn, qj, oj), ContextID: w.id, ReturnByValue: new(true), AwaitPromise: new(true),
			})
			if err != nil {
				return chromedp.Void{}, err
			}
			res, exc = r.Result, r.ExceptionDetails
		}
		if exc != nil {
			return chromedp.Void{}, &chromedp.ExceptionError{ExceptionDetails: exc}
		}
		if res == nil || len(res.Value) == 0 {
			return chromedp.Void{}, errors.New("the script returned nothing")
		}
		return chromedp.Void{}, json.Unmarshal(res.Value, out)
	})
	return err
}

// scriptGroup holds the handles of the element scripts made in a context;
// they go with it.
const scriptGroup = "duet-scripts"

// callScript calls the function its handle is (this) with the arguments of
// the call.
const callScript = "function (...args) { return this(...args); }"

// scriptIn calls element script fn with args through its handle in w's
// execution context, making it there first when the context has none.
// With no context known (nothing returned, no error) or an error (a handle
// or a context gone), the caller sends the whole script instead.
func (s *Session) scriptIn(ctx context.Context, t *chromedp.Target, w *world, fn string, args []*runtime.CallArgument) (*runtime.RemoteObject, *runtime.ExceptionDetails, error) {
	if w.ctxs == nil {
		return nil, nil, nil
	}
	id, ok := w.id, w.id != 0
	if !ok {
		// The target's page world: the default context of its frame, as
		// the last executionContextCreated of the frame said.
		if id, ok = w.ctxs.get(cdp.FrameID(t.TargetID)); !ok {
			return nil, nil, nil
		}
	}
	h := w.ctxs.script(id, fn)
	if h == "" {
		r, err := cdp.Call(ctx, t, runtime.Evaluate, runtime.EvaluateParams{Expression: "(" + scriptDecl(fn) + ")", ContextID: id, ObjectGroup: scriptGroup})
		if err != nil {
			return nil, nil, err
		}
		if r.ExceptionDetails != nil {
			return nil, r.ExceptionDetails, nil
		}
		if r.Result == nil || r.Result.ObjectID == "" {
			return nil, nil, errors.New("the script made no function")
		}
		h = r.Result.ObjectID
		w.ctxs.setScript(id, fn, h)
	}
	r, err := cdp.Call(ctx, t, runtime.CallFunctionOn, runtime.CallFunctionOnParams{
		FunctionDeclaration: callScript, ObjectID: h, Arguments: args, ReturnByValue: new(true), AwaitPromise: new(true),
	})
	if err != nil {
		w.ctxs.setScript(id, fn, "") // gone, or not of this context: made anew next time
		return nil, nil, err
	}
	return r.Result, r.ExceptionDetails, nil
}

// scriptDecls holds the declaration of each element script, made once.
var scriptDecls sync.Map // fn → string

// scriptDecl returns the function that runs element script fn after the
// helpers, with the query, the options and the role candidates as its
// arguments: one text for every call of fn.
func scriptDecl(fn string) string {
	if d, ok := scriptDecls.Load(fn); ok {
		return d.(string)
	}
	d := "function (q, o, ...els) {\n" + jsPrelude + jsLocate + jsActions + "\nreturn (" + fn + ")(q, o, ...els);\n}"
	scriptDecls.Store(fn, d)
	return d
}

// scriptCall returns an expression that runs element script fn with the
// query and options qj and oj (JSON), for Runtime.evaluate.
func scriptCall(fn string, qj, oj []byte) string {
	var b strings.Builder
	b.WriteString("(() => {\n")
	b.WriteString(jsPrelude)
	b.WriteString(jsLocate)
	b.WriteString(jsActions)
	b.WriteString("\nreturn (")
	b.WriteString(fn)
	b.WriteString(")(")
	b.Write(qj)
	b.WriteString(", ")
	b.Write(oj)
	b.WriteString(");\n})()")
	return b.String()
}

// match is one element a locator matched, as an ambiguity lists it.
type match struct {
	Tag  string `json:"tag"`
	Role string `json:"role"`
	Name string `json:"name"`
	Text string `json:"text"`
}

// ambiguous is the error of a locator that matched n elements where one is
// needed, listing up to ten of them.
func ambiguous(op string, t Target, n int, matches []match) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s matches %d elements; a step needs exactly one (add a name, within:, hasText: or nth:):", op, t, n)
	for i, m := range matches {
		fmt.Fprintf(&b, "\n  %d. <%s>", i+1, m.Tag)
		if m.Role != "" {
			fmt.Fprintf(&b, " role=%s", m.Role)
		}
		if m.Name != "" {
			fmt.Fprintf(&b, " name=%q", m.Name)
		}
		if m.Text != "" && m.Text != m.Name {
			fmt.Fprintf(&b, " text=%q", m.Text)
		}
	}
	if n > len(matches) {
		fmt.Fprintf(&b, "\n  ... and %d more", n-len(matches))
	}
	return opError(duet.CodeLocatorAmbiguous, op, nil, "%s", b.String())
}

// describeMatches fills in the roles and accessible names of the elements
// a locator matched, from the accessibility tree, for the message of an
// ambiguity. It leaves the matches as they are when the browser cannot say.
func (s *Session) describeMatches(ctx context.Context, w *world, lk *look, matches []match) {
	ctx, cancel := w.bound(ctx)
	defer cancel()
	_, _ = chromedp.Run(ctx, func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		arr, err := lk.call(ctx, t, w, "return $all(q, els).slice(0, 10);", objectGroup)
		if err != nil || arr == nil || arr.ObjectID == "" {
			return chromedp.Void{}, err
		}
		props, err := cdp.Call(ctx, t, runtime.GetProperties, runtime.GetPropertiesParams{ObjectID: arr.ObjectID, OwnProperties: new(true)})
		if err != nil {
			return chromedp.Void{}, err
		}
		for _, p := range props.Result {
			var i int
			if _, err := fmt.Sscanf(p.Name, "%d", &i); err != nil || i < 0 || i >= len(matches) || p.Value == nil || p.Value.ObjectID == "" {
				continue
			}
			ax, err := cdp.Call(ctx, t, accessibility.GetPartialAXTree, accessibility.GetPartialAXTreeParams{ObjectID: p.Value.ObjectID, FetchRelatives: new(false)})
			if err != nil || len(ax.Nodes) == 0 {
				continue
			}
			n := ax.Nodes[0]
			if role := axString(n.Role); role != "" && role != "generic" && role != "none" {
				if r, ok := ariaRoles[role]; ok {
					role = r
				}
				matches[i].Role = role
			}
			if name := axString(n.Name); name != "" {
				matches[i].Name = name
			}
		}
		return chromedp.Void{}, nil
	})
	s.release(ctx, w)
}
