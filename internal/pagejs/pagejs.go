// Package pagejs holds the JavaScript that scripts of more than one of
// Duet's packages run in a page: the browser driver's page summary
// (internal/browser) and the AI steps' snapshot (internal/step), which do
// not import each other. It imports nothing.
package pagejs

// Selectors declares, in the scope of the script it is put in front of:
// unique(sel, el), whether the CSS selector sel matches el and nothing
// else; quote(v), v as a CSS string; and cssPath(el), a CSS selector of el
// by tag names and :nth-of-type positions from el up, stopping at an
// ancestor with a unique id: the shortest such path that matches el alone,
// else the whole path.
const Selectors = `
	const unique = (sel, el) => {
		try { const l = document.querySelectorAll(sel); return l.length === 1 && l[0] === el; } catch (e) { return false; }
	};
	const quote = (v) => '"' + v.replace(/\\/g, '\\\\').replace(/"/g, '\\"') + '"';
	const cssPath = (el) => {
		const parts = [];
		for (let cur = el; cur && cur.nodeType === 1 && cur !== document.documentElement; cur = cur.parentElement) {
			if (cur !== el && cur.id && unique('#' + CSS.escape(cur.id), cur)) { parts.unshift('#' + CSS.escape(cur.id)); break; }
			let part = cur.tagName.toLowerCase();
			const parent = cur.parentElement;
			if (parent) {
				const same = Array.from(parent.children).filter((c) => c.tagName === cur.tagName);
				if (same.length > 1) part += ':nth-of-type(' + (same.indexOf(cur) + 1) + ')';
			}
			parts.unshift(part);
			const s = parts.join(' > ');
			if (unique(s, el)) return s;
		}
		return parts.join(' > ');
	};
`
