// Duet console: the recorder's live view (record.html). The page's frames
// come as server-sent events; the tester's mouse and keys go back to the
// server's browser in order, one request at a time; the steps and their
// YAML follow what the server recorded.
(function () {
  "use strict";
  var root = document.getElementById("recorder");
  if (!root) return;
  var view = document.getElementById("rec-view");
  var img = document.getElementById("rec-frame");
  var status = document.getElementById("rec-status");
  var list = document.getElementById("rec-steps");
  var yaml = document.getElementById("rec-yaml");
  var keyIn = document.getElementById("rec-key");
  var titleIn = document.getElementById("rec-title");
  var errBox = document.getElementById("rec-error");
  var modeBox = document.getElementById("rec-mode");
  var csrf = root.getAttribute("data-csrf");
  var actURL = root.getAttribute("data-act");
  var frameW = +root.getAttribute("data-w") || 1280;
  var frameH = +root.getAttribute("data-h") || 720;
  var edited = false; // the tester edited the YAML: recording no longer rewrites it
  var steps = [];
  var pick = ""; // text, visible: the next click adds an assertion

  // ---- actions, in order ----
  var queue = [];
  var busy = false;
  var pending = []; // input events not sent yet
  function act(body) {
    return new Promise(function (resolve) {
      queue.push({ body: body, done: resolve });
      pump();
    });
  }
  function pump() {
    if (busy || !queue.length) return;
    busy = true;
    var item = queue.shift();
    post(actURL, item.body).then(function (res) {
      if (!res.ok) showError(errorText(res.j, "the action failed"));
      item.done(res);
    }, function (e) {
      showError("the server cannot be reached: " + e);
      item.done({ ok: false });
    }).then(function () { busy = false; pump(); });
  }
  // post sends body as JSON to url with the page's CSRF token; it resolves
  // to {ok, j}: whether the status was a success, and the answer's JSON
  // ({} when it is not JSON).
  function post(url, body) {
    return fetch(url, {
      method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf },
      body: JSON.stringify(body)
    }).then(function (r) {
      return r.json().then(function (j) { return { ok: r.ok, j: j }; }, function () { return { ok: r.ok, j: {} }; });
    });
  }
  // errorText is "CODE: message" of an error answer j, or fallback.
  function errorText(j, fallback) {
    return (j.error && (j.error.code + ": " + j.error.message)) || fallback;
  }
  function flush() {
    if (!pending.length) return;
    var evs = pending;
    pending = [];
    act({ op: "input", events: evs });
  }
  setInterval(flush, 60);
  function input(ev, now) {
    pending.push(ev);
    if (now || pending.length >= 100) flush();
  }
  function showError(msg) {
    errBox.textContent = msg;
    errBox.hidden = !msg;
  }

  // ---- the view ----
  function point(e) {
    var r = img.getBoundingClientRect();
    return { x: Math.round((e.clientX - r.left) / r.width * frameW), y: Math.round((e.clientY - r.top) / r.height * frameH) };
  }
  function mods(e) {
    return (e.altKey ? 1 : 0) | (e.ctrlKey ? 2 : 0) | (e.metaKey ? 4 : 0) | (e.shiftKey ? 8 : 0);
  }
  var buttons = ["left", "middle", "right"];
  // mouseButton is the input event of a press or release (type) of e's
  // button at the frame's point p.
  function mouseButton(type, e, p) {
    return { kind: "mouse", type: type, x: p.x, y: p.y, button: buttons[e.button] || "left", clickCount: e.detail || 1, modifiers: mods(e) };
  }
  var down = false;
  view.addEventListener("mousedown", function (e) {
    e.preventDefault();
    view.focus();
    var p = point(e);
    if (pick) {
      var a = pick;
      setPick("");
      act({ op: "pick", x: p.x, y: p.y, assert: a });
      return;
    }
    down = true;
    input({ kind: "mouse", type: "moved", x: p.x, y: p.y });
    input(mouseButton("pressed", e, p), true);
  });
  view.addEventListener("mouseup", function (e) {
    if (!down) return;
    down = false;
    var p = point(e);
    input(mouseButton("released", e, p), true);
  });
  view.addEventListener("mousemove", function (e) {
    if (!down) return; // a drag: hovering alone is not sent
    var p = point(e);
    input({ kind: "mouse", type: "moved", x: p.x, y: p.y, button: "left" });
  });
  view.addEventListener("wheel", function (e) {
    e.preventDefault();
    var p = point(e);
    input({ kind: "mouse", type: "wheel", x: p.x, y: p.y, deltaX: e.deltaX, deltaY: e.deltaY });
  }, { passive: false });
  view.addEventListener("contextmenu", function (e) { e.preventDefault(); });
  view.addEventListener("keydown", function (e) {
    if (e.key === "Escape" && e.shiftKey) return; // Shift+Escape leaves the view (the keys go to the page otherwise)
    e.preventDefault();
    var text = e.key.length === 1 && !e.ctrlKey && !e.metaKey ? e.key : (e.key === "Enter" ? "\r" : "");
    input({ kind: "key", type: "down", key: e.key, code: e.code, text: text, modifiers: mods(e) });
  });
  view.addEventListener("keyup", function (e) {
    if (e.key === "Escape" && e.shiftKey) { document.getElementById("rec-url").focus(); return; }
    e.preventDefault();
    input({ kind: "key", type: "up", key: e.key, code: e.code, modifiers: mods(e) });
  });
  view.addEventListener("paste", function (e) {
    e.preventDefault();
    var t = (e.clipboardData && e.clipboardData.getData("text")) || "";
    for (var i = 0; i < t.length && i < 500; i++) input({ kind: "key", type: "char", key: t[i], text: t[i] });
  });

  // ---- assertions and open ----
  function setPick(p) {
    pick = p;
    view.classList.toggle("picking", !!p);
    modeBox.textContent = p ? "Click the element to assert " + p + " on." : "";
    document.querySelectorAll("[data-pick]").forEach(function (b) { b.setAttribute("aria-pressed", String(b.getAttribute("data-pick") === p)); });
  }
  document.querySelectorAll("[data-pick]").forEach(function (b) {
    b.addEventListener("click", function () { setPick(pick === b.getAttribute("data-pick") ? "" : b.getAttribute("data-pick")); });
  });
  document.getElementById("rec-assert-url").addEventListener("click", function () { act({ op: "assertURL" }); });
  document.getElementById("rec-open-form").addEventListener("submit", function (e) {
    e.preventDefault();
    act({ op: "open", url: document.getElementById("rec-url").value });
  });

  // ---- steps and YAML ----
  yaml.addEventListener("input", function () { edited = true; });
  function render() {
    var k = keyIn.value, t = titleIn.value;
    if (!edited) {
      var out = "key: " + JSON.stringify(k) + "\ntitle: " + JSON.stringify(t) + "\nsteps:\n";
      steps.forEach(function (s) { out += "  - " + s.yaml + "\n"; });
      yaml.value = out;
    }
    list.textContent = "";
    steps.forEach(function (s, i) {
      var li = document.createElement("li");
      var code = document.createElement("code");
      code.textContent = s.yaml;
      li.appendChild(code);
      if (s.hasValue) {
        var v = document.createElement("input");
        v.value = s.value;
        v.setAttribute("aria-label", "Value of step " + (i + 1));
        v.addEventListener("change", function () { act({ op: "setValue", step: i + 1, value: v.value }); });
        li.appendChild(document.createTextNode(" "));
        li.appendChild(v);
      }
      stepButton(li, "Try", i, function () { tryout(i + 1, i + 1); });
      stepButton(li, "Delete", i, function () { act({ op: "delete", step: i + 1 }); });
      list.appendChild(li);
    });
  }
  // stepButton appends to li a link-styled button named label for step i.
  function stepButton(li, label, i, onClick) {
    var b = document.createElement("button");
    b.type = "button";
    b.className = "link";
    b.textContent = label;
    b.setAttribute("aria-label", label + " step " + (i + 1));
    b.addEventListener("click", onClick);
    li.appendChild(document.createTextNode(" "));
    li.appendChild(b);
  }
  keyIn.addEventListener("input", render);

  // ---- trying steps ----
  var tryURL = root.getAttribute("data-try");
  var tryBox = document.getElementById("rec-try-result");
  var tryStatus = document.getElementById("rec-try-status");
  var tryList = document.getElementById("rec-try-steps");
  var tryVars = document.getElementById("rec-try-vars");
  var tryShot = document.getElementById("rec-try-shot");
  var tryButton = document.getElementById("rec-try-button");
  var tries = 0;
  function tryout(from, to) {
    flush();
    tryButton.disabled = true;
    tryBox.hidden = false;
    tryStatus.textContent = "Trying step " + from + (to > from ? " to " + to : "") + "…";
    tryList.textContent = "";
    // The source the tester sees: the recorded steps, or their edit.
    var src = yaml.value.replace(/^key: .*$/m, "key: " + JSON.stringify(keyIn.value || "tried")).replace(/^title: .*$/m, "title: " + JSON.stringify(titleIn.value || "Tried"));
    post(tryURL, { source: src, from: from, to: to }).then(function (res) {
      var j = res.j;
      if (!res.ok) {
        tryStatus.textContent = "Not tried: " + errorText(j, "the server refused");
        tryShot.hidden = true;
        return;
      }
      tryStatus.textContent = j.status === "passed" ? "Passed." : "Failed: " + j.status + ".";
      (j.results || []).forEach(function (r, i) {
        var li = document.createElement("li");
        li.value = from + i;
        li.setAttribute("data-status", r.status);
        var text = r.kind + ": " + r.status;
        if (r.errorCode) text += " — " + r.errorCode + ": " + (r.errorMessage || "");
        if (r.savedAs) text += " (saved " + r.savedAs + ")";
        li.textContent = text;
        tryList.appendChild(li);
      });
      tryVars.textContent = JSON.stringify(j.vars || {}, null, 2);
      if (j.screenshot) { tryShot.src = j.screenshot; tryShot.hidden = false; } else { tryShot.hidden = true; }
    }, function (e) {
      tryStatus.textContent = "The server cannot be reached: " + e;
    }).then(function () {
      tryButton.disabled = false;
      tries++;
      root.setAttribute("data-tried", String(tries));
    });
  }
  document.getElementById("rec-try-form").addEventListener("submit", function (e) {
    e.preventDefault();
    var from = +document.getElementById("rec-try-from").value || 1;
    var to = +document.getElementById("rec-try-to").value || from;
    tryout(from, to);
  });
  titleIn.addEventListener("input", render);

  // ---- the stream ----
  var es = new EventSource(root.getAttribute("data-stream"));
  var frames = 0;
  es.addEventListener("frame", function (ev) {
    var f = JSON.parse(ev.data);
    if (f.w && f.h) { frameW = f.w; frameH = f.h; }
    img.src = f.src;
    frames++;
    root.setAttribute("data-frames", String(frames));
    status.textContent = "Live.";
  });
  es.addEventListener("state", function (ev) {
    var st = JSON.parse(ev.data);
    steps = st.steps || [];
    root.setAttribute("data-version", String(st.version));
    if (st.error) showError(st.error);
    render();
  });
  es.addEventListener("end", function () {
    es.close();
    status.textContent = "The session has closed (idle, or closed). Save what was recorded, or start again from the task.";
    root.setAttribute("data-ended", "true");
  });
})();
