// Live run list: replace a row when its run changes, add a new run's row at its
// place, count up the duration of unfinished runs, reconnect with backoff and
// ask for the rows changed since the last one received.
(function () {
  "use strict";
  const table = document.getElementById("run-table");
  const rows = document.getElementById("run-rows");
  if (!table || !rows) return;
  const state = document.getElementById("list-conn");
  let since = table.dataset.since || "";
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

  // Rows are newest first: a new row goes before the first older one.
  function insert(node) {
    const created = Date.parse(node.dataset.created);
    let before = null;
    for (const tr of rows.querySelectorAll("tr[data-created]")) {
      if (Date.parse(tr.dataset.created) < created) { before = tr; break; }
    }
    rows.insertBefore(node, before);
  }

  function apply(msg) {
    const fresh = parse(msg.html);
    if (!fresh) return;
    const old = document.getElementById(msg.id);
    if (old) {
      if (old.outerHTML !== fresh.outerHTML) old.replaceWith(fresh);
    } else if (!table.dataset.status || table.dataset.status === msg.status) {
      insert(fresh);
    }
    tick();
  }

  function tick() {
    for (const el of rows.querySelectorAll(".run-duration[data-start]:not([data-end])")) {
      const seconds = Math.max(0, Math.round((Date.now() - Date.parse(el.dataset.start)) / 1000));
      el.textContent = seconds + " s";
    }
  }
  setInterval(tick, 1000);

  function connect() {
    show(attempt === 0 ? "connecting" : "reconnecting");
    const scheme = location.protocol === "https:" ? "wss://" : "ws://";
    socket = new WebSocket(scheme + location.host + table.dataset.wsPath + "?since=" + since);
    socket.onopen = function () { attempt = 0; show("live"); };
    socket.onmessage = function (event) {
      const msg = JSON.parse(event.data);
      if (msg.kind !== "row") return;
      apply(msg);
      if (!since || msg.at > Number(since)) since = String(msg.at);
      document.dispatchEvent(new CustomEvent("artoo:row", { detail: msg }));
    };
    socket.onclose = function (event) {
      if ([4400, 4401, 4403].includes(event.code)) {
        show("refused");
        return;
      }
      attempt += 1;
      show("reconnecting");
      const delay = Math.min(10000, 250 * Math.pow(2, attempt)) * (0.75 + Math.random() / 2);
      setTimeout(connect, delay);
    };
  }

  window.artooRuns = {
    close: function () { if (socket) socket.close(); },
    state: function () { return state.textContent; },
  };
  connect();
})();
