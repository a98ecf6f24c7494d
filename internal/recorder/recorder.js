// The recorder's script: it runs in an isolated world of every document of
// a live session (the page's own scripts see neither it nor its binding)
// and tells the server what the person did to the page's fields. Clicks
// are known to the server already: it sends them (internal/recorder).
(() => {
  if (globalThis.__duetRec) return;
  const ids = new WeakMap();
  const els = new Map();
  let next = 1;
  const keep = (el) => {
    let id = ids.get(el);
    if (id === undefined) {
      id = next++;
      ids.set(el, id);
      els.set(id, new WeakRef(el));
      if (els.size > 1000) els.delete(els.keys().next().value);
    }
    return id;
  };
  const send = (o) => {
    try { __BINDING__(JSON.stringify(o)); } catch (e) { /* the binding is gone: the session is closing */ }
  };
  const norm = (s) => (s || '').replace(/\s+/g, ' ').trim();
  const textual = (el) => el instanceof HTMLTextAreaElement ||
    (el instanceof HTMLInputElement && !['checkbox', 'radio', 'submit', 'button', 'reset', 'file', 'image', 'range', 'color', 'hidden'].includes(el.type)) ||
    (el instanceof HTMLElement && el.isContentEditable);
  const checkable = (el) => el instanceof HTMLInputElement && (el.type === 'checkbox' || el.type === 'radio');
  // The element a click acts on: the nearest interactive ancestor of the
  // one under the pointer (a span inside a button is the button).
  const interactive = 'a[href],button,input,select,textarea,label,summary,option,[role],[contenteditable=""],[contenteditable=true],[onclick],[tabindex]';
  const target = (el) => (el && el.closest && el.closest(interactive)) || el;
  const cssEscape = (s) => (globalThis.CSS && CSS.escape) ? CSS.escape(s) : s.replace(/[^\w-]/g, (c) => '\\' + c);
  // A CSS path that matches el alone: from the nearest ancestor with a
  // unique id, by tag and :nth-of-type.
  const cssPath = (el) => {
    const parts = [];
    for (let e = el; e && e.nodeType === 1; e = e.parentElement) {
      if (e.id && document.querySelectorAll('#' + cssEscape(e.id)).length === 1) {
        parts.unshift('#' + cssEscape(e.id));
        break;
      }
      let part = e.localName;
      const p = e.parentElement;
      if (p) {
        const same = Array.from(p.children).filter((c) => c.localName === e.localName);
        if (same.length > 1) part += ':nth-of-type(' + (same.indexOf(e) + 1) + ')';
      }
      parts.unshift(part);
      if (e.localName === 'body' || e.localName === 'html') break;
    }
    return parts.join(' > ');
  };
  const labelOf = (el) => {
    const al = el.getAttribute && el.getAttribute('aria-label');
    if (al) return norm(al);
    if (el.labels && el.labels.length) return norm(el.labels[0].innerText || el.labels[0].textContent);
    return '';
  };
  globalThis.__duetRec = {
    el: (id) => { const r = els.get(id); return r && r.deref(); },
    at: (x, y) => {
      const el = target(document.elementFromPoint(x, y));
      if (!el || el === document.documentElement || el === document.body) return { id: 0 };
      const lab = el.localName === 'label' ? el.control : null;
      return {
        id: keep(el), tag: el.localName, select: el instanceof HTMLSelectElement,
        // What a click on it does that a field's events record instead.
        field: textual(el) || checkable(el) || el instanceof HTMLSelectElement || (lab !== null && (checkable(lab) || textual(lab) || lab instanceof HTMLSelectElement)),
      };
    },
    info: (id, testIdAttr) => {
      const el = globalThis.__duetRec.el(id);
      if (!el || !el.isConnected) return null;
      const text = (el instanceof HTMLInputElement) ? '' : norm(el.innerText);
      return {
        tag: el.localName,
        label: labelOf(el),
        placeholder: el.getAttribute('placeholder') || '',
        alt: el.getAttribute('alt') || '',
        title: el.getAttribute('title') || '',
        testId: el.getAttribute(testIdAttr || 'data-testid') || '',
        text: text.length <= 80 ? text : '',
        // The first text inside it: what tells a row from its siblings.
        lead: (() => {
          const w = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
          for (let n = w.nextNode(); n; n = w.nextNode()) {
            const t = norm(n.data);
            if (t) return t.length <= 40 ? t : '';
          }
          return '';
        })(),
        css: cssPath(el),
        value: ('value' in el && typeof el.value === 'string') ? el.value : '',
        // The ancestors a locator may be narrowed within, nearest first.
        up: (() => {
          const out = [];
          for (let e = el.parentElement; e && e !== document.body && out.length < 6; e = e.parentElement) out.push(keep(e));
          return out;
        })(),
      };
    },
  };
  send({ t: 'hello' });
  document.addEventListener('input', (e) => {
    const el = e.composedPath()[0];
    if (textual(el)) send({ t: 'fill', id: keep(el), value: el.isContentEditable ? el.innerText : el.value });
  }, true);
  document.addEventListener('change', (e) => {
    const el = e.composedPath()[0];
    if (el instanceof HTMLSelectElement) send({ t: 'select', id: keep(el), value: el.value });
    else if (checkable(el)) send({ t: el.checked ? 'check' : 'uncheck', id: keep(el) });
  }, true);
  document.addEventListener('keydown', (e) => {
    if (e.key !== 'Enter' && e.key !== 'Escape') return;
    const el = e.composedPath()[0];
    // A key that submits or dismisses from a field (a button's Enter is
    // its click; a textarea's a new line, typed by fill).
    if (!textual(el) || el instanceof HTMLTextAreaElement) return;
    send({ t: 'press', id: keep(el), key: e.key, field: textual(el) });
  }, true);
})();
