// dynalocal console: tables, a live heat map of partitions, top keys and the verdicts; the shared helpers.
// Plain JS served by the server itself (no build step, no CDN). Data: GET /_dynalocal/tables,
// /_dynalocal/report?table=T, /_dynalocal/tables/T/heat. Items and queries: console-items.js;
// creating and deleting tables and PartiQL: console-tables.js (POST /_dynalocal/read and /write).
"use strict";

const state = { tables: [], selected: null, nextKey: null, lastRequest: null };
const params = new URLSearchParams(location.search);
const $ = (id) => document.getElementById(id);

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (name === "class") node.className = value;
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value);
  }
  for (const child of children) {
    if (child !== null && child !== undefined) node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

// An error as DynamoDB returns it: "ConditionalCheckFailedException: The conditional request failed".
function errorText(body, response) {
  const type = body.__type ? body.__type.split("#").pop() : "";
  const message = body.message || body.Message || body.error || response.statusText;
  return type ? `${type}: ${message}` : message;
}

async function getJSON(url, options) {
  const response = await fetch(url, options);
  const body = await response.json();
  if (!response.ok) throw new Error(errorText(body, response));
  return body;
}

// A DynamoDB operation through the console's routes: reads (Scan, Query, DescribeTable) and the rest.
const READS = new Set(["Scan", "Query", "DescribeTable"]);
function ddb(operation, request) {
  return getJSON(`/_dynalocal/${READS.has(operation) ? "read" : "write"}`, {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ operation, ...request }),
  });
}

function report(id, text, isError) {
  $(id).textContent = text;
  $(id).className = isError ? "error" : "";
}

const bytes = (n) => n < 1024 ? `${n} B` : n < 1048576 ? `${(n / 1024).toFixed(1)} KB` : `${(n / 1048576).toFixed(1)} MB`;
const pct = (x) => (x >= 0.1 || x === 0 ? `${Math.round(x * 100)}%` : `${(x * 100).toFixed(1)}%`);

// -- tables ------------------------------------------------------------------------------------

async function refreshTables() {
  const data = await getJSON("/_dynalocal/tables");
  state.tables = data.tables;
  const list = $("tables");
  list.replaceChildren(...data.tables.map((t) => el("li", {
    class: t.name === state.selected ? "selected" : "", "data-table": t.name, onclick: () => select(t.name),
  }, t.name, el("small", {}, `${t.item_count} items · ${bytes(t.size_bytes)} · ${t.partitions} partitions`))));
  if (!state.selected) $("status").textContent = `${data.tables.length} tables`;
  if (!$("create").hidden) return;  // the create-table form stays until it is sent
  if (state.selected && $("table").hidden && data.tables.some((t) => t.name === state.selected)) select(state.selected);
  else if (!state.selected && data.tables.length) select(data.tables[0].name);
  else if (state.selected) showFacts();
}

function table() { return state.tables.find((t) => t.name === state.selected); }

function showFacts() {
  const t = table();
  if (!t) return;
  const mode = t.billing_mode === "PROVISIONED"
    ? `provisioned ${t.read_capacity_units} RCU / ${t.write_capacity_units} WCU` : "on-demand";
  const key = t.key_schema.sort_key ? `${t.key_schema.partition_key}, ${t.key_schema.sort_key}` : t.key_schema.partition_key;
  $("table-facts").textContent = `${mode} · key (${key}) · ${t.item_count} items · ${bytes(t.size_bytes)} · `
    + `${t.partitions} partitions` + (t.indexes.length ? ` · indexes: ${t.indexes.map((i) => `${i.name} (${i.kind})`).join(", ")}` : "");
}

function select(name) {
  state.selected = name;
  state.nextKey = null;
  for (const li of $("tables").children) li.className = li.dataset.table === name ? "selected" : "";
  $("empty").hidden = true;
  $("table").hidden = false;
  $("table-name").textContent = name;
  showFacts();
  $("create").hidden = true;
  resetDelete();  // console-tables.js
  refreshLive();
  showBrowser(name);  // console-items.js
}

// -- verdicts, heat map and top keys (live) ----------------------------------------------------

async function refreshLive() {
  const name = state.selected;
  if (!name) return;
  const [report, heat] = await Promise.all([
    getJSON(`/_dynalocal/report?table=${encodeURIComponent(name)}`),
    getJSON(`/_dynalocal/tables/${encodeURIComponent(name)}/heat?seconds=60`),
  ]);
  if (name !== state.selected) return;
  const t = report.tables[0];
  showVerdicts(t);
  showHeat(heat, t);
  showTopKeys(t);
  showVectors(t);
  $("status").textContent = `${throttlingText(report, t)} · updated ${new Date().toLocaleTimeString()}`;
}

// The header's mode: keys (key-design throttles refused, capacity-setting ones only recorded),
// enforce, report or off; a table's tag dynalocal:throttling overrides the server's.
function throttlingText(report, t) {
  const mode = t.throttling || report.throttling;
  const tagged = mode !== report.throttling ? ` (table tag; server ${report.throttling})` : "";
  const wouldBe = Object.values(t.would_be || {}).reduce((a, b) => a + b, 0);
  return `throttling ${mode}${tagged}` + (wouldBe ? ` · ${wouldBe} would-be throttles (recorded, not refused)` : "");
}

function showVerdicts(t) {
  $("verdicts").replaceChildren(...t.verdicts.map((v) => el("div", {
    class: `verdict ${v.kind === "fine" ? "fine" : "problem"}`, "data-kind": v.kind,
    "data-key": v.key === null ? "" : v.key, "data-partition": v.partition === null ? "" : v.partition,
  }, el("div", { class: "kind" }, v.kind), el("div", { class: "summary" }, v.summary),
    v.advice.length ? el("ul", {}, ...v.advice.map((a) => el("li", {}, a))) : null)));
}

function heatColor(ratio) {
  // consumed / what the partition sustains: pale blue (idle) -> amber (near) -> red (over)
  if (ratio <= 0) return "#eef0f3";
  const r = Math.min(ratio, 1.5) / 1.5;
  const hue = 210 - 210 * r;
  return `hsl(${hue}, 80%, ${88 - 40 * r}%)`;
}

function showHeat(heat, report) {
  const hot = new Set(report.verdicts.filter((v) => v.kind !== "fine" && v.partition !== null)
    .map((v) => `${v.index || ""}/${v.direction}/${v.partition}`));
  const blocks = [];
  for (const m of heat.meters) {
    const busy = m.partitions.some((p) => p.units.some((u) => u > 0) || p.throttles.some((n) => n > 0));
    if (!busy) continue;
    const meterReport = report.meters.find((r) => r.index === m.index && r.direction === m.direction);
    const unit = meterReport ? meterReport.unit : "";
    const title = `${m.index ? `index ${m.index}` : "table"} ${m.direction}s — each partition sustains `
      + `${m.partition_limit} ${unit}/s` + (m.table_limit ? `; the ${m.index ? "index" : "table"} ${m.table_limit} ${unit}/s` : "");
    const rows = m.partitions.map((p) => {
      const isHot = hot.has(`${m.index || ""}/${m.direction}/${p.number}`);
      const cells = p.units.map((u, i) => el("div", {
        class: "cell" + (p.throttles[i] ? " throttled" : ""),
        style: `background:${p.throttles[i] ? "#b71c1c" : heatColor(u / m.partition_limit)}`,
        title: `${u} ${unit} consumed` + (p.throttles[i] ? `, ${p.throttles[i]} throttled` : ""),
      }));
      const share = meterReport ? meterReport.partitions[p.number] : null;
      return el("div", { class: "heat-row" + (isHot ? " hot" : ""), "data-partition": p.number },
        el("span", { class: "heat-label" }, `partition ${p.number}` + (share ? ` · ${pct(share.share)}` : "")
          + (isHot ? " · HOT" : "")),
        el("div", { class: "heat-cells" }, ...cells));
    });
    blocks.push(el("div", { class: "meter", "data-index": m.index || "", "data-direction": m.direction },
      el("div", { class: "meter-title" }, title), ...rows,
      el("div", { class: "heat-axis" }, `last ${heat.seconds} s, oldest left`)));
  }
  $("heat").replaceChildren(...(blocks.length ? blocks : [el("p", {}, "No traffic in the last minute.")]));
}

function showTopKeys(t) {
  const rows = [];
  for (const m of t.meters) {
    for (const k of m.top_keys) {
      rows.push(el("tr", { "data-key": k.key }, el("td", {}, `${m.index ? `index ${m.index}` : "table"} ${m.direction}s`),
        el("td", {}, k.key), el("td", {}, k.partition), el("td", {}, `${+k.units.toFixed(1)} ${m.unit}`),
        el("td", {}, k.requests), el("td", {}, pct(k.share))));
    }
  }
  $("top-keys").tBodies[0].replaceChildren(...rows);
}

// SearchVectors and each vector index's writes: their own meters (requests, approximate bytes), a bar per second.
function showVectors(t) {
  $("vectors").hidden = !t.vectors;
  if (!t.vectors) return;
  const meters = [["SearchVectors", "", t.vectors.searches],
    ...Object.entries(t.vectors.writes).map(([name, m]) => [`writes to ${name}`, name, m])];
  $("vector-meters").tBodies[0].replaceChildren(...meters.map(([what, index, m]) => {
    const peak = Math.max(1, ...m.per_second.requests);
    const bars = m.per_second.requests.map((n, i) => el("div", {
      class: "cell", style: `background:${heatColor(n / peak)}`,
      title: `${n} requests, ${m.per_second.bytes[i]} bytes`,
    }));
    return el("tr", { "data-meter": what, "data-index": index, "data-requests": m.requests },
      el("td", {}, what), el("td", {}, m.requests), el("td", {}, `${bytes(m.bytes)} (${m.unit})`),
      el("td", {}, `${m.window_requests} requests, ${bytes(m.window_bytes)}`),
      el("td", {}, el("div", { class: "heat-cells" }, ...bars)));
  }));
}

if (params.get("table")) state.selected = params.get("table");
function tick(fn, ms) { fn().catch((e) => { $("status").textContent = `error: ${e.message}`; }); setInterval(() => fn().catch(() => {}), ms); }
// started once every script has loaded (console-items.js and console-tables.js use these helpers)
window.addEventListener("DOMContentLoaded", () => { tick(refreshTables, 5000); tick(refreshLive, 1000); });
