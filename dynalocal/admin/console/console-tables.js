// dynalocal console: creating a table (key schema, billing mode, GSIs), deleting one, and PartiQL.
"use strict";

// -- create ------------------------------------------------------------------------------------

function showCreate() {
  $("empty").hidden = true;
  $("table").hidden = true;
  $("create").hidden = false;
  $("ct-name").focus();
}

function keyFields(prefix) {
  return [el("input", { class: `${prefix}-pk`, placeholder: "partition key", size: 12 }), typeSelect(`${prefix}-pk-type`),
    el("input", { class: `${prefix}-sk`, placeholder: "sort key (optional)", size: 14 }), typeSelect(`${prefix}-sk-type`)];
}

function typeSelect(cls) {
  return el("select", { class: cls }, ...["S", "N", "B"].map((t) => el("option", { value: t }, t)));
}

function addGsiRow() {
  const n = $("ct-gsis").children.length;
  $("ct-gsis").append(el("div", { class: "ct-gsi" }, "GSI ", el("input", { class: "gsi-name", placeholder: `index name`, size: 12,
    value: `gsi${n + 1}` }), ...keyFields("gsi"),
  el("button", { type: "button", onclick: (e) => e.target.parentNode.remove() }, "Remove")));
}

// One key schema from a row's fields, adding its attributes to `definitions`.
function keySchema(row, prefix, definitions) {
  const field = (cls) => row.querySelector(`.${prefix}-${cls}`).value.trim();
  const schema = [{ AttributeName: field("pk"), KeyType: "HASH" }];
  definitions[field("pk")] = field("pk-type");
  if (field("sk")) {
    schema.push({ AttributeName: field("sk"), KeyType: "RANGE" });
    definitions[field("sk")] = field("sk-type");
  }
  return schema;
}

function createRequest() {
  const definitions = {};
  const request = { TableName: $("ct-name").value.trim(), KeySchema: keySchema($("ct-key"), "tbl", definitions),
    BillingMode: $("ct-billing").value };
  const throughput = { ReadCapacityUnits: Number($("ct-rcu").value), WriteCapacityUnits: Number($("ct-wcu").value) };
  if (request.BillingMode === "PROVISIONED") request.ProvisionedThroughput = throughput;
  const gsis = [...$("ct-gsis").children].map((row) => {
    const gsi = { IndexName: row.querySelector(".gsi-name").value.trim(), KeySchema: keySchema(row, "gsi", definitions),
      Projection: { ProjectionType: "ALL" } };
    if (request.BillingMode === "PROVISIONED") gsi.ProvisionedThroughput = throughput;
    return gsi;
  });
  if (gsis.length) request.GlobalSecondaryIndexes = gsis;
  request.AttributeDefinitions = Object.entries(definitions).map(([AttributeName, AttributeType]) => ({ AttributeName, AttributeType }));
  return request;
}

async function createTable(event) {
  event.preventDefault();
  try {
    const request = createRequest();
    await ddb("CreateTable", request);
    report("ct-status", `created ${request.TableName}`);
    state.selected = request.TableName;
    $("create").hidden = true;
    $("table").hidden = true;  // refreshTables shows it
    await refreshTables();
  } catch (err) {
    report("ct-status", err.message, true);
  }
}

// -- delete ------------------------------------------------------------------------------------

async function deleteTable() {
  const button = $("table-delete");
  const name = state.selected;
  if (!button.classList.contains("confirm")) {  // a second click confirms
    button.classList.add("confirm");
    button.textContent = `Really delete ${name}?`;
    return;
  }
  try {
    await ddb("DeleteTable", { TableName: name });
    delete state.types[name];
    state.selected = null;
    $("table").hidden = true;
    $("empty").hidden = false;
    report("status", `deleted ${name}`);
    await refreshTables();
  } catch (err) {
    report("table-delete-status", err.message, true);
  }
}

function resetDelete() {
  $("table-delete").classList.remove("confirm");
  $("table-delete").textContent = "Delete table";
  report("table-delete-status", "");
}

// -- PartiQL -----------------------------------------------------------------------------------

async function runStatement(event) {
  event.preventDefault();
  try {
    const answer = await ddb("ExecuteStatement", { Statement: $("partiql").value });
    const items = answer.Items || [];
    const names = [];
    for (const item of items) for (const n of Object.keys(item)) if (!names.includes(n)) names.push(n);
    $("partiql-items").tHead.replaceChildren(el("tr", {}, ...names.map((n) => el("th", {}, n))));
    $("partiql-items").tBodies[0].replaceChildren(...items.map((item) =>
      el("tr", {}, ...names.map((n) => cell(n in item ? show(item[n]) : "")))));
    report("partiql-status", `${items.length} items` + (answer.NextToken ? " (more: add a LIMIT or a key condition)" : ""));
    if (!/^\s*select/i.test($("partiql").value)) await afterWrite();
  } catch (err) {
    report("partiql-status", err.message, true);
  }
}

$("new-table").addEventListener("click", showCreate);
$("ct-key").append(...keyFields("tbl"));
$("ct-add-gsi").addEventListener("click", addGsiRow);
$("create-table").addEventListener("submit", createTable);
$("ct-billing").addEventListener("change", () => { $("ct-throughput").hidden = $("ct-billing").value !== "PROVISIONED"; });
$("table-delete").addEventListener("click", deleteTable);
$("tables").addEventListener("click", resetDelete);
$("partiql-form").addEventListener("submit", runStatement);
