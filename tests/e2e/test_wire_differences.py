"""The last differences from DynamoDB on the wire (issue 25), one end-to-end test each: what
DynamoDB answers and where that was found is in docs/behaviour/*.md next to each rule."""
from __future__ import annotations

import http.client
import json
import zlib

import pytest
from botocore.exceptions import ClientError

AUTH = ("AWS4-HMAC-SHA256 Credential=test/20250101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, "
        "Signature=00")


def error(call, *args, **kwargs) -> tuple[str, str]:
    """The (code, message) of the ClientError a call raises."""
    with pytest.raises(ClientError) as caught:
        call(*args, **kwargs)
    err = caught.value.response["Error"]
    return err["Code"], err["Message"]


# --- 1. Accept-Encoding as several lines, and the client's order --------------------------------

def _get(server, body: bytes, *accept: str) -> tuple[str | None, bytes]:
    conn = http.client.HTTPConnection(server.url.split("//", 1)[1], timeout=10)
    conn.putrequest("POST", "/", skip_accept_encoding=True)
    for name, value in (("Content-Type", "application/x-amz-json-1.0"), ("Authorization", AUTH),
                        ("X-Amz-Target", "DynamoDB_20120810.GetItem"), ("Content-Length", str(len(body)))):
        conn.putheader(name, value)
    for value in accept:
        conn.putheader("Accept-Encoding", value)
    conn.endheaders(body)
    resp = conn.getresponse()
    payload = resp.read()
    conn.close()
    return resp.getheader("Content-Encoding"), payload


def test_accept_encoding_lines_join_and_the_clients_order_decides(server, make_table):
    table = make_table([("id", "HASH")], [("id", "S")])
    server.client().put_item(TableName=table, Item={"id": {"S": "big"}, "pad": {"S": "y" * 5000}})
    body = json.dumps({"TableName": table, "Key": {"id": {"S": "big"}}}).encode()
    coding, payload = _get(server, body, "br, identity, deflate, gzip")
    assert coding == "deflate" and json.loads(zlib.decompress(payload))["Item"]["pad"]["S"] == "y" * 5000
    coding, payload = _get(server, body, "br", "gzip")  # two lines: one list
    assert coding == "gzip" and json.loads(zlib.decompress(payload, 31))["Item"]
    coding, _ = _get(server, body, "deflate", "gzip;q=0.5")
    assert coding == "deflate"
    coding, payload = _get(server, body, "br", "identity")
    assert coding is None and len(payload) > 5000


# --- 2. attribute_type with a value first -------------------------------------------------------

def test_attribute_type_takes_any_operand_first(ddb, make_table):
    table = make_table([("id", "HASH")], [("id", "S")])
    item = {"id": {"S": "a"}, "x": {"S": "s"}}
    ddb.put_item(TableName=table, Item=item, ConditionExpression="attribute_type(:v, :t)",
                 ExpressionAttributeValues={":v": {"S": "x"}, ":t": {"S": "S"}})
    ddb.put_item(TableName=table, Item=item, ConditionExpression="attribute_type(size(x), :t)",
                 ExpressionAttributeValues={":t": {"S": "N"}})
    code, _ = error(ddb.put_item, TableName=table, Item=item, ConditionExpression="attribute_type(:v, :t)",
                    ExpressionAttributeValues={":v": {"N": "1"}, ":t": {"S": "S"}})
    assert code == "ConditionalCheckFailedException"
    assert error(ddb.put_item, TableName=table, Item=item, ConditionExpression="attribute_type(x, x)") == (
        "ValidationException", "Invalid ConditionExpression: The first operand must be distinct from the remaining "
        "operands for this operator or function; operator: attribute_type, first operand: [x]")
    assert error(ddb.put_item, TableName=table, Item=item, ConditionExpression="attribute_exists(:v)",
                 ExpressionAttributeValues={":v": {"S": "x"}}) == (
        "ValidationException", "Invalid ConditionExpression: Operator or function requires a document path; "
        "operator or function: attribute_exists")


# --- 4. the nesting limit's message -------------------------------------------------------------

def test_nesting_beyond_32_levels_says_nested(ddb, make_table):
    table = make_table([("id", "HASH")], [("id", "S")])

    def deep(levels: int) -> dict:
        value: dict = {"S": "leaf"}
        for _ in range(levels):
            value = {"M": {"n": value}}
        return value
    ddb.put_item(TableName=table, Item={"id": {"S": "ok"}, "data": deep(31)})
    assert error(ddb.put_item, TableName=table, Item={"id": {"S": "no"}, "data": deep(32)}) == (
        "ValidationException", "Nesting Levels have exceeded supported limits: Attributes in the item have "
                               "nested levels beyond supported limit")
