// Live run stream: render pushed partials, remember the last id, reconnect with
// backoff and resume from it, and show the connection state apart from the run.
(function () {
  "use strict";
  const timeline = document.getElementById("bus-timeline");
  if (!timeline) return;
  const state = document.getElementById("conn-state");
  const empty = document.getElementById("bus-empty");
  let lastId = parseInt(timeline.dataset.lastId || "0", 10);
  let attempt = 0;
  let socket = null;

  function show(name) {
    state.textContent = name;
    state.className = "conn conn-" + name;
  }

  function insert(msg) {
    if (document.getElementById("msg-" + msg.id)) return;
    const holder = document.createElement("template");
    holder.innerHTML = msg.html.trim();
    const node = holder.content.firstElementChild;
    // Keep id order even when a live message overtakes a slower commit.
    let before = null;
    for (const li of timeline.children) {
      if (parseInt(li.dataset.id, 10) > msg.id) { before = li; break; }
    }
    timeline.insertBefore(node, before);
    if (empty) empty.hidden = true;
  }

  function connect() {
    show(attempt === 0 ? "connecting" : "reconnecting");
    const scheme = location.protocol === "https:" ? "wss://" : "ws://";
    socket = new WebSocket(scheme + location.host + timeline.dataset.wsPath + "?after=" + lastId);
    socket.onopen = function () { attempt = 0; show("live"); };
    socket.onmessage = function (event) {
      const msg = JSON.parse(event.data);
      if (msg.kind !== "message") return;
      insert(msg);
      if (msg.id > lastId) lastId = msg.id;
      timeline.dataset.lastId = String(lastId);
      document.dispatchEvent(new CustomEvent("artoo:message", { detail: msg }));
    };
    socket.onclose = function (event) {
      if (event.code === 4401 || event.code === 4403 || event.code === 4400) {
        show("refused");
        return;
      }
      attempt += 1;
      show("reconnecting");
      const delay = Math.min(10000, 250 * Math.pow(2, attempt)) * (0.75 + Math.random() / 2);
      setTimeout(connect, delay);
    };
  }

  window.artooLive = { close: function () { if (socket) socket.close(); }, lastId: function () { return lastId; } };
  connect();
})();
