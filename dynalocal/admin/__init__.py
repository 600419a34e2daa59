"""What users read over HTTP: admin routes, their guard, the diagnosis endpoints and the console's assets."""
from __future__ import annotations

from dynalocal.engine.context import Context


def admin_app(ctx: Context, loopback: bool, token: str | None):
    """The guarded ASGI app serving /_dynalocal/ (built on first use by http.app: Starlette costs start-up)."""
    from starlette.applications import Starlette

    from dynalocal.admin.guard import AdminGuard
    from dynalocal.admin.routes import admin_routes

    return AdminGuard(Starlette(routes=admin_routes(ctx)), loopback, token)
