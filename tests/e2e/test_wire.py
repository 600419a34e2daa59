"""The JSON 1.0 wire protocol: framing, headers, error envelopes, health, size limit (docs/behaviour/wire.md)."""
from __future__ import annotations

import http.client
import json
import re
import zlib

import pytest

from dynalocal.engine.operations import HANDLERS, KNOWN_OPERATIONS

TARGET = "DynamoDB_20120810."
AUTH = {"Authorization": "AWS4-HMAC-SHA256 Credential=test/20250101/us-east-1/dynamodb/aws4_request, "
                         "SignedHeaders=host, Signature=00"}  # every SDK signs: --auth relaxed wants the header
SERIALIZATION = b'{"__type":"com.amazon.coral.service#SerializationException"}'
UNKNOWN_OPERATION = b'{"__type":"com.amazon.coral.service#UnknownOperationException"}'
NOT_FOUND = b"<UnknownOperationException/>\n"
REQUEST_ID = re.compile(r"[0-9A-Z]{52}")


def crc(body: bytes) -> int:
    return zlib.crc32(body) & 0xFFFFFFFF


def check_framing(headers, body: bytes) -> str:
    """Every answer carries a 52-char request id and the CRC32 of its exact body."""
    rid = headers["x-amzn-RequestId"]
    assert REQUEST_ID.fullmatch(rid), rid
    assert int(headers["x-amz-crc32"]) == crc(body)
    assert int(headers["Content-Length"]) == len(body)
    return rid


def error_of(body: bytes) -> tuple[str, str | None]:
    doc = json.loads(body)
    return doc["__type"], doc.get("message", doc.get("Message"))


def connection(server) -> http.client.HTTPConnection:
    return http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)


def still_serving(server) -> None:
    status, headers, body = server.raw(TARGET + "ListTables", {})
    assert status == 200 and "TableNames" in json.loads(body)
    check_framing(headers, body)


# --- successful responses ------------------------------------------------------------------

def test_success_carries_request_id_crc_and_content_type(server):
    status, headers, body = server.raw(TARGET + "ListTables", {})
    assert status == 200
    check_framing(headers, body)
    assert headers["Content-Type"] == "application/x-amz-json-1.0"
    assert isinstance(json.loads(body)["TableNames"], list)


def test_request_ids_are_unique(server):
    ids = {check_framing(h, b) for _, h, b in (server.raw(TARGET + "ListTables", {}) for _ in range(20))}
    assert len(ids) == 20


def test_boto3_sees_the_request_id_and_checks_the_crc(ddb):
    # botocore retries a CRC mismatch and finally raises ChecksumError: a first-try success proves
    # the CRC to botocore; the header is also checked against the body botocore received.
    bodies: list[bytes] = []

    def keep(http_response, **_) -> None:
        bodies.append(http_response.content)

    ddb.meta.events.register("after-call.dynamodb.ListTables", keep)
    try:
        response = ddb.list_tables()
    finally:
        ddb.meta.events.unregister("after-call.dynamodb.ListTables", keep)
    meta = response["ResponseMetadata"]
    assert REQUEST_ID.fullmatch(meta["RequestId"])
    assert meta["RetryAttempts"] == 0
    assert len(bodies) == 1 and int(meta["HTTPHeaders"]["x-amz-crc32"]) == crc(bodies[0])


@pytest.mark.parametrize("content_type", [
    "application/x-amz-json-1.0", "application/x-amz-json-1.1", "application/json",
    "application/x-amz-json-1.0; charset=utf-8", " Application/JSON ",
])
def test_accepted_content_types(server, content_type):
    status, headers, body = server.raw(TARGET + "ListTables", {}, content_type=content_type)
    assert status == 200, body
    check_framing(headers, body)


@pytest.mark.parametrize("content_type", ["text/plain", "application/xml", "application/x-www-form-urlencoded",
                                          "application/x-amz-json-1.2"])
def test_other_content_types_are_not_found(server, content_type):
    status, headers, body = server.raw(TARGET + "ListTables", {}, content_type=content_type)
    assert status == 404
    assert body == NOT_FOUND
    assert int(headers["x-amz-crc32"]) == 3552371480
    check_framing(headers, body)


@pytest.mark.parametrize("method", ["PUT", "DELETE", "PATCH"])
def test_other_methods_are_not_found(server, method):
    status, headers, body = server.raw(TARGET + "ListTables", {}, method=method)
    assert status == 404 and body == NOT_FOUND
    check_framing(headers, body)


# --- malformed bodies ----------------------------------------------------------------------

@pytest.mark.parametrize("raw", [b"{not json", b"{", b'{"a":1,}', b"\xff\xfe", b'{"TableName":"\xff"}', b"nul",
                                 b'{"a":1} trailing'])
def test_malformed_json_is_a_serialization_exception(server, raw):
    status, headers, body = server.raw(TARGET + "GetItem", raw)
    assert status == 400
    # Malformed JSON: exactly this body, no message member at all.
    assert body == SERIALIZATION
    assert int(headers["x-amz-crc32"]) == 3948637019
    check_framing(headers, body)
    still_serving(server)


def test_empty_body_is_a_serialization_exception(server):
    status, headers, body = server.raw(TARGET + "GetItem", b"")
    assert status == 400 and body == SERIALIZATION
    check_framing(headers, body)


@pytest.mark.parametrize("raw", [b"[]", b"[1, 2]", b"null", b"42", b'"text"', b"true"])
def test_json_that_is_not_an_object(server, raw):
    status, headers, body = server.raw(TARGET + "GetItem", raw)
    assert status == 400
    kind, _ = error_of(body)
    assert kind == "com.amazon.coral.service#SerializationException"
    check_framing(headers, body)
    still_serving(server)


def test_json_is_parsed_before_the_target_is_checked(server):
    status, _, body = server.raw(TARGET + "FlyToTheMoon", b"{oops")
    assert status == 400 and body == SERIALIZATION


# --- targets -------------------------------------------------------------------------------

@pytest.mark.parametrize("target", [TARGET + "FlyToTheMoon", "DynamoDB_20120810", "DynamoDB_20990101.ListTables",
                                    "ListTables", TARGET + "listtables", TARGET, None])
def test_unknown_operation(server, target):
    status, headers, body = server.raw(target, {})
    assert status == 400
    assert body == UNKNOWN_OPERATION
    assert int(headers["x-amz-crc32"]) == 1368724161
    check_framing(headers, body)


def test_unknown_operation_with_an_empty_body(server):
    status, _, body = server.raw(TARGET + "FlyToTheMoon", b"")
    assert status == 400 and body == UNKNOWN_OPERATION


def test_legacy_target_prefix_is_accepted(server):
    status, _, body = server.raw("DynamoDB_20111205.ListTables", {})
    assert status == 200 and "TableNames" in json.loads(body)


def test_known_but_unimplemented_operations_fail_clearly(server):
    missing = sorted(KNOWN_OPERATIONS - set(HANDLERS))
    if not missing:
        pytest.skip("every DynamoDB operation is implemented")
    for operation in missing[:5]:
        status, headers, body = server.raw(TARGET + operation, {})
        assert status == 400
        kind, message = error_of(body)
        assert kind.rsplit("#", 1)[-1] in ("UnknownOperationException", "ValidationException"), body
        check_framing(headers, body)


def test_errors_use_dynamodb_envelopes(server):
    status, headers, body = server.raw(TARGET + "DescribeTable", {"TableName": "no-such-table"})
    assert status == 400
    check_framing(headers, body)
    assert json.loads(body) == {"__type": "com.amazonaws.dynamodb.v20120810#ResourceNotFoundException",
                                "message": "Requested resource not found: Table: no-such-table not found"}
    status, headers, body = server.raw(TARGET + "DescribeTable", {"TableName": "x"})
    assert status == 400
    kind, message = error_of(body)
    assert kind == "com.amazon.coral.validate#ValidationException"
    assert "message" in json.loads(body)
    check_framing(headers, body)


def test_type_mismatch_is_a_serialization_exception_with_message(server):
    status, headers, body = server.raw(TARGET + "DescribeTable", {"TableName": 5})
    assert status == 400
    assert json.loads(body) == {"__type": "com.amazon.coral.service#SerializationException",
                                "Message": "NUMBER_VALUE cannot be converted to String"}
    check_framing(headers, body)


# --- health --------------------------------------------------------------------------------

def test_get_root_is_dynamodbs_health_check(server):
    status, headers, body = server.raw(None, None, method="GET")
    assert status == 200
    assert body == f"healthy: 127.0.0.1:{server.port}".encode()  # the Host header (docs/behaviour/wire.md §4)
    assert int(headers["x-amz-crc32"]) == zlib.crc32(body)
    check_framing(headers, body)


def test_dynalocal_health(server):
    status, headers, body = server.raw(None, None, method="GET", path="/_dynalocal/health")
    assert status == 200
    assert headers["Content-Type"].startswith("application/json")
    assert json.loads(body)["status"] == "ok"


# --- size limit and connections ------------------------------------------------------------

MIB16 = 16 * 1024 * 1024


def padded(size: int) -> bytes:
    """A valid ListTables body of exactly `size` bytes (an unknown member is ignored)."""
    head, tail = b'{"Pad":"', b'"}'
    return head + b"x" * (size - len(head) - len(tail)) + tail


def test_exactly_16_mib_is_accepted(server):
    body = padded(MIB16)
    assert len(body) == MIB16
    status, _, answer = server.raw(TARGET + "ListTables", body)
    assert status == 200, answer[:200]


def test_over_16_mib_is_413_and_the_server_keeps_serving(server):
    conn = connection(server)
    conn.request("POST", "/", body=padded(MIB16 + 1), headers={
        "Content-Type": "application/x-amz-json-1.0", "X-Amz-Target": TARGET + "ListTables", **AUTH})
    response = conn.getresponse()
    body = response.read()
    assert response.status == 413
    assert body == b""
    assert REQUEST_ID.fullmatch(response.getheader("x-amzn-RequestId"))
    conn.close()
    still_serving(server)


def test_chunked_body_over_16_mib_is_413(server):
    def chunks():
        yield b'{"Pad":"'
        for _ in range(17):
            yield b"x" * (1024 * 1024)
        yield b'"}'

    conn = connection(server)
    conn.request("POST", "/", body=chunks(), encode_chunked=True, headers={
        "Content-Type": "application/x-amz-json-1.0", "X-Amz-Target": TARGET + "ListTables", **AUTH})
    response = conn.getresponse()
    response.read()
    assert response.status == 413
    conn.close()
    still_serving(server)


def test_small_chunked_body_is_read_whole(server):
    conn = connection(server)
    conn.request("POST", "/", body=iter([b'{"Li', b'mit": 1', b"}"]), encode_chunked=True, headers={
        "Content-Type": "application/x-amz-json-1.0", "X-Amz-Target": TARGET + "ListTables", **AUTH})
    response = conn.getresponse()
    assert response.status == 200 and "TableNames" in json.loads(response.read())
    conn.close()


def test_keep_alive_serves_many_requests_on_one_connection(server):
    conn = connection(server)
    for i in range(5):
        payload = b"{not json" if i % 2 else b"{}"
        conn.request("POST", "/", body=payload, headers={
            "Content-Type": "application/x-amz-json-1.0", "X-Amz-Target": TARGET + "ListTables", **AUTH})
        response = conn.getresponse()
        body = response.read()
        assert response.status == (400 if i % 2 else 200)
        assert int(response.getheader("x-amz-crc32")) == crc(body)
    conn.close()
