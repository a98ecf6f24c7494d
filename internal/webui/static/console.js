// Duet console: live run progress (server-sent events) and confirmations.
// No inline script anywhere: this file is the console's only script.
(function () {
  "use strict";

  // Forms that change something irreversible ask first.
  document.addEventListener("submit", function (e) {
    var msg = e.target.getAttribute("data-confirm");
    if (msg && !window.confirm(msg)) {
      e.preventDefault();
    }
  });

  var live = document.getElementById("live");
  if (!live || live.getAttribute("data-done") === "true" || !window.EventSource) {
    return;
  }
  function setStatus(el, status) {
    if (!el) return;
    el.textContent = "";
    var b = document.createElement("span");
    b.className = "badge " + status;
    b.textContent = status;
    el.appendChild(b);
  }
  function dur(ms) {
    return ms < 1000 ? ms + " ms" : (ms / 1000).toFixed(1) + " s";
  }
  var es = new EventSource(live.getAttribute("data-events"));
  es.addEventListener("progress", function (ev) {
    var p = JSON.parse(ev.data);
    var t = p.run.totals;
    var done = t.passed + (t.flaky || 0) + t.failed + t.error + t.cancelled;
    setStatus(document.getElementById("run-status"), p.run.status);
    var bar = document.getElementById("run-progress");
    if (bar) { bar.max = t.cases; bar.value = done; }
    var count = document.getElementById("run-count");
    if (count) count.textContent = done + " of " + t.cases;
    var cur = document.getElementById("run-current");
    if (cur) cur.textContent = p.current || "—";
    (p.executions || []).forEach(function (x) {
      var row = document.querySelector('tr[data-exec="' + x.executionId + '"]');
      if (!row) return;
      setStatus(row.querySelector(".exec-status"), x.status);
      var err = row.querySelector(".exec-error");
      if (err) err.textContent = x.errorCode ? x.errorCode + ": " + (x.errorMessage || "") : "";
      var d = row.querySelector(".exec-dur");
      if (d) d.textContent = dur(x.durationMs || 0);
    });
    if (p.run.done) {
      es.close();
      // The report exists now: show it.
      window.location.reload();
    }
  });
  es.addEventListener("end", function () { es.close(); });
  es.onerror = function () {
    // The stream ended (the run finished, or the connection dropped): the
    // browser reconnects by itself unless it was closed.
  };
})();

// A baseline's slider: the range input uncovers the baseline over the one
// in use.
(function () {
  var input = document.querySelector("[data-slider-input]");
  var top = document.querySelector("[data-slider-top]");
  if (!input || !top) return;
  var set = function () { top.style.width = input.value + "%"; };
  input.addEventListener("input", set);
  set();
})();

// The suite editor of the apply page: line numbers, and the compiler's
// problems as you type (validated on the server, debounced), each at its
// line; a problem's button moves the caret there.
(function () {
  "use strict";
  var src = document.getElementById("source");
  if (!src || !src.getAttribute("data-validate") || !window.fetch) return;
  var gutter = document.getElementById("source-lines");
  var list = document.getElementById("source-problems");
  var bad = {};
  var timer = null, seq = 0;
  function lines() {
    var n = src.value.split("\n").length;
    gutter.textContent = "";
    for (var i = 1; i <= n; i++) {
      var s = document.createElement("span");
      s.textContent = i + "\n";
      if (bad[i]) { s.className = "bad"; s.title = bad[i]; }
      gutter.appendChild(s);
    }
    gutter.scrollTop = src.scrollTop;
  }
  function goTo(line, col) {
    var ls = src.value.split("\n"), pos = 0;
    for (var i = 0; i < line - 1 && i < ls.length; i++) pos += ls[i].length + 1;
    pos += Math.max(0, col - 1);
    src.focus();
    src.setSelectionRange(pos, pos);
  }
  function show(v) {
    bad = {};
    list.textContent = "";
    (v.problems || []).forEach(function (p) {
      bad[p.line] = (bad[p.line] ? bad[p.line] + "\n" : "") + p.message;
      var li = document.createElement("li");
      li.setAttribute("data-line", String(p.line));
      var b = document.createElement("button");
      b.type = "button";
      b.className = "link";
      b.textContent = "line " + p.line + ", column " + p.col;
      b.addEventListener("click", function () { goTo(p.line, p.col); });
      li.appendChild(b);
      li.appendChild(document.createTextNode(": " + p.message));
      list.appendChild(li);
    });
    src.setAttribute("aria-invalid", v.valid ? "false" : "true");
    list.setAttribute("data-checked", String(seq));
    lines();
  }
  function check() {
    var mine = ++seq;
    fetch(src.getAttribute("data-validate"), {
      method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRF-Token": src.getAttribute("data-csrf") },
      body: JSON.stringify({ source: src.value })
    }).then(function (r) { return r.json(); }).then(function (v) {
      if (mine !== seq) return; // a newer check is under way
      if (v.error) v = { problems: [{ line: 1, col: 1, message: v.error.code + ": " + v.error.message }] };
      show(v);
    }, function () {});
  }
  src.addEventListener("input", function () {
    lines();
    clearTimeout(timer);
    timer = setTimeout(check, 400);
  });
  src.addEventListener("scroll", function () { gutter.scrollTop = src.scrollTop; });
  lines();
  if (src.value.trim()) check();
})();

// Duet console: completion in the suite editor (apply.html) from the
// suite format's JSON Schema (served from the binary): at the caret, the
// keys valid in the mapping being written, or the values a key's enum
// allows. Block-style YAML is understood by its indentation.
(function () {
  "use strict";
  var src = document.getElementById("source");
  var box = document.getElementById("source-complete");
  if (!src || !box || !src.getAttribute("data-schema") || !window.fetch) return;
  var schema = null;
  fetch(src.getAttribute("data-schema"), { credentials: "same-origin" })
    .then(function (r) { return r.json(); })
    .then(function (s) { schema = s; update(false); }, function () {});

  function deref(n) {
    for (var i = 0; n && n.$ref && i < 20; i++) n = schema.$defs[n.$ref.replace("#/$defs/", "")];
    return n || {};
  }
  // The alternatives a node allows, $refs followed.
  function alts(n) {
    n = deref(n);
    var out = [n];
    (n.anyOf || []).concat(n.oneOf || []).forEach(function (a) { out = out.concat(alts(a)); });
    return out;
  }
  function child(n, seg) {
    var found = null;
    alts(n).forEach(function (a) {
      if (found) return;
      if (seg === "[]" && a.items) found = a.items;
      else if (seg !== "[]" && a.properties && a.properties[seg]) found = a.properties[seg];
    });
    return found;
  }
  function keys(n) {
    var out = [], seen = {};
    alts(n).forEach(function (a) {
      Object.keys(a.properties || {}).forEach(function (k) {
        if (!seen[k]) { seen[k] = true; out.push({ text: k, doc: deref(a.properties[k]).description || a.properties[k].description || "" }); }
      });
    });
    return out;
  }
  function enums(n) {
    var out = [];
    alts(n).forEach(function (a) { (a.enum || []).forEach(function (v) { if (out.indexOf(String(v)) < 0) out.push(String(v)); }); });
    return out;
  }
  // What a line says: its indentation, whether it starts a list item, the
  // column its content starts at, its key and whether its value is empty.
  function parse(line) {
    var m = /^( *)(- +)?(.*)$/.exec(line);
    var rest = m[3], km = /^([A-Za-z_$][\w.$-]*)\s*:(\s*)(.*)$/.exec(rest);
    return { ind: m[1].length, dash: !!m[2], cc: m[1].length + (m[2] ? m[2].length : 0), rest: rest,
      key: km ? km[1] : "", empty: km ? km[3].replace(/#.*$/, "").trim() === "" : false, blank: !rest.trim() || /^#/.test(rest.trim()) };
  }
  // The path (keys, and "[]" for a list's item) of the mapping the caret's
  // line belongs to.
  function pathAt(lines, row, cur) {
    var segs = [], need = cur.cc, inList = false;
    if (cur.dash) { segs.unshift("[]"); need = cur.ind; inList = true; }
    for (var r = row - 1; r >= 0; r--) {
      var l = parse(lines[r]);
      if (l.blank) continue;
      if (inList) {
        if (l.key && l.empty && l.cc <= need && !(l.dash && l.cc > need)) {
          segs.unshift(l.key);
          if (l.dash) { segs.unshift("[]"); need = l.ind; } else { need = l.cc; inList = false; }
        } else if (l.cc < need) return null;
        continue;
      }
      if (l.dash && l.cc === need) { segs.unshift("[]"); need = l.ind; inList = true; continue; }
      if (l.cc < need) {
        if (!l.key || !l.empty) return null;
        segs.unshift(l.key);
        if (l.dash) { segs.unshift("[]"); need = l.ind; inList = true; } else need = l.cc;
      }
    }
    return segs;
  }
  function suggestions() {
    if (!schema) return null;
    var pos = src.selectionStart, text = src.value;
    if (pos !== src.selectionEnd) return null;
    var before = text.slice(0, pos), row = before.split("\n").length - 1;
    var lines = text.split("\n"), lineStart = before.lastIndexOf("\n") + 1;
    var cur = parse(before.slice(lineStart));
    var path = pathAt(lines, row, cur);
    if (!path) return null;
    var node = schema;
    for (var i = 0; i < path.length && node; i++) node = child(node, path[i]);
    if (!node) return null;
    var km = /^([A-Za-z_$][\w.$-]*)\s*:\s*(\S*)$/.exec(cur.rest);
    if (km) {
      var v = child(node, km[1]);
      if (!v) return null;
      return { from: pos - km[2].length, items: enums(v).filter(function (e) { return e.indexOf(km[2]) === 0; }).map(function (e) { return { text: e, insert: e, doc: "" }; }) };
    }
    if (!/^[A-Za-z_$]?[\w.$-]*$/.test(cur.rest)) return null;
    return { from: pos - cur.rest.length, items: keys(node).filter(function (k) { return k.text.indexOf(cur.rest) === 0; }).map(function (k) { return { text: k.text, insert: k.text + ": ", doc: k.doc }; }) };
  }
  function update(force) {
    var s = suggestions();
    box.textContent = "";
    if (!s || !s.items.length || (!force && !/\S/.test(src.value.slice(s.from, src.selectionStart)) && !src.value.slice(s.from - 2, s.from).match(/: $/))) {
      box.hidden = true;
      return;
    }
    s.items.slice(0, 40).forEach(function (it) {
      var li = document.createElement("li");
      li.setAttribute("role", "option");
      var b = document.createElement("button");
      b.type = "button";
      b.className = "secondary";
      b.textContent = it.text;
      b.title = it.doc;
      b.setAttribute("data-complete", it.text);
      b.addEventListener("mousedown", function (e) { e.preventDefault(); });
      b.addEventListener("click", function () {
        var end = src.selectionStart;
        src.value = src.value.slice(0, s.from) + it.insert + src.value.slice(end);
        var at = s.from + it.insert.length;
        src.focus();
        src.setSelectionRange(at, at);
        src.dispatchEvent(new Event("input"));
      });
      li.appendChild(b);
      box.appendChild(li);
    });
    box.hidden = false;
  }
  src.addEventListener("input", function () { update(false); });
  src.addEventListener("click", function () { update(false); });
  src.addEventListener("keyup", function (e) { if (e.key.indexOf("Arrow") === 0) update(false); });
  src.addEventListener("keydown", function (e) {
    if (e.key === " " && e.ctrlKey) { e.preventDefault(); update(true); }
    if (e.key === "Escape") box.hidden = true;
  });
})();
