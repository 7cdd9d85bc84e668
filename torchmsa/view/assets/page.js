"use strict";
(function () {
  const D = JSON.parse(document.getElementById("msa-data").textContent);
  const names = D.names, rows = D.rows, N = names.length, C = D.width;
  const $ = (id) => document.getElementById(id);
  const grid = $("grid"), main = $("main"), spacer = $("spacer"), namesEl = $("names");
  const cellsCv = $("cells"), headCv = $("head"), treeCv = $("tree"), cornerCv = $("corner");
  const info = $("info"), found = $("found"), search = $("search"), select = $("scheme");
  const MONO = "ui-monospace, Menlo, Consolas, monospace";
  const LEVELS = [[1, 1], [2, 2], [3, 4], [6, 8], [10, 16], [14, 20]];  // [cell width, row height]
  const RULER = 18, CONS = 30;
  const SYMS = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
  const TREE_W = D.tree ? 160 : 0;
  let level = 4, cw = 10, rh = 16, consH = 0, headH = 0, namesW = 120;
  let hits = [], hitAt = -1, hit = -1, lower = null, pending = false;

  function rgba32(hex) {  // little-endian RGBA for an ImageData's Uint32Array view
    const v = parseInt(hex.slice(1), 16);
    return (0xff000000 | ((v & 0xff) << 16) | (v & 0xff00) | ((v >> 16) & 0xff)) >>> 0;
  }
  const GAP32 = rgba32(D.gap);
  const decoded = {};
  function scheme(name) {
    if (!decoded[name]) {
      const s = D.schemes[name], code = new Int16Array(128);
      for (let i = 0; i < SYMS.length; i++) code[SYMS.charCodeAt(i)] = i;
      const lut = new Uint8Array(s.lut.length);
      for (let i = 0; i < s.lut.length; i++) lut[i] = code[s.lut.charCodeAt(i)];
      decoded[name] = { lut: lut, fixed: s.lut.length === 26, pal: s.palette,
        pal32: Uint32Array.from(s.palette, rgba32) };
    }
    return decoded[name];
  }
  let cur = scheme(D.scheme);
  function letter(ch) {  // 0..25 for A..Z / a..z, -1 for a gap, -2 for anything else
    if (ch >= 65 && ch <= 90) return ch - 65;
    if (ch >= 97 && ch <= 122) return ch - 97;
    return ch === 45 || ch === 46 ? -1 : -2;
  }
  function colour32(c, k) {
    return k >= 0 ? cur.pal32[cur.lut[(cur.fixed ? 0 : c * 26) + k]] : k === -1 ? GAP32 : cur.pal32[0];
  }
  function colourCss(c, k) {
    return k >= 0 ? cur.pal[cur.lut[(cur.fixed ? 0 : c * 26) + k]] : k === -1 ? D.gap : cur.pal[0];
  }

  function sized(cv, w, h) {
    const dpr = window.devicePixelRatio || 1;
    cv.style.width = w + "px";
    cv.style.height = h + "px";
    cv.width = Math.max(1, Math.round(w * dpr));
    cv.height = Math.max(1, Math.round(h * dpr));
    const ctx = cv.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    return ctx;
  }

  function applyLevel() {
    cw = LEVELS[level][0];
    rh = LEVELS[level][1];
    consH = D.consensus ? Math.max(rh, 12) : 0;
    headH = RULER + CONS + consH + 4;
    grid.style.setProperty("--tree-w", TREE_W + "px");
    grid.style.setProperty("--names-w", namesW + "px");
    grid.style.setProperty("--head-h", headH + "px");
    spacer.style.width = C * cw + "px";
    spacer.style.height = N * rh + "px";
    namesEl.style.fontSize = Math.min(12, rh - 2) + "px";
  }

  let cells, head, tree, W = 0, H = 0;
  function resize() {
    W = main.clientWidth;
    H = main.clientHeight;
    cells = sized(cellsCv, W, H);
    head = sized(headCv, W, headH);
    tree = sized(treeCv, TREE_W, H);
    const corner = sized(cornerCv, TREE_W + namesW, headH);
    corner.fillStyle = "#555";
    corner.font = "11px sans-serif";
    corner.textAlign = "right";
    corner.textBaseline = "middle";
    const x = TREE_W + namesW - 8;
    corner.fillText("position", x, RULER / 2);
    corner.fillText("conservation", x, RULER + CONS / 2);
    if (consH) corner.fillText("consensus", x, RULER + CONS + 2 + consH / 2);
  }

  function schedule() {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => {
      pending = false;
      draw();
    });
  }

  function visible() {
    const sl = main.scrollLeft, st = main.scrollTop;
    return {
      sl: sl, st: st,
      c0: Math.max(0, Math.floor(sl / cw)), c1: Math.min(C, Math.ceil((sl + W) / cw)),
      r0: Math.max(0, Math.floor(st / rh)), r1: Math.min(N, Math.ceil((st + H) / rh)),
    };
  }

  const off = document.createElement("canvas"), offCtx = off.getContext("2d");
  let img = null;
  function drawCells(v) {
    const ctx = cells, nc = v.c1 - v.c0, nr = v.r1 - v.r0;
    ctx.fillStyle = "#fff";
    ctx.fillRect(0, 0, W, H);
    if (nc <= 0 || nr <= 0) return;
    if (!img || img.width !== nc || img.height !== nr) {
      off.width = nc;
      off.height = nr;
      img = offCtx.createImageData(nc, nr);
    }
    const px = new Uint32Array(img.data.buffer);
    let o = 0;
    for (let r = v.r0; r < v.r1; r++) {
      const s = rows[r];
      for (let c = v.c0; c < v.c1; c++) px[o++] = colour32(c, letter(s.charCodeAt(c)));
    }
    offCtx.putImageData(img, 0, 0);
    ctx.imageSmoothingEnabled = false;
    ctx.drawImage(off, 0, 0, nc, nr, v.c0 * cw - v.sl, v.r0 * rh - v.st, nc * cw, nr * rh);
    if (cw >= 6 && rh >= 8) {
      ctx.font = Math.min(rh - 3, cw + 3) + "px " + MONO;
      ctx.textAlign = "center";
      ctx.textBaseline = "middle";
      ctx.fillStyle = "#111";
      for (let r = v.r0; r < v.r1; r++) {
        const s = rows[r], y = r * rh - v.st + rh / 2 + 1;
        for (let c = v.c0; c < v.c1; c++) {
          if (letter(s.charCodeAt(c)) !== -1) ctx.fillText(s[c], c * cw - v.sl + cw / 2, y);
        }
      }
    }
    if (hit >= v.r0 && hit < v.r1) {
      ctx.strokeStyle = "#d08000";
      ctx.lineWidth = 2;
      ctx.strokeRect(1, hit * rh - v.st + 1, Math.min(W, C * cw - v.sl) - 2, rh - 2);
    }
  }

  function niceStep() {
    for (let p = 1; ; p *= 10) {
      for (const m of [1, 2, 5]) if (m * p * cw >= 48) return m * p;
    }
  }

  function drawHead(v) {
    const ctx = head;
    ctx.fillStyle = "#fff";
    ctx.fillRect(0, 0, W, headH);
    const step = niceStep(), minor = step >= 5 && (step / 5) * cw >= 4 ? step / 5 : 0;
    ctx.fillStyle = "#333";
    ctx.font = "10px sans-serif";
    ctx.textAlign = "center";
    ctx.textBaseline = "alphabetic";
    for (let c = v.c0; c < v.c1; c++) {
      const pos = D.first + c, x = Math.round(c * cw - v.sl + cw / 2);
      if (pos % step === 0) {
        ctx.fillRect(x, RULER - 6, 1, 6);
        ctx.fillText(String(pos), x, RULER - 8);
      } else if (minor && pos % minor === 0) {
        ctx.fillRect(x, RULER - 3, 1, 3);
      }
    }
    ctx.fillStyle = "#ddd";
    ctx.fillRect(0, RULER + CONS - 2, W, 1);
    ctx.fillStyle = "#5b7db1";
    const bw = cw > 3 ? cw - 1 : cw;
    for (let c = v.c0; c < v.c1; c++) {
      const h = (D.conservation[c] / 100) * (CONS - 6);
      if (h > 0) ctx.fillRect(c * cw - v.sl, RULER + CONS - 2 - h, bw, h);
    }
    if (!consH) return;
    const y0 = RULER + CONS + 2, big = cw >= 6;
    for (let c = v.c0; c < v.c1; c++) {
      ctx.fillStyle = colourCss(c, letter(D.consensus.charCodeAt(c)));
      ctx.fillRect(c * cw - v.sl, y0, cw, consH);
    }
    if (!big) return;
    ctx.fillStyle = "#111";
    ctx.font = Math.min(consH - 3, cw + 3) + "px " + MONO;
    ctx.textBaseline = "middle";
    for (let c = v.c0; c < v.c1; c++) {
      ctx.fillText(D.consensus[c], c * cw - v.sl + cw / 2, y0 + consH / 2 + 1);
    }
  }

  function drawNames(v) {
    const need = rh >= 8 ? v.r1 - v.r0 : 0;
    while (namesEl.childElementCount < need) namesEl.appendChild(document.createElement("div"));
    while (namesEl.childElementCount > need) namesEl.lastChild.remove();
    for (let i = 0; i < need; i++) {
      const el = namesEl.children[i], r = v.r0 + i;
      if (el.dataset.row !== String(r)) {
        el.dataset.row = String(r);
        el.textContent = names[r];
        el.title = names[r];
      }
      el.style.top = r * rh - v.st + "px";
      el.style.height = el.style.lineHeight = rh + "px";
      el.className = r === hit ? "hit" : "";
    }
  }

  function drawTree(v) {
    const ctx = tree;
    ctx.clearRect(0, 0, TREE_W, H);
    if (!D.tree) return;
    const h = D.tree.h, vt = D.tree.v, x0 = 6, xs = (TREE_W - 10) / 1000;
    const top = v.st / rh - 1, bottom = (v.st + H) / rh + 1;
    ctx.strokeStyle = "#555";
    ctx.lineWidth = 1;
    ctx.beginPath();
    for (let i = 0; i < h.length; i += 3) {
      if (h[i + 2] < top || h[i + 2] > bottom) continue;
      const y = Math.round(h[i + 2] * rh - v.st) + 0.5;
      ctx.moveTo(x0 + h[i] * xs, y);
      ctx.lineTo(x0 + h[i + 1] * xs, y);
    }
    for (let i = 0; i < vt.length; i += 3) {
      if (vt[i + 2] < top || vt[i + 1] > bottom) continue;
      const x = Math.round(x0 + vt[i] * xs) + 0.5;
      ctx.moveTo(x, Math.max(-2, Math.round(vt[i + 1] * rh - v.st) + 0.5));
      ctx.lineTo(x, Math.min(H + 2, Math.round(vt[i + 2] * rh - v.st) + 0.5));
    }
    ctx.stroke();
  }

  function draw() {
    if (main.clientWidth !== W || main.clientHeight !== H) resize();
    const v = visible();
    drawCells(v);
    drawHead(v);
    drawNames(v);
    drawTree(v);
    if (!document.body.dataset.ready) {
      window.msaView.readyAt = performance.now();
      document.body.dataset.ready = "1";
    }
  }

  function goTo(r) {
    main.scrollTop = Math.max(0, r * rh - (main.clientHeight - rh) / 2);
    schedule();
  }

  function zoom(d) {
    const next = Math.max(0, Math.min(LEVELS.length - 1, level + d));
    if (next === level) return;
    const cc = (main.scrollLeft + W / 2) / cw, cr = (main.scrollTop + H / 2) / rh;
    level = next;
    applyLevel();
    resize();
    main.scrollLeft = cc * cw - main.clientWidth / 2;
    main.scrollTop = cr * rh - main.clientHeight / 2;
    schedule();
  }

  function showHit() {
    hit = hitAt >= 0 ? hits[hitAt] : -1;
    const q = search.value.trim();
    found.textContent = !q ? "" : hits.length ? hitAt + 1 + " of " + hits.length : "no match";
    if (hit >= 0) goTo(hit);
    schedule();
  }

  function find() {
    const q = search.value.trim().toLowerCase();
    if (!lower) lower = names.map((s) => s.toLowerCase());
    hits = [];
    if (q) for (let i = 0; i < N; i++) if (lower[i].includes(q)) hits.push(i);
    hitAt = hits.length ? 0 : -1;
    showHit();
  }

  function hover(e) {
    const rect = main.getBoundingClientRect();
    const c = Math.floor((e.clientX - rect.left + main.scrollLeft) / cw);
    const r = Math.floor((e.clientY - rect.top + main.scrollTop) / rh);
    if (c < 0 || c >= C || r < 0 || r >= N) {
      info.textContent = "";
      return;
    }
    const s = rows[r];
    let text = names[r] + "  column " + (D.first + c);
    if (letter(s.charCodeAt(c)) !== -1) {
      let k = D.offsets ? D.offsets[r] : 0;
      for (let i = 0; i <= c; i++) if (letter(s.charCodeAt(i)) !== -1) k++;
      text += "  residue " + s[c] + k;
    }
    info.textContent = text;
  }

  function forwardWheel(e) {
    const unit = e.deltaMode === 1 ? rh : e.deltaMode === 2 ? H : 1;
    main.scrollTop += e.deltaY * unit;
    main.scrollLeft += e.deltaX * unit;
    e.preventDefault();
  }

  const measure = document.createElement("canvas").getContext("2d");
  measure.font = "12px " + MONO;
  let longest = "";
  for (let i = 0; i < N; i++) if (names[i].length > longest.length) longest = names[i];
  namesW = Math.min(260, Math.max(60, Math.ceil(measure.measureText(longest).width) + 16));

  $("title").textContent = D.title;
  document.title = D.title;
  const shown = D.first > 1 || C < D.total[1]
    ? " (columns " + D.first + "\u2013" + (D.first + C - 1) + " of " + D.total[1] + ")" : "";
  $("stats").textContent = (N < D.total[0] ? N + " of " + D.total[0] : String(N)) +
    " sequences \u00d7 " + C + " columns" + shown;
  for (const name of Object.keys(D.schemes)) {
    const o = document.createElement("option");
    o.value = o.textContent = name;
    o.selected = name === D.scheme;
    select.appendChild(o);
  }
  select.addEventListener("change", () => {
    cur = scheme(select.value);
    schedule();
  });
  $("zoom-in").addEventListener("click", () => zoom(1));
  $("zoom-out").addEventListener("click", () => zoom(-1));
  search.addEventListener("input", find);
  search.addEventListener("keydown", (e) => {
    if (e.key !== "Enter" || !hits.length) return;
    e.preventDefault();
    hitAt = (hitAt + (e.shiftKey ? hits.length - 1 : 1)) % hits.length;
    showHit();
  });
  main.addEventListener("scroll", schedule, { passive: true });
  main.addEventListener("mousemove", hover);
  main.addEventListener("mouseleave", () => (info.textContent = ""));
  main.addEventListener("keydown", (e) => {
    if (e.key === "+" || e.key === "=") zoom(1);
    else if (e.key === "-") zoom(-1);
  });
  for (const el of [namesEl, treeCv, headCv]) el.addEventListener("wheel", forwardWheel, { passive: false });
  window.addEventListener("resize", schedule);

  window.msaView = {
    data: D,
    goTo: goTo,
    zoom: zoom,
    setScheme: (name) => {
      select.value = name;
      cur = scheme(name);
      schedule();
    },
    visibleRows: () => {
      const v = visible();
      return names.slice(v.r0, v.r1);
    },
  };
  applyLevel();
  resize();
  draw();
  main.focus({ preventScroll: true });
})();
