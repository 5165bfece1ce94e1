// The dashboard's page: hash routes (#/ the overview, #/t/<table>/<state>
// a table's rows), data from the JSON API under this page's URL, charts
// drawn as SVG here. No library, no build step.
"use strict";

const token = document.querySelector('meta[name="fdbqueue-token"]').content;
const readOnly = document.querySelector('meta[name="fdbqueue-read-only"]').content === "true";
const app = document.getElementById("app");
const colors = ["#2f6fde", "#e0703a", "#1f8a4c", "#9b4dca", "#c9302c", "#0f9aa8", "#b8860b", "#5d6b82"];
let timer = null; // the refresh of the page shown
let route = 0; // bumped on each navigation: a stale refresh draws nothing

// el makes an element: el("td", {class: "num"}, "3").
function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else if (v !== undefined && v !== null && v !== false) e.setAttribute(k, v === true ? "" : v);
  }
  for (const k of kids.flat()) if (k !== null && k !== undefined) e.append(k instanceof Node ? k : String(k));
  return e;
}

function svg(tag, attrs, ...kids) {
  const e = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  for (const k of kids) e.append(k instanceof Node ? k : document.createTextNode(String(k)));
  return e;
}

async function api(path, opts) {
  const r = await fetch(path, opts);
  let body;
  try { body = await r.json(); } catch (e) { body = { error: r.status + " " + r.statusText }; }
  if (!r.ok) throw new Error(body.error || r.statusText);
  return body;
}

function say(text, isError) {
  const box = document.getElementById("status");
  const d = el("div", { class: isError ? "error" : "" }, text);
  box.append(d);
  setTimeout(() => d.remove(), isError ? 15000 : 10000);
}

function fmtNum(n) { return n < 0 || n === null || n === undefined ? "–" : Number(n).toLocaleString("en-US"); }
function fmtRate(r) { return r < 0 || r === undefined ? "–" : r >= 100 ? Math.round(r).toLocaleString("en-US") : r.toFixed(1); }
function fmtAge(s) {
  if (s === null || s === undefined || s < 0) return "–";
  if (s < 120) return s + " s";
  if (s < 7200) return Math.round(s / 60) + " min";
  if (s < 172800) return (s / 3600).toFixed(1) + " h";
  return (s / 86400).toFixed(1) + " d";
}
// when shows a row's _visible_at with how far from now it is.
function when(iso) {
  const s = Math.round((Date.parse(iso) - Date.now()) / 1000);
  return iso.replace("T", " ").replace(/\.\d+Z$/, "Z") + (s > 0 ? " (in " + fmtAge(s) + ")" : " (" + fmtAge(-s) + " ago)");
}
function last(a) { return a && a.length ? a[a.length - 1] : -1; }
function enc(s) { return encodeURIComponent(s); }
// ident quotes a table's name as the statements the server runs do
// (backticks, doubled inside), unless it is a plain identifier.
function ident(s) { return /^[A-Za-z_][A-Za-z0-9_]*$/.test(s) ? s : "`" + s.replaceAll("`", "``") + "`"; }

// niceMax rounds a chart's top up to 1, 2 or 5 times a power of ten.
function niceMax(v) {
  if (v <= 0) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 2, 5, 10]) if (v <= m * p) return m * p;
  return 10 * p;
}

// chart draws lines [{name, color, values}] over times t (unix ms); a
// negative value is a gap.
function chart(title, lines, t, fmt) {
  const W = 420, H = 150, L = 44, R = 8, T = 8, B = 20;
  const s = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": title });
  let top = 0;
  for (const ln of lines) for (const v of ln.values) if (v > top) top = v;
  top = niceMax(top);
  const t0 = t.length ? t[0] : 0, t1 = t.length ? t[t.length - 1] : 1;
  const x = (ms) => L + (t1 > t0 ? (ms - t0) / (t1 - t0) : 1) * (W - L - R);
  const y = (v) => T + (1 - v / top) * (H - T - B);
  const divs = Math.abs(top / Math.pow(10, Math.floor(Math.log10(top))) - 2) < 1e-9 ? 4 : 5;
  for (let i = 0; i <= divs; i++) {
    const v = top * i / divs;
    s.append(svg("line", { x1: L, x2: W - R, y1: y(v), y2: y(v), stroke: "#e2e5eb" }));
    s.append(svg("text", { x: L - 4, y: y(v) + 3, "text-anchor": "end" }, fmt(v)));
  }
  const span = Math.round((t1 - t0) / 1000);
  if (t.length > 1 && span > 0) {
    s.append(svg("text", { x: L, y: H - 5 }, "−" + fmtAge(span)));
    s.append(svg("text", { x: W - R, y: H - 5, "text-anchor": "end" }, "now"));
  }
  for (const ln of lines) {
    let d = "", pen = false;
    ln.values.forEach((v, i) => {
      if (v < 0) { pen = false; return; }
      d += (pen ? "L" : "M") + x(t[i]).toFixed(1) + " " + y(v).toFixed(1);
      pen = true;
    });
    if (d) s.append(svg("path", { d, fill: "none", stroke: ln.color, "stroke-width": 1.8, "stroke-linejoin": "round" }));
  }
  const legend = el("div", { class: "legend" }, lines.map((ln) => { const i = el("i"); i.style.background = ln.color; return el("span", {}, i, ln.name); }));
  return el("div", { class: "chart" }, el("h3", {}, title), s, legend);
}

function intFmt(v) { return v >= 1000 ? +(v / 1000).toFixed(1) + "k" : String(+v.toFixed(2)); }

function setCrumbs(...parts) {
  const c = document.getElementById("crumbs");
  c.replaceChildren(...parts.map((p, i) => i < parts.length - 1 ? el("a", { href: p[1] }, p[0]) : el("span", {}, p[0])).flatMap((e, i) => i ? [" / ", e] : [e]));
}

function live() { document.getElementById("live").textContent = "updated " + new Date().toLocaleTimeString(); }

// The overview: every table with its counts, and the plots.
async function overview(myRoute) {
  setCrumbs(["Queues", "#/"]);
  // The series of the tables the plots draw only, and the totals.
  const data = await api("api/overview?top=" + colors.length);
  if (myRoute !== route) return;
  const queues = data.tables.filter((q) => !q.deadOf);
  const rows = queues.map((q) => el("tr", { "data-table": q.name },
    el("td", { class: "name", title: q.name }, el("a", { href: "#/t/" + enc(q.name) + "/visible" }, q.name)),
    el("td", { class: "num", "data-field": "rows" }, fmtNum(q.rows)),
    el("td", { class: "num", "data-field": "visible" }, q.exact ? fmtNum(q.visible) : "–"),
    el("td", { class: "num", "data-field": "delayed" }, q.exact ? fmtNum(q.delayed) : "–"),
    el("td", { class: "num", "data-field": "leased" }, q.exact ? fmtNum(q.leased) : "–"),
    el("td", { class: "num" + (q.dead > 0 ? " bad" : ""), "data-field": "dead" }, q.hasDead ? el("a", { href: "#/t/" + enc(q.name) + "/dead" }, fmtNum(q.dead)) : "–"),
    el("td", { class: "num", "data-field": "age" }, q.exact && q.visible > 0 ? fmtAge(q.oldestVisibleAgeS) : "–"),
    el("td", { class: "num", "data-field": "in" }, fmtRate(q.inPerS)),
    el("td", { class: "num", "data-field": "out" }, fmtRate(q.outPerS)),
    el("td", { class: "num", "data-field": "pushed" }, fmtNum(q.pushed)),
  ));
  const head = el("tr", {}, ["table", "rows", "visible", "delayed", "leased", "dead", "oldest visible", "pushed/s", "done/s", "pushed"].map((h, i) => el("th", { class: i ? "num" : "" }, h)));
  // The plots: the busiest tables by depth, and throughput summed.
  const t = data.series.t;
  const top = queues.map((q) => q.name).filter((n) => data.series.tables[n])
    .sort((a, b) => last(data.series.tables[b].depth) - last(data.series.tables[a].depth)).slice(0, colors.length);
  const lines = (f) => top.map((n, i) => ({ name: n, color: colors[i], values: data.series.tables[n][f] }));
  const charts = el("div", { class: "charts" },
    chart("Rows (depth)", lines("depth"), t, intFmt),
    chart("Rows per second, all tables", [{ name: "pushed", color: colors[0], values: data.series.total.inPerS }, { name: "done (popped + acked)", color: colors[2], values: data.series.total.outPerS }], t, intFmt),
    chart("Oldest visible row's age (s)", lines("ageS"), t, intFmt),
  );
  app.replaceChildren(
    el("h1", {}, "Queues"),
    queues.length ? el("table", { class: "grid", id: "tables" }, el("thead", {}, head), el("tbody", {}, rows))
      : el("p", { class: "muted" }, "No tables yet. CREATE TABLE makes one: it shows here within a refresh."),
    ...(queues.length ? [charts] : []),
    el("p", { class: "note" }, `Sampled every ${data.intervalS} s while the dashboard runs; counts read now from fdbqueue_queues.`),
    ...(data.sampleError ? [el("p", { class: "note" }, "Last sample failed: " + data.sampleError)] : []),
  );
  live();
}

const stateNames = ["visible", "delayed", "leased", "dead"];

// A table's page: its counts, its plots (both refreshed every 2 s), and
// its rows by state (on demand: Refresh, an action, the pager).
async function tablePage(myRoute, name, state, offset) {
  setCrumbs(["Queues", "#/"], [name, "#/t/" + enc(name) + "/visible"]);
  const [info, data] = await Promise.all([api("api/tables/" + enc(name)), api("api/overview?table=" + enc(name))]);
  if (myRoute !== route) return;
  const tabs = el("div", { class: "tabs" }, stateNames.filter((st) => st !== "dead" || info.hasDead).map((st) =>
    el("a", { href: "#/t/" + enc(name) + "/" + st, class: st === state ? "on" : "", "data-state": st }, st)));
  const find = el("input", { id: "find-id", placeholder: "row id", inputmode: "numeric" });
  const toolbar = el("div", { class: "toolbar" },
    find, el("button", { id: "find", onclick: () => showRows(name, info, "id=" + enc(find.value.trim()), state, 0) }, "Find by id"),
    el("button", { id: "refresh", onclick: () => render() }, "Refresh"),
    state === "dead" && !readOnly ? el("button", { id: "purge", class: "danger", onclick: () => purge(name) }, "Purge dead letters") : null,
  );
  app.replaceChildren(
    el("h1", {}, name, " ", el("span", { class: "muted" }, info.kind + (info.options ? " · " + info.options : ""))),
    el("p", { class: "note" }, "Columns: " + info.columns.join(", ")),
    summary(name, info, data), tabs, toolbar, el("div", { id: "rows" }, el("p", { class: "muted" }, "Loading rows…")),
  );
  await showRows(name, info, "state=" + state + "&offset=" + offset + "&limit=50", state, offset);
  live();
  refreshSummary(myRoute, name, info);
}

let deadNow = 0; // the dead letters of the table shown, for purge's question

// summary is a table's counts and plots.
function summary(name, info, data) {
  const q = data.tables.find((t) => t.name === name) || info.queue;
  deadNow = q.dead;
  const cards = el("div", { class: "cards" }, [
    ["visible", q.exact ? q.visible : -1], ["delayed", q.exact ? q.delayed : -1], ["leased", q.exact ? q.leased : -1],
    ["dead", info.hasDead ? q.dead : -1], ["oldest visible", q.exact && q.visible ? fmtAge(q.oldestVisibleAgeS) : "–"],
    ["pushed", q.pushed], ["popped", q.popped], ["acked", q.acked], ["expired", q.expired], ["dead-lettered", q.deadLettered],
  ].map(([k, v]) => el("div", { class: "card" + (k === "dead" && v > 0 ? " bad" : ""), "data-count": k }, el("b", {}, typeof v === "number" ? fmtNum(v) : v), el("span", {}, k))));
  const s = data.series.tables[name];
  const charts = s ? el("div", { class: "charts" },
    chart("Rows (depth)", [{ name: "rows", color: colors[0], values: s.depth }].concat(info.hasDead ? [{ name: "dead", color: colors[4], values: s.dead }] : []), data.series.t, intFmt),
    chart("Rows per second", [{ name: "pushed", color: colors[0], values: s.inPerS }, { name: "done", color: colors[2], values: s.outPerS }], data.series.t, intFmt),
    chart("Oldest visible row's age (s)", [{ name: name, color: colors[1], values: s.ageS }], data.series.t, intFmt),
  ) : null;
  return el("div", { id: "summary" }, cards, charts);
}

// refreshSummary redraws the table's counts and plots every 2 s while its
// page is shown, from the overview (one read of fdbqueue_queues).
function refreshSummary(myRoute, name, info) {
  timer = setTimeout(async () => {
    try {
      const data = await api("api/overview?table=" + enc(name));
      if (myRoute !== route) return;
      document.getElementById("summary").replaceWith(summary(name, info, data));
      live();
    } catch (e) {
      if (myRoute !== route) return;
      document.getElementById("live").textContent = "refresh failed: " + e.message;
    }
    refreshSummary(myRoute, name, info);
  }, 2000);
}

async function showRows(name, info, query, state, offset) {
  const box = document.getElementById("rows");
  let page;
  try {
    page = await api("api/tables/" + enc(name) + "/rows?" + query);
  } catch (e) {
    box.replaceChildren(el("p", { class: "muted", id: "rows-error" }, e.message));
    return;
  }
  const dead = page.state === "dead";
  const head = el("tr", {}, page.columns.map((c) => el("th", { title: c }, c === "_visible_at" && page.state === "leased" ? "lease expires" : c)), readOnly ? null : el("th", {}, ""));
  const body = page.rows.map((r) => {
    const id = r[0], lease = r[2];
    const acts = [];
    if (!readOnly) {
      if (dead) acts.push(el("button", { "data-action": "retry", onclick: () => act(name, "retry", { id }, `Move dead letter ${id} back to ${name}?`, `INSERT INTO ${ident(name)} SELECT * FROM ${ident(name + "_dead")} WHERE id = ${id} LIMIT 1 FOR POP`) }, "Retry"));
      if (page.state === "leased") acts.push(el("button", { "data-action": "release", onclick: () => act(name, "release", { id, lease }, `Release the lease on row ${id}? It becomes visible now; its holder's ack will fail.`, `UPDATE ${ident(name)} SET _visible_at = NOW() WHERE id = ${id} AND _lease = ${lease}`) }, "Release"));
      acts.push(el("button", { "data-action": "delete", onclick: () => act(name, "delete", { id, dead }, `Delete row ${id} of ${dead ? name + "_dead" : name}?`, `DELETE FROM ${ident(dead ? name + "_dead" : name)} WHERE id = ${id}`) }, "Delete"));
    }
    return el("tr", { "data-id": id }, r.map((v, i) => el("td", { class: typeof v === "number" ? "num" : "val", title: v === null ? "NULL" : String(v) }, v === null ? el("span", { class: "muted" }, "NULL") : v === "" && i === 1 ? el("span", { class: "muted" }, "never") : i === 1 ? when(v) : String(v))), readOnly ? null : el("td", {}, acts));
  });
  const pager = el("div", { class: "toolbar" });
  if (query.startsWith("state=")) {
    const to = page.offset + page.rows.length;
    pager.append(el("span", { class: "muted", id: "range" }, page.rows.length ? `rows ${page.offset + 1}–${to} of ${page.count < 0 ? "?" : fmtNum(page.count)}` : "no rows"));
    if (offset > 0) pager.append(el("button", { id: "prev", onclick: () => go(name, state, Math.max(0, offset - 50)) }, "Previous"));
    if (page.more) pager.append(el("button", { id: "next", onclick: () => go(name, state, offset + 50) }, "Next"));
    if (to >= info.maxDepth) pager.append(el("span", { class: "note" }, `Lists go ${info.maxDepth} rows deep; find deeper rows by id.`));
    if (state === "delayed" || state === "leased") {
      pager.append(el("span", { class: "note" }, "A row released for a retry after its backoff (_visible_at = NULL) keeps its lease's token (_lease): it is listed under leased, and counted as delayed."));
    }
  } else {
    pager.append(el("span", { class: "muted" }, `row ${page.rows[0][0]}: ${page.state}`));
  }
  box.replaceChildren(el("table", { class: "grid", id: "row-table", "data-state": page.state }, el("thead", {}, head), el("tbody", {}, body)), pager);
}

function go(name, state, offset) { location.hash = "#/t/" + enc(name) + "/" + state + (offset ? "/" + offset : ""); }

// confirmInPage asks in the page's dialog; it resolves true on Confirm,
// false on Cancel or Escape. It answers the buttons' clicks, not the
// dialog's close event, which comes later, as a task: a close still
// queued from the last question would answer this one.
function confirmInPage(text, sql) {
  const d = document.getElementById("confirm");
  const ok = document.getElementById("confirm-ok"), cancel = document.getElementById("confirm-cancel");
  document.getElementById("confirm-text").textContent = text;
  document.getElementById("confirm-sql").textContent = sql;
  return new Promise((resolve) => {
    const answer = (yes) => (e) => {
      e.preventDefault();
      ok.onclick = cancel.onclick = d.oncancel = null;
      d.close();
      resolve(yes);
    };
    ok.onclick = answer(true);
    cancel.onclick = answer(false);
    d.oncancel = answer(false);
    d.showModal();
  });
}

async function act(table, action, body, text, sql) {
  if (!(await confirmInPage(text, sql))) return;
  try {
    const r = await api("api/tables/" + enc(table) + "/actions/" + action, {
      method: "POST", headers: { "Content-Type": "application/json", "X-Fdbqueue-Token": token }, body: JSON.stringify(body),
    });
    say(r.message);
  } catch (e) {
    say(e.message, true);
  }
  render();
}

function purge(table) {
  return act(table, "purge", {}, `Delete all ${fmtNum(deadNow)} dead letters of ${table}? This cannot be undone.`, `DELETE FROM ${ident(table + "_dead")}`);
}

// render shows the page the hash names, and refreshes it.
async function render() {
  clearTimeout(timer);
  const my = ++route;
  try {
    let parts;
    try {
      parts = location.hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
    } catch (e) {
      throw new Error("this address is not one of the dashboard's (" + e.message + "): " + location.hash);
    }
    if (parts[0] === "t" && parts[1]) {
      const state = stateNames.includes(parts[2]) ? parts[2] : "visible";
      await tablePage(my, parts[1], state, Math.max(0, parseInt(parts[3] || "0", 10) || 0));
    } else {
      await overview(my);
      if (my === route) timer = setTimeout(render, 2000);
    }
  } catch (e) {
    if (my !== route) return;
    app.replaceChildren(el("h1", {}, "Error"), el("p", { id: "error" }, e.message), el("p", {}, el("a", { href: "#/" }, "Back to the queues")));
    // The overview tries again: a database slow for a moment (503) must
    // not leave the page on an error once it answers again.
    if (!location.hash.startsWith("#/t/")) {
      document.getElementById("live").textContent = "refresh failed: trying again";
      timer = setTimeout(render, 2000);
    }
  }
}

window.addEventListener("hashchange", render);
render();
