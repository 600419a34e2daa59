"""The console's log-in cookie and how the guard weighs it (pure logic; the HTTP flow is in
tests/e2e/test_console_login.py)."""
from __future__ import annotations

from dynalocal.admin.guard import CROSS_ORIGIN, refusal
from dynalocal.admin.session import clear_cookie, presented_session, session_value, set_cookie

TOKEN = "s3cret"
SESSION = session_value(TOKEN)


def headers(**values: str) -> list[tuple[bytes, bytes]]:
    return [(name.replace("_", "-").lower().encode(), value.encode()) for name, value in values.items()]


def test_the_cookie_stands_for_the_token_without_carrying_it():
    assert SESSION == session_value(TOKEN) != session_value("other") and TOKEN not in SESSION
    assert set_cookie(TOKEN) == f"dynalocal_console={SESSION}; Path=/_dynalocal; HttpOnly; SameSite=Strict"
    assert clear_cookie().startswith("dynalocal_console=; Max-Age=0; Path=/_dynalocal; HttpOnly")


def test_the_cookie_is_found_among_others():
    assert presented_session(b"a=1; dynalocal_console=abc ; b=2") == "abc"
    assert presented_session(b"dynalocal_consolex=abc") is None
    assert presented_session(None) is None and presented_session(b"") is None


def test_the_guard_takes_the_cookie_as_the_token_and_nothing_more():
    cookie = f"dynalocal_console={SESSION}"
    assert refusal("GET", "/_dynalocal/tables", headers(Cookie=cookie), False, TOKEN, SESSION) is None
    assert refusal("GET", "/_dynalocal/tables", headers(Cookie="dynalocal_console=x"), False, TOKEN, SESSION)
    assert refusal("GET", "/_dynalocal/tables", headers(Cookie=cookie), False, TOKEN, None)  # no session: no cookie
    # a wrong bearer token is not rescued by a good cookie
    wrong = headers(Cookie=cookie, Authorization="Bearer no")
    assert refusal("GET", "/_dynalocal/tables", wrong, False, TOKEN, SESSION)
    # mutating: still a preflighted content type, still same-origin
    form = headers(Cookie=cookie, Content_Type="application/x-www-form-urlencoded")
    assert "Content-Type: application/json" in (refusal("POST", "/_dynalocal/write", form, False, TOKEN, SESSION) or "")
    json_cross = headers(Cookie=cookie, Content_Type="application/json", Sec_Fetch_Site="cross-site")
    assert refusal("POST", "/_dynalocal/write", json_cross, False, TOKEN, SESSION) == CROSS_ORIGIN
    assert refusal("POST", "/_dynalocal/write", headers(Cookie=cookie, Content_Type="application/json"),
                   False, TOKEN, SESSION) is None


def test_log_in_and_out_need_no_token_but_refuse_other_sites():
    form = headers(Content_Type="application/x-www-form-urlencoded")
    assert refusal("POST", "/_dynalocal/login", form, False, TOKEN, SESSION) is None
    assert refusal("GET", "/_dynalocal/login", [], False, TOKEN, SESSION) is None
    evil = headers(Content_Type="application/x-www-form-urlencoded", Origin="http://evil.example", Host="h:1")
    assert refusal("POST", "/_dynalocal/login", evil, False, TOKEN, SESSION) == CROSS_ORIGIN
    assert refusal("POST", "/_dynalocal/logout", evil, False, TOKEN, SESSION) == CROSS_ORIGIN
