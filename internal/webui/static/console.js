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
