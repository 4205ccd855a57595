// Live page stream (a run's, a project's): render pushed partials, remember the
// last message id, reconnect with backoff and resume from it, and show the
// connection state apart from the run. A project's page has no timeline: it
// gets its parts again on every connect.
(function () {
  "use strict";
  const stream = document.querySelector("[data-ws-path]");
  if (!stream) return;
  const timeline = document.getElementById("bus-timeline");
  const state = document.getElementById("conn-state");
  const empty = document.getElementById("bus-empty");
  let lastId = parseInt(stream.dataset.lastId || "0", 10);
  let attempt = 0;
  let socket = null;

  function show(name) {
    state.textContent = name;
    state.className = "conn conn-" + name;
  }

  function parse(html) {
    const holder = document.createElement("template");
    holder.innerHTML = html.trim();
    return holder.content.firstElementChild;
  }

  function insert(msg) {
    if (!timeline || document.getElementById("msg-" + msg.id)) return;
    const node = parse(msg.html);
    // Keep id order even when a live message overtakes a slower commit.
    let before = null;
    for (const li of timeline.children) {
      if (parseInt(li.dataset.id, 10) > msg.id) { before = li; break; }
    }
    timeline.insertBefore(node, before);
    if (empty) empty.hidden = true;
  }

  // Replace each element by id with its fresh fragment (outerHTML). Applying the
  // same swap twice changes nothing; open <details> stay open, and a part the
  // user is typing in is left alone until they leave it.
  function applySwaps(swaps) {
    if (!swaps) return;
    for (const [id, html] of Object.entries(swaps)) {
      const old = document.getElementById(id);
      if (!old) continue;
      const fresh = parse(html);
      if (!fresh || old.outerHTML === fresh.outerHTML) continue;
      const active = document.activeElement;
      if (active && old.contains(active) && (active.tagName === "TEXTAREA" || active.tagName === "INPUT") && active.value) continue;
      for (const d of old.querySelectorAll("details[id]")) {
        const twin = fresh.querySelector("#" + CSS.escape(d.id));
        if (twin) twin.open = d.open;
      }
      old.replaceWith(fresh);
      if (window.htmx) window.htmx.process(fresh);
    }
    tick();
  }

  // The elapsed time of an unfinished run counts up between pushes.
  function tick() {
    const el = document.getElementById("run-elapsed");
    if (!el || el.dataset.end) return;
    const seconds = Math.max(0, Math.round((Date.now() - Date.parse(el.dataset.start)) / 1000));
    el.textContent = seconds + " s";
  }
  setInterval(tick, 1000);

  function connect() {
    show(attempt === 0 ? "connecting" : "reconnecting");
    const scheme = location.protocol === "https:" ? "wss://" : "ws://";
    socket = new WebSocket(scheme + location.host + stream.dataset.wsPath + "?after=" + lastId);
    socket.onopen = function () { attempt = 0; show("live"); };
    socket.onmessage = function (event) {
      const msg = JSON.parse(event.data);
      if (msg.kind === "message") {
        insert(msg);
        if (msg.id > lastId) lastId = msg.id;
        stream.dataset.lastId = String(lastId);
      }
      applySwaps(msg.swaps);
      document.dispatchEvent(new CustomEvent("artoo:" + msg.kind, { detail: msg }));
    };
    socket.onclose = function (event) {
      if ([4400, 4401, 4403, 4404].includes(event.code)) {
        show("refused");
        return;
      }
      attempt += 1;
      show("reconnecting");
      const delay = Math.min(10000, 250 * Math.pow(2, attempt)) * (0.75 + Math.random() / 2);
      setTimeout(connect, delay);
    };
  }

  window.artooLive = {
    close: function () { if (socket) socket.close(); },
    lastId: function () { return lastId; },
    state: function () { return state.textContent; },
  };
  connect();
})();
