"""The 408 answer to a request whose body did not arrive within the request timeout.

The deadline itself is kept by the connection (protocol.HttpProtocol): every request gets
`--request-timeout` seconds from its first byte (or from connecting) until its body is
complete. A request whose headers arrived is answered 408 with a DynamoDB-shaped body, then
the connection closes; a connection that never sent a whole head is just closed. Processing
time after the body is not limited.
"""
from __future__ import annotations

from dynalocal.errors import RequestTimeoutException
from dynalocal.http.messages import JSON_TYPE, error_body, frame

_BODY = error_body(RequestTimeoutException("The request was not received within the request timeout"))


def timeout_response(defaults: bytes) -> bytes:
    """The 408 answer (then the connection closes); `defaults`: the server's DefaultHeaders.block."""
    return frame(408, _BODY, JSON_TYPE, defaults, keep_alive=False)
