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
