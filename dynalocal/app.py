"""The whole application: the DynamoDB endpoint (http) with dynalocal's own endpoints (admin) beside it.

http and admin do not import each other; this is where they meet (for the CLI, `testing` and
anyone embedding dynalocal under an ASGI server).
"""
from __future__ import annotations

from dynalocal.admin import admin_app
from dynalocal.engine.context import Context
from dynalocal.http.app import DynamoApp


def create_app(ctx: Context | None = None) -> DynamoApp:
    """The ASGI app serving DynamoDB's protocol on POST /, health on GET /, and /_dynalocal/."""
    return DynamoApp(ctx, admin_app)
