"""The answers while the data directory loads: the port is open from the start, so clients and health
checks see "loading" (HTTP 503) instead of a refused connection.

`GET /_dynalocal/health` answers `{"status": "loading"}`; every other request a ServiceUnavailable 503,
which botocore retries in every retry mode (docs/behaviour/wire.md §6), with
`retry-after: 1`. The gate is a `before` plug-in present only while loading: no cost afterwards.
"""
from __future__ import annotations

import orjson

from dynalocal.errors import ServiceUnavailable, error_body
from dynalocal.http.exchange import Answer, Request

HEALTH = b"/_dynalocal/health"
_LOADING = Answer(503, orjson.dumps({"status": "loading"}), headers=b"retry-after: 1\r\n")
_UNAVAILABLE = Answer(503, error_body(ServiceUnavailable("dynalocal is loading its data directory; retry shortly")),
                      headers=b"retry-after: 1\r\n")


def loading_gate(req: Request) -> Answer:
    """A `before` plug-in that answers every request while loading."""
    if req.url.partition(b"?")[0] == HEALTH:
        return _LOADING
    return _UNAVAILABLE
