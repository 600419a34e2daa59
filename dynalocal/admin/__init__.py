"""What users read over HTTP: admin routes, their guard, the diagnosis endpoints and the console's assets."""
from __future__ import annotations

from typing import TYPE_CHECKING

from dynalocal.engine.context import Context

if TYPE_CHECKING:
    from dynalocal.admin.guard import AdminGuard


def admin_app(ctx: Context, loopback: bool, token: str | None) -> AdminGuard:
    """The guarded ASGI app serving /_dynalocal/ (built on first use by http.app: Starlette costs start-up)."""
    from starlette.applications import Starlette

    # with Starlette, on the first admin request: serving DynamoDB alone never loads them
    from dynalocal.admin.guard import AdminGuard
    from dynalocal.admin.login import login_routes  # (as above)
    from dynalocal.admin.routes import admin_routes  # (as above)
    from dynalocal.http.plugins.auth import Authenticator  # (as above)

    settings = ctx.settings
    auth = Authenticator(settings.auth, settings.credentials, settings.isolation, clock=lambda: ctx.wall_clock()) \
        if settings.auth == "verify" else None
    routes = admin_routes(ctx) + login_routes(token or None, loopback)
    return AdminGuard(Starlette(routes=routes), loopback, token, auth)
