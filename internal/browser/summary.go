package browser

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/chromedp"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/pagejs"
)

// DefaultSummaryBytes is the size of a Summary when maxBytes is zero or less.
const DefaultSummaryBytes = 8 << 10

// summaryItems caps each list of a summary before the byte budget applies.
const summaryItems = 100

// Summary returns a compact text description of the page for an LLM agent:
// the title, the URL, the elements a person acts on by their role and
// accessible name as the browser's accessibility tree has them (each with
// the locator a step names it by, {role: button, name: "Pay"}), the
// headings, the form fields (type, label, name, value), the buttons, the
// links (text -> href) and an excerpt of the visible text. The elements of
// the lists also come with a short CSS selector that finds them (css=...),
// for what has no role and name. Only visible elements are
// listed, and password values are masked. The result is at most maxBytes
// long; zero or less means DefaultSummaryBytes. When space runs out, the text
// excerpt shrinks first, then the lists are cut with a "... N more" line.
//
// Errors: CodeCancelled, CodeStepTimeout when the page does not answer, and
// CodeBrowserError.
func (s *Session) Summary(ctx context.Context, maxBytes int) (string, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultSummaryBytes
	}
	c, err := s.begin(ctx, "summary", 0)
	if err != nil {
		return "", err
	}
	defer s.end(c)
	var d summaryData
	err = poll(c.c, func(ctx context.Context) (bool, error) {
		var err error
		d, err = evalJS[summaryData](ctx, jsSummary, summaryItems, maxBytes)
		return err == nil, err
	})
	if err != nil {
		return "", s.fail(c, err, func() *duet.Error {
			return opError(duet.CodeStepTimeout, c.op, nil, "summary: the page did not answer within %s", c.elapsed())
		})
	}
	if roles, err := chromedp.Run(c.c, func(ctx context.Context, t *chromedp.Target) ([]summaryRole, error) {
		res, err := cdp.Call(ctx, t, accessibility.GetFullAXTree, accessibility.GetFullAXTreeParams{})
		if err != nil {
			return nil, err
		}
		return axRoles(res.Nodes), nil
	}); err == nil {
		d.Roles = roles
	} else if e := ctxCancelled(c.ctx, c.op, err); e != nil {
		return "", e
	} else if timedOut(c.ctx, c.c) {
		// A summary without its roles is another page to whoever compares
		// them: the time ran out, and that is the answer.
		return "", s.fail(c, err, func() *duet.Error {
			return opError(duet.CodeStepTimeout, c.op, nil, "summary: the accessibility tree did not come within %s", c.elapsed())
		})
	}
	return formatSummary(d, maxBytes), nil
}

// summaryRole is an element of the accessibility tree that a step acts on
// or checks, by its role and accessible name.
type summaryRole struct {
	Role  string
	Name  string
	Count int    // elements with this role and name
	State string // disabled, checked, level=2, ...
}

// actionRoles are the roles the summary lists.
var actionRoles = map[string]bool{
	"button": true, "link": true, "textbox": true, "searchbox": true, "checkbox": true, "radio": true, "switch": true,
	"combobox": true, "listbox": true, "option": true, "spinbutton": true, "slider": true, "tab": true, "menuitem": true,
	"heading": true, "dialog": true, "alert": true, "status": true, "table": true, "list": true, "region": true,
	"navigation": true, "img": true, "image": true,
}

// axRoles lists the named elements of a page's accessibility tree in their
// order, one line per role and name (with how many there are).
func axRoles(nodes []*accessibility.Node) []summaryRole {
	var out []summaryRole
	seen := map[[2]string]int{}
	for _, n := range nodes {
		role, name := axString(n.Role), normSpace(axString(n.Name))
		if n.Ignored || !actionRoles[role] || name == "" {
			continue
		}
		if r, ok := ariaRoles[role]; ok {
			role = r
		}
		k := [2]string{role, name}
		if i, ok := seen[k]; ok {
			out[i].Count++
			continue
		}
		var states []string
		for _, p := range n.Properties {
			v := ""
			if p.Value != nil {
				v = strings.Trim(string(p.Value.Value), `"`)
			}
			switch {
			case p.Name == "disabled" && v == "true", p.Name == "required" && v == "true":
				states = append(states, string(p.Name))
			case p.Name == "checked" && (v == "true" || v == "mixed"):
				states = append(states, "checked")
			case p.Name == "level" && role == "heading":
				states = append(states, "level="+v)
			}
		}
		seen[k] = len(out)
		out = append(out, summaryRole{Role: role, Name: name, Count: 1, State: strings.Join(states, " ")})
	}
	return out
}

func (r summaryRole) line() string {
	name := r.Name
	if len(name) > 80 {
		name = truncate(name, 80)
	}
	s := fmt.Sprintf("  {role: %s, name: %q}", r.Role, name)
	if r.State != "" {
		s += " " + r.State
	}
	if r.Count > 1 {
		s += fmt.Sprintf("  x%d: add within: or nth:", r.Count)
	}
	return s
}

// summaryData is what jsSummary collects.
type summaryData struct {
	Roles    []summaryRole    `json:"-"` // from the accessibility tree
	Title    string           `json:"title"`
	URL      string           `json:"url"`
	Headings []summaryHeading `json:"headings"`
	Links    []summaryLink    `json:"links"`
	Fields   []summaryField   `json:"fields"`
	Buttons  []summaryButton  `json:"buttons"`
	Text     string           `json:"text"`
	Counts   map[string]int   `json:"counts"` // list lengths before the cap
}

type summaryHeading struct {
	Level int    `json:"level"`
	Text  string `json:"text"`
	Sel   string `json:"sel"`
}

type summaryLink struct {
	Text string `json:"text"`
	Href string `json:"href"`
	Sel  string `json:"sel"`
}

type summaryField struct {
	Type        string   `json:"type"`
	Label       string   `json:"label"`
	Name        string   `json:"name"`
	Placeholder string   `json:"placeholder"`
	Value       string   `json:"value"`
	Checked     bool     `json:"checked"`
	Required    bool     `json:"required"`
	Disabled    bool     `json:"disabled"`
	Options     []string `json:"options"`
	Sel         string   `json:"sel"`
}

type summaryButton struct {
	Text     string `json:"text"`
	Disabled bool   `json:"disabled"`
	Sel      string `json:"sel"`
}

func (h summaryHeading) line() string {
	return fmt.Sprintf("  h%d %q  css=%s", h.Level, h.Text, h.Sel)
}

func (l summaryLink) line() string {
	return fmt.Sprintf("  %q -> %s  css=%s", l.Text, l.Href, l.Sel)
}

func (f summaryField) line() string {
	var b strings.Builder
	b.WriteString("  ")
	b.WriteString(f.Type)
	if f.Label != "" {
		fmt.Fprintf(&b, " %q", f.Label)
	}
	if f.Name != "" {
		fmt.Fprintf(&b, " name=%s", f.Name)
	}
	if f.Placeholder != "" {
		fmt.Fprintf(&b, " placeholder=%q", f.Placeholder)
	}
	switch f.Type {
	case "checkbox", "radio":
		if f.Checked {
			b.WriteString(" checked")
		}
	default:
		fmt.Fprintf(&b, " value=%q", f.Value)
	}
	if len(f.Options) > 0 {
		fmt.Fprintf(&b, " options=[%s]", strings.Join(f.Options, ", "))
	}
	if f.Required {
		b.WriteString(" required")
	}
	if f.Disabled {
		b.WriteString(" disabled")
	}
	b.WriteString("  css=")
	b.WriteString(f.Sel)
	return b.String()
}

func (bt summaryButton) line() string {
	s := fmt.Sprintf("  %q", bt.Text)
	if bt.Disabled {
		s += " disabled"
	}
	return s + "  css=" + bt.Sel
}

// section is one list of a summary.
type section struct {
	title string
	total int
	lines []string
}

func lines[T interface{ line() string }](items []T) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.line()
	}
	return out
}

// formatSummary writes d in at most maxBytes bytes.
func formatSummary(d summaryData, maxBytes int) string {
	var b strings.Builder
	add := func(s string, limit int) bool {
		if b.Len()+len(s)+1 > limit {
			return false
		}
		b.WriteString(s)
		b.WriteByte('\n')
		return true
	}
	add(truncate("Title: "+d.Title, maxBytes-1), maxBytes)
	add(truncate("URL: "+d.URL, maxBytes-b.Len()-1), maxBytes)

	// Keep room for some of the text excerpt while the lists are written.
	text := strings.TrimSpace(d.Text)
	reserve := 0
	if text != "" {
		reserve = min(len(text)+len("Text:\n")+1, maxBytes/4)
	}
	limit := maxBytes - reserve
	total := func(name string, n int) int {
		if c, ok := d.Counts[name]; ok && c > n {
			return c
		}
		return n
	}
	sections := []section{
		{"By role and name (name elements by these first)", len(d.Roles), lines(d.Roles)},
		{"Headings", total("headings", len(d.Headings)), lines(d.Headings)},
		{"Fields", total("fields", len(d.Fields)), lines(d.Fields)},
		{"Buttons", total("buttons", len(d.Buttons)), lines(d.Buttons)},
		{"Links", total("links", len(d.Links)), lines(d.Links)},
	}
	for _, sec := range sections {
		if len(sec.lines) == 0 {
			continue
		}
		if !add(fmt.Sprintf("%s (%d):", sec.title, sec.total), limit) {
			break
		}
		for i, l := range sec.lines {
			if !add(l, limit) {
				add(fmt.Sprintf("  ... %d more", sec.total-i), limit)
				break
			}
			if i == len(sec.lines)-1 && sec.total > len(sec.lines) {
				add(fmt.Sprintf("  ... %d more", sec.total-len(sec.lines)), limit)
			}
		}
	}
	if text != "" && add("Text:", maxBytes-1) {
		b.WriteString(truncate(text, maxBytes-b.Len()))
	}
	return truncate(strings.TrimRight(b.String(), "\n"), maxBytes)
}

// truncate cuts s to at most n bytes at a rune boundary, ending with "..."
// when it cuts.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n <= 3 {
		return strings.Repeat(".", max(n, 0))
	}
	cut := n - 3
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// jsSummary collects the summary of the page. Its arguments are the cap of
// each list and the cap of the text excerpt.
const jsSummary = `function (maxItems, maxText) {` + pagejs.Selectors + `
	const norm = (s) => (s || '').replace(/\s+/g, ' ').trim();
	const cut = (s, n) => s.length > n ? s.slice(0, n - 3) + '...' : s;
	const selectorOf = (el) => {
		const tag = el.tagName.toLowerCase();
		if (el.id) { const s = '#' + CSS.escape(el.id); if (unique(s, el)) return s; }
		for (const a of ['data-testid', 'data-test', 'data-qa', 'name', 'aria-label', 'placeholder', 'title', 'alt', 'href', 'type', 'value']) {
			const v = el.getAttribute(a);
			if (v && v.length <= 80) { const s = tag + '[' + a + '=' + quote(v) + ']'; if (unique(s, el)) return s; }
		}
		const cls = Array.from(el.classList).filter(c => /^[A-Za-z_-][A-Za-z0-9_-]{0,30}$/.test(c)).slice(0, 3);
		if (cls.length) { const s = tag + cls.map(c => '.' + CSS.escape(c)).join(''); if (unique(s, el)) return s; }
		return cssPath(el);
	};
	const labelOf = (el) => {
		if (el.labels && el.labels.length) return norm(el.labels[0].innerText);
		const al = el.getAttribute('aria-label');
		if (al) return norm(al);
		const lb = el.getAttribute('aria-labelledby');
		if (lb) return norm(lb.split(/\s+/).map(id => document.getElementById(id)).filter(Boolean).map(e => e.innerText).join(' '));
		return '';
	};
	const all = (sel) => Array.from(document.querySelectorAll(sel)).filter($visible);
	const out = {title: document.title, url: location.href, headings: [], links: [], fields: [], buttons: [], text: '', counts: {}};
	const take = (name, list, fn) => {
		out.counts[name] = list.length;
		for (const el of list.slice(0, maxItems)) out[name].push(fn(el));
	};
	take('headings', all('h1, h2, h3, h4, h5, h6, [role=heading]'), el => ({
		level: /^H[1-6]$/.test(el.tagName) ? Number(el.tagName[1]) : Number(el.getAttribute('aria-level') || 2),
		text: cut(norm(el.innerText), 120), sel: selectorOf(el),
	}));
	take('fields', all('input:not([type=hidden]):not([type=submit]):not([type=button]):not([type=reset]):not([type=image]), textarea, select, [contenteditable=""], [contenteditable=true]'), el => {
		const tag = el.tagName.toLowerCase();
		const type = tag === 'input' ? (el.type || 'text') : (el.isContentEditable ? 'editable' : tag);
		let value = el.isContentEditable ? norm(el.innerText) : String(el.value == null ? '' : el.value);
		if (type === 'password') value = value ? '***' : '';
		if (tag === 'select') value = el.selectedIndex >= 0 ? norm(el.options[el.selectedIndex].text) : '';
		return {
			type: type, label: cut(labelOf(el), 80), name: el.getAttribute('name') || '',
			placeholder: cut(el.getAttribute('placeholder') || '', 60), value: cut(value, 60),
			checked: !!el.checked, required: !!el.required, disabled: !!el.disabled,
			options: tag === 'select' ? Array.from(el.options).slice(0, 10).map(o => cut(norm(o.text) || o.value, 30)) : [],
			sel: selectorOf(el),
		};
	});
	take('buttons', all('button, input[type=submit], input[type=button], input[type=reset], input[type=image], [role=button]'), el => ({
		text: cut(norm(el.innerText) || el.value || el.getAttribute('aria-label') || el.title || '', 80),
		disabled: !!el.disabled, sel: selectorOf(el),
	}));
	take('links', all('a[href]'), el => {
		let href = el.getAttribute('href');
		try {
			const u = new URL(el.href, location.href);
			href = u.origin === location.origin ? u.pathname + u.search + u.hash : u.href;
		} catch (e) {}
		const img = el.querySelector('img[alt]');
		return {text: cut(norm(el.innerText) || el.getAttribute('aria-label') || el.title || (img ? img.alt : ''), 80), href: cut(href, 200), sel: selectorOf(el)};
	});
	const body = document.body;
	if (body) out.text = cut(body.innerText.split('\n').map(l => l.replace(/\s+/g, ' ').trim()).filter(Boolean).join('\n'), maxText);
	return out;
}`
