/* agentgauge viewer: the runs list, a run, a sample and the comparison of two runs.
 *
 * One front-end for two sources of data: the local server's JSON API (`agentgauge view`) and
 * the data embedded in a self-contained HTML report. Every value from a run is put in the page
 * as text (textContent, text nodes, attribute values), never parsed as markup; links are only
 * the page's own "#/..." routes.
 */
(function () {
  "use strict";

  const MODE = document.body.dataset.mode || "server";
  const PAGE_SIZE = 50;
  const FILTERS = ["search", "recommendation", "band", "error_type", "category", "task_id"];
  const VERDICTS = ["accept", "weak_accept", "weak_reject", "reject", "uncertain"];
  const BANDS = ["excellent", "good", "fair", "poor"];
  const KIND_COLORS = {
    llm: "#0969da", reasoning: "#8250df", tool_call: "#bf8700", tool_result: "#1a7f37",
    message: "#57606a", handoff: "#cf222e", error: "#a40e26",
  };
  const charts = [];

  // ---------------------------------------------------------------- DOM helpers (text only)

  function el(tag, props, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(props || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "class") node.className = value;
      else if (key === "text") node.textContent = String(value);
      else if (key === "href") node.setAttribute("href", route(value));
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, String(value));
    }
    append(node, children);
    return node;
  }

  function append(node, children) {
    for (const child of children.flat(Infinity)) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  function route(href) {
    // the page links only to its own routes; anything else becomes an inert link
    const text = String(href);
    return text.startsWith("#/") ? text : "#/";
  }

  function svg(tag, attrs, ...children) {
    const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (key === "text") node.textContent = String(value);
      else node.setAttribute(key, String(value));
    }
    for (const child of children) if (child) node.append(child);
    return node;
  }

  const enc = encodeURIComponent;
  const num = (v, digits = 3) => (v === null || v === undefined ? "—" : Number(v).toFixed(digits));
  const signed = (v) => (v === null || v === undefined ? "—" : (v >= 0 ? "+" : "") + v.toFixed(3));
  const pct = (v) => (v === null || v === undefined ? "—" : Math.round(100 * v) + "%");
  const ci = (lo, hi) => (lo === null || lo === undefined ? "—" : "[" + num(lo) + ", " + num(hi) + "]");
  const usd = (v) => (v === null || v === undefined ? "—" : "$" + (v < 0.01 ? v.toFixed(6) : v.toFixed(2)));
  const count = (v) => (v === null || v === undefined ? "—" : Math.round(v).toLocaleString("en-US"));
  const bandClass = (b) => (b ? "band-" + b : "");
  const seconds = (s) => (s === null || s === undefined ? "" : s < 1 ? Math.round(s * 1000) + " ms" : s.toFixed(2) + " s");

  function gateNote(failed) {
    return Object.entries(failed).map(([m, g]) => m + " " + num(g.value) + " < " + g.floor).join(", ");
  }

  function ciBar(mean, lo, hi, min = 0, max = 1) {
    if (mean === null || mean === undefined) return null;
    const x = (v) => Math.max(0, Math.min(100, ((v - min) / (max - min)) * 100)) + "%";
    const bar = el("span", { class: "ci", title: ci(lo, hi) });
    if (min < 0) bar.append(el("span", { class: "zero", style: "left:" + x(0) }));
    if (lo !== null && lo !== undefined) {
      const range = el("span", { class: "range" });
      range.style.left = x(lo);
      range.style.width = "calc(" + x(hi) + " - " + x(lo) + ")";
      bar.append(range);
    }
    const dot = el("span", { class: "mean" });
    dot.style.left = x(mean);
    bar.append(dot);
    return bar;
  }

  function table(columns, rows, options = {}) {
    const head = el("tr", {}, columns.map((c) => el("th", { class: c.num ? "num" : null, text: c.label || c })));
    const body = rows.map((r) => el("tr", {}, r.map((cell, i) => cell instanceof Node
      ? el("td", { class: columns[i] && columns[i].num ? "num" : null }, cell)
      : el("td", { class: columns[i] && columns[i].num ? "num" : null, text: cell === null || cell === undefined ? "—" : cell }))));
    return el("div", { class: "scroll" }, el("table", { class: options.class || null }, head, body));
  }

  function json(value) {
    if (typeof value === "string") return value;
    const flat = JSON.stringify(value);
    return flat.length <= 60 ? flat : JSON.stringify(value, null, 1);
  }

  function scalar(value) {
    if (value === null) return "null";
    if (typeof value === "number" && !Number.isInteger(value)) return String(Number(value.toPrecision(6)));
    return String(value);
  }

  // ---------------------------------------------------------------- data sources

  async function getJSON(path, params) {
    const query = params ? "?" + params.toString() : "";
    const response = await fetch("api/" + path + query, { headers: { Accept: "application/json" } });
    const body = await response.json();
    if (!response.ok) throw new Error(body.error || response.statusText);
    return body;
  }

  function queryParams(q) {
    const params = new URLSearchParams();
    for (const f of FILTERS) if (q[f]) params.set(f, q[f]);
    for (const [metric, lo, hi] of q.ranges) params.append("range", metric + ":" + (lo ?? "") + ":" + (hi ?? ""));
    if (q.sort) params.set("sort", q.sort);
    if (q.desc) params.set("desc", "1");
    return params;
  }

  function serverApi() {
    return {
      canCompare: true,
      runs: () => getJSON("runs"),
      run: (id) => getJSON("run", new URLSearchParams({ id })),
      samples: (id, q, offset, limit) => {
        const params = queryParams(q);
        params.set("run", id);
        params.set("offset", offset);
        params.set("limit", limit);
        return getJSON("samples", params);
      },
      sample: (id, key, stepsOffset) => getJSON("sample", new URLSearchParams({ run: id, key, steps_offset: stepsOffset || 0 })),
      compare: (a, b, by) => getJSON("compare", new URLSearchParams({ a, b, by })),
    };
  }

  function reportApi(data) {
    const t = data.table;
    const rows = t.rows.map((r) => ({
      key: r[0], seq: r[1], trace_id: r[2], task_id: r[3], category: r[4], error_type: r[5],
      composite: r[6], coverage: r[7], recommendation: r[8], band: r[9], error: r[10],
      values: Object.fromEntries(t.metrics.map((m, i) => [m, r[11][i]])), reasons: r[12] || {},
    }));
    const order = new Map(rows.map((r, i) => [r.key, i]));
    let pages = null;

    async function samplePages() {
      if (pages === null) {
        const text = document.getElementById("ag-samples").textContent.trim();
        const bytes = Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
        const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
        pages = JSON.parse(await new Response(stream).text());
      }
      return pages;
    }

    function keep(row, q) {
      if (q.search) {
        const s = q.search.toLowerCase();
        if (!row.trace_id.toLowerCase().includes(s) && !row.task_id.toLowerCase().includes(s)) return false;
      }
      for (const f of FILTERS.slice(1)) if (q[f] && row[f] !== q[f]) return false;
      for (const [metric, lo, hi] of q.ranges) {
        const v = metric === "composite" ? row.composite : row.values[metric];
        if (v === null || v === undefined) return false;
        if (lo !== null && v < lo) return false;
        if (hi !== null && v > hi) return false;
      }
      return true;
    }

    function sortKey(q) {
      if (!q.sort || q.sort === "seq") return null;
      return q.sort === "composite" ? (r) => r.composite : (r) => r.values[q.sort];
    }

    return {
      canCompare: false,
      runs: async () => ({ runs: [data.run.run] }),
      run: async () => data.run,
      samples: async (id, q, offset, limit) => {
        const kept = rows.filter((r) => keep(r, q));
        const key = sortKey(q);
        const sign = q.desc ? -1 : 1;
        kept.sort((a, b) => {
          if (key) {
            const x = key(a), y = key(b);
            const mx = x === null || x === undefined, my = y === null || y === undefined;
            if (mx !== my) return mx ? 1 : -1;
            if (!mx && x !== y) return sign * (x < y ? -1 : 1);
            return a.seq - b.seq;
          }
          return sign * (a.seq - b.seq);
        });
        return { total: kept.length, offset, limit, rows: kept.slice(offset, offset + limit) };
      },
      sample: async (id, key) => {
        const page = (await samplePages())[key];
        if (!page) throw new Error("no sample " + key);
        const i = order.get(key);
        return {
          ...page, run_id: data.run.run.id,
          prev: i > 0 ? rows[i - 1].key : null,
          next: i < rows.length - 1 ? rows[i + 1].key : null,
        };
      },
      compare: async () => { throw new Error("comparing runs needs the viewer: agentgauge view"); },
    };
  }

  const api = MODE === "report"
    ? reportApi(JSON.parse(document.getElementById("ag-data").textContent))
    : serverApi();

  // ---------------------------------------------------------------- charts (Chart.js)

  function chartBox(title, note, tall) {
    const canvas = el("canvas");
    const box = el("div", {}, el("div", { class: "chart-title", text: title }),
      note ? el("div", { class: "note", text: note }) : null,
      el("div", { class: tall ? "chart tall" : "chart" }, canvas));
    return { box, canvas };
  }

  function draw(canvas, config) {
    if (typeof Chart === "undefined") return;
    config.options = Object.assign({ animation: false, responsive: true, maintainAspectRatio: false }, config.options || {});
    charts.push(new Chart(canvas, config));
  }

  function histogram(title, bins, note) {
    const { box, canvas } = chartBox(title, note);
    const labels = bins.map((_, i) => (i / bins.length).toFixed(2) + "–" + ((i + 1) / bins.length).toFixed(2));
    draw(canvas, {
      type: "bar",
      data: { labels, datasets: [{ label: "samples", data: bins, backgroundColor: "#4c72b0", barPercentage: 1, categoryPercentage: 0.95 }] },
      options: { plugins: { legend: { display: false } }, scales: { x: { ticks: { maxTicksLimit: 6 } }, y: { beginAtZero: true, ticks: { precision: 0 } } } },
    });
    return box;
  }

  function barsSection(s) {
    const { box, canvas } = chartBox(s.title, s.note, true);
    draw(canvas, {
      type: "bar",
      data: { labels: s.labels, datasets: [{ label: "samples", data: s.values, backgroundColor: "#cf6a4c" }] },
      options: { indexAxis: "y", plugins: { legend: { display: false } }, scales: { x: { beginAtZero: true, ticks: { precision: 0 } } } },
    });
    return box;
  }

  function lineSection(s) {
    const { box, canvas } = chartBox(s.title, s.note, true);
    const colors = ["#4c72b0", "#dd8452", "#55a868"];
    draw(canvas, {
      type: "line",
      data: { labels: s.labels, datasets: s.series.map((d, i) => ({ label: d.name, data: d.values, borderColor: colors[i % 3], backgroundColor: colors[i % 3], spanGaps: true, pointRadius: 2 })) },
      options: { scales: { x: { title: { display: true, text: s.x_label || "" } } } },
    });
    return box;
  }

  function intervalsChart(title, note, labels, estimates, lows, highs) {
    const { box, canvas } = chartBox(title, note, true);
    box.querySelector(".chart").style.height = Math.max(220, 28 * labels.length + 60) + "px";
    const significant = lows.map((lo, i) => lo !== null && (lo > 0 || highs[i] < 0));
    draw(canvas, {
      type: "bar",
      data: {
        labels,
        datasets: [
          { type: "bar", label: "95% CI", data: lows.map((lo, i) => (lo === null ? null : [lo, highs[i]])), backgroundColor: significant.map((s) => (s ? "#8cb4e8" : "#d0d7de")), barPercentage: 0.35 },
          { type: "line", label: "estimate", data: estimates, showLine: false, pointRadius: 4, borderColor: "#0969da", backgroundColor: "#0969da" },
        ],
      },
      options: { indexAxis: "y", scales: { x: { title: { display: true, text: "effect" } } } },
    });
    return box;
  }

  // ---------------------------------------------------------------- routing

  const main = document.getElementById("app");

  function parseHash() {
    const hash = location.hash.replace(/^#\/?/, "");
    const [path, query] = hash.split("?");
    const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
    return { parts, params: new URLSearchParams(query || "") };
  }

  async function render() {
    // data-ready names the route last drawn in full (tests and scripts wait for it)
    const hash = location.hash || "#/";
    delete document.body.dataset.ready;
    while (charts.length) charts.pop().destroy();
    const { parts, params } = parseHash();
    main.replaceChildren(el("div", { class: "loading", text: "Loading…" }));
    try {
      let view;
      if (parts[0] === "run" && parts[2] === "sample") view = await sampleView(parts[1], parts[3], params);
      else if (parts[0] === "run") view = await runView(parts[1], params);
      else if (parts[0] === "compare" && parts[3] === "sample") view = await sideBySideView(parts[1], parts[2], params);
      else if (parts[0] === "compare") view = await compareView(parts[1], parts[2], params);
      else view = await runsView(params);
      if ((location.hash || "#/") !== hash) return; // a newer route is being drawn
      main.replaceChildren(view);
      window.scrollTo(0, 0);
    } catch (error) {
      if ((location.hash || "#/") !== hash) return;
      main.replaceChildren(el("p", { class: "err", text: "Could not load this page: " + error.message }));
    }
    if ((location.hash || "#/") === hash) document.body.dataset.ready = hash;
  }

  // ---------------------------------------------------------------- runs list

  async function runsView(params) {
    const { runs } = await api.runs();
    if (MODE === "report" && runs.length === 1) {
      location.replace("#/run/" + enc(runs[0].id));
      return el("div");
    }
    const selected = new Set();
    let sortKey = params.get("sort") || "created_at";
    let desc = params.get("desc") !== "0";
    const filter = el("input", { type: "search", placeholder: "id, name, tag, kind, suite, model…", "aria-label": "filter runs", value: params.get("q") || "" });
    const compareButton = el("button", { class: "primary", disabled: true, text: "Compare the two selected runs" });
    const count = el("span", { class: "muted" });
    const body = el("tbody");
    const columns = [
      ["", null], ["run", "id"], ["tags", "tags"], ["kind", "kind"], ["suite", "suite"], ["source", "source"],
      ["model", "model"], ["samples", "n_samples", true], ["composite", "composite", true], ["95% CI", null, true],
      ["cost", "cost_usd", true],
      ["verdict", "recommendation"], ["status", "status"], ["created (UTC)", "created_at"],
    ];
    const value = (run, key) => (key === "composite" ? run.composite.mean : key === "tags" ? run.tags.join(" ") : run[key]);

    function fill() {
      const needle = filter.value.trim().toLowerCase();
      const shown = runs.filter((r) => !needle || [r.id, r.name, r.kind, r.suite, r.model, r.source, r.mode, r.status, ...r.tags]
        .some((v) => v && String(v).toLowerCase().includes(needle)));
      shown.sort((a, b) => {
        const x = value(a, sortKey), y = value(b, sortKey);
        if (x === y) return 0;
        if (x === null || x === undefined) return 1;
        if (y === null || y === undefined) return -1;
        return (x < y ? -1 : 1) * (desc ? -1 : 1);
      });
      body.replaceChildren(...shown.map((r) => el("tr", { "data-run": r.id },
        el("td", {}, el("input", { type: "checkbox", "aria-label": "select " + r.id, checked: selected.has(r.id), onchange: (e) => {
          if (e.target.checked) selected.add(r.id); else selected.delete(r.id);
          compareButton.disabled = selected.size !== 2;
        } })),
        el("td", {}, el("a", { href: "#/run/" + enc(r.id), class: "mono", text: r.id }), r.name ? el("div", { text: r.name }) : null),
        el("td", {}, r.tags.map((t) => el("span", { class: "tag", text: t }))),
        el("td", { text: r.kind }), el("td", { text: r.suite }), el("td", { text: r.source || "—" }),
        el("td", { text: [r.model, r.mode].filter(Boolean).join(" · ") || "—" }),
        el("td", { class: "num", text: r.n_samples }),
        el("td", { class: "num " + bandClass(r.band), text: num(r.composite.mean) }),
        el("td", { class: "num" }, ci(r.composite.ci_low, r.composite.ci_high)),
        el("td", { class: "num", text: usd(r.cost_usd) }),
        el("td", { class: bandClass(r.band), text: r.recommendation ? r.recommendation + " · " + r.band : "—" }),
        el("td", { text: r.status }),
        el("td", { class: "mono", text: (r.created_at || "").slice(0, 16).replace("T", " ") }),
      )));
      count.textContent = shown.length + " of " + runs.length + " runs";
    }

    const head = el("tr", {}, columns.map(([label, key, isNum]) => el("th", {
      class: (key ? "sortable " : "") + (isNum ? "num" : ""), text: label,
      onclick: key ? () => { desc = sortKey === key ? !desc : key === "created_at"; sortKey = key; fill(); } : null,
    })));
    filter.addEventListener("input", fill);
    compareButton.addEventListener("click", () => {
      // the older run is the baseline (the list comes newest first)
      const [b, a] = runs.filter((r) => selected.has(r.id));
      location.hash = "#/compare/" + enc(a.id) + "/" + enc(b.id);
    });
    fill();
    return el("div", {},
      el("h1", { text: "Runs" }),
      el("div", { class: "toolbar" }, el("label", {}, "filter", filter), api.canCompare ? compareButton : null, count),
      runs.length ? el("div", { class: "scroll" }, el("table", { id: "runs" }, el("thead", {}, head), body))
        : el("p", { class: "empty", text: "No run in this store yet: record one with agentgauge evaluate." }));
  }

  // ---------------------------------------------------------------- run page

  function runHeader(run) {
    return [
      el("h1", {}, "Run ", el("span", { class: "mono", text: run.id }), run.name ? " · " + run.name : ""),
      el("div", { class: "meta" },
        el("span", { text: run.kind }), el("span", { text: "suite " + run.suite }),
        el("span", { text: run.n_samples + " samples" }),
        run.n_errors ? el("span", { class: "err", text: run.n_errors + " unreadable lines" }) : null,
        el("span", { text: run.status }), el("span", { text: run.created_at }),
        run.model ? el("span", { text: "model " + run.model }) : null,
        run.mode ? el("span", { text: "mode " + run.mode }) : null,
        run.tags.length ? el("span", {}, run.tags.map((t) => el("span", { class: "tag", text: t }))) : null),
    ];
  }

  function summaryTable(doc) {
    const columns = ["metric", { label: "weight", num: true }, { label: "mean", num: true },
      { label: "95% CI", num: true }, "", { label: "n", num: true }, { label: "n/a", num: true }];
    const rows = doc.metrics.map((m) => [m.name, m.weight ? num(m.weight, 2) : "·", num(m.mean), ci(m.ci_low, m.ci_high),
      ciBar(m.mean, m.ci_low, m.ci_high) || "", m.n, m.n_missing]);
    const c = doc.composite;
    const wrap = table(columns, rows, { class: "summary" });
    wrap.querySelector("table").append(el("tr", { class: "composite" }, el("td", { text: "composite" }), el("td"),
      el("td", { class: "num", text: num(c.mean) }), el("td", { class: "num", text: ci(c.ci_low, c.ci_high) }),
      el("td", {}, ciBar(c.mean, c.ci_low, c.ci_high)), el("td", { class: "num", text: c.n }), el("td", { class: "num", text: c.n_missing })));
    return wrap;
  }

  function usageSection(usage) {
    const agent = usage.agent;
    const fields = Object.keys(agent).filter((f) => agent[f].n);
    if (!fields.length && !usage.judge) return null;
    const money = (f, v) => (f === "cost_usd" ? usd(v) : count(v));
    const rows = fields.map((f) => [f, money(f, agent[f].total), money(f, agent[f].mean),
      agent[f].ci_low === null ? "—" : "[" + money(f, agent[f].ci_low) + ", " + money(f, agent[f].ci_high) + "]", agent[f].n, agent[f].n_missing]);
    const per = [];
    if (usage.composite_per_usd !== null) per.push("composite per dollar " + num(usage.composite_per_usd));
    if (usage.composite_per_1k_tokens !== null) per.push("composite per 1,000 tokens " + num(usage.composite_per_1k_tokens));
    const j = usage.judge;
    return el("div", { id: "usage" }, el("h2", { text: "Tokens and cost" }),
      fields.length ? table(["agent (each token counted once)", { label: "total", num: true }, { label: "mean per sample", num: true }, { label: "95% CI", num: true }, { label: "n", num: true }, { label: "n/a", num: true }], rows) : null,
      per.length ? el("p", { text: per.join(" · ") }) : null,
      j ? el("p", { text: "judges: " + j.calls + " calls paid for (" + j.requests + " requests, " + count(j.total_tokens) + " tokens, " + usd(j.cost_usd) + (j.cost_unknown ? " + " + j.cost_unknown + " calls of unknown cost" : "") + "), " + j.cached + " answers from the cache" }) : null);
  }

  function judgeNoiseSection(noise) {
    if (!noise || !noise.metrics || !Object.keys(noise.metrics).length) return null;
    const ci = (v, c) => num(v) + (c ? " [" + num(c[0]) + ", " + num(c[1]) + "]" : "");
    const rows = Object.entries(noise.metrics).map(([name, m]) => [name, m.samples ? m.answers / m.samples : 0,
      ci(m.mean_sd, m.mean_sd_ci), ci(m.pooled_sd, m.pooled_sd_ci), num(m.agreement), num(m.alpha), num(m.between_sd), m.uncertain]);
    return el("div", { id: "judge-noise" }, el("h2", { text: "Judge noise" }),
      el("p", { class: "note", text: "Each judgment was asked k times. sd: mean within-sample standard deviation; pooled: root mean within-sample variance; agreement: equal pairs of answers; alpha: Krippendorff's across the repeats; spread: the standard deviation between samples (unit scale, [95% CI])." }),
      table(["metric", { label: "k", num: true }, { label: "sd", num: true }, { label: "pooled", num: true }, { label: "agreement", num: true }, { label: "alpha", num: true }, { label: "spread", num: true }, { label: "uncertain", num: true }], rows),
      noise.uncertain ? el("p", { class: "banner", id: "uncertain-count", text: noise.uncertain + " samples are uncertain: their judges' noise could change their verdict (a recommendation threshold or a gate lies within it)." }) : null);
  }

  function sectionView(s) {
    if (s.type === "bars") return el("div", {}, el("h2", { text: s.title }), barsSection(s));
    if (s.type === "line") return el("div", {}, el("h2", { text: s.title }), lineSection(s));
    if (s.type === "intervals") return el("div", {}, el("h2", { text: s.title }), intervalsChart("", s.note, s.labels, s.estimates, s.lows, s.highs));
    if (s.type === "statements") return el("div", {}, el("h2", { text: s.title }), el("ul", {}, s.items.map((i) => el("li", { text: i }))));
    return el("div", {}, el("h2", { text: s.title }), s.note ? el("p", { class: "note", text: s.note }) : null,
      table(s.columns, s.rows));
  }

  function readQuery(params) {
    const q = { ranges: [], sort: params.get("sort") || "seq", desc: params.get("desc") === "1" };
    for (const f of FILTERS) q[f] = params.get(f) || "";
    for (const r of params.getAll("range")) {
      const [metric, lo, hi] = r.split(":");
      if (metric) q.ranges.push([metric, lo === "" || lo === undefined ? null : Number(lo), hi === "" || hi === undefined ? null : Number(hi)]);
    }
    q.page = Math.max(0, Number(params.get("page") || 0));
    return q;
  }

  function writeQuery(runId, q) {
    const params = queryParams(q);
    if (q.page) params.set("page", q.page);
    const text = params.toString();
    return "#/run/" + enc(runId) + (text ? "?" + text : "");
  }

  async function runView(runId, params) {
    const doc = await api.run(runId);
    const run = doc.run;
    const c = doc.composite;
    const content = el("div", {}, runHeader(run));
    content.append(el("h2", { text: "Summary" }), summaryTable(doc));
    if (run.recommendation) {
      content.append(el("p", { class: "verdict" }, "Run verdict: ", el("b", { id: "run-verdict", text: run.recommendation }),
        " · band ", el("b", { class: bandClass(run.band), text: run.band }),
        el("span", { class: "muted", text: " (the suite's thresholds applied to the mean composite)" })));
    }
    if (run.gates_failed && Object.keys(run.gates_failed).length) {
      content.append(el("p", { class: "banner", id: "gates-failed", text: "Gate failed: " + gateNote(run.gates_failed) + " — the run is a reject whatever its composite (the suite's [gates])." }));
    }
    const coverage = [];
    if (c.mean_coverage !== null && c.lowest_coverage < 1) {
      coverage.push("Coverage " + pct(c.mean_coverage) + " (lowest " + pct(c.lowest_coverage) + "): some weighted metrics were not measured; each sample's composite is renormalised over the metrics that were.");
    } else if (c.mean_coverage !== null) coverage.push("Coverage 100%: every weighted metric was measured on every sample.");
    if (c.n_metric_errors) coverage.push(c.n_metric_errors + " samples had a metric error.");
    content.append(...coverage.map((t) => el("p", { text: t })));

    if (run.uncertain) {
      content.append(el("p", { class: "banner", id: "run-uncertain", text: "The run verdict is uncertain: under the judges' noise the mean composite lies in " + num(run.uncertain.interval[0]) + "–" + num(run.uncertain.interval[1]) + ", which spans " + run.uncertain.recommendations.join(" and ") + "." }));
    }
    content.append(judgeNoiseSection(doc.judge_noise) || "");
    content.append(usageSection(doc.usage) || "");
    content.append(el("h2", { text: "Distributions" }), el("div", { class: "grid" },
      [...doc.metrics.filter((m) => m.n).map((m) => histogram(m.name, m.bins, "mean " + num(m.mean) + " over " + m.n + " samples")),
        c.n ? histogram("composite", c.bins, "mean " + num(c.mean) + " over " + c.n + " samples") : null]));

    const missing = doc.metrics.filter((m) => m.missing.length);
    if (missing.length) {
      content.append(el("h2", { text: "Why values are missing" }), el("div", { id: "missing" }, missing.map((m) => el("div", {},
        el("b", { text: m.name }), el("span", { class: "muted", text: " — n/a on " + m.n_missing + " samples" }),
        el("ul", { class: "reasons" }, m.missing.map(([reason, n]) => el("li", { text: n + " × " + reason })))))));
    }
    content.append(...doc.sections.map(sectionView));
    content.append(await samplesSection(doc, params));
    if (doc.n_read_errors) {
      content.append(el("h2", { text: "Input lines not read, or read with a value left out (" + doc.n_read_errors + ")" }),
        table(["source", { label: "line", num: true }, "field", "message"], doc.read_errors.map((e) => [e.source, e.line, e.field || "", e.message])));
    }
    return content;
  }

  async function samplesSection(doc, params) {
    const run = doc.run;
    const q = readQuery(params);
    const metrics = doc.metrics.map((m) => m.name);
    const go = (changes) => { location.hash = writeQuery(run.id, Object.assign({}, q, { page: 0 }, changes)); };

    const search = el("input", { type: "search", id: "sample-search", placeholder: "trace or task id", value: q.search });
    let timer = null;
    search.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(() => go({ search: search.value.trim() }), 300); });
    function select(name, label, values, counts) {
      const node = el("select", { id: "filter-" + name, onchange: (e) => go({ [name]: e.target.value }) },
        el("option", { value: "", text: "all" }),
        values.map((v) => el("option", { value: v, selected: q[name] === v, text: counts && counts.has(v) ? v + " (" + counts.get(v) + ")" : v })));
      return el("label", {}, label, node);
    }
    const facet = (name) => new Map((doc.facets[name] || []).map(([v, n]) => [v, n]));
    const known = (name, order) => [...new Set([...order.filter((v) => facet(name).has(v)), ...facet(name).keys()])];
    const task = el("input", { type: "search", id: "filter-task", placeholder: "exact task id", value: q.task_id });
    task.addEventListener("change", () => go({ task_id: task.value.trim() }));
    const [rangeMetric, lo, hi] = q.ranges[0] || ["composite", null, null];
    const rangeSelect = el("select", { id: "range-metric" }, ["composite", ...metrics].map((m) => el("option", { value: m, selected: m === rangeMetric, text: m })));
    const low = el("input", { type: "number", id: "range-low", step: "0.05", min: "0", max: "1", placeholder: "min", value: lo ?? "" });
    const high = el("input", { type: "number", id: "range-high", step: "0.05", min: "0", max: "1", placeholder: "max", value: hi ?? "" });
    const applyRange = () => {
      const l = low.value === "" ? null : Number(low.value), h = high.value === "" ? null : Number(high.value);
      go({ ranges: l === null && h === null ? [] : [[rangeSelect.value, l, h]] });
    };
    low.addEventListener("change", applyRange);
    high.addEventListener("change", applyRange);
    rangeSelect.addEventListener("change", () => { if (low.value !== "" || high.value !== "") applyRange(); });
    const sortSelect = el("select", { id: "sort", onchange: (e) => go({ sort: e.target.value }) },
      [["seq", "input order"], ["composite", "composite"], ...metrics.map((m) => [m, m])].map(([v, t]) => el("option", { value: v, selected: q.sort === v, text: t })));
    const direction = el("button", { id: "sort-direction", text: q.desc ? "high → low" : "low → high", onclick: () => go({ desc: !q.desc }) });
    const clear = el("button", { text: "clear filters", onclick: () => { location.hash = "#/run/" + enc(run.id); } });

    const toolbar = el("div", { class: "toolbar" },
      el("label", {}, "search", search),
      select("recommendation", "verdict", known("recommendation", VERDICTS), facet("recommendation")),
      select("band", "band", known("band", BANDS), facet("band")),
      doc.facets.error_type.length ? select("error_type", "error type", [...facet("error_type").keys()], facet("error_type")) : null,
      doc.facets.category.length ? select("category", "category", [...facet("category").keys()], facet("category")) : null,
      el("label", {}, "task", task),
      el("label", {}, "range of", rangeSelect), el("label", {}, "from", low), el("label", {}, "to", high),
      el("label", {}, "sort by", sortSelect), direction, clear);

    const page = await api.samples(run.id, q, q.page * PAGE_SIZE, PAGE_SIZE);
    const pages = Math.max(1, Math.ceil(page.total / PAGE_SIZE));
    const sortBy = (key) => go({ sort: key, desc: q.sort === key ? !q.desc : key !== "seq" ? false : false });
    const header = el("tr", {},
      el("th", { class: "num sortable", text: "#", onclick: () => sortBy("seq") }), el("th", { text: "trace" }), el("th", { text: "task" }),
      doc.facets.category.length ? el("th", { text: "category" }) : null,
      el("th", { class: "num sortable", text: "composite", onclick: () => sortBy("composite") }), el("th", { text: "verdict" }),
      doc.facets.error_type.length ? el("th", { text: "error type" }) : null,
      metrics.map((m) => el("th", { class: "num sortable", text: m, onclick: () => sortBy(m) })));
    const body = page.rows.map((r) => el("tr", { "data-key": r.key },
      el("td", { class: "num", text: r.seq }),
      el("td", {}, el("a", { href: "#/run/" + enc(run.id) + "/sample/" + enc(r.key), class: "mono", text: r.trace_id })),
      el("td", { text: r.task_id }),
      doc.facets.category.length ? el("td", { text: r.category || "—" }) : null,
      el("td", { class: "num " + bandClass(r.band), text: num(r.composite) }),
      el("td", { class: "nowrap " + bandClass(r.band), text: r.error ? "metric error" : r.recommendation ? r.recommendation + " · " + r.band : "—" }),
      doc.facets.error_type.length ? el("td", { class: "mono", text: r.error_type || "" }) : null,
      metrics.map((m) => el("td", { class: "num", title: r.reasons[m] || null, text: r.values[m] === null || r.values[m] === undefined ? "n/a" : num(r.values[m]) }))));
    const pager = el("div", { class: "pager" },
      el("button", { id: "prev-page", disabled: q.page <= 0, text: "← previous", onclick: () => { location.hash = writeQuery(run.id, Object.assign({}, q, { page: q.page - 1 })); } }),
      el("span", { id: "sample-count", text: page.total + " samples · page " + (q.page + 1) + " of " + pages }),
      el("button", { id: "next-page", disabled: q.page + 1 >= pages, text: "next →", onclick: () => { location.hash = writeQuery(run.id, Object.assign({}, q, { page: q.page + 1 })); } }));
    return el("div", { id: "samples" }, el("h2", { text: "Samples" }), toolbar, pager,
      el("div", { class: "scroll" }, el("table", { id: "samples-table" }, header, body)),
      page.rows.length ? null : el("p", { class: "empty", text: "No sample matches these filters." }));
  }

  // ---------------------------------------------------------------- sample page

  function valueText(v) {
    return v === undefined ? "(omitted)" : JSON.stringify(v);
  }

  function same(a, b) {
    const canon = (v) => JSON.stringify(v, (k, x) => (x && typeof x === "object" && !Array.isArray(x)
      ? Object.fromEntries(Object.keys(x).sort().map((key) => [key, x[key]])) : x));
    return canon(a) === canon(b);
  }

  function callsView(expected, predicted, errors) {
    // pair each expected call with a predicted call of the same tool, then the rest in order
    const used = new Set();
    const pairs = (expected || []).map((e) => {
      const j = (predicted || []).findIndex((p, i) => !used.has(i) && p && p.name === e.name);
      if (j >= 0) used.add(j);
      return [e, j >= 0 ? predicted[j] : null];
    });
    (predicted || []).forEach((p, i) => { if (!used.has(i)) pairs.push([null, p]); });
    const flagged = new Set((errors || []).map((e) => String(e).split(":").slice(1).join(":")).filter(Boolean));
    const rows = [];
    for (const [e, p] of pairs) {
      const nameBad = !e || !p || e.name !== p.name;
      rows.push(el("tr", { class: nameBad ? "bad" : null },
        el("td", { class: "muted", text: "tool" }),
        el("td", { class: "mono", text: e ? e.name : "(no call expected)" }),
        el("td", { class: "mono", text: p ? p.name : "(not called)" })));
      const eArgs = (e && e.arguments) || {}, pArgs = (p && p.arguments) || {};
      for (const param of [...new Set([...Object.keys(eArgs), ...Object.keys(pArgs)])]) {
        const acceptable = param in eArgs ? (Array.isArray(eArgs[param]) ? eArgs[param] : [eArgs[param]]) : null;
        const given = param in pArgs;
        let bad = flagged.has(param);
        if (e && p) {
          if (acceptable === null) bad = true;
          else if (!given) bad = bad || !acceptable.includes("");
          else bad = bad || !acceptable.some((a) => same(a, pArgs[param]));
        }
        const shown = acceptable === null ? "(not expected)" : acceptable.map((a) => (a === "" ? "(may be omitted)" : JSON.stringify(a))).join("  |  ");
        rows.push(el("tr", { "data-param": param },
          el("td", { class: "mono", text: param }),
          el("td", { class: "mono", text: shown }),
          el("td", { class: "mono" + (bad ? " bad" : ""), text: given ? valueText(pArgs[param]) : "(omitted)" })));
      }
    }
    return el("div", { class: "scroll" }, el("table", { class: "calls" },
      el("tr", {}, el("th", { text: "parameter" }), el("th", { text: "expected (acceptable values)" }), el("th", { text: "predicted" })), rows));
  }

  const TEXT_KEYS = new Set(["rationale", "reasoning", "explanation", "justification", "critique", "feedback"]);

  function detailsView(details, shared) {
    if (details === null || details === undefined) return null;
    if (typeof details !== "object" || Array.isArray(details)) return el("pre", { text: json(details) });
    const parts = [];
    const rows = [];
    if (details.expected !== undefined && details.predicted !== undefined && Array.isArray(details.predicted)) {
      parts.push(el("div", { class: "label", text: "expected vs predicted calls" }), callsView(details.expected, details.predicted, details.errors));
    }
    for (const [key, value] of Object.entries(details)) {
      if (parts.length && (key === "expected" || key === "predicted")) continue;
      if (TEXT_KEYS.has(key) && typeof value === "string") {
        parts.push(el("div", { class: "label", text: key }), el("div", { class: "rationale", text: value }));
        continue;
      }
      const text = value === null || typeof value !== "object" ? scalar(value) : json(value);
      rows.push(el("tr", {}, el("th", { class: "mono", text: key }),
        el("td", {}, text.includes("\n") ? el("pre", { text }) : el("span", { class: "text mono", text }))));
    }
    if (shared && shared.length) rows.push(el("tr", {}, el("th", { class: "muted", text: "also" }), el("td", { class: "muted", text: shared.join(", ") + " (shown once, above)" })));
    if (rows.length) parts.push(el("table", { class: "kv" }, rows));
    return el("div", {}, parts);
  }

  function metricCard(m) {
    return el("div", { class: "card", "data-metric": m.name },
      el("h3", {}, el("span", { text: m.name }), el("span", { class: "value", text: m.value === null ? "n/a" : num(m.value) })),
      el("div", { class: "muted", text: m.weight ? "weight " + num(m.weight, 2) : "not weighted" }),
      m.reason ? el("div", { class: "reason", text: m.reason }) : null,
      m.error ? el("div", { class: "reason err", text: "error: " + m.error }) : null,
      detailsView(m.details, m.shared));
  }

  function timeline(trace) {
    const steps = trace.steps;
    if (!steps.length) return el("p", { class: "empty", text: "The trace has no step." });
    // a loop, not Math.max(...steps): a spread of 100,000 arguments overflows the stack
    const end = steps.reduce((most, s) => Math.max(most, s.offset_s + (s.duration_s || 0)), 1e-9);
    const timed = steps.some((s) => s.duration_s);
    const lanes = [...new Set(steps.map((s) => s.agent || "(environment)"))];
    const box = el("div", { class: "timeline" });
    for (const lane of lanes) {
      const track = el("div", { class: "lane-track" });
      steps.forEach((s, i) => {
        if ((s.agent || "(environment)") !== lane) return;
        const left = timed ? (100 * s.offset_s) / end : (100 * i) / steps.length;
        const width = timed ? (100 * (s.duration_s || 0)) / end : 100 / steps.length;
        const label = s.kind + (s.tool ? " " + s.tool.name : "") + (s.duration_s ? " · " + seconds(s.duration_s) : "");
        const bar = el("div", { class: "bar kind-" + s.kind, title: "#" + s.index + " " + label, text: s.tool ? s.tool.name : "",
          onclick: () => { const target = document.getElementById("step-" + i); target.scrollIntoView({ block: "center" }); target.classList.add("flash"); setTimeout(() => target.classList.remove("flash"), 1200); } });
        bar.style.left = left + "%";
        bar.style.width = "max(3px, calc(" + width + "% - 1px))";
        track.append(bar);
      });
      box.append(el("div", { class: "lane" }, el("div", { class: "lane-name", title: lane, text: lane }), track));
    }
    const kinds = [...new Set(steps.map((s) => s.kind))];
    return el("div", {},
      el("div", { class: "legend" }, kinds.map((k) => el("span", {}, el("i", { class: "kind-" + k }), k))),
      box,
      el("div", { class: "axis" }, el("span", { text: "0" }), el("span", { text: timed ? seconds(end) : steps.length + " steps (no durations recorded)" })));
  }

  function graphView(graph) {
    if (!graph.edges.length) return null;
    const n = graph.agents.length, w = 720, h = n > 2 ? 420 : 200, r = n > 2 ? 150 : 220;
    const start = n > 2 ? -Math.PI / 2 : Math.PI;
    const pos = new Map(graph.agents.map((a, i) => [a, [w / 2 + r * Math.cos((2 * Math.PI * i) / n + start), h / 2 + r * Math.sin((2 * Math.PI * i) / n + start)]]));
    const root = svg("svg", { width: w, height: h, viewBox: "0 0 " + w + " " + h, role: "img" },
      svg("defs", {}, svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" }, svg("path", { d: "M0,0L10,5L0,10z", fill: "#57606a" }))));
    for (const e of graph.edges) {
      const [x1, y1] = pos.get(e.from), [x2, y2] = pos.get(e.to);
      const len = Math.hypot(x2 - x1, y2 - y1) || 1, ux = (x2 - x1) / len, uy = (y2 - y1) / len;
      // bend the edge a little so that A→B and B→A do not overlap
      const mx = (x1 + x2) / 2 - uy * 30, my = (y1 + y2) / 2 + ux * 30;
      root.append(svg("path", { d: "M" + (x1 + ux * 28) + "," + (y1 + uy * 28) + " Q" + mx + "," + my + " " + (x2 - ux * 30) + "," + (y2 - uy * 30), fill: "none", stroke: "#57606a", "stroke-width": 1 + Math.min(4, Math.log2(e.count + 1)), "marker-end": "url(#arrow)" }));
      root.append(svg("text", { x: mx - uy * 8, y: my + ux * 8 + 4, "font-size": 11, "text-anchor": "middle", fill: "#cf222e", text: e.count + "× " + e.types.join(", ") }));
    }
    for (const [agent, [x, y]] of pos) {
      root.append(svg("circle", { cx: x, cy: y, r: 26, fill: "#ddf4ff", stroke: "#0969da" }));
      root.append(svg("text", { x, y: y + 42, "font-size": 12, "text-anchor": "middle", text: agent }));
    }
    return el("div", { class: "graph" }, el("h3", { text: "Messages and hand-offs between agents" }), root);
  }

  function stepView(s, i, blame) {
    const blamed = blame && blame.step === s.index;
    return el("div", { class: blamed ? "step blamed" : "step", id: "step-" + i },
      blamed ? el("div", { class: "blame", text: "went wrong here: " + blame.category + (blame.agent ? " (" + blame.agent + ")" : "") + " — " + blame.note }) : null,
      el("div", { class: "step-head" }, el("b", { text: "#" + s.index + " " + s.kind }),
        s.agent ? el("span", { text: s.agent + (s.recipient ? " → " + s.recipient : "") }) : null,
        s.message_type ? el("span", { class: "pill", text: s.message_type }) : null,
        s.duration_s !== null && s.duration_s !== undefined ? el("span", { class: "muted", text: seconds(s.duration_s) + " at +" + seconds(s.offset_s || 0) }) : null),
      s.content !== null ? el("pre", { text: s.content }) : null,
      s.tool ? [el("div", { class: "label" }, "tool call ", el("b", { class: "mono", text: s.tool.name })), el("pre", { text: s.tool.arguments || "{}" })] : null,
      s.result !== null ? [el("div", { class: "label", text: "result" }), el("pre", { text: s.result })] : null,
      s.error !== null ? [el("div", { class: "label err", text: "error" }), el("pre", { text: s.error })] : null);
  }

  function samplePanel(doc, runId) {
    const trace = doc.trace;
    const parts = [
      el("div", { class: "meta" }, el("span", { text: "task " + doc.task_id }), doc.category ? el("span", { text: "category " + doc.category }) : null,
        doc.source ? el("span", { text: doc.source + ":" + doc.line }) : null, el("span", { text: "coverage " + pct(doc.coverage) }),
        doc.usage && doc.usage.total_tokens !== undefined ? el("span", { text: count(doc.usage.total_tokens) + " tokens" }) : null,
        doc.usage && doc.usage.cost_usd !== undefined && doc.usage.cost_usd !== null ? el("span", { text: usd(doc.usage.cost_usd) }) : null),
      el("p", { class: "verdict" }, "Composite ", el("b", { class: bandClass(doc.band), text: num(doc.composite) }),
        doc.recommendation ? " · " + doc.recommendation + " · " + doc.band : "",
        doc.error_type ? el("span", {}, " · error type ", el("code", { text: doc.error_type })) : null),
      doc.error ? el("p", { class: "err", text: doc.error }) : null,
      doc.gates ? el("p", { class: "banner", text: "Gate failed: " + gateNote(doc.gates.failed) + " — a reject whatever the composite." }) : null,
      doc.uncertain ? el("p", { class: "banner", id: "sample-uncertain", text: "Uncertain: " + doc.uncertain.note + " — the judges' own noise could change this verdict." }) : null,
      doc.attribution ? el("p", { class: "banner", id: "attribution" }, "Went wrong at ", el("b", { text: "step " + doc.attribution.step }), ": " + doc.attribution.category + (doc.attribution.agent ? " by " + doc.attribution.agent : "") + " (" + doc.attribution.evidence + ")") : null,
      el("h2", { text: "Metrics" }),
    ];
    const shared = doc.shared || {};
    if (shared.expected !== undefined && Array.isArray(shared.predicted)) {
      parts.push(el("h3", { text: "Expected vs predicted calls" }), callsView(shared.expected, shared.predicted, shared.errors));
    }
    const rest = Object.fromEntries(Object.entries(shared).filter(([k]) => !(shared.predicted !== undefined && (k === "expected" || k === "predicted"))));
    if (Object.keys(rest).length) parts.push(el("h3", { text: "Shared by several metrics" }), detailsView(rest));
    parts.push(el("div", { class: "cards" }, doc.metrics.map(metricCard)));
    if (trace) {
      parts.push(el("h2", { text: "Trace" }),
        el("div", { class: "meta" }, trace.agent ? el("span", { text: "agent " + trace.agent }) : null,
          trace.duration_s ? el("span", { text: seconds(trace.duration_s) }) : null,
          trace.usage && trace.usage.cost_usd !== undefined ? el("span", { text: "$" + trace.usage.cost_usd }) : null,
          trace.usage && trace.usage.input_tokens !== undefined ? el("span", { text: trace.usage.input_tokens + " in / " + (trace.usage.output_tokens ?? "?") + " out tokens" }) : null),
        trace.task.description ? [el("h3", { text: "Task" }), el("div", { class: "text", text: trace.task.description })] : null,
        el("h3", { text: "Input" }), el("pre", { text: trace.task.input ?? "—" }),
        trace.task.expected_output !== null ? [el("h3", { text: "Expected output" }), el("pre", { text: trace.task.expected_output })] : null,
        el("h3", { text: "Output" }), el("pre", { id: "trace-output", text: trace.output ?? "—" }),
        el("h3", { text: "Timeline by agent" }), timeline(trace),
        graphView(trace.graph),
        el("h3", { text: stepsTitle(trace) }), stepPager(trace, runId, doc.key), el("div", { class: "steps" }, trace.steps.map((st, i) => stepView(st, i, doc.attribution))));
    } else parts.push(el("p", { class: "muted", text: "The trace was not stored with this run." }));
    return el("div", { "data-sample": doc.key }, parts);
  }

  function stepsTitle(trace) {
    const total = trace.steps_total ?? trace.steps.length;
    if (trace.steps.length === total) return "Steps (" + total + ")";
    const first = (trace.steps_offset || 0) + 1;
    return "Steps " + first + "–" + (first + trace.steps.length - 1) + " of " + total;
  }

  function stepPager(trace, runId, key) {
    // a trace too long for one page is read a page of steps at a time
    const total = trace.steps_total ?? trace.steps.length;
    if (!runId || trace.steps.length === total) return null;
    const at = trace.steps_offset || 0;
    const size = Math.max(trace.steps.length, 1);
    const to = (offset) => "#/run/" + enc(runId) + "/sample/" + enc(key) + "?steps=" + offset;
    return el("div", { class: "nav" },
      at > 0 ? el("a", { id: "prev-steps", href: to(Math.max(0, at - size)), text: "← previous steps" }) : null,
      at + size < total ? el("a", { id: "next-steps", href: to(at + size), text: "next steps →" }) : null);
  }

  async function sampleView(runId, key, params) {
    const doc = await api.sample(runId, key, Number((params && params.get("steps")) || 0));
    const link = (k, text) => (k === null ? el("span", { class: "muted", text }) : el("a", { href: "#/run/" + enc(runId) + "/sample/" + enc(k), text }));
    return el("div", {},
      el("div", { class: "nav" }, el("a", { href: "#/run/" + enc(doc.run_id), text: "← run " + doc.run_id }),
        link(doc.prev, "previous sample"), link(doc.next, "next sample")),
      el("h1", {}, "Sample ", el("span", { class: "mono", text: doc.trace_id })),
      samplePanel(doc, runId));
  }

  // ---------------------------------------------------------------- compare

  async function compareView(a, b, params) {
    const by = params.get("by") || "task";
    const doc = await api.compare(a, b, by);
    const [ra, rb] = doc.runs;
    const names = Object.keys(doc.metrics);
    const rows = names.map((name) => {
      const m = doc.metrics[name];
      const q = m.q_value;
      return [name, m.n, num(m.mean_a), num(m.mean_b), signed(m.diff) + (m.ci_low === null ? "" : " [" + signed(m.ci_low) + ", " + signed(m.ci_high) + "]"),
        ciBar(m.diff, m.ci_low, m.ci_high, -1, 1) || "", q === null ? "—" : q < 0.001 ? "<0.001" : q.toFixed(3), el("b", { class: m.verdict === "B worse" ? "band-poor" : m.verdict === "B better" ? "band-good" : "muted", text: m.verdict })];
    });
    const byLink = (value, label) => (value === by ? el("b", { text: label }) : el("a", { href: "#/compare/" + enc(a) + "/" + enc(b) + "?by=" + value, text: label }));
    const runLine = (label, r) => el("p", {}, label + " ", el("a", { href: "#/run/" + enc(r.id), class: "mono", text: r.id }), r.name ? " · " + r.name : "",
      el("span", { class: "muted", text: " · " + r.kind + " · suite " + r.suite + " · " + r.n_samples + " samples · composite " + num(r.composite.mean) }));
    return el("div", { id: "compare" },
      el("h1", { text: "B against A" }), runLine("A (baseline)", ra), runLine("B (candidate)", rb),
      el("p", {}, "Pairs samples by ", byLink("task", "task"), " · ", byLink("id", "trace id"),
        el("span", { class: "muted", text: " · unpaired: " + doc.only_in_a + " only in A, " + doc.only_in_b + " only in B" })),
      doc.warnings.map((w) => el("p", { class: "banner", text: w })),
      el("h2", { text: "Paired differences" }),
      el("p", { class: "note", text: "B − A with its 95% bootstrap CI. p: the composite's own permutation p-value; the metrics' p-values are adjusted for their number (Benjamini–Hochberg), alpha " + doc.alpha + "." }),
      table(["metric", { label: "n", num: true }, { label: "A", num: true }, { label: "B", num: true }, { label: "B − A [95% CI]", num: true }, "", { label: "p (adj.)", num: true }, "verdict"], rows, { class: "compare" }),
      names.length ? intervalsChart("Differences with their CIs", null, names, names.map((n) => doc.metrics[n].diff), names.map((n) => doc.metrics[n].ci_low), names.map((n) => doc.metrics[n].ci_high)) : null,
      el("h2", { text: "Samples that regressed most" }),
      doc.regressed.length ? table([by === "task" ? "task" : "trace", { label: "A", num: true }, { label: "B", num: true }, { label: "B − A", num: true }, ""],
        doc.regressed.map((r) => [r.pair, num(r.composite_a), num(r.composite_b), signed(r.diff),
          el("a", { href: "#/compare/" + enc(a) + "/" + enc(b) + "/sample?a=" + enc(r.key_a) + "&b=" + enc(r.key_b), text: "side by side" })]), { class: "regressed" })
        : el("p", { class: "empty", text: "No paired sample has a lower composite in B." }));
  }

  async function sideBySideView(a, b, params) {
    const [da, db] = await Promise.all([api.sample(a, params.get("a")), api.sample(b, params.get("b"))]);
    return el("div", {},
      el("div", { class: "nav" }, el("a", { href: "#/compare/" + enc(a) + "/" + enc(b), text: "← comparison" })),
      el("h1", {}, "Sample ", el("span", { class: "mono", text: da.task_id })),
      el("div", { class: "side" },
        el("div", {}, el("h2", {}, "A ", el("span", { class: "mono", text: a })), samplePanel(da, a)),
        el("div", {}, el("h2", {}, "B ", el("span", { class: "mono", text: b })), samplePanel(db, b))));
  }

  window.addEventListener("hashchange", render);
  render();
})();
