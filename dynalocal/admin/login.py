"""The console's log-in: a form that takes the admin token and sets the same-site, HTTP-only cookie
(admin.session) the guard accepts in its place, so the console works with `--admin-token`."""
from __future__ import annotations

import hmac
import html
from importlib import resources
from urllib.parse import parse_qs

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from dynalocal.admin.session import CONSOLE_PATH, LOGIN_PATH, LOGOUT_PATH, clear_cookie, set_cookie

WRONG_TOKEN = "That is not the admin token this server was started with."
NO_TOKEN = ("This server has no admin token, and on a non-loopback bind its console is off: start it with "
            "--admin-token TOKEN (or DYNALOCAL_ADMIN_TOKEN).")


def login_page(error: str | None = None) -> bytes:
    """The log-in form, with `error` shown above the field."""
    page = resources.files("dynalocal.admin.console").joinpath("login.html").read_text("utf-8")
    if error:
        page = page.replace("<!--error-->", f'<p id="login-error" class="error">{html.escape(error)}</p>')
    return page.encode()


def login_routes(token: str | None, loopback: bool) -> list[Route]:
    """GET/POST /_dynalocal/login and POST /_dynalocal/logout (the guard lets same-origin requests in)."""
    page = login_page()

    async def show(_: Request) -> Response:
        if token is None:
            if loopback:  # nothing to log in with: the console is open on this machine
                return RedirectResponse(CONSOLE_PATH, status_code=303)
            return HTMLResponse(login_page(NO_TOKEN), status_code=403)
        return HTMLResponse(page, headers={"Cache-Control": "no-store"})

    async def log_in(request: Request) -> Response:
        if token is None:
            return await show(request)
        fields = parse_qs((await request.body()).decode("utf-8", "replace"))
        presented = (fields.get("token") or [""])[0]
        if not hmac.compare_digest(presented.encode(), token.encode()):
            return HTMLResponse(login_page(WRONG_TOKEN), status_code=403, headers={"Cache-Control": "no-store"})
        return RedirectResponse(CONSOLE_PATH, status_code=303, headers={"Set-Cookie": set_cookie(token)})

    async def log_out(_: Request) -> Response:
        return RedirectResponse(LOGIN_PATH, status_code=303, headers={"Set-Cookie": clear_cookie()})

    return [Route(LOGIN_PATH, show, methods=["GET"]), Route(LOGIN_PATH, log_in, methods=["POST"]),
            Route(LOGOUT_PATH, log_out, methods=["POST"])]
