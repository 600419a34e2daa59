"""Which tables an admin request may see: a signer's own under `--auth verify` + `--isolation
region|account` (admin.guard.SCOPED routes), every table for the admin token or without verify.

A signer names its tables as its SDK does (the bare name, put in its scope as the engine's Caller
does) or by catalog key (`<region>/<name>`, `<account>/<region>/<name>`: storage.database) within its
own scope; another scope's catalog key is refused with the same 403 on every scoped route.
"""
from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from dynalocal.admin.guard import SIGNER
from dynalocal.engine.caller import Caller
from dynalocal.errors import access_denied_body
from dynalocal.storage.database import SCOPE_SEPARATOR

NOT_YOURS = "a signed admin read sees only the signer's own tables"


def scoped_signer(request: Request) -> Caller | None:
    """The signer whose tables alone this request sees, or None (the token, the cookie, no verify,
    or a signature under --isolation shared, which sees every table)."""
    signer: Caller | None = request.scope.get(SIGNER)
    return signer if signer is not None and signer.scope else None


def visible(signer: Caller | None, key: str) -> bool:
    """The catalog key `key` is a table `signer` may see (every table when `signer` is None)."""
    if signer is None:
        return True
    return key.startswith(signer.scope) and SCOPE_SEPARATOR not in key[len(signer.scope):]


def resolve(signer: Caller | None, name: str) -> str | None:
    """The catalog key a request names with `name`, or None for another scope's table: a signer's
    bare name is put in its scope; anything else is taken as the catalog key."""
    if signer is None:
        return name
    if SCOPE_SEPARATOR not in name:
        return signer.scope + name
    return name if visible(signer, name) else None


def not_yours() -> Response:
    """The 403 for a table outside the signer's scope (the same on every scoped route)."""
    return Response(access_denied_body(NOT_YOURS), status_code=403, media_type="application/json")
