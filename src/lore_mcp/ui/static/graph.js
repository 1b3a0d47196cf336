// The link graph on a canvas: a force layout run to rest before the first drawing
// (repulsion through a grid of cells, so it stays linear in the number of nodes),
// then pan, zoom, hover and click (a click opens the node's page). No library.
"use strict";

(function () {
  const PLACEHOLDER = 1, UNREFERENCED = 2, CENTER = 4;
  const canvas = document.getElementById("graph");
  if (!canvas) return;
  const status = document.getElementById("graph-status");
  const ctx = canvas.getContext("2d");
  const view = { x: 0, y: 0, k: 1 };
  let nodes = [], edges = [], byDegree = [], hover = -1;

  const params = new URLSearchParams();
  if (canvas.dataset.page) params.set("page", canvas.dataset.page);
  params.set("depth", canvas.dataset.depth || "1");

  fetch("/api/graph?" + params.toString(), { credentials: "same-origin" })
    .then((r) => r.json().then((body) => ({ ok: r.ok, body })))
    .then(({ ok, body }) => {
      if (!ok) { status.textContent = body.error || "Cannot draw this graph."; return; }
      start(body);
    })
    .catch((err) => { status.textContent = "Cannot draw this graph: " + err; });

  function start(data) {
    const fetched = performance.now();
    nodes = data.nodes.map((n, i) => ({
      slug: n[0], title: n[1], flags: n[2], degree: n[3], x: 0, y: 0,
      r: (data.nodes.length > 500 ? 2 : 3) + Math.min(12, Math.sqrt(n[3]) * (data.nodes.length > 500 ? 0.6 : 1.6)),
      index: i,
    }));
    edges = data.edges;
    byDegree = nodes.slice().sort((a, b) => b.degree - a.degree);
    layout();
    const laidOut = performance.now();
    resize();
    fit();
    draw();
    const cut = data.node_count > nodes.length
      ? ` (the ${nodes.length} most linked of ${data.node_count})` : "";
    status.textContent = `${nodes.length} nodes, ${edges.length} links${cut}.`;
    // Times since the navigation began, for the benchmark.
    const timings = { fetched, laidOut, drawn: performance.now() };
    window.loreGraph = { ready: true, nodes, screenPosition, timings };
    document.body.dataset.graphReady = "1";
  }

  function layout() {
    const n = nodes.length;
    if (!n) return;
    const x = new Float64Array(n), y = new Float64Array(n);
    const vx = new Float64Array(n), vy = new Float64Array(n);
    // Most linked first, on a sunflower spiral: the hubs start in the middle.
    const order = nodes.map((_, i) => i).sort((a, b) => nodes[b].degree - nodes[a].degree);
    const spacing = 18;
    order.forEach((i, rank) => {
      const radius = spacing * Math.sqrt(rank + 0.5);
      const angle = rank * 2.399963;
      x[i] = radius * Math.cos(angle);
      y[i] = radius * Math.sin(angle);
    });
    const ideal = 40, cell = ideal * 1.5, reach2 = cell * cell;
    const gravity = n > 500 ? 0.008 : 0.02;
    const iterations = n > 1500 ? 60 : n > 400 ? 120 : 300;
    const source = new Int32Array(edges.length), target = new Int32Array(edges.length);
    edges.forEach(([a, b], e) => { source[e] = a; target[e] = b; });
    const cellOf = new Int32Array(n), sorted = new Int32Array(n);
    let temperature = ideal * 2;
    for (let step = 0; step < iterations; step++) {
      // The nodes sorted by grid cell (a counting sort), so each one meets only the
      // nodes of its own cell and the eight around it.
      let minX = Infinity, minY = Infinity, maxX = -Infinity, maxY = -Infinity;
      for (let i = 0; i < n; i++) {
        if (x[i] < minX) minX = x[i]; if (x[i] > maxX) maxX = x[i];
        if (y[i] < minY) minY = y[i]; if (y[i] > maxY) maxY = y[i];
      }
      const cols = Math.floor((maxX - minX) / cell) + 1, rows = Math.floor((maxY - minY) / cell) + 1;
      const starts = new Int32Array(cols * rows + 1);
      for (let i = 0; i < n; i++) {
        const c = Math.floor((x[i] - minX) / cell) + cols * Math.floor((y[i] - minY) / cell);
        cellOf[i] = c;
        starts[c + 1]++;
      }
      for (let c = 0; c < cols * rows; c++) starts[c + 1] += starts[c];
      const fill = starts.slice(0, cols * rows);
      for (let i = 0; i < n; i++) sorted[fill[cellOf[i]]++] = i;
      vx.fill(0); vy.fill(0);
      for (let i = 0; i < n; i++) {
        const cx = cellOf[i] % cols, cy = (cellOf[i] - cx) / cols;
        for (let gy = Math.max(0, cy - 1); gy <= Math.min(rows - 1, cy + 1); gy++) {
          for (let gx = Math.max(0, cx - 1); gx <= Math.min(cols - 1, cx + 1); gx++) {
            const c = gx + cols * gy;
            for (let k = starts[c]; k < starts[c + 1]; k++) {
              const j = sorted[k];
              if (j === i) continue;
              let dx = x[i] - x[j], dy = y[i] - y[j];
              let d2 = dx * dx + dy * dy;
              if (d2 > reach2) continue;
              if (d2 < 0.01) { dx = Math.random() - 0.5; dy = Math.random() - 0.5; d2 = 0.5; }
              const push = (ideal * ideal) / d2;
              vx[i] += dx * push; vy[i] += dy * push;
            }
          }
        }
      }
      for (let e = 0; e < source.length; e++) {
        const a = source[e], b = target[e];
        const dx = x[b] - x[a], dy = y[b] - y[a];
        const pull = (Math.sqrt(dx * dx + dy * dy) / ideal) * 0.5;
        vx[a] += dx * pull; vy[a] += dy * pull;
        vx[b] -= dx * pull; vy[b] -= dy * pull;
      }
      for (let i = 0; i < n; i++) {
        const fx = vx[i] - x[i] * gravity, fy = vy[i] - y[i] * gravity;  // to the middle
        const v = Math.sqrt(fx * fx + fy * fy) || 1;
        const move = Math.min(v, temperature);
        x[i] += (fx / v) * move; y[i] += (fy / v) * move;
      }
      temperature = Math.max(1, temperature * (n > 1500 ? 0.94 : 0.96));
    }
    for (let i = 0; i < n; i++) { nodes[i].x = x[i]; nodes[i].y = y[i]; }
  }

  function resize() {
    const ratio = window.devicePixelRatio || 1;
    const width = canvas.clientWidth, height = canvas.clientHeight;
    canvas.width = Math.round(width * ratio);
    canvas.height = Math.round(height * ratio);
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
  }

  function fit() {
    // To the middle 98% of the nodes on each axis: a few strays do not shrink the rest.
    if (!nodes.length) return;
    const xs = nodes.map((n) => n.x).sort((a, b) => a - b);
    const ys = nodes.map((n) => n.y).sort((a, b) => a - b);
    const cut = nodes.length > 100 ? Math.floor(nodes.length * 0.01) : 0;
    const minX = xs[cut], maxX = xs[xs.length - 1 - cut];
    const minY = ys[cut], maxY = ys[ys.length - 1 - cut];
    const w = canvas.clientWidth, h = canvas.clientHeight, pad = 40;
    view.k = Math.min((w - pad * 2) / (maxX - minX || 1), (h - pad * 2) / (maxY - minY || 1), 2.5);
    view.x = w / 2 - ((minX + maxX) / 2) * view.k;
    view.y = h / 2 - ((minY + maxY) / 2) * view.k;
  }

  function screenPosition(slug) {
    const node = nodes.find((n) => n.slug === slug);
    if (!node) return null;
    const box = canvas.getBoundingClientRect();
    return { x: box.left + node.x * view.k + view.x, y: box.top + node.y * view.k + view.y };
  }

  function colour(node) {
    if (node.flags & CENTER) return "#d9480f";
    if (node.flags & PLACEHOLDER) return "#adb5bd";
    if (node.flags & UNREFERENCED) return "#2f9e44";
    return "#3b5bdb";
  }

  function draw() {
    const w = canvas.clientWidth, h = canvas.clientHeight;
    ctx.clearRect(0, 0, w, h);
    ctx.save();
    ctx.translate(view.x, view.y);
    ctx.scale(view.k, view.k);
    ctx.lineWidth = 1 / view.k;
    ctx.strokeStyle = nodes.length > 500 ? "rgba(80,80,100,0.12)" : "rgba(80,80,100,0.35)";
    ctx.beginPath();
    for (const [a, b] of edges) {
      ctx.moveTo(nodes[a].x, nodes[a].y);
      ctx.lineTo(nodes[b].x, nodes[b].y);
    }
    ctx.stroke();
    for (const node of nodes) {
      ctx.beginPath();
      ctx.fillStyle = colour(node);
      ctx.arc(node.x, node.y, node.r, 0, Math.PI * 2);
      ctx.fill();
      if (node.flags & PLACEHOLDER) {
        ctx.strokeStyle = "#495057";
        ctx.setLineDash([2 / view.k, 2 / view.k]);
        ctx.stroke();
        ctx.setLineDash([]);
      }
    }
    ctx.restore();
    labels();
  }

  function labels() {
    // The most linked first; a label that would overlap one already drawn is left out.
    ctx.font = "12px system-ui, sans-serif";
    ctx.textAlign = "center";
    const w = canvas.clientWidth, h = canvas.clientHeight;
    const placed = [];
    const order = hover >= 0 ? [nodes[hover]] : [];
    order.push(...byDegree);
    const free = (b) => !placed.some((o) => b[0] < o[2] && o[0] < b[2] && b[1] < o[3] && o[1] < b[3]);
    for (const node of order.slice(0, 400)) {
      const sx = node.x * view.k + view.x, sy = node.y * view.k + view.y;
      if (sx < 0 || sy < 0 || sx > w || sy > h) continue;
      const half = ctx.measureText(node.title).width / 2 + 2, gap = node.r * view.k + 3;
      // Above the node, else below it, else to its right; else it is left out.
      const spots = [[sx, sy - gap], [sx, sy + gap + 12], [sx + gap + half, sy + 5]];
      const spot = spots.map(([x, y]) => [x - half, y - 12, x + half, y + 2]).find(free);
      if (!spot) continue;
      placed.push(spot);
      ctx.fillStyle = "rgba(255,255,255,0.75)";
      ctx.fillRect(spot[0], spot[1], spot[2] - spot[0], spot[3] - spot[1]);
      ctx.fillStyle = "#212529";
      ctx.fillText(node.title, (spot[0] + spot[2]) / 2, spot[3] - 3);
    }
  }

  function nodeAt(clientX, clientY) {
    const box = canvas.getBoundingClientRect();
    const x = (clientX - box.left - view.x) / view.k, y = (clientY - box.top - view.y) / view.k;
    let best = -1, bestD = Infinity;
    for (const node of nodes) {
      const d = (node.x - x) ** 2 + (node.y - y) ** 2;
      const reach = Math.max(node.r, 6 / view.k);
      if (d < reach * reach && d < bestD) { best = node.index; bestD = d; }
    }
    return best;
  }

  let drag = null;
  canvas.addEventListener("mousedown", (e) => { drag = { x: e.clientX, y: e.clientY, moved: false }; });
  window.addEventListener("mouseup", (e) => {
    if (drag && !drag.moved) {
      const hit = nodeAt(e.clientX, e.clientY);
      if (hit >= 0) window.location.href = "/page/" + nodes[hit].slug.split("/").map(encodeURIComponent).join("/");
    }
    drag = null;
  });
  canvas.addEventListener("mousemove", (e) => {
    if (drag) {
      const dx = e.clientX - drag.x, dy = e.clientY - drag.y;
      if (Math.abs(dx) + Math.abs(dy) > 3) drag.moved = true;
      if (drag.moved) {
        view.x += dx; view.y += dy; drag.x = e.clientX; drag.y = e.clientY; draw();
      }
      return;
    }
    const hit = nodeAt(e.clientX, e.clientY);
    if (hit !== hover) {
      hover = hit;
      canvas.style.cursor = hit >= 0 ? "pointer" : "default";
      canvas.title = hit >= 0 ? nodes[hit].title + " (" + nodes[hit].slug + ")" : "";
      draw();
    }
  });
  canvas.addEventListener("wheel", (e) => {
    e.preventDefault();
    const box = canvas.getBoundingClientRect();
    const mx = e.clientX - box.left, my = e.clientY - box.top;
    const factor = Math.exp(-e.deltaY * 0.0015);
    view.x = mx - (mx - view.x) * factor;
    view.y = my - (my - view.y) * factor;
    view.k *= factor;
    draw();
  }, { passive: false });
  window.addEventListener("resize", () => { resize(); draw(); });
})();
