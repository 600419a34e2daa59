"""The console's log-in over HTTP: the admin token, posted by a form, becomes a same-site HTTP-only
cookie that the guard accepts in its place; cross-site requests stay refused, cookie or not."""
from __future__ import annotations

import http.client
import json

from conftest import LiveServer

from dynalocal.config import Settings
from dynalocal.engine.context import Context

EVIL = "http://evil.example"
FORM = "application/x-www-form-urlencoded"


def ask(live: LiveServer, method: str, path: str, body: bytes | None = None,
        **headers: str) -> tuple[int, http.client.HTTPMessage, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", live.port, timeout=10)
    try:
        conn.request(method, path, body=body, headers={k.replace("_", "-"): v for k, v in headers.items()})
        resp = conn.getresponse()
        return resp.status, resp.headers, resp.read()
    finally:
        conn.close()


def network_server(token: str | None = "s3cret") -> LiveServer:
    """A server whose guard believes it is bound to 0.0.0.0 (as in a container), with an admin token."""
    return LiveServer(Context(settings=Settings(host="0.0.0.0", admin_token=token)))


def log_in(live: LiveServer, token: str) -> tuple[int, http.client.HTTPMessage, bytes]:
    return ask(live, "POST", "/_dynalocal/login", f"token={token}".encode(), Content_Type=FORM)


def test_the_console_page_leads_to_the_form_and_the_token_to_a_strict_cookie():
    with network_server() as live:
        status, headers, _ = ask(live, "GET", "/_dynalocal/console")
        assert status == 303 and headers["Location"] == "/_dynalocal/login"
        status, _, page = ask(live, "GET", "/_dynalocal/login")
        assert status == 200 and b'<form id="login" method="post" action="/_dynalocal/login">' in page
        assert b"login-error" not in page

        status, headers, page = log_in(live, "wrong")
        assert status == 403 and headers.get("Set-Cookie") is None
        assert b'<p id="login-error" class="error">That is not the admin token' in page

        status, headers, _ = log_in(live, "s3cret")
        assert status == 303 and headers["Location"] == "/_dynalocal/console"
        cookie = headers["Set-Cookie"]
        name_value, *attributes = [part.strip() for part in cookie.split(";")]
        assert set(attributes) == {"Path=/_dynalocal", "HttpOnly", "SameSite=Strict"}
        assert name_value.startswith("dynalocal_console=") and "s3cret" not in name_value

        status, _, page = ask(live, "GET", "/_dynalocal/console", Cookie=name_value)
        assert status == 200 and b"console.js" in page
        status, _, body = ask(live, "GET", "/_dynalocal/tables", Cookie=f"other=1; {name_value}")
        assert status == 200 and json.loads(body) == {"tables": []}
        assert ask(live, "GET", "/_dynalocal/tables", Cookie="dynalocal_console=forged")[0] == 403

        status, headers, _ = ask(live, "POST", "/_dynalocal/logout", b"", Cookie=name_value, Content_Type=FORM)
        assert status == 303 and headers["Set-Cookie"].startswith("dynalocal_console=; Max-Age=0;")


def test_the_cookie_keeps_the_cross_site_protections_of_mutating_routes():
    with network_server() as live:
        live.client().create_table(TableName="kept", BillingMode="PAY_PER_REQUEST",
                                   KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                                   AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}])
        cookie = log_in(live, "s3cret")[1]["Set-Cookie"].split(";")[0]
        # a form post (no preflight) with the cookie, and JSON from another site: refused
        assert ask(live, "POST", "/_dynalocal/reset", b"x=1", Cookie=cookie, Content_Type=FORM)[0] == 403
        assert ask(live, "POST", "/_dynalocal/reset", b"{}", Cookie=cookie, Content_Type="application/json",
                   Origin=EVIL)[0] == 403
        assert ask(live, "POST", "/_dynalocal/reset", b"{}", Cookie=cookie, Content_Type="application/json",
                   Sec_Fetch_Site="cross-site")[0] == 403
        assert live.client().list_tables()["TableNames"] == ["kept"]
        # the log-in form itself refuses a cross-site post
        status, headers, body = ask(live, "POST", "/_dynalocal/login", b"token=s3cret", Content_Type=FORM,
                                    Origin=EVIL)
        assert status == 403 and headers.get("Set-Cookie") is None and b"AccessDeniedException" in body
        # the same request from the console's own page goes through
        status, _, _ = ask(live, "POST", "/_dynalocal/reset", b"{}", Cookie=cookie, Content_Type="application/json",
                           Origin=f"http://127.0.0.1:{live.port}", Sec_Fetch_Site="same-origin")
        assert status == 200 and live.client().list_tables()["TableNames"] == []


def test_without_a_token_the_form_explains_or_steps_aside():
    with network_server(token=None) as live:
        status, _, page = ask(live, "GET", "/_dynalocal/login")
        assert status == 403 and b"--admin-token" in page
        assert ask(live, "GET", "/_dynalocal/console")[0] == 403  # off on a network bind, as before
    with LiveServer(Context(settings=Settings())) as live:
        status, headers, _ = ask(live, "GET", "/_dynalocal/login")
        assert status == 303 and headers["Location"] == "/_dynalocal/console"
