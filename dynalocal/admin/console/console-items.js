// dynalocal console: items. The browser (Scan, or Query with a sort-key condition, on the table or an
// index, with a filter), and the editor (put, edit, delete) in DynamoDB JSON or plain JSON.
// Plain JSON converts as boto3's TypeSerializer does: numbers -> N, strings -> S, booleans -> BOOL,
// null -> NULL, lists -> L, objects -> M (sets are never produced; shown back, sets become lists).
"use strict";

Object.assign(state, { types: {}, items: [], mode: "dynamodb" });

// -- plain JSON <-> DynamoDB JSON --------------------------------------------------------------

function toDynamo(value) {
  if (value === null) return { NULL: true };
  if (typeof value === "boolean") return { BOOL: value };
  if (typeof value === "number") return { N: String(value) };
  if (typeof value === "string") return { S: value };
  if (Array.isArray(value)) return { L: value.map(toDynamo) };
  if (typeof value === "object") return { M: mapValues(value, toDynamo) };
  throw new Error(`cannot convert ${typeof value} to a DynamoDB value`);
}

function fromDynamo(value) {
  const [type, v] = Object.entries(value)[0];
  if (type === "N") return Number(v);
  if (type === "NS") return v.map(Number);
  if (type === "NULL") return null;
  if (type === "L") return v.map(fromDynamo);
  if (type === "M") return mapValues(v, fromDynamo);
  return v;  // S, B (base64 text), BOOL, SS, BS
}

function mapValues(object, fn) { return Object.fromEntries(Object.entries(object).map(([k, v]) => [k, fn(v)])); }

// Text in the current mode -> a DynamoDB item (or expression values), and back.
function parseItem(text) {
  const parsed = JSON.parse(text);
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) throw new Error("expected a JSON object");
  return state.mode === "plain" ? mapValues(parsed, toDynamo) : parsed;
}

function itemText(item) { return JSON.stringify(state.mode === "plain" ? mapValues(item, fromDynamo) : item, null, 2); }

function show(value) {
  const [type, v] = Object.entries(value)[0];
  if (type === "S" || type === "N" || type === "B") return v;
  if (type === "BOOL") return String(v);
  if (type === "NULL") return "null";
  if (type === "SS" || type === "NS" || type === "BS") return `{${v.join(", ")}}`;
  if (type === "L") return `[${v.map(show).join(", ")}]`;
  if (type === "M") return `{${Object.entries(v).map(([k, x]) => `${k}: ${show(x)}`).join(", ")}}`;
  return JSON.stringify(value);
}

// -- keys --------------------------------------------------------------------------------------

function keyNames(indexName) {
  const t = table();
  const schema = indexName ? t.indexes.find((i) => i.name === indexName).key_schema : t.key_schema;
  return { pk: schema.partition_key, sk: schema.sort_key };
}

async function attributeTypes(name) {
  if (!state.types[name]) {
    const described = await ddb("DescribeTable", { TableName: name });
    state.types[name] = Object.fromEntries(described.Table.AttributeDefinitions.map((a) => [a.AttributeName, a.AttributeType]));
  }
  return state.types[name];
}

function tableKey(item) {
  const { pk, sk } = keyNames("");
  return sk ? { [pk]: item[pk], [sk]: item[sk] } : { [pk]: item[pk] };
}

// -- the browser -------------------------------------------------------------------------------

function showBrowser(name) {
  const t = table();
  const options = [el("option", { value: "" }, "table")];
  for (const index of (t ? t.indexes : [])) options.push(el("option", { value: index.name }, `${index.kind} ${index.name}`));
  $("browse-index").replaceChildren(...options);
  $("items").tHead.replaceChildren();
  $("items").tBodies[0].replaceChildren();
  if (params.has("query") && name === params.get("table")) {  // a link to a Query: ?table=T&query=KEY[&index=I]
    $("browse-index").value = params.get("index") || "";
    $("browse-op").value = "Query";
    $("browse-key").value = params.get("query");
  }
  showQueryFields();
  browse();
}

function showQueryFields() {
  const query = $("browse-op").value === "Query";
  const keys = table() ? keyNames($("browse-index").value) : { pk: "", sk: null };
  $("browse-key-label").hidden = !query;
  $("browse-key-name").textContent = keys.pk;
  $("browse-sk-label").hidden = !query || !keys.sk;
  $("browse-sk-name").textContent = keys.sk || "";
  $("browse-sk2").hidden = $("browse-sk-op").value !== "BETWEEN";
}

const SORT_CONDITIONS = {
  "=": "#k1 = :k1", "<": "#k1 < :k1", "<=": "#k1 <= :k1", ">": "#k1 > :k1", ">=": "#k1 >= :k1",
  BETWEEN: "#k1 BETWEEN :k1 AND :k2", begins_with: "begins_with(#k1, :k1)",
};

// The Query's key condition: the partition key's value, and the sort-key condition if one is chosen.
async function keyCondition(t, index) {
  const types = await attributeTypes(t.name);
  const keys = keyNames(index);
  const out = { KeyConditionExpression: "#k0 = :k0", ExpressionAttributeNames: { "#k0": keys.pk },
    ExpressionAttributeValues: { ":k0": { [types[keys.pk]]: $("browse-key").value } } };
  const op = $("browse-sk-op").value;
  if (keys.sk && op) {
    const type = types[keys.sk];
    out.KeyConditionExpression += ` AND ${SORT_CONDITIONS[op]}`;
    out.ExpressionAttributeNames["#k1"] = keys.sk;
    out.ExpressionAttributeValues[":k1"] = { [type]: $("browse-sk").value };
    if (op === "BETWEEN") out.ExpressionAttributeValues[":k2"] = { [type]: $("browse-sk2").value };
  }
  return out;
}

// The filter: `#name` in the expression stands for the attribute `name`; values in the editor's mode.
function addFilter(request) {
  const expression = $("browse-filter").value.trim();
  if (!expression) return request;
  const names = { ...(request.ExpressionAttributeNames || {}) };
  for (const [token] of expression.matchAll(/#[A-Za-z0-9_]+/g)) names[token] = token.slice(1);
  const values = { ...(request.ExpressionAttributeValues || {}) };
  const text = $("browse-values").value.trim();
  if (text) Object.assign(values, parseItem(text));
  const out = { ...request, FilterExpression: expression };
  if (Object.keys(names).length) out.ExpressionAttributeNames = names;
  if (Object.keys(values).length) out.ExpressionAttributeValues = values;
  return out;
}

async function browse(event, next) {
  if (event) event.preventDefault();
  const t = table();
  if (!t) return;
  const index = $("browse-index").value;
  const op = $("browse-op").value;
  try {
    let request = { TableName: t.name, Limit: 25 };
    if (index) request.IndexName = index;
    if (op === "Query") request = { ...request, ...(await keyCondition(t, index)) };
    request = addFilter(request);
    if (next && state.nextKey) request = { ...state.lastRequest, ExclusiveStartKey: state.nextKey };
    const page = await ddb(op, request);
    state.lastRequest = request;
    state.nextKey = page.LastEvaluatedKey || null;
    $("browse-next").disabled = !state.nextKey;
    showItems(page.Items);
    report("browse-status", `${page.Count} items` + (state.nextKey ? " (more)" : ""));
  } catch (err) {
    report("browse-status", err.message, true);
  }
}

function cell(text) {
  // long values are cut in the table; the whole value is in the tooltip
  return text.length > 80 ? el("td", { title: text }, `${text.slice(0, 80)}…`) : el("td", {}, text);
}

function showItems(items) {
  state.items = items;
  const names = [];
  for (const item of items) for (const n of Object.keys(item)) if (!names.includes(n)) names.push(n);
  $("items").tHead.replaceChildren(el("tr", {}, ...names.map((n) => el("th", {}, n)), el("th", {}, "")));
  $("items").tBodies[0].replaceChildren(...items.map((item, i) => el("tr", {},
    ...names.map((n) => cell(n in item ? show(item[n]) : "")),
    el("td", { class: "actions" },
      el("button", { type: "button", class: "row-edit", "data-row": i, onclick: () => editItem(i) }, "Edit"),
      el("button", { type: "button", class: "row-delete", "data-row": i, onclick: (e) => deleteItem(i, e.target) }, "Delete")))));
}

// -- the editor --------------------------------------------------------------------------------

async function editItem(row) {
  try {
    const key = tableKey(state.items[row]);  // an index's item may be projected: read the whole item
    const answer = await ddb("GetItem", { TableName: state.selected, Key: key, ConsistentRead: true });
    if (!answer.Item) throw new Error("the item is gone");
    $("item-json").value = itemText(answer.Item);
    report("item-status", `editing ${Object.values(key).map(show).join(", ")}`);
    $("item-json").focus();
  } catch (err) {
    report("item-status", err.message, true);
  }
}

async function deleteItem(row, button) {
  if (!button.classList.contains("confirm")) {  // a second click confirms
    button.classList.add("confirm");
    button.textContent = "Confirm delete";
    return;
  }
  try {
    await ddb("DeleteItem", { TableName: state.selected, Key: tableKey(state.items[row]) });
    report("item-status", "item deleted");
    await afterWrite();
  } catch (err) {
    report("item-status", err.message, true);
  }
}

async function saveItem() {
  try {
    await ddb("PutItem", { TableName: state.selected, Item: parseItem($("item-json").value) });
    report("item-status", "item saved");
    await afterWrite();
  } catch (err) {
    report("item-status", err.message, true);
  }
}

async function newItem() {
  const types = await attributeTypes(state.selected);
  const { pk, sk } = keyNames("");
  const item = { [pk]: { [types[pk]]: types[pk] === "N" ? "0" : "" } };
  if (sk) item[sk] = { [types[sk]]: types[sk] === "N" ? "0" : "" };
  $("item-json").value = itemText(item);
  report("item-status", "new item");
}

function switchMode() {
  const text = $("item-json").value.trim();
  let item = null;
  try { if (text) item = parseItem(text); } catch (err) { /* left as typed */ }
  state.mode = $("json-mode").value;
  if (item) $("item-json").value = itemText(item);
}

async function afterWrite() { await browse(); await refreshTables(); }

$("browse").addEventListener("submit", (e) => browse(e));
$("browse-next").addEventListener("click", () => browse(null, true));
for (const id of ["browse-op", "browse-index", "browse-sk-op"]) $(id).addEventListener("change", showQueryFields);
$("item-save").addEventListener("click", saveItem);
$("item-new").addEventListener("click", () => newItem().catch((err) => report("item-status", err.message, true)));
$("json-mode").addEventListener("change", switchMode);
