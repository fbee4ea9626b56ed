// sbpy console: the live view of the server's topologies (plain JavaScript, no build step).
//
// Data comes from /api/v1/console/ (see sbpy.server.console): the live feed is read as Server-Sent
// Events through fetch() so that a bearer token can be sent; "topologies" events fill the list,
// "topology" events redraw the graph, the details panel, the queries and the drops. Buttons post BQL
// to SensorBee's POST /api/v1/topologies/{name}/queries. Every value is written with textContent.
"use strict";
(() => {
  const API = "api/v1";
  const SVGNS = "http://www.w3.org/2000/svg";
  const BOX = { w: 210, h: 96, gapX: 70, gapY: 24, pad: 16 };
  const params = new URLSearchParams(location.search);
  const INTERVAL = params.get("interval") || "1";
  const ui = {
    topology: decodeURIComponent(location.hash.slice(1)) || null,
    snapshot: null, selected: null, explain: null, controller: null,
    token: sessionStorage.getItem("sbpy-token"),
  };
  const $ = (id) => document.getElementById(id);

  // ------------------------------------------------------------ helpers

  function el(tag, attrs, text) {
    const node = tag.startsWith("svg:") ? document.createElementNS(SVGNS, tag.slice(4)) : document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) if (v !== null && v !== undefined) node.setAttribute(k, v);
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }
  const count = (n) => (n === null || n === undefined ? "–" : n.toLocaleString("en-US"));
  function rate(r) {
    if (r === null || r === undefined) return "–";
    return (r >= 100 ? r.toFixed(0) : r >= 10 ? r.toFixed(1) : r.toFixed(2)) + "/s";
  }
  function headers(extra) {
    const h = Object.assign({}, extra || {});
    if (ui.token) h.Authorization = "Bearer " + ui.token;
    return h;
  }
  function setConnection(state) {
    const c = $("connection");
    c.dataset.state = state;
    c.textContent = state;
  }
  function say(text, isError) {
    const m = $("message");
    m.hidden = !text;
    m.textContent = text || "";
    m.classList.toggle("error", Boolean(isError));
  }

  // ------------------------------------------------------------ the live feed (SSE over fetch)

  async function connect() {
    if (ui.controller) ui.controller.abort();
    const controller = new AbortController();
    ui.controller = controller;
    const query = new URLSearchParams({ interval: INTERVAL });
    if (ui.topology) query.set("topology", ui.topology);
    setConnection("connecting");
    try {
      const res = await fetch(`${API}/console/events?${query}`, {
        headers: headers({ Accept: "text/event-stream" }), signal: controller.signal, cache: "no-store",
      });
      if (res.status === 401) { askToken(); return; }
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      setConnection("live");
      const reader = res.body.getReader();
      const decoder = new TextDecoder();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true });
        let cut;
        while ((cut = buffer.indexOf("\n\n")) >= 0) {
          dispatch(buffer.slice(0, cut));
          buffer = buffer.slice(cut + 2);
        }
      }
    } catch (err) {
      if (controller.signal.aborted) return;
    }
    if (controller.signal.aborted) return;
    setConnection("reconnecting");
    setTimeout(() => { if (ui.controller === controller) connect(); }, 2000);
  }

  function dispatch(block) {
    let event = "message";
    let data = "";
    for (const line of block.split("\n")) {
      if (line.startsWith("event:")) event = line.slice(6).trim();
      else if (line.startsWith("data:")) data += line.slice(5).trim();
    }
    if (!data) return;
    const payload = JSON.parse(data);
    if (event === "topologies") showTopologies(payload.topologies);
    else if (event === "topology") showTopology(payload);
    else if (event === "gone") showGone(payload.topology);
  }

  function askToken() {
    setConnection("unauthorized");
    $("token-form").hidden = false;
  }

  // ------------------------------------------------------------ topologies

  function select(name) {
    if (name === ui.topology) return;
    ui.topology = name;
    ui.selected = null;
    ui.explain = null;
    ui.snapshot = null;
    history.replaceState(null, "", "#" + encodeURIComponent(name));
    connect();
  }

  function showTopologies(list) {
    const ul = $("topologies");
    ul.replaceChildren();
    if (!list.length) ul.append(el("li", { class: "muted" }, "none yet"));
    for (const t of list) {
      const button = el("button", { type: "button", "data-topology": t.name,
        "aria-current": t.name === ui.topology ? "true" : "false" }, t.name);
      const states = Object.entries(t.states).map(([s, n]) => `${n} ${s}`).join(", ");
      button.append(el("small", {}, `${t.nodes} nodes${states ? " · " + states : ""}`));
      button.addEventListener("click", () => select(t.name));
      const li = el("li");
      li.append(button);
      ul.append(li);
    }
    if (!ui.topology && list.length) select(list[0].name);
  }

  function showGone(name) {
    $("topology-title").textContent = `${name} (does not exist)`;
    $("graph").replaceChildren();
    $("details").replaceChildren(el("p", { class: "muted" }, `The topology ${name} does not exist.`));
  }

  function showTopology(snap) {
    ui.snapshot = snap;
    $("topology-title").textContent = snap.topology;
    const running = snap.nodes.filter((n) => n.state === "running").length;
    $("graph-summary").textContent = `${snap.nodes.length} nodes, ${running} running, ${snap.queries.length} queries`;
    const sources = snap.nodes.filter((n) => n.kind === "source");
    $("pause-all").disabled = !sources.some((n) => n.state === "running");
    $("resume-all").disabled = !sources.some((n) => n.state === "paused");
    drawGraph(snap);
    showDetails();
    showQueries(snap.queries);
    showDrops(snap);
  }

  // ------------------------------------------------------------ the graph

  function layout(nodes) {
    // columns by depth (a node one column right of its deepest input), rows by the mean row of inputs
    const byName = new Map(nodes.map((n) => [n.name, n]));
    const depth = new Map();
    const depthOf = (n, seen) => {
      if (depth.has(n.name)) return depth.get(n.name);
      if (seen.has(n.name)) return 0;
      seen.add(n.name);
      let d = 0;
      for (const input of n.inputs) if (byName.has(input)) d = Math.max(d, depthOf(byName.get(input), seen) + 1);
      depth.set(n.name, d);
      return d;
    };
    nodes.forEach((n) => depthOf(n, new Set()));
    const columns = [];
    nodes.forEach((n, i) => { (columns[depth.get(n.name)] ||= []).push({ node: n, order: i }); });
    const row = new Map();
    const at = new Map();
    columns.forEach((column, c) => {
      for (const item of column) {
        const rows = item.node.inputs.filter((i) => row.has(i)).map((i) => row.get(i));
        item.key = rows.length ? rows.reduce((a, b) => a + b, 0) / rows.length : item.order;
      }
      column.sort((a, b) => a.key - b.key || a.order - b.order);
      column.forEach((item, r) => {
        row.set(item.node.name, r);
        at.set(item.node.name, { x: BOX.pad + c * (BOX.w + BOX.gapX), y: BOX.pad + r * (BOX.h + BOX.gapY) });
      });
    });
    const width = BOX.pad * 2 + Math.max(1, columns.length) * (BOX.w + BOX.gapX) - BOX.gapX;
    const height = BOX.pad * 2 + Math.max(1, ...columns.map((c) => c.length)) * (BOX.h + BOX.gapY) - BOX.gapY;
    return { at, width, height };
  }

  function drawGraph(snap) {
    const svg = $("graph");
    const { at, width, height } = layout(snap.nodes);
    svg.setAttribute("width", width);
    svg.setAttribute("height", height);
    svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
    const defs = el("svg:defs");
    const marker = el("svg:marker", { id: "arrow", viewBox: "0 0 10 10", refX: "9", refY: "5",
      markerWidth: "7", markerHeight: "7", orient: "auto-start-reverse" });
    marker.append(el("svg:path", { d: "M0,0 L10,5 L0,10 z", fill: "#a9b1c2" }));
    defs.append(marker);
    const parts = [defs];
    const byName = new Map(snap.nodes.map((n) => [n.name, n]));
    for (const e of snap.edges) {
      const a = at.get(e.sender), b = at.get(e.receiver);
      if (!a || !b) continue;
      const x1 = a.x + BOX.w, y1 = a.y + BOX.h / 2, x2 = b.x - 2, y2 = b.y + BOX.h / 2, mid = (x1 + x2) / 2;
      const receiver = byName.get(e.receiver);
      const active = receiver && receiver.rates && receiver.rates.in > 0;
      const g = el("svg:g", { class: "edge" + (active ? " active" : ""), "data-edge": `${e.sender}->${e.receiver}` });
      g.append(el("svg:path", { d: `M${x1},${y1} C${mid},${y1} ${mid},${y2} ${x2},${y2}` }));
      g.append(el("svg:text", { x: mid, y: (y1 + y2) / 2 - 6, "data-field": "received" }, count(e.received)));
      parts.push(g);
    }
    for (const n of snap.nodes) parts.push(drawNode(n, at.get(n.name)));
    svg.replaceChildren(...parts);
  }

  function drawNode(n, p) {
    const classes = ["node", n.kind];
    if (n.name === ui.selected) classes.push("selected");
    if (n.error || n.errors > 0) classes.push("failed");
    const g = el("svg:g", { class: classes.join(" "), transform: `translate(${p.x},${p.y})`,
      "data-node": n.name, "data-kind": n.kind, "data-state": n.state, tabindex: "0" });
    g.append(el("svg:rect", { class: "box", width: BOX.w, height: BOX.h }));
    g.append(el("svg:text", { class: "name", x: 10, y: 19 }, n.name));
    g.append(el("svg:text", { class: "kind", x: 10, y: 34 }, n.kind === "stream" ? "stream" : `${n.kind} · ${n.type}`));
    g.append(el("svg:rect", { class: `state state-${n.state}`, x: BOX.w - 74, y: 7, width: 66, height: 16 }));
    g.append(el("svg:text", { class: "state", x: BOX.w - 41, y: 19, "data-field": "state" }, n.state));
    const line = (y, label, field, value) => {
      const t = el("svg:text", { x: 10, y });
      t.append(el("svg:tspan", { class: "kind" }, label + " "));
      t.append(el("svg:tspan", { "data-field": field }, value));
      return t;
    };
    const r = n.rates || {};
    if (n.in !== null) g.append(line(54, "in", "in-rate", `${rate(r.in)} (${count(n.in)})`));
    if (n.out !== null) g.append(line(n.in !== null ? 71 : 54, "out", "out-rate", `${rate(r.out)} (${count(n.out)})`));
    const trouble = [];
    if (n.dropped !== null) trouble.push(`dropped ${count(n.dropped)}`);
    if (n.errors !== null) trouble.push(`errors ${count(n.errors)}`);
    const t = el("svg:text", { x: 10, y: 88, class: n.dropped > 0 || n.errors > 0 || n.error ? "warn" : "kind",
      "data-field": "trouble" }, (n.error ? "⚠ " : "") + trouble.join(" · "));
    g.append(t);
    g.addEventListener("click", () => selectNode(n.name));
    g.addEventListener("keydown", (ev) => { if (ev.key === "Enter") selectNode(n.name); });
    return g;
  }

  // ------------------------------------------------------------ details of the selected node

  function selectNode(name) {
    ui.selected = name;
    ui.explain = null;
    delete $("details").dataset.node;
    if (ui.snapshot) drawGraph(ui.snapshot);
    showDetails();
    const node = ui.snapshot && ui.snapshot.nodes.find((n) => n.name === name);
    if (node && node.kind === "stream") loadExplain(name);
  }

  async function loadExplain(name) {
    const topology = ui.topology;
    const url = `${API}/console/topologies/${encodeURIComponent(topology)}/streams/${encodeURIComponent(name)}/explain`;
    let result;
    try {
      const res = await fetch(url, { headers: headers() });
      const body = await res.json();
      result = res.ok ? body : { error: (body.error && body.error.message) || `HTTP ${res.status}` };
    } catch (err) {
      result = { error: String(err) };
    }
    const node = ui.snapshot && ui.snapshot.nodes.find((n) => n.name === name);
    if (ui.topology === topology && ui.selected === name && node) {
      ui.explain = result;
      showPlan(node);
    }
  }

  function showDetails() {
    // the node's facts are redrawn at every step; its EXPLAIN only when loaded (text stays selectable)
    const box = $("details");
    const n = ui.snapshot && ui.selected && ui.snapshot.nodes.find((x) => x.name === ui.selected);
    if (!n) {
      delete box.dataset.node;
      box.replaceChildren(el("p", { class: "muted" }, "Select a node of the graph."));
      return;
    }
    let info = $("node-info");
    let plan = $("node-plan");
    if (!info || box.dataset.node !== n.name) {
      info = el("div", { id: "node-info" });
      plan = el("div", { id: "node-plan" });
      box.dataset.node = n.name;
      box.replaceChildren(info, plan);
      showPlan(n);
    }
    const r = n.rates || {};
    const dl = el("dl");
    const row = (k, v, field) => { dl.append(el("dt", {}, k), el("dd", field ? { "data-field": field } : {}, v)); };
    row("kind", n.kind === "stream" ? "stream" : `${n.kind} (${n.type})`);
    row("state", n.state, "state");
    if (n.in !== null) row("tuples in", `${count(n.in)} · ${rate(r.in)}`, "in");
    if (n.out !== null) row("tuples out", `${count(n.out)} · ${rate(r.out)}`, "out");
    if (n.dropped !== null) row("dropped", `${count(n.dropped)} · ${rate(r.dropped)}`, "dropped");
    if (n.errors !== null) row("errors", count(n.errors), "errors");
    if (n.inputs.length) row("reads", n.inputs.join(", "));
    const parts = [el("h2", {}, n.name), dl];
    if (n.error) parts.push(el("p", { class: "node-error", "data-field": "error" }, n.error));
    if (n.kind === "source") parts.push(sourceButtons(n));
    info.replaceChildren(...parts);
  }

  function showPlan(n) {
    const plan = $("node-plan");
    if (!plan || n.kind !== "stream") {
      if (plan) plan.replaceChildren();
      return;
    }
    const e = ui.explain;
    const parts = [el("h2", {}, "EXPLAIN")];
    if (!e) parts.push(el("p", { class: "muted" }, "loading…"));
    else if (e.error) parts.push(el("p", { class: "node-error" }, e.error));
    else {
      parts.push(el("pre", { "data-field": "statement" }, e.statement));
      parts.push(el("p", { class: "muted" }, e.mode === "running"
        ? `plan of the running query ${e.query}` : "no query reads this stream: the plan EXPLAIN CREATE STREAM gives"));
      parts.push(el("pre", { "data-field": "explain" }, e.plan));
      const again = el("button", { type: "button" }, "Refresh plan");
      again.addEventListener("click", () => loadExplain(n.name));
      parts.push(again);
    }
    plan.replaceChildren(...parts);
  }

  function sourceButtons(n) {
    const div = el("div", { class: "buttons" });
    const add = (label, verb, enabled) => {
      const b = el("button", { type: "button", "data-action": verb.toLowerCase() }, label);
      b.disabled = !enabled;
      b.addEventListener("click", () => runBQL(`${verb} SOURCE ${n.name};`));
      div.append(b);
    };
    add("Pause", "PAUSE", n.state === "running");
    add("Resume", "RESUME", n.state === "paused");
    add("Rewind", "REWIND", n.rewindable && n.state !== "stopped");
    return div;
  }

  async function runBQL(statements) {
    const url = `${API}/topologies/${encodeURIComponent(ui.topology)}/queries`;
    try {
      const res = await fetch(url, { method: "POST", headers: headers({ "Content-Type": "application/json" }),
        body: JSON.stringify({ queries: statements }) });
      const body = await res.json();
      if (res.ok) say(`done: ${statements}`, false);
      else say(`${statements} failed: ${(body.error && body.error.message) || res.status}`, true);
    } catch (err) {
      say(`${statements} failed: ${err}`, true);
    }
  }

  function allSources(verb, state) {
    const names = ((ui.snapshot && ui.snapshot.nodes) || [])
      .filter((n) => n.kind === "source" && n.state === state).map((n) => `${verb} SOURCE ${n.name};`);
    if (names.length) runBQL(names.join(" "));
  }

  // ------------------------------------------------------------ queries and drops

  function showQueries(queries) {
    const body = $("queries").tBodies[0];
    body.replaceChildren();
    for (const q of queries) {
      const tr = el("tr", { "data-query": q.id, class: q.error ? "failed" : null });
      tr.append(el("td", {}, q.id), el("td", {}, q.kind), el("td", {}, q.nodes.join(" → ")),
        el("td", {}, q.execution || "–"), el("td", {}, q.running ? "running" : "ended"),
        el("td", {}, q.last_batch === null ? "–" : q.last_batch), el("td", {}, q.restarts),
        el("td", { class: "error" }, q.error || ""));
      body.append(tr);
    }
  }

  function showDrops(snap) {
    $("drops-seen").textContent = snap.drops_seen ? `(${snap.drops_seen} since this page opened)` : "";
    const body = $("drops").tBodies[0];
    body.replaceChildren();
    for (const d of snap.recent_drops.slice().reverse()) {
      const tr = el("tr", { "data-drop": d.node });
      tr.append(el("td", {}, d.at.slice(11, 23)), el("td", {}, `${d.node_type} ${d.node}`), el("td", {}, d.event),
        el("td", { class: "error" }, d.error || ""), el("td", { class: "data" }, d.data));
      body.append(tr);
    }
  }

  // ------------------------------------------------------------ start

  $("token-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    ui.token = $("token").value.trim();
    sessionStorage.setItem("sbpy-token", ui.token);
    $("token-form").hidden = true;
    connect();
  });
  $("pause-all").addEventListener("click", () => allSources("PAUSE", "running"));
  $("resume-all").addEventListener("click", () => allSources("RESUME", "paused"));
  connect();
})();
