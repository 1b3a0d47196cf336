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
  let nodes = [], edges = [], hover = -1;

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
    nodes = data.nodes.map((n, i) => ({
      slug: n[0], title: n[1], flags: n[2], degree: n[3], x: 0, y: 0, vx: 0, vy: 0,
      r: 3 + Math.min(12, Math.sqrt(n[3]) * 1.6), index: i,
    }));
    edges = data.edges;
    layout();
    resize();
    fit();
    draw();
    const cut = data.node_count > nodes.length
      ? ` (the ${nodes.length} most linked of ${data.node_count})` : "";
    status.textContent = `${nodes.length} nodes, ${edges.length} links${cut}.`;
    window.loreGraph = { ready: true, nodes, screenPosition };
    document.body.dataset.graphReady = "1";
  }

  function layout() {
    const n = nodes.length;
    if (!n) return;
    // Most linked first, on a sunflower spiral: the hubs start in the middle.
    const order = nodes.slice().sort((a, b) => b.degree - a.degree);
    const spacing = 18;
    order.forEach((node, i) => {
      const radius = spacing * Math.sqrt(i + 0.5);
      const angle = i * 2.399963;
      node.x = radius * Math.cos(angle);
      node.y = radius * Math.sin(angle);
    });
    const ideal = n < 100 ? 70 : 40;
    const cell = ideal * 2;
    const iterations = n > 1500 ? 90 : n > 400 ? 160 : 300;
    let temperature = ideal * 2;
    for (let step = 0; step < iterations; step++) {
      const grid = new Map();
      for (const node of nodes) {
        const key = Math.floor(node.x / cell) + "," + Math.floor(node.y / cell);
        let bucket = grid.get(key);
        if (!bucket) grid.set(key, (bucket = []));
        bucket.push(node);
        node.vx = 0; node.vy = 0;
      }
      for (const node of nodes) {
        const cx = Math.floor(node.x / cell), cy = Math.floor(node.y / cell);
        for (let gx = cx - 1; gx <= cx + 1; gx++) {
          for (let gy = cy - 1; gy <= cy + 1; gy++) {
            const bucket = grid.get(gx + "," + gy);
            if (!bucket) continue;
            for (const other of bucket) {
              if (other === node) continue;
              let dx = node.x - other.x, dy = node.y - other.y;
              let d2 = dx * dx + dy * dy;
              if (d2 > cell * cell) continue;
              if (d2 < 0.01) { dx = Math.random() - 0.5; dy = Math.random() - 0.5; d2 = 0.5; }
              const push = (ideal * ideal) / d2;
              node.vx += dx * push; node.vy += dy * push;
            }
          }
        }
      }
      for (const [a, b] of edges) {
        const s = nodes[a], t = nodes[b];
        const dx = t.x - s.x, dy = t.y - s.y;
        const d = Math.sqrt(dx * dx + dy * dy) || 0.01;
        const pull = d / ideal;
        s.vx += dx * pull * 0.5; s.vy += dy * pull * 0.5;
        t.vx -= dx * pull * 0.5; t.vy -= dy * pull * 0.5;
      }
      for (const node of nodes) {
        node.vx -= node.x * 0.02; node.vy -= node.y * 0.02;  // gravity to the middle
        const v = Math.sqrt(node.vx * node.vx + node.vy * node.vy) || 1;
        const move = Math.min(v, temperature);
        node.x += (node.vx / v) * move; node.y += (node.vy / v) * move;
      }
      temperature = Math.max(1, temperature * 0.96);
    }
  }

  function resize() {
    const ratio = window.devicePixelRatio || 1;
    const width = canvas.clientWidth, height = canvas.clientHeight;
    canvas.width = Math.round(width * ratio);
    canvas.height = Math.round(height * ratio);
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
  }

  function fit() {
    if (!nodes.length) return;
    let minX = Infinity, minY = Infinity, maxX = -Infinity, maxY = -Infinity;
    for (const n of nodes) {
      minX = Math.min(minX, n.x); maxX = Math.max(maxX, n.x);
      minY = Math.min(minY, n.y); maxY = Math.max(maxY, n.y);
    }
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
    ctx.font = "12px system-ui, sans-serif";
    ctx.fillStyle = "#212529";
    ctx.textAlign = "center";
    const room = nodes.length <= 60 ? nodes.length : Math.round(30 * view.k);
    const chosen = nodes.slice().sort((a, b) => b.degree - a.degree).slice(0, room);
    if (hover >= 0) chosen.push(nodes[hover]);
    for (const node of chosen) {
      const sx = node.x * view.k + view.x, sy = node.y * view.k + view.y;
      ctx.fillText(node.title, sx, sy - node.r * view.k - 4);
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
