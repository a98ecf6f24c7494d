// Duet's trace viewer: choose a step, filter the network, copy a request as
// curl, play the replay in step with the list. Without this script the page
// shows every step, line and request at once.
(function () {
  'use strict';
  var $ = function (s, r) { return (r || document).querySelector(s); };
  var $$ = function (s, r) { return Array.prototype.slice.call((r || document).querySelectorAll(s)); };
  var links = $$('#steps a.step');
  var details = $$('.step-detail');
  var selected = -1;
  document.documentElement.classList.add('js');

  function applyRows() {
    var q = ($('#net-filter') || {}).value || '';
    q = q.trim().toLowerCase();
    $$('#console tr.line').forEach(function (tr) {
      var s = Number(tr.dataset.step);
      tr.hidden = selected >= 0 && s > selected;
      tr.classList.toggle('own', s === selected);
    });
    $$('#network tr.req').forEach(function (tr) {
      var s = Number(tr.dataset.step);
      var match = !q || (tr.dataset.filter || '').toLowerCase().indexOf(q) >= 0;
      tr.hidden = (selected >= 0 && s > selected) || !match;
      tr.classList.toggle('own', s === selected);
    });
  }

  function select(i, fromReplay) {
    selected = i;
    links.forEach(function (a) { a.classList.toggle('selected', Number(a.dataset.step) === i); a.setAttribute('aria-current', Number(a.dataset.step) === i ? 'step' : 'false'); });
    details.forEach(function (d) { d.hidden = Number(d.dataset.step) !== i; });
    applyRows();
    if (!fromReplay) { seekStep(i); }
  }

  function stepStart(i) {
    var a = $('#step-link-' + i);
    return a ? Number(a.dataset.start) : 0;
  }
  function stepEnd(i) {
    var a = $('#step-link-' + i);
    return a ? Number(a.dataset.end) : 0;
  }

  links.forEach(function (a) {
    a.addEventListener('click', function (ev) { ev.preventDefault(); select(Number(a.dataset.step)); history.replaceState(null, '', '#step-' + a.dataset.step); });
  });
  var filter = $('#net-filter');
  if (filter) { filter.addEventListener('input', applyRows); }

  $$('button.copy-curl').forEach(function (b) {
    b.addEventListener('click', function () {
      var text = b.dataset.cmd;
      var done = function () { b.textContent = 'Copied'; setTimeout(function () { b.textContent = 'Copy as curl'; }, 1500); };
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(text).then(done, function () { fallback(text); done(); });
      } else { fallback(text); done(); }
    });
  });
  function fallback(text) {
    var t = document.createElement('textarea');
    t.value = text; t.setAttribute('readonly', ''); t.className = 'offscreen';
    document.body.appendChild(t); t.select();
    try { document.execCommand('copy'); } catch (e) { /* nothing more to try */ }
    document.body.removeChild(t);
  }

  // The replay.
  var frames = $$('#frames li').map(function (li) { return { at: Number(li.dataset.at), src: li.dataset.src }; });
  var img = $('#replay-frame'), scrub = $('#scrub'), play = $('#play'), out = $('#replay-time'), stepOut = $('#replay-step');
  var cur = 0, timer = null;
  // show shows frame k, as the frame of step (by default, the step that
  // was running when the page showed it), and returns the step.
  function show(k, step) {
    if (!frames.length) { return; }
    cur = Math.max(0, Math.min(frames.length - 1, k));
    img.src = frames[cur].src;
    scrub.value = String(cur);
    out.textContent = frames[cur].at + ' ms';
    var at = frames[cur].at;
    if (step === undefined) {
      step = -1;
      links.forEach(function (a) {
        var on = Number(a.dataset.start) <= at;
        if (on) { step = Number(a.dataset.step); }
      });
    }
    links.forEach(function (a) { a.classList.toggle('playing', Number(a.dataset.step) === step); });
    stepOut.textContent = step >= 0 ? 'step ' + (step + 1) : 'before the first step';
    return step;
  }
  // seekStep shows the replay where step i begins: its first frame, else
  // (the page did not change during it) the last frame before it — as
  // the frame of step i, so the replay and the list say the same step.
  function seekStep(i) {
    if (!frames.length) { return; }
    var start = stepStart(i), end = Math.max(stepEnd(i), start), k = -1, j;
    for (j = 0; j < frames.length && k < 0; j++) { if (frames[j].at >= start && frames[j].at < end) { k = j; } }
    if (k < 0) { k = 0; for (j = 0; j < frames.length; j++) { if (frames[j].at <= start) { k = j; } } }
    show(k, i);
  }
  function stop() { if (timer) { clearTimeout(timer); timer = null; } if (play) { play.textContent = 'Play'; } }
  function tick() {
    if (cur >= frames.length - 1) { stop(); return; }
    var wait = Math.min(Math.max(frames[cur + 1].at - frames[cur].at, 30), 2000);
    timer = setTimeout(function () { var s = show(cur + 1); if (s >= 0 && s !== selected) { select(s, true); } tick(); }, wait);
  }
  if (play) {
    play.addEventListener('click', function () {
      if (timer) { stop(); return; }
      if (cur >= frames.length - 1) { show(0); }
      play.textContent = 'Pause'; tick();
    });
    scrub.addEventListener('input', function () { stop(); var s = show(Number(scrub.value)); if (s >= 0) { select(s, true); } });
  }

  // The step shown first: the one in the address, else the first that
  // failed, else the last.
  var first = -1;
  var m = /^#step-(\d+)$/.exec(location.hash);
  if (m && $('#step-link-' + m[1])) { first = Number(m[1]); }
  if (first < 0) {
    var bad = links.filter(function (a) { return a.classList.contains('failed') || a.classList.contains('error'); })[0];
    first = bad ? Number(bad.dataset.step) : (links.length ? Number(links[links.length - 1].dataset.step) : -1);
  }
  if (first >= 0) { select(first); } else { applyRows(); }
}());
