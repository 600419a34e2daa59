"""`--auth verify` binds the signature to the request (issue 28): the body received, the operation,
the host and the date; the Host check's strict form and its message member."""
from __future__ import annotations

import hashlib
import http.client
import json

import boto3
import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from conftest import LiveServer

from dynalocal.config import Settings
from dynalocal.engine.context import Context

KEY, SECRET = "AKIDLOCAL", "s3cret"


def client(live: LiveServer):  # type: ignore[no-untyped-def]
    return boto3.client("dynamodb", endpoint_url=live.url, region_name="us-east-1", aws_access_key_id=KEY,
                        aws_secret_access_key=SECRET)


@pytest.fixture(scope="module")
def verifying():
    with LiveServer(Context(settings=Settings(auth="verify", credentials={KEY: (SECRET, "111122223333")}))) as live:
        client(live).create_table(
            TableName="bound", BillingMode="PAY_PER_REQUEST", KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}])
        yield live


class _Signer(SigV4Auth):
    """botocore's signer, optionally leaving headers out of SignedHeaders or not signing the payload."""

    def __init__(self, leave_out: tuple[str, ...] = (), unsigned_payload: bool = False) -> None:
        super().__init__(Credentials(KEY, SECRET), "dynamodb", "us-east-1")
        self.leave_out, self.unsigned_payload = leave_out, unsigned_payload

    def headers_to_sign(self, request):  # type: ignore[no-untyped-def]
        found = super().headers_to_sign(request)
        for name in self.leave_out:
            del found[name]
        return found

    def payload(self, request):  # type: ignore[no-untyped-def]
        return "UNSIGNED-PAYLOAD" if self.unsigned_payload else super().payload(request)


def signed(live: LiveServer, target: str, body: bytes, signer: _Signer | None = None,
           **extra: str) -> dict[str, str]:
    """The headers botocore's SigV4Auth sends for this request."""
    headers = {"Content-Type": "application/x-amz-json-1.0", "X-Amz-Target": "DynamoDB_20120810." + target, **extra}
    request = AWSRequest("POST", live.url + "/", data=body, headers=headers)
    (signer or _Signer()).add_auth(request)
    return dict(request.headers.items())


def send(live: LiveServer, headers: dict[str, str], body: bytes, path: str = "/") -> tuple[int, dict]:
    conn = http.client.HTTPConnection(live.url.split("//")[1], timeout=10)
    try:
        conn.request("POST", path, body=body, headers=headers)
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read() or b"{}")
    finally:
        conn.close()


def put(name: str) -> bytes:
    return json.dumps({"TableName": "bound", "Item": {"id": {"S": name}}}).encode()


def stored(live: LiveServer, name: str) -> bool:
    return "Item" in client(live).get_item(TableName="bound", Key={"id": {"S": name}})


def test_a_signed_request_is_served(verifying):
    assert send(verifying, signed(verifying, "PutItem", put("honest")), put("honest"))[0] == 200
    assert stored(verifying, "honest")


def test_a_forged_body_with_an_unsigned_content_hash_is_refused(verifying):
    """The audit's replay: the original body's hash in an added, unsigned x-amz-content-sha256."""
    headers = signed(verifying, "PutItem", put("original"))
    headers["X-Amz-Content-SHA256"] = hashlib.sha256(put("original")).hexdigest()
    status, body = send(verifying, headers, put("forged"))
    assert (status, body["__type"]) == (400, "com.amazon.coral.service#InvalidSignatureException")
    assert body["message"].startswith("The request signature we calculated does not match")
    assert not stored(verifying, "forged")


def test_unsigned_payload_is_refused_as_outside_s3(verifying):
    signer = _Signer(unsigned_payload=True)
    headers = signed(verifying, "PutItem", put("original"), signer, **{"X-Amz-Content-SHA256": "UNSIGNED-PAYLOAD"})
    status, body = send(verifying, headers, put("swapped"))
    assert (status, body["__type"]) == (400, "com.amazon.coral.service#InvalidSignatureException")
    assert not stored(verifying, "swapped")


def test_a_signature_must_cover_the_operation(verifying):
    """Signed with SignedHeaders=host;x-amz-date only, the target changed to DeleteItem."""
    send(verifying, signed(verifying, "PutItem", put("kept")), put("kept"))
    body = json.dumps({"TableName": "bound", "Key": {"id": {"S": "kept"}}}).encode()
    headers = signed(verifying, "GetItem", body, _Signer(leave_out=("x-amz-target", "content-type")))
    headers["X-Amz-Target"] = "DynamoDB_20120810.DeleteItem"
    status, answer = send(verifying, headers, body)
    assert (status, answer) == (400, {"__type": "com.amazon.coral.service#InvalidSignatureException",
                                      "message": "'X-Amz-Target' must be a 'SignedHeader' in the AWS Authorization."})
    assert stored(verifying, "kept")


@pytest.mark.parametrize("left_out, message", [
    ("host", "'Host' or ':authority' must be a 'SignedHeader' in the AWS Authorization."),
    ("x-amz-date", "'X-Amz-Date' must be a 'SignedHeader' in the AWS Authorization.")])
def test_a_signature_must_cover_host_and_date(verifying, left_out, message):
    headers = signed(verifying, "PutItem", put("x"), _Signer(leave_out=(left_out,)))
    assert send(verifying, headers, put("x")) == (400, {"__type": "com.amazon.coral.service#InvalidSignatureException",
                                                        "message": message})


def test_host_must_be_host_and_port_only_and_its_refusal_says_message(verifying):
    status, body = send(verifying, {"Host": "localhost:80@evil.example", "X-Amz-Target": "DynamoDB_20120810.ListTables",
                                    "Content-Type": "application/x-amz-json-1.0"}, b"{}")
    assert (status, body["__type"]) == (400, "com.amazon.coral.service#AccessDeniedException")
    assert "Message" not in body and "localhost:80@evil.example" in body["message"]
