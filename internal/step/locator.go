package step

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/google/jsonschema-go/jsonschema"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/eval"
)

// Locators: how a step names an element. Every kind that acts on (or
// reads) an element takes the locator keys in its mapping; its shorthand
// is a CSS selector. A step written with `selector` alone keeps its CSS
// selector in duet.BrowserStep.Selector and acts on the first match, as
// before locators existed; any other locator is strict: it must match
// exactly one element where the step needs one.

// Locator is the type of a nested locator (within, has, to, frame): a CSS
// selector, or a mapping of the locator keys.
var Locator = Type{Name: "locator", schema: ref("locator")}

// locatorKeys are the keys of a locator, as an element step's mapping has
// them (selector first, as before locators).
var locatorKeys = locatorKeyList(
	Key{Name: "selector", Type: Template, Doc: "a CSS selector; alone, the step takes the first element it matches"},
	Key{Name: "role", Type: ariaRole, Doc: "an ARIA role (button, link, heading, textbox, checkbox, ...), found in the browser's accessibility tree"},
	Key{Name: "name", Type: Template, Doc: "with role: the accessible name (a substring ignoring case, or /regex/)"},
	Key{Name: "text", Type: Template, Doc: "the element whose text matches (the innermost one)"},
	Key{Name: "label", Type: Template, Doc: "the form control whose label (or aria-label) matches"},
	Key{Name: "placeholder", Type: Template, Doc: "the input whose placeholder matches"},
	Key{Name: "alt", Type: Template, Doc: "the element (an image) whose alt text matches"},
	Key{Name: "title", Type: Template, Doc: "the element whose title attribute matches"},
	Key{Name: "testId", Type: Template, Doc: "the element whose test id attribute (the task's testIdAttribute, default data-testid) is this"},
	Key{Name: "xpath", Type: Template, Doc: "an XPath expression"},
	Key{Name: "exact", Type: Bool, Doc: "match name, text, label, placeholder, alt and title as the whole text, case included"},
	Key{Name: "within", Type: Locator, Doc: "look only inside the elements this locator matches"},
	Key{Name: "has", Type: Locator, Doc: "keep the elements that contain an element this locator matches"},
	Key{Name: "hasText", Type: Template, Doc: "keep the elements whose text matches"},
	Key{Name: "nth", Type: Int, Doc: "pick one of the matches: 0 the first, -1 the last"},
)

// locatorKeyList marks keys as locator keys.
func locatorKeyList(keys ...Key) []Key {
	for i := range keys {
		keys[i].locator = true
	}
	return keys
}

// ariaRole is the type of role: an ARIA role.
var ariaRole = TypeOf("ARIA role", func(bool) *jsonschema.Schema {
	s := &jsonschema.Schema{Type: "string"}
	for _, r := range duet.Roles {
		s.Enum = append(s.Enum, r)
	}
	return s
})

// locatorBases are the keys of which a locator has one.
var locatorBases = []string{"selector", "role", "text", "label", "placeholder", "alt", "title", "testId", "xpath"}

// withLocator returns the kind's keys after the locator keys.
func withLocator(keys ...Key) []Key {
	return append(locatorKeys[:len(locatorKeys):len(locatorKeys)], keys...)
}

// withoutKey returns keys without the one named name.
func withoutKey(keys []Key, name string) []Key {
	var out []Key
	for _, k := range keys {
		if k.Name != name {
			out = append(out, k)
		}
	}
	return out
}

// locatorSchema is the JSON Schema of a nested locator.
func locatorSchema() *jsonschema.Schema {
	m := Mapping(locatorKeys)
	for _, b := range locatorBases {
		m.AnyOf = append(m.AnyOf, &jsonschema.Schema{Required: []string{b}})
	}
	m.Description = "a locator: one of " + fmt.Sprint(locatorBases) + ", with filters"
	return &jsonschema.Schema{
		Description: "a locator: a CSS selector, or a mapping of locator keys (docs/suite-format.md, Locators)",
		AnyOf:       []*jsonschema.Schema{{Type: "string", Description: "a CSS selector"}, m},
	}
}

// target reads the element of an element step from its body: the
// shorthand (a CSS selector), or the locator keys of its mapping. A CSS
// selector alone goes to Selector; any other locator to Locator.
func (bd *body) target(required bool) {
	c, n, b := bd.c, bd.n, bd.b
	if !bd.isMap {
		b.Selector = bd.short
		c.Template(n, string(bd.st.Kind), bd.short)
		c.checkSyntax(n, "selector", bd.short)
		return
	}
	only := n.Get("selector") != nil
	for _, k := range locatorKeys[1:] {
		if n.Get(k.Name) != nil {
			only = false
		}
	}
	if only {
		b.Selector = bd.field("selector", true)
		if b.Selector == "" {
			c.Errf(n.Get("selector"), "selector is empty")
		}
		c.checkSyntax(n.Get("selector"), "selector", b.Selector)
		return
	}
	b.Locator = c.locatorMap(n, 0, required, string(bd.st.Kind))
}

// compileLocator reads a nested locator: a CSS selector, or a mapping of
// locator keys (and no other).
func (c *Compiler) compileLocator(n *Node, depth int, what string) *duet.Locator {
	if s, ok := n.Str(); ok {
		if s == "" {
			c.Errf(n, "%s: the CSS selector is empty", what)
			return nil
		}
		c.Template(n, what, s)
		c.checkSyntax(n, "selector", s)
		return &duet.Locator{CSS: s}
	}
	if !c.mapping(n, fmt.Sprintf("%s must be a CSS selector or a mapping of locator keys (role, text, label, ...)", what), (&Form{Keys: locatorKeys}).KeyNames()...) {
		return nil
	}
	return c.locatorMap(n, depth, true, what)
}

// maxLocatorDepth bounds the nesting of within and has.
const maxLocatorDepth = 8

// locatorMap reads the locator keys of the mapping n (its other keys are
// the caller's to check). required: the mapping must name an element.
func (c *Compiler) locatorMap(n *Node, depth int, required bool, what string, ignore ...string) *duet.Locator {
	if depth > maxLocatorDepth {
		c.Errf(n, "%s: locators nest more than %d levels", what, maxLocatorDepth)
		return nil
	}
	l := &duet.Locator{}
	text := func(key string) string {
		if slices.Contains(ignore, key) {
			return ""
		}
		s := c.String(n, key, false)
		if v := n.Get(key); v != nil && s != "" {
			c.Template(v, key, s)
			if err := duet.CheckPattern(s); err != nil && !eval.IsTemplate(s) {
				c.Errf(v, "%s: %s", key, duet.ErrorMessage(err))
			}
			c.checkSyntax(v, key, s)
		} else if vs, ok := v.Str(); ok && vs == "" {
			c.Errf(v, "%s is empty", key)
		}
		return s
	}
	l.CSS, l.XPath = text("selector"), text("xpath")
	l.Role, l.Name = c.String(n, "role", false), text("name")
	l.Text, l.Label, l.Placeholder = text("text"), text("label"), text("placeholder")
	l.Alt, l.Title, l.TestID, l.HasText = text("alt"), text("title"), text("testId"), text("hasText")
	if l.TestID != "" {
		l.TestIDAttr = c.TestIDAttribute
	}
	var bases []string
	for _, b := range locatorBases {
		if n.Get(b) != nil && !slices.Contains(ignore, b) {
			bases = append(bases, b)
		}
	}
	switch {
	case len(bases) > 1:
		c.Errf(n.Get(bases[1]), "a locator has one of %s; this one has %s and %s", joinKeys(locatorBases), bases[0], bases[1])
	case len(bases) == 0 && required && n.Get("within") == nil && n.Get("has") == nil && n.Get("hasText") == nil:
		c.Errf(n, "%s needs a locator: one of %s (or within, has, hasText)", what, joinKeys(locatorBases))
	}
	if rn := n.Get("role"); rn != nil && l.Role != "" && !duet.IsRole(l.Role) {
		c.Errf(rn, "%q is not an ARIA role such as button, link, heading, textbox, checkbox, listitem, row, dialog (docs/suite-format.md lists them)", l.Role)
	}
	if nn := n.Get("name"); nn != nil && n.Get("role") == nil {
		c.Errf(nn, "name goes with role (for a text, use text)")
	}
	if en := n.Get("exact"); en != nil {
		v, ok := en.Value.(bool)
		if !ok {
			c.Errf(en, "exact must be true or false")
		}
		l.Exact = v
	}
	if nn := n.Get("nth"); nn != nil {
		i, ok := nn.Int()
		switch {
		case !ok:
			c.Errf(nn, "nth must be a whole number: 0 the first, -1 the last")
		case i > duet.MaxNth || i < -duet.MaxNth:
			c.Errf(nn, "nth must be between -%d and %d", duet.MaxNth, duet.MaxNth)
		default:
			v := int(i)
			l.Nth = &v
		}
	}
	if wn := n.Get("within"); wn != nil {
		l.Within = c.compileLocator(wn, depth+1, "within")
	}
	if hn := n.Get("has"); hn != nil {
		l.Has = c.compileLocator(hn, depth+1, "has")
	}
	return l
}

func joinKeys(keys []string) string {
	out := ""
	for i, k := range keys {
		if i > 0 {
			out += ", "
		}
		out += k
	}
	return out
}

// Target is the element of an element step, rendered: a locator, and
// whether it takes the first match (a bare CSS selector) rather than
// requiring exactly one.
type Target struct {
	Locator *duet.Locator
	First   bool
}

// String names the target in messages: a bare CSS selector as written
// (as the messages always did), any other locator as Locator.String.
func (t Target) String() string {
	if t.First && t.Locator.CSS != "" {
		return t.Locator.CSS
	}
	return t.Locator.String()
}

// Action is what an element step does to its element (internal/browser's
// Session.Act has the same fields: see its Act* kinds).
type Action struct {
	Kind      string
	Button    string
	Modifiers []string
	Value     string
	Delay     time.Duration
	Files     []duet.UploadFile
	To        *duet.Locator
}

// Query is what a step reads of its element: text, value, attr, count,
// visible, enabled, editable, checked, focused or css (Name: the attribute
// or property); Wait makes the read wait first for the page to change.
type Query struct {
	Kind string
	Name string
	Wait time.Duration
}

// Answer is what a Query read.
type Answer struct {
	Str   string
	Has   bool
	Count int
}

// Elements is a Page that finds elements by locators, waits until they can
// take an action (attached, visible, stable, enabled, not covered,
// editable) and reads them. internal/browser's sessions are Elements, on
// every target (local, remote, phones). Errors: ELEMENT_NOT_FOUND,
// LOCATOR_AMBIGUOUS, STEP_TIMEOUT, INVALID_ARGUMENT, TOO_LARGE, CANCELLED,
// BROWSER_ERROR.
type Elements interface {
	Act(ctx context.Context, t Target, a Action) error
	Query(ctx context.Context, t Target, q Query) (Answer, error)
}

// elements returns the case's page as Elements, and the step's element
// rendered.
func elements(ctx context.Context, env Env, st *duet.Step) (Elements, Target, error) {
	p, b, sel, err := page(ctx, env, st)
	if err != nil {
		return nil, Target{}, err
	}
	el, ok := p.(Elements)
	if !ok {
		return nil, Target{}, duet.Errorf(duet.CodeBrowserError, "%s: this browser cannot find elements by locators (its driver lacks Elements)", st.Kind)
	}
	if b.Locator == nil {
		return el, Target{Locator: &duet.Locator{CSS: sel}, First: true}, nil
	}
	l, err := renderLocator(env, b.Locator)
	return el, Target{Locator: l}, err
}

// renderLocator renders the templates of a locator.
func renderLocator(env Env, l *duet.Locator) (*duet.Locator, error) {
	if l == nil {
		return nil, nil
	}
	out := *l
	for _, f := range []*string{&out.CSS, &out.XPath, &out.Name, &out.Text, &out.Label, &out.Placeholder, &out.Alt, &out.Title, &out.TestID, &out.HasText} {
		v, err := renderOpt(env, *f)
		if err != nil {
			return nil, err
		}
		*f = v
	}
	var err error
	if out.Within, err = renderLocator(env, l.Within); err != nil {
		return nil, err
	}
	if out.Has, err = renderLocator(env, l.Has); err != nil {
		return nil, err
	}
	return &out, nil
}

// LocatorYAML writes a locator as the suite format's keys, in the order
// the format lists them: what a recorded step or a frozen plan is written
// with. The texts are what the page showed: they are written as literals
// (Literal), never read as templates; role is not a template. within and
// has are written as mappings.
func LocatorYAML(l *duet.Locator) yaml.MapSlice {
	var m yaml.MapSlice
	add := func(k string, v any) { m = append(m, yaml.MapItem{Key: k, Value: v}) }
	text := func(k, v string) {
		if v != "" {
			add(k, Literal(v))
		}
	}
	text("selector", l.CSS)
	text("xpath", l.XPath)
	if l.Role != "" {
		add("role", l.Role)
	}
	text("name", l.Name)
	text("text", l.Text)
	text("label", l.Label)
	text("placeholder", l.Placeholder)
	text("alt", l.Alt)
	text("title", l.Title)
	text("testId", l.TestID)
	text("hasText", l.HasText)
	if l.Exact {
		add("exact", true)
	}
	if l.Nth != nil {
		add("nth", *l.Nth)
	}
	if l.Within != nil {
		add("within", LocatorYAML(l.Within))
	}
	if l.Has != nil {
		add("has", LocatorYAML(l.Has))
	}
	return m
}

// Literal returns the template that renders to s as it is: s with each
// "${" written "$${".
func Literal(s string) string { return strings.ReplaceAll(s, "${", "$${") }

// keyList is the type of modifiers: a list of key names.
var keyList = TypeOf("list of keys", func(optional bool) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "array", Items: &jsonschema.Schema{Enum: []any{"Shift", "Control", "Alt", "Meta"}}}
})

// uploadFiles is the type of an upload's files.
var uploadFiles = TypeOf("file or list of files", func(optional bool) *jsonschema.Schema {
	file := &jsonschema.Schema{AnyOf: []*jsonschema.Schema{
		{Type: "string", Description: "a path relative to the suite's folder"},
		{Type: "object", Required: []string{"name", "content"}, AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}},
			Properties: map[string]*jsonschema.Schema{"name": {Type: "string"}, "content": {Type: "string"}, "type": {Type: "string", Description: "a MIME type"}}},
	}}
	return &jsonschema.Schema{AnyOf: []*jsonschema.Schema{file, {Type: "array", MinItems: ptr(1), Items: file}}}
})

// errorsUnwrap returns the innermost error of a file system error, which
// does not repeat the path.
func errorsUnwrap(err error) error {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err
		}
		err = u
	}
}
