package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/chromedp/chromedp"
)

// The scripts below run in the page with Runtime.evaluate. Each is a function
// expression that evalJS calls with JSON arguments after jsPrelude. A script
// that looks for an element returns a jsResult whose state is "ok", or the
// reason to keep waiting ("missing", "hidden", ...), or a permanent failure
// ("invalid", "unfit", ...).

// jsPrelude defines the helpers of the scripts, local to one evaluation.
const jsPrelude = `
const $find = (sel, needVisible) => {
	let el;
	try { el = document.querySelector(sel); } catch (e) { return {state: 'invalid', msg: String((e && e.message) || e)}; }
	if (!el) return {state: 'missing'};
	if (needVisible && !$visible(el)) return {state: 'hidden'};
	return {state: 'ok', el: el};
};
const $visible = (el) => {
	if (!el || !el.isConnected) return false;
	if (typeof el.checkVisibility === 'function' && !el.checkVisibility({visibilityProperty: true})) return false;
	const st = getComputedStyle(el);
	if (st.display === 'none' || st.visibility === 'hidden' || st.visibility === 'collapse') return false;
	const r = el.getBoundingClientRect();
	return r.width > 0 && r.height > 0;
};
const $describe = (el) => {
	if (!el || el.nodeType !== 1) return String(el);
	let s = '<' + el.tagName.toLowerCase();
	if (el.id) s += ' id="' + el.id + '"';
	const cls = (el.getAttribute('class') || '').trim();
	if (cls) s += ' class="' + cls.slice(0, 60) + '"';
	return s + '>';
};
`

// jsResult is the result of an element script.
type jsResult struct {
	State string   `json:"state"`
	Msg   string   `json:"msg,omitempty"`
	X     float64  `json:"x,omitempty"`
	Y     float64  `json:"y,omitempty"`
	Str   string   `json:"str,omitempty"`
	Has   bool     `json:"has,omitempty"`
	List  []string `json:"list,omitempty"`
}

// evalJS calls the function expression fn in the page with args and decodes
// its result into T.
func evalJS[T any](ctx context.Context, fn string, args ...any) (T, error) {
	var b strings.Builder
	b.WriteString("(() => {\n")
	b.WriteString(jsPrelude)
	b.WriteString("\nreturn (")
	b.WriteString(fn)
	b.WriteString(")(")
	for i, a := range args {
		if i > 0 {
			b.WriteString(", ")
		}
		j, err := json.Marshal(a)
		if err != nil {
			var zero T
			return zero, fmt.Errorf("encode script argument: %w", err)
		}
		b.Write(j)
	}
	b.WriteString(");\n})()")
	return chromedp.Run(ctx, chromedp.Evaluate[T](b.String()))
}

// jsClick scrolls the element into the middle of the viewport and returns the
// point to click, in the coordinates of Input.dispatchMouseEvent. It waits
// while the element is disabled (unless hover: a disabled element can be
// hovered) or another element covers that point.
const jsClick = `function (sel, hover) {
	const f = $find(sel, true);
	if (f.state !== 'ok') return f;
	const el = f.el;
	if (!hover && el.matches(':disabled')) return {state: 'disabled'};
	el.scrollIntoView({block: 'center', inline: 'center', behavior: 'instant'});
	let r = null;
	for (const c of el.getClientRects()) { if (c.width > 0 && c.height > 0) { r = c; break; } }
	if (!r) return {state: 'hidden'};
	const x = r.left + r.width / 2, y = r.top + r.height / 2;
	const hit = document.elementFromPoint(x, y);
	if (hit && hit !== el && !el.contains(hit) && hit.control !== el) {
		return {state: 'covered', msg: $describe(hit)};
	}
	const vv = window.visualViewport;
	const scale = vv ? vv.scale : 1, ox = vv ? vv.offsetLeft : 0, oy = vv ? vv.offsetTop : 0;
	return {state: 'ok', x: (x - ox) * scale, y: (y - oy) * scale};
}`

// jsFocus focuses the element before keys are pressed.
const jsFocus = `function (sel) {
	const f = $find(sel, true);
	if (f.state !== 'ok') return f;
	f.el.focus();
	return {state: 'ok', has: document.activeElement === f.el};
}`

// jsFill focuses an input, textarea or contenteditable element and clears it.
// Inputs whose value cannot be typed, such as a date, get the value set
// directly (has: true).
const jsFill = `function (sel, value) {
	const f = $find(sel, true);
	if (f.state !== 'ok') return f;
	const el = f.el;
	if (el.isContentEditable) {
		el.focus();
		const range = document.createRange();
		range.selectNodeContents(el);
		const s = window.getSelection();
		s.removeAllRanges();
		s.addRange(range);
		if (el.textContent !== '') document.execCommand('delete');
		return {state: 'ok'};
	}
	const tag = el.tagName;
	const type = (el.getAttribute('type') || '').toLowerCase();
	const untyped = ['checkbox', 'radio', 'submit', 'button', 'reset', 'file', 'image', 'hidden'];
	if ((tag !== 'INPUT' && tag !== 'TEXTAREA') || (tag === 'INPUT' && untyped.includes(type))) {
		return {state: 'unfit', msg: $describe(el)};
	}
	if (el.disabled) return {state: 'disabled'};
	if (el.readOnly) return {state: 'readonly'};
	el.focus();
	const setter = Object.getOwnPropertyDescriptor(tag === 'INPUT' ? HTMLInputElement.prototype : HTMLTextAreaElement.prototype, 'value').set;
	const direct = ['date', 'datetime-local', 'month', 'week', 'time', 'range', 'color'];
	if (tag === 'INPUT' && direct.includes(type)) {
		setter.call(el, value);
		el.dispatchEvent(new Event('input', {bubbles: true}));
		el.dispatchEvent(new Event('change', {bubbles: true}));
		return {state: 'ok', has: true};
	}
	if (el.value !== '') {
		setter.call(el, '');
		el.dispatchEvent(new Event('input', {bubbles: true}));
	}
	return {state: 'ok'};
}`

// jsSelect chooses the option of a <select> by value, or else by its visible
// label, and fires input and change events as a user's choice does.
const jsSelect = `function (sel, want) {
	const f = $find(sel, true);
	if (f.state !== 'ok') return f;
	const el = f.el;
	if (el.tagName !== 'SELECT') return {state: 'unfit', msg: $describe(el)};
	if (el.disabled) return {state: 'disabled'};
	const opts = Array.from(el.options);
	const o = opts.find(o => o.value === want) || opts.find(o => o.label.trim() === want) || opts.find(o => o.text.trim() === want);
	if (!o) return {state: 'nooption', list: opts.slice(0, 20).map(o => o.value === o.text.trim() ? o.value : o.value + ' (' + o.text.trim() + ')')};
	if (o.disabled) return {state: 'disabled'};
	if (el.multiple) { o.selected = true; } else { el.selectedIndex = o.index; }
	el.dispatchEvent(new Event('input', {bubbles: true}));
	el.dispatchEvent(new Event('change', {bubbles: true}));
	return {state: 'ok', str: o.value};
}`

// jsText returns the rendered text of the element, or "" when it is hidden.
const jsText = `function (sel) {
	const f = $find(sel, false);
	if (f.state !== 'ok') return f;
	return {state: 'ok', str: $visible(f.el) ? (f.el.innerText || '') : ''};
}`

// jsVisible tells whether the element exists and is visible.
const jsVisible = `function (sel) {
	const f = $find(sel, false);
	if (f.state === 'invalid') return f;
	return {state: 'ok', has: f.state === 'ok' && $visible(f.el)};
}`

// jsAttr returns an attribute of the element.
const jsAttr = `function (sel, name) {
	const f = $find(sel, false);
	if (f.state !== 'ok') return f;
	const v = f.el.getAttribute(name);
	return {state: 'ok', has: v !== null, str: v === null ? '' : v};
}`

// jsValue returns the value property of the element.
const jsValue = `function (sel) {
	const f = $find(sel, false);
	if (f.state !== 'ok') return f;
	if (!('value' in f.el)) return {state: 'unfit', msg: $describe(f.el)};
	return {state: 'ok', str: String(f.el.value)};
}`

// jsWait checks the element and text parts of a WaitCondition and returns
// the URL for the Go side to check.
const jsWait = `function (sel, text, visible) {
	const res = {state: 'ok', str: location.href, has: true};
	let scope = document.body;
	if (sel) {
		const f = $find(sel, visible);
		if (f.state === 'invalid') return f;
		if (f.state !== 'ok') return {state: f.state, str: location.href, has: false};
		scope = f.el;
	}
	if (text) {
		const t = scope ? (scope.innerText || scope.textContent || '') : '';
		if (!t.includes(text)) return {state: 'notext', str: location.href, has: false};
	}
	return res;
}`

// jsPage returns the URL and the title of the document.
const jsPage = `function () {
	return {state: 'ok', str: location.href, msg: document.title};
}`
