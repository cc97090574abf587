// tether ui: the memory graph on a canvas. The server sends positions (small clusters finished, large ones
// seeded); large clusters are refined here by a Barnes-Hut force simulation, a few milliseconds a frame,
// so the page is usable at once. Filters hide node and link kinds; clusters are recomputed over what is
// shown, outlined, and the selected one is highlighted.
(function () {
  "use strict";
  var dataEl = document.getElementById("graph-data");
  var canvas = document.getElementById("graph");
  if (!dataEl || !canvas || !canvas.getContext) return;
  var G = JSON.parse(dataEl.textContent);
  var ctx = canvas.getContext("2d");
  var tip = document.getElementById("graph-tip");
  var status = document.getElementById("graph-status");
  var form = document.getElementById("graph-filters");
  var find = document.getElementById("graph-find");
  var nodes = G.nodes, edges = G.edges, N = nodes.length;
  var COLORS = { pref: "#2563eb", decision: "#7c3aed", gotcha: "#dc2626", context: "#059669" };
  var EDGE_COLORS = ["rgba(100,116,139,0.35)", "rgba(14,165,233,0.8)", "rgba(249,115,22,0.85)"];

  var x = new Float64Array(N), y = new Float64Array(N), vx = new Float64Array(N), vy = new Float64Array(N);
  var visible = new Uint8Array(N), comp = new Int32Array(N), compSize = [];
  var adjacency = [];
  for (var i = 0; i < N; i++) { x[i] = nodes[i].x; y[i] = nodes[i].y; adjacency.push([]); }
  edges.forEach(function (e, k) { adjacency[e[0]].push(k); adjacency[e[1]].push(k); });

  // -- the simulation (large clusters only) ----------------------------------------------------
  var refineSet = {};
  G.refine.forEach(function (c) { refineSet[c] = true; });
  var groups = {};
  for (i = 0; i < N; i++) if (refineSet[nodes[i].c]) (groups[nodes[i].c] = groups[nodes[i].c] || []).push(i);
  var anchors = {};
  Object.keys(groups).forEach(function (c) {
    var sx = 0, sy = 0;
    groups[c].forEach(function (n) { sx += x[n]; sy += y[n]; });
    anchors[c] = [sx / groups[c].length, sy / groups[c].length];
  });
  var simEdges = edges.filter(function (e) { return refineSet[nodes[e[0]].c]; });
  var alpha = G.refine.length ? 1 : 0, ALPHA_MIN = 0.02, DECAY = 0.985, LINK = 30, CHARGE = 900, THETA2 = 0.81;

  function Quad(x0, y0, s) { this.x0 = x0; this.y0 = y0; this.s = s; this.m = 0; this.cx = 0; this.cy = 0; this.id = -1; this.kids = null; }
  function insert(q, n, depth) {
    q.cx = (q.cx * q.m + x[n]) / (q.m + 1); q.cy = (q.cy * q.m + y[n]) / (q.m + 1); q.m++;
    if (q.kids === null) {
      if (q.m === 1) { q.id = n; return; }
      if (depth > 24) return; // coincident points share the leaf
      q.kids = [null, null, null, null];
      var old = q.id; q.id = -1;
      if (old >= 0) child(q, old, depth);
    }
    child(q, n, depth);
  }
  function child(q, n, depth) {
    var h = q.s / 2, right = x[n] >= q.x0 + h ? 1 : 0, down = y[n] >= q.y0 + h ? 1 : 0, k = right + 2 * down;
    if (!q.kids[k]) q.kids[k] = new Quad(q.x0 + right * h, q.y0 + down * h, h);
    insert(q.kids[k], n, depth + 1);
  }
  function repel(q, n) {
    var dx = q.cx - x[n], dy = q.cy - y[n], d2 = dx * dx + dy * dy;
    if (q.kids === null || q.s * q.s < THETA2 * d2) {
      if (q.id === n && q.m === 1) return;
      if (d2 < 1) { dx = Math.random() - 0.5; dy = Math.random() - 0.5; d2 = 1; }
      var f = CHARGE * q.m * alpha / d2;
      vx[n] -= dx * f; vy[n] -= dy * f;
      return;
    }
    for (var k = 0; k < 4; k++) if (q.kids[k]) repel(q.kids[k], n);
  }
  function tick() {
    Object.keys(groups).forEach(function (c) {
      var members = groups[c], minx = Infinity, miny = Infinity, maxx = -Infinity, maxy = -Infinity;
      members.forEach(function (n) { minx = Math.min(minx, x[n]); miny = Math.min(miny, y[n]); maxx = Math.max(maxx, x[n]); maxy = Math.max(maxy, y[n]); });
      var root = new Quad(minx, miny, Math.max(maxx - minx, maxy - miny) + 1);
      members.forEach(function (n) { insert(root, n, 0); });
      var a = anchors[c];
      members.forEach(function (n) {
        repel(root, n);
        vx[n] += (a[0] - x[n]) * 0.01 * alpha; vy[n] += (a[1] - y[n]) * 0.01 * alpha;
      });
    });
    simEdges.forEach(function (e) {
      var s = e[0], t = e[1], dx = x[t] - x[s], dy = y[t] - y[s], d = Math.sqrt(dx * dx + dy * dy) || 1;
      var k = (d - LINK) / d * 0.25 * alpha;
      vx[s] += dx * k; vy[s] += dy * k; vx[t] -= dx * k; vy[t] -= dy * k;
    });
    Object.keys(groups).forEach(function (c) {
      groups[c].forEach(function (n) {
        vx[n] *= 0.6; vy[n] *= 0.6;
        var sp = Math.sqrt(vx[n] * vx[n] + vy[n] * vy[n]);
        if (sp > 40) { vx[n] *= 40 / sp; vy[n] *= 40 / sp; }
        x[n] += vx[n]; y[n] += vy[n];
      });
    });
    alpha *= DECAY;
  }

  // -- filters and clusters ---------------------------------------------------------------------
  var kindOn = [true, true, true];
  function checked(name) {
    var on = {};
    form.querySelectorAll('input[name="' + name + '"]').forEach(function (b) { on[b.value] = b.checked; });
    return on;
  }
  function applyFilters() {
    var cat = checked("cat"), origin = checked("o"), state = checked("s"), kinds = checked("kind");
    var showFiles = document.getElementById("graph-files").checked;
    kindOn = G.kinds.map(function (k) { return kinds[k] !== false; });
    for (var n = 0; n < N; n++) {
      var d = nodes[n];
      visible[n] = d.k === "m" ? (cat[d.cat] !== false && origin[d.o] !== false && state[d.s] !== false ? 1 : 0) : 0;
    }
    for (n = 0; n < N; n++) {
      if (nodes[n].k !== "f" || !showFiles || !kindOn[0]) continue;
      visible[n] = adjacency[n].some(function (k) { var e = edges[k]; return visible[e[0] === n ? e[1] : e[0]] && nodes[e[0] === n ? e[1] : e[0]].k === "m"; }) ? 1 : 0;
    }
    clusters();
    draw();
  }
  function edgeShown(e) { return kindOn[e[2]] && visible[e[0]] && visible[e[1]]; }
  function clusters() {
    var parent = new Int32Array(N);
    for (var n = 0; n < N; n++) parent[n] = n;
    function root(a) { while (parent[a] !== a) { parent[a] = parent[parent[a]]; a = parent[a]; } return a; }
    edges.forEach(function (e) { if (edgeShown(e)) { var a = root(e[0]), b = root(e[1]); if (a !== b) parent[a] = b; } });
    var sizes = {};
    for (n = 0; n < N; n++) { comp[n] = root(n); if (visible[n]) sizes[comp[n]] = (sizes[comp[n]] || 0) + 1; }
    compSize = sizes;
  }

  // -- view -------------------------------------------------------------------------------------
  var scale = 1, tx = 0, ty = 0, W = 0, H = 0, dpr = window.devicePixelRatio || 1;
  var selected = -1, hover = -1, follow = -1;
  function resize() {
    var r = canvas.getBoundingClientRect();
    W = r.width; H = r.height;
    canvas.width = Math.round(W * dpr); canvas.height = Math.round(H * dpr);
  }
  function fit() {
    var minx = Infinity, miny = Infinity, maxx = -Infinity, maxy = -Infinity;
    for (var n = 0; n < N; n++) { minx = Math.min(minx, x[n]); miny = Math.min(miny, y[n]); maxx = Math.max(maxx, x[n]); maxy = Math.max(maxy, y[n]); }
    if (!N) return;
    scale = Math.min(4, 0.92 * Math.min(W / Math.max(1, maxx - minx), H / Math.max(1, maxy - miny)));
    tx = W / 2 - scale * (minx + maxx) / 2; ty = H / 2 - scale * (miny + maxy) / 2;
  }
  function centerOn(n) { scale = Math.max(scale, 2); tx = W / 2 - scale * x[n]; ty = H / 2 - scale * y[n]; }
  function radius(n) { return nodes[n].k === "f" ? 3 : nodes[n].p ? 6 : 4.5; }

  function draw() {
    if (follow >= 0) centerOn(follow);
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, W, H);
    ctx.setTransform(dpr * scale, 0, 0, dpr * scale, dpr * tx, dpr * ty);
    var focus = selected >= 0 ? comp[selected] : -1;
    // cluster outlines (three or more nodes shown)
    var hulls = {};
    for (var n = 0; n < N; n++) {
      if (!visible[n] || compSize[comp[n]] < 3) continue;
      var h = hulls[comp[n]] || (hulls[comp[n]] = { sx: 0, sy: 0, m: 0, r: 0, list: [] });
      h.sx += x[n]; h.sy += y[n]; h.m++; h.list.push(n);
    }
    ctx.lineWidth = 1 / scale;
    Object.keys(hulls).forEach(function (c) {
      var h = hulls[c], cx = h.sx / h.m, cy = h.sy / h.m, r = 0;
      h.list.forEach(function (n) { r = Math.max(r, Math.hypot(x[n] - cx, y[n] - cy)); });
      ctx.beginPath(); ctx.arc(cx, cy, r + 14, 0, 2 * Math.PI);
      ctx.fillStyle = +c === focus ? "rgba(37,99,235,0.08)" : "rgba(148,163,184,0.06)";
      ctx.strokeStyle = +c === focus ? "rgba(37,99,235,0.6)" : "rgba(148,163,184,0.35)";
      ctx.fill(); ctx.stroke();
    });
    for (var kind = 0; kind < 3; kind++) {
      ctx.beginPath();
      ctx.strokeStyle = EDGE_COLORS[kind];
      ctx.lineWidth = (kind ? 1.6 : 1) / Math.sqrt(scale);
      for (var k = 0; k < edges.length; k++) {
        var e = edges[k];
        if (e[2] !== kind || !edgeShown(e)) continue;
        if (focus >= 0 && comp[e[0]] !== focus) continue;
        ctx.moveTo(x[e[0]], y[e[0]]); ctx.lineTo(x[e[1]], y[e[1]]);
      }
      ctx.stroke();
    }
    for (n = 0; n < N; n++) {
      if (!visible[n]) continue;
      var d = nodes[n], dim = focus >= 0 && comp[n] !== focus, r = radius(n);
      ctx.globalAlpha = dim ? 0.15 : 1;
      if (d.k === "f") {
        ctx.fillStyle = d.gone ? "#fca5a5" : "#94a3b8";
        ctx.fillRect(x[n] - r, y[n] - r, 2 * r, 2 * r);
      } else {
        ctx.beginPath(); ctx.arc(x[n], y[n], r, 0, 2 * Math.PI);
        if (d.s === "active") { ctx.fillStyle = COLORS[d.cat] || "#64748b"; ctx.fill(); }
        else { ctx.strokeStyle = COLORS[d.cat] || "#64748b"; ctx.lineWidth = 1.5 / scale; ctx.stroke(); }
        if (d.p) { ctx.beginPath(); ctx.arc(x[n], y[n], r + 2.5, 0, 2 * Math.PI); ctx.strokeStyle = "#f59e0b"; ctx.lineWidth = 1.5 / scale; ctx.stroke(); }
      }
    }
    ctx.globalAlpha = 1;
    if (scale > 1.6) labels(focus);
    [hover, selected].forEach(function (n) {
      if (n < 0 || !visible[n]) return;
      ctx.beginPath(); ctx.arc(x[n], y[n], radius(n) + 4, 0, 2 * Math.PI);
      ctx.strokeStyle = "#0f172a"; ctx.lineWidth = 2 / scale; ctx.stroke();
    });
    var shown = 0, clustersShown = 0;
    for (n = 0; n < N; n++) if (visible[n]) shown++;
    Object.keys(compSize).forEach(function (c) { if (compSize[c] > 1) clustersShown++; });
    status.textContent = shown + " nodes shown, " + clustersShown + " connected clusters" +
      (selected >= 0 ? " · cluster of " + compSize[comp[selected]] + " selected" : "") +
      (alpha > ALPHA_MIN ? " · layout settling…" : " · layout settled");
    canvas.dataset.settled = alpha > ALPHA_MIN ? "0" : "1";
  }
  function labels(focus) {
    ctx.font = 11 / scale + "px system-ui, sans-serif";
    ctx.fillStyle = "#0f172a";
    var x0 = -tx / scale, y0 = -ty / scale, x1 = (W - tx) / scale, y1 = (H - ty) / scale, count = 0;
    for (var n = 0; n < N && count < 250; n++) {
      if (!visible[n] || x[n] < x0 || x[n] > x1 || y[n] < y0 || y[n] > y1) continue;
      if (focus >= 0 && comp[n] !== focus) continue;
      var text = nodes[n].k === "m" ? nodes[n].l : nodes[n].i;
      ctx.fillText(text.length > 48 ? text.slice(0, 47) + "…" : text, x[n] + radius(n) + 2, y[n] + 3 / scale);
      count++;
    }
  }

  function nodeAt(px, py) {
    var gx = (px - tx) / scale, gy = (py - ty) / scale, best = -1, bestD = Infinity;
    for (var n = 0; n < N; n++) {
      if (!visible[n]) continue;
      var dx = x[n] - gx, dy = y[n] - gy, d = dx * dx + dy * dy, r = radius(n) + 5 / scale;
      if (d < r * r && d < bestD) { best = n; bestD = d; }
    }
    return best;
  }
  function open(n) { if (nodes[n].k === "m") window.location.href = "/m/" + encodeURIComponent(nodes[n].i); }

  // -- interaction ------------------------------------------------------------------------------
  var drag = null;
  canvas.addEventListener("pointerdown", function (ev) {
    drag = { x: ev.clientX, y: ev.clientY, tx: tx, ty: ty, moved: false };
    canvas.setPointerCapture(ev.pointerId);
  });
  canvas.addEventListener("pointermove", function (ev) {
    var r = canvas.getBoundingClientRect(), px = ev.clientX - r.left, py = ev.clientY - r.top;
    if (drag) {
      var dx = ev.clientX - drag.x, dy = ev.clientY - drag.y;
      if (Math.abs(dx) + Math.abs(dy) > 4) { drag.moved = true; follow = -1; canvas.classList.add("dragging"); }
      if (drag.moved) { tx = drag.tx + dx; ty = drag.ty + dy; draw(); }
      return;
    }
    var n = nodeAt(px, py);
    if (n !== hover) {
      hover = n;
      if (n >= 0) {
        var d = nodes[n];
        tip.textContent = d.k === "m" ? d.i + " [" + d.cat + (d.s !== "active" ? ", " + d.s : "") + (d.o !== "user" ? ", " + d.o : "") + "] " + d.l : d.i + (d.gone ? " (gone)" : "");
        tip.hidden = false;
      } else tip.hidden = true;
      draw();
    }
    if (n >= 0) { tip.style.left = px + 14 + "px"; tip.style.top = py + 10 + "px"; }
  });
  canvas.addEventListener("pointerup", function (ev) {
    var r = canvas.getBoundingClientRect(), moved = drag && drag.moved;
    drag = null; canvas.classList.remove("dragging");
    if (moved) return;
    var n = nodeAt(ev.clientX - r.left, ev.clientY - r.top);
    if (n >= 0 && nodes[n].k === "m") { open(n); return; }
    selected = n; follow = -1;
    draw();
  });
  canvas.addEventListener("pointerleave", function () { hover = -1; tip.hidden = true; draw(); });
  canvas.addEventListener("wheel", function (ev) {
    ev.preventDefault();
    var r = canvas.getBoundingClientRect(), px = ev.clientX - r.left, py = ev.clientY - r.top;
    var f = Math.exp(-ev.deltaY * 0.0015), next = Math.min(40, Math.max(0.02, scale * f));
    tx = px - (px - tx) * next / scale; ty = py - (py - ty) * next / scale; scale = next; follow = -1;
    draw();
  }, { passive: false });
  canvas.addEventListener("keydown", function (ev) {
    if (ev.key === "Enter" && selected >= 0) open(selected);
    if (ev.key === "Escape") { selected = -1; follow = -1; draw(); }
  });
  form.addEventListener("change", applyFilters);
  form.addEventListener("submit", function (ev) { ev.preventDefault(); });
  find.addEventListener("input", function () {
    var q = find.value.trim().toLowerCase();
    if (!q) { selected = -1; follow = -1; draw(); return; }
    var hit = -1;
    for (var n = 0; n < N && hit < 0; n++) if (visible[n] && nodes[n].i.toLowerCase() === q) hit = n;
    for (n = 0; n < N && hit < 0; n++) if (visible[n] && (nodes[n].i.toLowerCase().indexOf(q) === 0 || nodes[n].l.toLowerCase().indexOf(q) >= 0)) hit = n;
    selected = hit; follow = hit;
    draw();
  });
  find.addEventListener("keydown", function (ev) {
    if (ev.key === "Enter") { ev.preventDefault(); if (selected >= 0) open(selected); }
  });
  window.addEventListener("resize", function () { resize(); draw(); });

  function frame() {
    var start = performance.now();
    while (alpha > ALPHA_MIN && performance.now() - start < 10) tick();
    draw();
    if (alpha > ALPHA_MIN) requestAnimationFrame(frame);
  }
  resize();
  fit();
  applyFilters();
  canvas.dataset.ready = "1";
  if (alpha > ALPHA_MIN) requestAnimationFrame(frame);
})();
