"""The 408 answer to a request whose body did not arrive within the request timeout.

The deadline itself is kept by the connection (protocol.HttpProtocol): every request gets
`--request-timeout` seconds from its first byte (or from connecting) until its body is
complete. A request whose headers arrived is answered 408 with a DynamoDB-shaped body, then
the connection closes; a connection that never sent a whole head is just closed. Processing
time after the body is not limited.
"""
from __future__ import annotations

from dynalocal.errors import DynamoError
from dynalocal.http import codec


class RequestTimeoutException(DynamoError):
    """A request that was not received in time (HTTP 408)."""

    status = 408


def timeout_response() -> bytes:
    body = codec.error_body(RequestTimeoutException("The request was not received within the request timeout"))
    return (b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/x-amz-json-1.0\r\n"
            b"connection: close\r\ncontent-length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
