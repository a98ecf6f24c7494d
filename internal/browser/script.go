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
	State   string   `json:"state"`
	Msg     string   `json:"msg,omitempty"`
	X       float64  `json:"x,omitempty"`
	Y       float64  `json:"y,omitempty"`
	Str     string   `json:"str,omitempty"`
	Has     bool     `json:"has,omitempty"`
	List    []string `json:"list,omitempty"`
	N       int      `json:"n,omitempty"`
	Matches []match  `json:"matches,omitempty"`
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
	return chromedp.Run(ctx, chromedp.Evaluate[T](b.String(), chromedp.EvalAwaitPromise))
}

// jsWait waits in the page, at most o.slice ms, until the element and text
// parts of a WaitCondition hold and the URL contains o.urlContains and is
// not o.seen (one the Go side found not to match URLMatches). It looks
// again when the page changes — a DOM mutation, a navigation within the
// document (history, hash), the next animation frame for an element or a
// text that is there but hidden (a style may show it without a mutation)
// — and returns the URL for the Go side to check. A navigation
// to another document ends the evaluation with an error: the Go side looks
// again in the new document.
const jsWait = `async function (o) {
	const check = () => {
		const href = location.href;
		let scope = document.body;
		if (o.sel) {
			const f = $find(o.sel, o.visible);
			if (f.state === 'invalid') return f;
			if (f.state !== 'ok') return {state: f.state, str: href, has: false};
			scope = f.el;
		}
		if (o.text) {
			const t = scope ? (scope.innerText || scope.textContent || '') : '';
			// Text that is there but not shown may show without a
			// mutation (a style's animation): looked at every frame.
			if (!t.includes(o.text)) return {state: 'notext', str: href, has: false, hid: !!scope && (scope.textContent || '').includes(o.text)};
		}
		if ((o.urlContains && !href.includes(o.urlContains)) || (o.seen && href === o.seen)) return {state: 'url', str: href, has: false};
		return {state: 'ok', str: href, has: true};
	};
	const until = Date.now() + (o.slice || 0);
	for (;;) {
		const r = check();
		if (r.state === 'ok' || r.state === 'invalid' || Date.now() >= until) return r;
		await new Promise((resolve) => {
			let done = false;
			const nav = window.navigation;
			const fin = () => {
				if (done) return;
				done = true;
				mo.disconnect();
				clearTimeout(t);
				if (nav) nav.removeEventListener('currententrychange', fin);
				removeEventListener('hashchange', fin);
				removeEventListener('popstate', fin);
				resolve();
			};
			const mo = new MutationObserver(fin);
			mo.observe(document, {subtree: true, childList: true, attributes: true, characterData: true});
			const t = setTimeout(fin, Math.max(0, until - Date.now()));
			if (nav) nav.addEventListener('currententrychange', fin);
			addEventListener('hashchange', fin);
			addEventListener('popstate', fin);
			if (r.state === 'hidden' || r.hid) requestAnimationFrame(() => setTimeout(fin, 0));
		});
	}
}`

// jsWaitArgs is jsWait's o.
type jsWaitArgs struct {
	Sel         string `json:"sel,omitempty"`
	Text        string `json:"text,omitempty"`
	Visible     bool   `json:"visible,omitempty"`
	URLContains string `json:"urlContains,omitempty"`
	Seen        string `json:"seen,omitempty"`
	Slice       int64  `json:"slice"`
}

// jsPage returns the URL and the title of the document.
const jsPage = `function () {
	return {state: 'ok', str: location.href, msg: document.title};
}`

// jsElement finds the element of a target and, for an action, waits in the
// page until it can take the action (Playwright's actionability checks):
// attached, visible, enabled, editable, stable (the same box in two
// animation frames), scrolled into view and not covered at the point the
// mouse will use. For a read, it reads the element once it is attached.
// Between tries it waits for the page to change (a DOM mutation, or an
// animation frame for what moves without one), until o.slice ms have
// passed; with o.loop false (the role candidates were resolved outside the
// page, so only the Go side can look again) it returns after that wait.
//
// o: read (a read of kind o.kind, o.name), or an action: visible, enabled,
// editable, stable, scroll, hit (the point is returned, in the viewport's
// coordinates when o.top), fit (what the element must be: text, select,
// check, file), op (what the page does once the element is ready: focus,
// blur, fill, select, checked, upload, with o.value, o.files).
const jsElement = `async function (q, o, ...els) {
	const until = Date.now() + (o.slice || 0);
	if (o.wait > 0) await $change(false, Math.min(until, Date.now() + o.wait));
	for (;;) {
		let r;
		try { r = o.read ? $read(q, o, els) : await $actionable(q, o, els); } catch (e) { return {state: 'error', msg: String((e && e.message) || e)}; }
		if (!$transient.has(r.state) || Date.now() >= until) return r;
		await $change(r.state === 'hidden' || r.state === 'moving' || r.state === 'covered' || r.state === 'outside', until);
		if (!o.loop) return r;
	}
}`

// jsActions are the helpers of jsElement.
const jsActions = `
const $transient = new Set(['missing', 'hidden', 'disabled', 'readonly', 'moving', 'covered', 'outside', 'nooption']);
const $disabled = (el) => el.matches(':disabled') || !!el.closest('[aria-disabled="true"]');
const $readonly = (el) => el.readOnly === true || el.getAttribute('aria-readonly') === 'true';
const $box = (el) => { const r = el.getBoundingClientRect(); return r.x + ',' + r.y + ',' + r.width + ',' + r.height; };
const $checked = (el) => {
	if (el.nodeName === 'INPUT' && ['checkbox', 'radio'].includes((el.type || '').toLowerCase())) return el.checked;
	const a = el.getAttribute('aria-checked');
	if (a === 'true' || a === 'mixed') return true;
	if (a === 'false') return false;
	return null;
};
const $untyped = ['checkbox', 'radio', 'submit', 'button', 'reset', 'file', 'image', 'hidden'];
const $unfit = (el, fit) => {
	const type = (el.getAttribute('type') || '').toLowerCase();
	switch (fit) {
	case 'text':
		if (el.isContentEditable || el.nodeName === 'TEXTAREA' || (el.nodeName === 'INPUT' && !$untyped.includes(type))) return '';
		return 'an input, textarea or contenteditable element';
	case 'select':
		return el.nodeName === 'SELECT' ? '' : 'a <select> element';
	case 'check':
		return $checked(el) === null ? 'a checkbox, a radio button or an element with aria-checked' : '';
	case 'file':
		return el.nodeName === 'INPUT' && type === 'file' ? '' : 'a file input (<input type=file>)';
	}
	return '';
};
const $ops = {
	focus: (el) => { el.focus(); return {has: el.ownerDocument.activeElement === el}; },
	blur: (el) => { el.blur(); return {}; },
	checked: (el) => ({has: $checked(el)}),
	fill: (el, o) => {
		if (el.isContentEditable) {
			el.focus();
			const range = el.ownerDocument.createRange();
			range.selectNodeContents(el);
			const s = el.ownerDocument.getSelection();
			s.removeAllRanges();
			s.addRange(range);
			if (el.textContent !== '') el.ownerDocument.execCommand('delete');
			return {};
		}
		el.focus();
		const type = (el.getAttribute('type') || '').toLowerCase();
		const win = el.ownerDocument.defaultView;
		const setter = Object.getOwnPropertyDescriptor(el.nodeName === 'INPUT' ? win.HTMLInputElement.prototype : win.HTMLTextAreaElement.prototype, 'value').set;
		if (el.nodeName === 'INPUT' && ['date', 'datetime-local', 'month', 'week', 'time', 'range', 'color'].includes(type)) {
			setter.call(el, o.value);
			el.dispatchEvent(new Event('input', {bubbles: true}));
			el.dispatchEvent(new Event('change', {bubbles: true}));
			return {has: true};
		}
		if (el.value !== '') {
			setter.call(el, '');
			el.dispatchEvent(new Event('input', {bubbles: true}));
		}
		return {};
	},
	select: (el, o) => {
		const opts = Array.from(el.options);
		const want = o.value;
		const op = opts.find((x) => x.value === want) || opts.find((x) => x.label.trim() === want) || opts.find((x) => x.text.trim() === want);
		if (!op) return {state: 'nooption', list: opts.slice(0, 20).map((x) => x.value === x.text.trim() ? x.value : x.value + ' (' + x.text.trim() + ')')};
		if (op.disabled) return {state: 'disabled'};
		if (el.multiple) { op.selected = true; } else { el.selectedIndex = op.index; }
		el.dispatchEvent(new Event('input', {bubbles: true}));
		el.dispatchEvent(new Event('change', {bubbles: true}));
		return {str: op.value};
	},
	upload: (el, o) => {
		if (o.files.length > 1 && !el.multiple) return {state: 'unfit', msg: 'a file input that takes several files (multiple)'};
		const dt = new DataTransfer();
		for (const f of o.files) {
			const bin = atob(f.data);
			const a = new Uint8Array(bin.length);
			for (let i = 0; i < bin.length; i++) a[i] = bin.charCodeAt(i);
			dt.items.add(new File([a], f.name, {type: f.type || ''}));
		}
		el.files = dt.files;
		el.dispatchEvent(new Event('input', {bubbles: true}));
		el.dispatchEvent(new Event('change', {bubbles: true}));
		return {str: Array.from(el.files).map((f) => f.name).join(', ')};
	},
};
const $actionable = async (q, o, els) => {
	const f = $one(q, els);
	if (f.state !== 'ok') return f;
	const el = f.el;
	if (o.fit) { const u = $unfit(el, o.fit); if (u) return {state: 'unfit', msg: $describe(el), str: u}; }
	if (o.visible && !$visible(el)) return {state: 'hidden'};
	if (o.enabled && $disabled(el)) return {state: 'disabled'};
	if (o.editable && $readonly(el)) return {state: 'readonly'};
	if (o.scroll) el.scrollIntoView({block: 'center', inline: 'center', behavior: 'instant'});
	if (o.stable) {
		// The same box in two animation frames in a row: the box laid out
		// now is that of the frame the page shows, the next one a frame
		// later (one frame's wait, not two).
		const a = $box(el);
		await $frame();
		if (!el.isConnected) return {state: 'missing'};
		if ($box(el) !== a) return {state: 'moving'};
	}
	const res = {state: 'ok'};
	let px = 0, py = 0;
	if (o.hit || o.point) {
		let r = null;
		for (const c of el.getClientRects()) { if (c.width > 0 && c.height > 0) { r = c; break; } }
		if (!r) return {state: 'hidden'};
		const x = r.left + r.width / 2, y = r.top + r.height / 2;
		px = x; py = y;
		if (o.hit) {
			const hit = $hitAt(el.ownerDocument, x, y);
			if (!hit) return {state: 'outside'};
			if (!$receives(el, hit)) return {state: 'covered', msg: $describe(hit)};
		}
		res.x = x; res.y = y;
		if (o.top) {
			const vv = window.visualViewport;
			if (vv) { res.x = (x - vv.offsetLeft) * vv.scale; res.y = (y - vv.offsetTop) * vv.scale; }
		}
	}
	if (o.op) {
		const v = $ops[o.op](el, o);
		if (v.state) return v;
		Object.assign(res, v);
	}
	if (o.guard) $guardHits(el, px, py, o.guard);
	return res;
};
// The element at a point, looking into open shadow roots.
const $hitAt = (doc, x, y) => {
	let hit = doc.elementFromPoint(x, y);
	while (hit && hit.shadowRoot) {
		const inner = hit.shadowRoot.elementFromPoint(x, y);
		if (!inner || inner === hit) break;
		hit = inner;
	}
	return hit;
};
// Whether a pointer event at hit reaches el: hit is el, inside it, or a
// label of it.
const $receives = (el, hit) => {
	for (let n = hit; n; n = n.parentNode || (n instanceof ShadowRoot ? n.host : null)) {
		if (n === el || n.control === el) return true;
	}
	return false;
};
// $guardHits checks, at each event of the action that comes next (trusted
// pointer, mouse and drag events, seen first in the capture phase of the
// element's window), that the element at the action's point (x, y, in the
// document's client coordinates: an event's own clientX is in the visual
// viewport's on a zoomed-out mobile page) is still el:
// a page that moves el between the check above and the action (a hint
// shown when a field loses the focus on the press) must not get the click,
// the hover or the drag on another element. The first event that would
// reach another element, and every event after it, is stopped and its
// default action prevented (a drag does not start); the verdict
// (jsHitVerdict) names that element, and Act acts again. A click is
// checked at each of its events, a hover at each event of the move, a drag
// at its press only (a sortable list moves the dragged element as it
// goes). Once el has left the document (a menu item that acts on the press
// and goes), the rest goes through.
const $hitGuardKey = Symbol.for('duet.hitGuard');
const $guardKinds = {
	click: {types: ['pointerdown', 'mousedown', 'pointerup', 'mouseup', 'click', 'dblclick', 'auxclick', 'contextmenu']},
	hover: {types: ['pointerover', 'pointerenter', 'mouseover', 'mouseenter', 'pointermove', 'mousemove']},
	drag: {types: ['pointerdown', 'mousedown', 'pointermove', 'mousemove', 'pointerup', 'mouseup', 'click',
		'dragstart', 'drag', 'dragenter', 'dragover', 'dragleave', 'drop', 'dragend'], check: ['pointerdown', 'mousedown']},
};
const $guardHits = (el, x, y, kind) => {
	const win = el.ownerDocument.defaultView;
	if (win[$hitGuardKey]) win[$hitGuardKey].stop();
	const g = $guardKinds[kind] || $guardKinds.click;
	const st = {verdict: '', blocked: false, stop: null};
	const on = (e) => {
		if (!e.isTrusted) return;
		if (!st.blocked && el.isConnected && (!g.check || g.check.includes(e.type))) {
			const hit = $hitAt(el.ownerDocument, x, y);
			if (hit && !$receives(el, hit)) { st.blocked = true; st.verdict = $describe(hit); }
		}
		if (st.blocked) { e.preventDefault(); e.stopImmediatePropagation(); }
	};
	for (const t of g.types) win.addEventListener(t, on, true);
	const timer = setTimeout(() => st.stop(), 60000);
	st.stop = () => {
		clearTimeout(timer);
		for (const t of g.types) win.removeEventListener(t, on, true);
		if (win[$hitGuardKey] === st) delete win[$hitGuardKey];
	};
	Object.defineProperty(win, $hitGuardKey, {value: st, configurable: true});
};
const $read = (q, o, els) => {
	if (o.kind === 'count') return {state: 'ok', n: $all(q, els).length};
	const f = $one(q, els);
	if (f.state === 'missing' && o.kind === 'visible') return {state: 'ok', has: false};
	if (f.state !== 'ok') return f;
	const el = f.el;
	switch (o.kind) {
	case 'text': return {state: 'ok', str: $visible(el) ? (el.innerText || '') : ''};
	case 'value':
		if (!('value' in el)) return {state: 'unfit', msg: $describe(el), str: 'an element with a value (input, textarea, select...)'};
		return {state: 'ok', str: String(el.value)};
	case 'attr': { const v = el.getAttribute(o.name); return {state: 'ok', has: v !== null, str: v === null ? '' : v}; }
	case 'visible': return {state: 'ok', has: $visible(el)};
	case 'enabled': return {state: 'ok', has: !$disabled(el)};
	case 'editable': return {state: 'ok', has: !$disabled(el) && !$readonly(el)};
	case 'checked': {
		const c = $checked(el);
		if (c === null) return {state: 'unfit', msg: $describe(el), str: 'a checkbox, a radio button or an element with aria-checked'};
		return {state: 'ok', has: c};
	}
	case 'focused': return {state: 'ok', has: el.ownerDocument.activeElement === el};
	case 'css': return {state: 'ok', str: getComputedStyle(el).getPropertyValue(o.name)};
	}
	return {state: 'error', msg: 'unknown read ' + o.kind};
};
`
