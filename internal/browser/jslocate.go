package browser

// jsLocate is the in-page half of the locator resolver (locator.go has the
// other half). It is part of every script's prelude: the scripts find
// elements with $one and $all.
//
// A locator arrives as a spec (jsLoc): at most one base (css, xpath, role,
// text, label, placeholder, alt, title, testId), the filters within, has,
// hasText and nth. A role base names a set of candidates that the Go side
// found in the browser's accessibility tree (Accessibility.queryAXTree,
// exact for the role and the accessible name Chromium computes) and passed
// in as element handles with their names: $roles reads them from the
// script's extra arguments.
//
// A text value written /PATTERN/FLAGS is a regular expression; any other
// matches as a substring ignoring case and runs of white space, or as the
// whole text with exact.
const jsLocate = `
const $norm = (s) => String(s == null ? '' : s).replace(/\s+/g, ' ').trim();
const $rx = /^\/([\s\S]+)\/([ims]*)$/;
const $matcher = (spec, exact) => {
	const m = $rx.exec(spec);
	if (m) { const re = new RegExp(m[1], m[2]); return (v) => re.test($norm(v)); }
	const want = $norm(spec);
	if (exact) return (v) => $norm(v) === want;
	const lw = want.toLowerCase();
	return (v) => $norm(v).toLowerCase().includes(lw);
};
const $skip = new Set(['SCRIPT', 'STYLE', 'NOSCRIPT', 'TEMPLATE', 'HEAD']);
const $tc = new Map();
const $text = (el) => {
	let t = $tc.get(el);
	if (t !== undefined) return t;
	if (el.nodeName === 'INPUT' && ['button', 'submit', 'reset'].includes((el.type || '').toLowerCase())) {
		t = el.value;
	} else {
		t = '';
		for (const n of el.childNodes) {
			if (n.nodeType === 3) t += n.nodeValue;
			else if (n.nodeType === 1 && !$skip.has(n.nodeName)) t += $text(n);
		}
		if (el.shadowRoot) for (const n of el.shadowRoot.children) if (!$skip.has(n.nodeName)) t += $text(n);
	}
	$tc.set(el, t);
	return t;
};
const $order = (a, b) => a === b ? 0 : (a.compareDocumentPosition(b) & 4 ? -1 : 1);
const $within = (scope, el) => scope.nodeType === 9 ? el.ownerDocument === scope : (el !== scope && scope.contains(el));
const $labelText = (label, control) => {
	let t = '';
	const walk = (n) => {
		for (const c of n.childNodes) {
			if (c === control) continue;
			if (c.nodeType === 3) t += c.nodeValue;
			else if (c.nodeType === 1 && !$skip.has(c.nodeName) && !['SELECT', 'TEXTAREA', 'INPUT'].includes(c.nodeName)) walk(c);
		}
	};
	walk(label);
	return t;
};
const $labels = (el) => {
	const out = [];
	const al = el.getAttribute('aria-label');
	if (al) out.push(al);
	const lb = el.getAttribute('aria-labelledby');
	if (lb) out.push(lb.split(/\s+/).map((id) => { const r = el.ownerDocument.getElementById(id); return r ? $text(r) : ''; }).join(' '));
	if (el.labels) for (const l of el.labels) out.push($labelText(l, el));
	return out;
};
const $byAttr = (scope, attr, spec, exact) => {
	const m = $matcher(spec, exact);
	const out = [];
	for (const el of scope.querySelectorAll('[' + CSS.escape(attr) + ']')) if (m(el.getAttribute(attr))) out.push(el);
	return out;
};
const $base = (loc, scope, R) => {
	if (loc.css != null) return Array.from(scope.querySelectorAll(loc.css));
	if (loc.xpath != null) {
		let x = loc.xpath;
		if (x.startsWith('/') && scope.nodeType !== 9) x = '.' + x;
		const doc = scope.nodeType === 9 ? scope : scope.ownerDocument;
		const r = doc.evaluate(x, scope, null, XPathResult.ORDERED_NODE_SNAPSHOT_TYPE, null);
		const out = [];
		for (let i = 0; i < r.snapshotLength; i++) { const n = r.snapshotItem(i); if (n.nodeType === 1) out.push(n); }
		return out;
	}
	if (loc.role != null) {
		const m = loc.name != null ? $matcher(loc.name, loc.exact) : null;
		return R[loc.role].filter((c) => c.el.isConnected && $within(scope, c.el) && (!m || m(c.name))).map((c) => c.el);
	}
	if (loc.text != null) {
		const m = $matcher(loc.text, loc.exact);
		const out = [];
		for (const el of scope.querySelectorAll('*')) {
			if ($skip.has(el.nodeName) || !m($text(el))) continue;
			let inner = false;
			for (const c of el.children) if (!$skip.has(c.nodeName) && m($text(c))) { inner = true; break; }
			if (!inner) out.push(el);
		}
		return out;
	}
	if (loc.label != null) {
		const m = $matcher(loc.label, loc.exact);
		const out = [];
		for (const el of scope.querySelectorAll('input, textarea, select, button, meter, output, progress, [aria-label], [aria-labelledby]')) {
			if ($labels(el).some(m)) out.push(el);
		}
		return out;
	}
	if (loc.placeholder != null) return $byAttr(scope, 'placeholder', loc.placeholder, loc.exact);
	if (loc.alt != null) return $byAttr(scope, 'alt', loc.alt, loc.exact);
	if (loc.title != null) return $byAttr(scope, 'title', loc.title, loc.exact);
	if (loc.testId != null) return $byAttr(scope, loc.testIdAttr || 'data-testid', loc.testId, true);
	return Array.from(scope.querySelectorAll('*'));
};
const $resolve = (loc, scopes, R) => {
	let sc = scopes;
	if (loc.within) sc = $resolve(loc.within, scopes, R);
	let out = [];
	for (const s of sc) for (const el of $base(loc, s, R)) out.push(el);
	if (sc.length > 1) out = Array.from(new Set(out)).sort($order);
	if (loc.hasText != null) { const m = $matcher(loc.hasText, false); out = out.filter((el) => m($text(el))); }
	if (loc.has) out = out.filter((el) => $resolve(loc.has, [el], R).length > 0);
	if (loc.nth != null) {
		const i = loc.nth < 0 ? out.length + loc.nth : loc.nth;
		out = i >= 0 && i < out.length ? [out[i]] : [];
	}
	return out;
};
const $roles = (sets, els) => {
	const R = [];
	let k = 0;
	for (const names of sets || []) R.push(names.map((name) => ({el: els[k++], name: name})));
	return R;
};
const $all = (q, els) => {
	$tc.clear();
	return $resolve(q.loc, [document], $roles(q.roles, els));
};
const $brief = (el) => {
	const tag = el.tagName.toLowerCase();
	let text = $norm(el.nodeName === 'INPUT' ? (el.value || el.placeholder || '') : $text(el));
	if (text.length > 60) text = text.slice(0, 57) + '...';
	const id = el.id ? '#' + el.id : '';
	return {tag: tag + id, role: el.getAttribute('role') || '', name: el.getAttribute('aria-label') || '', text: text};
};
const $one = (q, els) => {
	let list;
	try { list = $all(q, els); } catch (e) { return {state: 'invalid', msg: String((e && e.message) || e)}; }
	if (list.length === 0) return {state: 'missing'};
	if (q.strict && list.length > 1) return {state: 'ambiguous', n: list.length, matches: list.slice(0, 10).map($brief)};
	return {state: 'ok', el: list[0]};
};
const $frame = () => new Promise((resolve) => {
	let done = false;
	const fin = () => { if (!done) { done = true; resolve(); } };
	requestAnimationFrame(fin);
	setTimeout(fin, 100);
});
const $change = (byFrame, until) => new Promise((resolve) => {
	let done = false;
	const ms = Math.max(0, Math.min(until - Date.now(), byFrame ? 100 : 250));
	const mo = new MutationObserver(() => fin());
	const t = setTimeout(() => fin(), ms);
	const fin = () => { if (done) return; done = true; mo.disconnect(); clearTimeout(t); resolve(); };
	mo.observe(document, {subtree: true, childList: true, attributes: true, characterData: true});
	if (byFrame) requestAnimationFrame(fin);
});
`
