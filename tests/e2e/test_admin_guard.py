"""Admin endpoints are safe by default: no cross-site wipe, no key values or reset for the network without a token."""
from __future__ import annotations

import urllib.error
import urllib.request

from conftest import LiveServer

from dynalocal.cli.main import parse_args
from dynalocal.config import Settings
from dynalocal.engine.context import Context

EVIL = "http://evil.example"


def request(live: LiveServer, path: str, method: str = "GET", data: bytes | None = None,
            headers: dict | None = None) -> tuple[int, bytes]:
    req = urllib.request.Request(live.url + path, data=data, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


def reset(live: LiveServer, **headers) -> int:
    return request(live, "/_dynalocal/reset", "POST", b"x=1", headers)[0]


def serve(host: str = "127.0.0.1", token: str | None = None) -> LiveServer:
    """A server whose admin guard believes it is bound to `host` (it listens on loopback either way)."""
    return LiveServer(Context(settings=Settings(host=host, admin_token=token)))


def with_table(live: LiveServer) -> str:
    client = live.client()
    client.create_table(TableName="kept", BillingMode="PAY_PER_REQUEST",
                        KeySchema=[{"AttributeName": "email", "KeyType": "HASH"}],
                        AttributeDefinitions=[{"AttributeName": "email", "AttributeType": "S"}])
    client.put_item(TableName="kept", Item={"email": {"S": "alice@example.com"}})
    return "kept"


def test_a_cross_site_simple_post_cannot_wipe_the_tables():
    """The audit's reproduction: text/plain + a foreign Origin, as any web page can send."""
    with serve() as live:
        with_table(live)
        assert reset(live, **{"Content-Type": "text/plain", "Origin": EVIL}) == 403
        assert reset(live, **{"Content-Type": "application/x-www-form-urlencoded"}) == 403  # simple, no Origin
        assert reset(live, **{"Content-Type": "application/json", "Origin": EVIL}) == 403  # preflighted, still foreign
        assert reset(live, **{"Content-Type": "application/json", "Sec-Fetch-Site": "cross-site"}) == 403
        assert live.client().list_tables()["TableNames"] == ["kept"]


def test_scripts_and_same_origin_pages_can_reset_on_loopback():
    with serve() as live:
        with_table(live)
        assert reset(live, **{"Content-Type": "application/json"}) == 200
        with_table(live)
        assert reset(live, **{"X-Dynalocal-Admin": "1", "Content-Type": "text/plain"}) == 200
        with_table(live)
        host = f"127.0.0.1:{live.port}"
        assert reset(live, **{"Content-Type": "application/json", "Origin": f"http://{host}",
                              "Sec-Fetch-Site": "same-origin"}) == 200
        assert live.client().list_tables()["TableNames"] == []


def test_key_values_are_not_shown_cross_origin_and_health_stays_open():
    with serve() as live:
        table = with_table(live)
        status, body = request(live, f"/_dynalocal/tables/{table}/partitions")
        assert status == 200 and b"alice@example.com" in body
        status, body = request(live, f"/_dynalocal/tables/{table}/partitions", headers={"Origin": EVIL})
        assert status == 403 and b"alice" not in body and b"AccessDeniedException" in body
        assert request(live, "/_dynalocal/health", headers={"Origin": EVIL})[0] == 200


def test_on_a_network_bind_admin_routes_are_off_without_a_token():
    with serve("0.0.0.0") as live:
        table = with_table(live)
        status, body = request(live, f"/_dynalocal/tables/{table}/partitions")
        assert status == 403 and b"alice" not in body and b"--admin-token" in body
        assert reset(live, **{"Content-Type": "application/json"}) == 403
        assert request(live, "/_dynalocal/health")[0] == 200
        assert request(live, "/_dynalocal/metrics")[0] == 200
        assert live.client().list_tables()["TableNames"] == ["kept"]


def test_on_a_network_bind_the_admin_token_opens_them():
    with serve("0.0.0.0", token="s3cret") as live:
        table = with_table(live)
        path = f"/_dynalocal/tables/{table}/partitions"
        assert request(live, path, headers={"Authorization": "Bearer wrong"})[0] == 403
        assert request(live, path, headers={"Authorization": "Bearer s3cret"})[0] == 200
        assert request(live, path, headers={"X-Dynalocal-Admin-Token": "s3cret"})[0] == 200
        assert reset(live, **{"Content-Type": "application/json"}) == 403  # no token
        assert reset(live, **{"Authorization": "Bearer s3cret", "Origin": EVIL}) == 403  # token, but cross-site
        assert reset(live, **{"Authorization": "Bearer s3cret"}) == 200
        assert live.client().list_tables()["TableNames"] == []


def test_a_token_set_on_loopback_is_required_too():
    with serve(token="s3cret") as live:
        assert reset(live, **{"Content-Type": "application/json"}) == 403
        assert reset(live, **{"Content-Type": "application/json", "X-Dynalocal-Admin-Token": "s3cret"}) == 200


def test_the_token_comes_from_the_option_or_the_environment(monkeypatch):
    monkeypatch.delenv("DYNALOCAL_ADMIN_TOKEN", raising=False)
    assert parse_args([]).admin_token is None
    assert parse_args(["--admin-token", "abc"]).admin_token == "abc"
    monkeypatch.setenv("DYNALOCAL_ADMIN_TOKEN", "from-env")
    assert parse_args([]).admin_token == "from-env"
