"""One DynamoDB request body in, its answer out: decoding, routing, validation, the handler, encoding.

The HTTP layer (http.protocol, http.app) calls `respond` inline for every `POST /`; the seed
loader and the admin console's item browser call `dispatch`. Both run on the event loop thread,
one request at a time, which makes every request atomic with respect to the others.
"""
from __future__ import annotations

import logging

from orjson import JSONDecodeError, dumps, loads

from dynalocal.engine.caller import ANONYMOUS, Caller
from dynalocal.engine.context import Context
from dynalocal.engine.operations import HANDLERS, KNOWN_OPERATIONS, STREAM_HANDLERS, STREAMS_PREFIX, Handler
from dynalocal.engine.validation import validate
from dynalocal.errors import (
    DynamoError,
    InternalServerError,
    SerializationException,
    UnknownOperationException,
    error_body,
)

log = logging.getLogger("dynalocal")

JSON_TYPE = b"application/x-amz-json-1.0"
JSON_TYPES = frozenset((JSON_TYPE, b"application/x-amz-json-1.1", b"application/json"))  # accepted request media types
TARGET_PREFIXES = ("DynamoDB_20120810.", "DynamoDB_20111205.")
NOT_FOUND_BODY = b"<UnknownOperationException/>\n"


def dispatch(ctx: Context, target: str | None, raw: bytes, caller: Caller = ANONYMOUS) -> tuple[int, bytes]:
    """Decode, route, validate and run one request for `caller`; return (status, body). Never raises."""
    status, body, _ = respond(ctx, caller, target, JSON_TYPE, raw)
    return status, body


def respond(ctx: Context, caller: Caller, target: str | None, content_type: bytes | None,
            raw: bytes) -> tuple[int, bytes, bytes]:
    """Answer one complete DynamoDB request body from `caller`: (status, body, content type). Never raises.

    The HTTP layer's one call per request: content type, JSON decoding, routing, validation,
    the handler and encoding, in one function (each Python call counts on this path)."""
    if raw and content_type not in JSON_TYPES:
        return 404, NOT_FOUND_BODY, b"text/plain"
    try:
        body = loads(raw) if raw else None
    except JSONDecodeError:
        return *_error(SerializationException()), JSON_TYPE
    route = _ROUTES.get(target)  # type: ignore[arg-type]
    if route is None:
        route = _route(target)
        if route is None:
            return *_error(UnknownOperationException()), JSON_TYPE
    operation, handler = route
    if ctx.capacity.due:  # a split or growth asked for: applied between requests, never within one
        ctx.capacity.settle()
    try:
        if type(body) is not dict:
            raise SerializationException() if body is None else SerializationException(
                "Start of list found where not expected" if isinstance(body, list)
                else "Unexpected value type in payload")
        if handler is None:
            raise UnknownOperationException(f"dynalocal does not implement {operation} yet")
        validate(operation, body)
        if None in body.values():  # hardening: a JSON null member counts as absent, as in DynamoDB
            body = {k: v for k, v in body.items() if v is not None}
        result = handler(ctx, caller, body)
        return 200, result if type(result) is bytes else dumps(result), JSON_TYPE
    except DynamoError as err:
        return *_error(err), JSON_TYPE
    except Exception:  # a bug: answer like DynamoDB's 500, keep serving
        log.exception("internal error in %s", operation)
        return *_error(InternalServerError("Internal server error")), JSON_TYPE


# X-Amz-Target -> (operation, handler or None): filled as targets are first seen.
_ROUTES: dict[str, tuple[str, Handler | None]] = {}


def _route(target: str | None) -> tuple[str, Handler | None] | None:
    """(operation, handler) for a target of either API, or None when it names no known operation."""
    if not target:
        return None
    if target.startswith(TARGET_PREFIXES) and target[18:] in KNOWN_OPERATIONS:
        route = (target[18:], HANDLERS.get(target[18:]))
    elif target.startswith(STREAMS_PREFIX) and target[25:] in STREAM_HANDLERS:
        route = (target[25:], STREAM_HANDLERS[target[25:]])
    else:
        return None
    _ROUTES[target] = route
    return route


def _error(err: DynamoError) -> tuple[int, bytes]:
    return err.status, error_body(err)
