"""The console as a user works in it, in headless Chromium driven over the DevTools pipe (cdp.py):
log in with the admin token on a server bound (as the guard sees it) to 0.0.0.0, create a table with
a GSI, put an item, edit it, query it with a sort-key condition and a filter, run a PartiQL SELECT,
see a DynamoDB error, delete the item and the table.

Each step's screenshot is kept in .artifacts/console/ (gitignored); the paths are printed.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from cdp import Browser
from conftest import LiveServer
from test_console import ARTIFACTS, chromium

from dynalocal.config import Settings
from dynalocal.engine.context import Context

TOKEN = "console-s3cret"
SHOTS = ARTIFACTS / "console"


def set_value(element_id: str, value: str) -> str:
    """JS: type `value` into a field and tell the page it changed."""
    return (f"(() => {{ const e = document.getElementById({json.dumps(element_id)}); e.value = {json.dumps(value)};"
            " e.dispatchEvent(new Event('change', {bubbles: true})); return true; })()")


def click(selector: str) -> str:
    return f"(() => {{ document.querySelector({json.dumps(selector)}).click(); return true; }})()"


def text(element_id: str) -> str:
    return f"document.getElementById({json.dumps(element_id)}).textContent"


class Flow:
    """The browser and the screenshots taken so far."""

    def __init__(self, browser: Browser) -> None:
        self.browser = browser
        self.shots: list[Path] = []

    def shot(self, name: str, scroll_to: str | None = None) -> None:
        if scroll_to:
            self.browser.evaluate(f"document.getElementById({json.dumps(scroll_to)}).scrollIntoView(); true")
        self.shots.append(self.browser.screenshot(SHOTS / f"{len(self.shots) + 1:02d}-{name}.png"))

    def do(self, *scripts: str) -> None:
        for script in scripts:
            assert self.browser.evaluate(script)


@pytest.fixture
def flow(tmp_path):
    browser = Browser(chromium(), tmp_path / "profile")
    try:
        yield Flow(browser)
    finally:
        browser.close()


def test_a_user_logs_in_and_works_with_a_table(flow, figure):
    b = flow.browser
    with LiveServer(Context(settings=Settings(host="0.0.0.0", admin_token=TOKEN))) as live:
        ddb = live.client()
        b.navigate(f"{live.url}/_dynalocal/console")
        b.wait_for("location.pathname === '/_dynalocal/login' && !!document.getElementById('token')")
        flow.do(set_value("token", "not-it"), click("#login button"))
        b.wait_for("!!document.getElementById('login-error')")
        assert "not the admin token" in b.evaluate(text("login-error"))
        flow.shot("login-refused")
        flow.do(set_value("token", TOKEN), click("#login button"))
        b.wait_for("location.pathname === '/_dynalocal/console' && document.readyState === 'complete'")

        # create a table with a sort key and a GSI
        flow.do(click("#new-table"), set_value("ct-name", "orders"))
        flow.do("(() => { const k = document.getElementById('ct-key');"
                " k.querySelector('.tbl-pk').value = 'customer'; k.querySelector('.tbl-sk').value = 'placed';"
                " return true; })()", click("#ct-add-gsi"))
        flow.do("(() => { const g = document.querySelector('.ct-gsi');"
                " g.querySelector('.gsi-name').value = 'by-status'; g.querySelector('.gsi-pk').value = 'status';"
                " return true; })()")
        flow.shot("create-table")
        flow.do(click("#create-table button[type=submit]"))
        b.wait_for(f"!document.getElementById('table').hidden && {text('table-name')} === 'orders'")
        description = ddb.describe_table(TableName="orders")["Table"]
        assert [k["AttributeName"] for k in description["KeySchema"]] == ["customer", "placed"]
        assert description["GlobalSecondaryIndexes"][0]["IndexName"] == "by-status"

        # put two items in plain JSON
        flow.do(set_value("json-mode", "plain"))
        for placed, total in (("2024-11-23#001", 42), ("2024-12-01#002", 7)):
            item = {"customer": "alice", "placed": placed, "status": "new", "total": total}
            flow.do(set_value("item-json", json.dumps(item)), click("#item-save"))
            b.wait_for(f"{text('item-status')} === 'item saved' && document.querySelectorAll('#items tbody tr').length"
                       f" === {1 if total == 42 else 2}")
        assert ddb.get_item(TableName="orders", Key={"customer": {"S": "alice"}, "placed": {"S": "2024-11-23#001"}}
                            )["Item"]["total"] == {"N": "42"}
        flow.shot("items", "items")

        # edit the first item: status paid
        flow.do(click(".row-edit"))
        b.wait_for(f"{text('item-status')}.startsWith('editing') && document.getElementById('item-json').value"
                   ".includes('2024-11-23#001')")
        edited = json.loads(b.evaluate("document.getElementById('item-json').value"))
        assert edited == {"customer": "alice", "placed": "2024-11-23#001", "status": "new", "total": 42}
        flow.do(set_value("item-json", json.dumps({**edited, "status": "paid"})), click("#item-save"))
        b.wait_for(f"{text('item-status')} === 'item saved' && {text('items')}.includes('paid')")
        flow.shot("edited", "items")

        # query: the partition key, begins_with on the sort key, and a filter on a reserved word
        flow.do(set_value("browse-op", "Query"), set_value("browse-key", "alice"),
                set_value("browse-sk-op", "begins_with"), set_value("browse-sk", "2024-11"),
                set_value("browse-filter", "#status = :s AND #total > :min"),
                set_value("browse-values", '{":s": "paid", ":min": 40}'), click("#browse button[type=submit]"))
        b.wait_for(f"{text('browse-status')} === '1 items'", explain=text("browse-status"))
        assert "2024-11-23#001" in b.evaluate(text("items")) and "2024-12-01" not in b.evaluate(text("items"))
        flow.shot("query", "browse")
        flow.do(set_value("browse-sk-op", "BETWEEN"), set_value("browse-sk", "2024-11-30"),
                set_value("browse-sk2", "2024-12-31"), set_value("browse-filter", ""),
                click("#browse button[type=submit]"))
        b.wait_for(f"{text('browse-status')} === '1 items' && {text('items')}.includes('2024-12-01#002')")

        # the GSI: a Query by status
        flow.do(set_value("browse-index", "by-status"), set_value("browse-key", "paid"),
                click("#browse button[type=submit]"))
        b.wait_for(f"{text('browse-status')} === '1 items' && {text('items')}.includes('2024-11-23#001')",
                   explain=text("browse-status"))
        flow.do(set_value("browse-index", ""))

        # PartiQL
        flow.do(set_value("partiql", "SELECT * FROM \"orders\" WHERE customer = 'alice' AND placed = '2024-11-23#001'"),
                click("#partiql-form button[type=submit]"))
        b.wait_for(f"{text('partiql-status')} === '1 items' && {text('partiql-items')}.includes('paid')")
        flow.shot("partiql", "partiql-form")

        # an error, as DynamoDB returns it
        flow.do(set_value("item-json", '{"status": "lost"}'), click("#item-save"))
        b.wait_for("document.getElementById('item-status').className === 'error'")
        assert b.evaluate(text("item-status")) == ("ValidationException: One or more parameter values were invalid: "
                                                "Missing the key customer in the item")
        flow.shot("error", "editor")

        # delete the queried item (the second click confirms), then the table
        flow.do(click(".row-delete"), click(".row-delete"))
        b.wait_for(f"{text('item-status')} === 'item deleted' && {text('browse-status')} === '0 items'")
        assert ddb.scan(TableName="orders")["Count"] == 1
        flow.do(click("#table-delete"), click("#table-delete"))
        b.wait_for("document.getElementById('table').hidden && !document.querySelector('[data-table=orders]')")
        assert ddb.list_tables()["TableNames"] == []
        flow.shot("table-deleted")
    assert all(shot.stat().st_size > 5_000 for shot in flow.shots)
    figure("console user-flow screenshots: " + ", ".join(str(shot) for shot in flow.shots))


def test_a_query_on_a_local_secondary_index_with_a_sort_key_condition(flow):
    b = flow.browser
    with LiveServer() as live:  # loopback, no token: the console opens directly
        ddb = live.client()
        ddb.create_table(
            TableName="scores", BillingMode="PAY_PER_REQUEST",
            KeySchema=[{"AttributeName": "player", "KeyType": "HASH"}, {"AttributeName": "game", "KeyType": "RANGE"}],
            AttributeDefinitions=[{"AttributeName": a, "AttributeType": t}
                                  for a, t in (("player", "S"), ("game", "S"), ("points", "N"))],
            LocalSecondaryIndexes=[{"IndexName": "by-points", "Projection": {"ProjectionType": "ALL"},
                                    "KeySchema": [{"AttributeName": "player", "KeyType": "HASH"},
                                                  {"AttributeName": "points", "KeyType": "RANGE"}]}])
        for game, points in (("g1", 10), ("g2", 250), ("g3", 99)):
            ddb.put_item(TableName="scores", Item={"player": {"S": "ann"}, "game": {"S": game},
                                                   "points": {"N": str(points)}})
        b.navigate(f"{live.url}/_dynalocal/console?table=scores")
        b.wait_for("document.readyState === 'complete' && document.getElementById('browse-status').textContent"
                   " === '3 items'")
        flow.do(set_value("browse-index", "by-points"), set_value("browse-op", "Query"),
                set_value("browse-key", "ann"))
        assert b.evaluate(text("browse-sk-name")) == "points"
        flow.do(set_value("browse-sk-op", ">="), set_value("browse-sk", "99"), click("#browse button[type=submit]"))
        b.wait_for(f"{text('browse-status')} === '2 items'", explain=text("browse-status"))
        games = b.evaluate("[...document.querySelectorAll('#items tbody tr td:nth-child(2)')]"
                           ".map(td => td.textContent)")
        assert games == ["g3", "g2"]  # in the index's order: 99, then 250
