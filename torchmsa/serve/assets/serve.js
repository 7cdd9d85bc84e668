"use strict";
(() => {
  const $ = (id) => document.getElementById(id);
  const FORMATS = [["fasta", "fasta"], ["clustal", "aln"], ["stockholm", "sto"],
    ["phylip", "phy"], ["a3m", "a3m"], ["newick", "nwk"]];
  const state = { auth: "none", selected: null, loaded: null, viewUrl: null, jobs: [] };
  window.serveUI = state;

  $("who").value = sessionStorage.getItem("torchmsa-who") || "";
  $("who").addEventListener("change", () => {
    sessionStorage.setItem("torchmsa-who", $("who").value.trim());
    poll();
  });

  function headers() {
    const who = $("who").value.trim();
    if (!who) return {};
    return state.auth === "bearer" ? { Authorization: "Bearer " + who }
      : { "X-TorchMSA-User": who };
  }

  async function call(path, options = {}) {
    const response = await fetch(path, { ...options, headers: { ...headers(), ...options.headers } });
    if (!response.ok) {
      let message = response.status + " " + response.statusText;
      try { message = (await response.json()).error || message; } catch (e) { /* not JSON */ }
      throw new Error(message);
    }
    return response;
  }

  function say(text, kind) {
    $("message").textContent = text;
    $("message").className = kind || "";
  }

  const short = (id) => id.slice(0, 10) + "\u2026";
  const when = (t) => new Date(t * 1000).toLocaleTimeString();

  function render() {
    const body = document.querySelector("#jobs tbody");
    body.replaceChildren();
    for (const job of state.jobs) {
      const tr = document.createElement("tr");
      tr.dataset.id = job.id;
      if (job.id === state.selected) tr.className = "selected";
      const cells = [short(job.id), job.state, null, String(job.n_seqs), job.mode,
        when(job.created), job.placement || ""];
      cells.forEach((text, k) => {
        const td = document.createElement("td");
        if (k === 0) td.title = job.id;
        if (k === 1) td.className = "state-" + job.state;
        if (text === null) {
          const bar = document.createElement("progress");
          bar.max = 1;
          bar.value = job.state === "done" ? 1 : job.progress || 0;
          td.append(bar);
        } else {
          td.textContent = text;
        }
        tr.append(td);
      });
      const td = document.createElement("td");
      const del = document.createElement("button");
      del.textContent = "delete";
      del.addEventListener("click", (event) => { event.stopPropagation(); remove(job.id); });
      td.append(del);
      tr.append(td);
      tr.addEventListener("click", () => select(job.id));
      body.append(tr);
    }
    $("empty").hidden = state.jobs.length > 0;
  }

  async function poll() {
    try {
      const response = await call("/jobs?limit=100");
      state.jobs = (await response.json()).jobs;
      $("polling").textContent = "updated " + new Date().toLocaleTimeString();
      render();
      showSelected();
    } catch (err) {
      $("polling").textContent = err.message;
    }
  }

  function loop() {
    poll().finally(() => setTimeout(loop, 1000));
  }

  function select(id) {
    state.selected = id;
    render();
    showSelected();
  }

  function showSelected() {
    const job = state.jobs.find((j) => j.id === state.selected);
    if (!job) { $("result-pane").hidden = true; return; }
    $("result-pane").hidden = false;
    $("result-id").textContent = job.id;
    const secs = job.finished && job.started ? ` in ${(job.finished - job.started).toFixed(2)} s` : "";
    const why = job.error ? ": " + job.error : "";
    $("result-info").textContent = `${job.state}${why}${secs}` +
      (job.placement ? `, on ${job.placement}` : "");
    if (job.state === "done" && state.loaded !== job.id) {
      state.loaded = job.id;
      loadView(job.id);
    } else if (job.state !== "done" && state.loaded !== null) {
      state.loaded = null;
      $("downloads").replaceChildren();
      $("viewer").removeAttribute("src");
    }
  }

  async function loadView(id) {
    downloads(id);
    document.body.dataset.view = "";
    try {
      const html = await (await call(`/jobs/${encodeURIComponent(id)}/view`)).text();
      if (state.viewUrl) URL.revokeObjectURL(state.viewUrl);
      state.viewUrl = URL.createObjectURL(new Blob([html], { type: "text/html" }));
      $("viewer").onload = () => { document.body.dataset.view = id; };
      $("viewer").src = state.viewUrl;
    } catch (err) {
      say(err.message, "error");
    }
  }

  function downloads(id) {
    const box = $("downloads");
    box.replaceChildren();
    for (const [format, ext] of FORMATS) {
      const button = document.createElement("button");
      button.textContent = format === "newick" ? "guide tree (.nwk)" : `${format} (.${ext})`;
      button.dataset.format = format;
      button.addEventListener("click", async () => {
        try {
          const url = `/jobs/${encodeURIComponent(id)}/result?format=${format}`;
          const blob = await (await call(url)).blob();
          const a = document.createElement("a");
          a.href = URL.createObjectURL(blob);
          a.download = `${id}.${ext}`;
          document.body.append(a);
          a.click();
          a.remove();
          setTimeout(() => URL.revokeObjectURL(a.href), 1000);
        } catch (err) {
          say(err.message, "error");
        }
      });
      box.append(button);
    }
  }

  async function remove(id) {
    try {
      await call(`/jobs/${encodeURIComponent(id)}`, { method: "DELETE" });
      if (state.selected === id) state.selected = null;
      say(`job ${short(id)} deleted`, "ok");
      poll();
    } catch (err) {
      say(err.message, "error");
    }
  }

  $("form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const form = new FormData();
    const file = $("file").files[0];
    if (file) form.append("file", file);
    else form.append("fasta", $("fasta").value);
    if (!file && !$("fasta").value.trim()) {
      say("paste sequences or choose a file first", "error");
      return;
    }
    form.append("mode", $("mode").value);
    form.append("seqtype", $("seqtype").value);
    $("send").disabled = true;
    try {
      const job = await (await call("/jobs", { method: "POST", body: form })).json();
      say(`job ${short(job.id)} queued: ${job.n_seqs} sequences`, "ok");
      state.selected = job.id;
      await poll();
    } catch (err) {
      say(err.message, "error");
    } finally {
      $("send").disabled = false;
    }
  });

  fetch("/health").then((r) => r.json()).then((health) => {
    state.auth = health.auth;
    $("version").textContent = "version " + health.version;
    if (health.auth === "bearer") {
      $("who-kind").textContent = "Token";
      $("who").type = "password";
      $("who").placeholder = "bearer token";
    }
    document.body.dataset.ready = "1";
    loop();
  });
})();
