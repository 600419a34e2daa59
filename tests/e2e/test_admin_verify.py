"""Admin routes under `--auth verify --isolation account` (issue 28): the admin token or a valid
signature of a known credential, and a signature reads only its own account's tables."""
from __future__ import annotations

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

ALICE, BOB = ("AKIDALICE", "alice", "111111111111"), ("AKIDBOB", "bob", "222222222222")
TOKEN = "admin-secret"
SECRET_TABLE = "111111111111/us-east-1/secret"
READ = json.dumps({"operation": "Scan", "TableName": SECRET_TABLE}).encode()


@pytest.fixture(scope="module")
def live():
    credentials = {key: (secret, account) for key, secret, account in (ALICE, BOB)}
    settings = Settings(auth="verify", isolation="account", credentials=credentials)  # loopback, no token
    with LiveServer(Context(settings=settings)) as server:
        ddb = boto3.client("dynamodb", endpoint_url=server.url, region_name="us-east-1",
                           aws_access_key_id=ALICE[0], aws_secret_access_key=ALICE[1])
        ddb.create_table(TableName="secret", BillingMode="PAY_PER_REQUEST",
                         KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
                         AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}])
        ddb.put_item(TableName="secret", Item={"id": {"S": "alice-only"}})
        yield server


def admin(live: LiveServer, path: str, body: bytes | None = None, who: tuple[str, str, str] | None = None,
          **headers: str) -> tuple[int, dict]:
    """A request to an admin route, signed by `who` with botocore's SigV4Auth when given."""
    method = "GET" if body is None else "POST"
    headers = {"Content-Type": "application/json", **headers}
    if who is not None:
        request = AWSRequest(method, live.url + path, data=body, headers=headers)
        SigV4Auth(Credentials(who[0], who[1]), "dynamodb", "us-east-1").add_auth(request)
        headers = dict(request.headers.items())
    conn = http.client.HTTPConnection(live.url.split("//")[1], timeout=10)
    try:
        conn.request(method, path, body=body, headers=headers)
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read() or b"{}")
    finally:
        conn.close()


def test_an_unsigned_admin_read_is_refused(live):
    """The audit's reproduction: an unsigned read of account A's table under verify + account."""
    status, body = admin(live, "/_dynalocal/read", READ)
    assert status == 403 and "alice-only" not in json.dumps(body)
    assert admin(live, "/_dynalocal/health")[0] == 200  # health and metrics stay open


def test_a_signed_read_sees_the_signers_own_tables_only(live):
    status, body = admin(live, "/_dynalocal/read", READ, ALICE)
    assert status == 200 and body["Items"] == [{"id": {"S": "alice-only"}}]
    bare = json.dumps({"operation": "Scan", "TableName": "secret"}).encode()
    assert admin(live, "/_dynalocal/read", bare, ALICE)[1]["Items"] == [{"id": {"S": "alice-only"}}]
    status, body = admin(live, "/_dynalocal/read", READ, BOB)  # another account's table by its catalog name
    assert status == 403 and "alice-only" not in json.dumps(body)
    status, body = admin(live, "/_dynalocal/read", bare, BOB)  # Bob's own (missing) table
    assert (status, body["__type"]) == (400, "com.amazonaws.dynamodb.v20120810#ResourceNotFoundException")


def test_a_bad_signature_is_refused(live):
    status, body = admin(live, "/_dynalocal/read", READ, (ALICE[0], "wrong", ALICE[2]))
    assert status == 403 and "InvalidSignatureException" in body["message"]


def test_unscoped_routes_need_the_token_under_account_isolation(live):
    for path in ("/_dynalocal/tables", "/_dynalocal/report"):
        assert admin(live, path)[0] == 403
        assert admin(live, path, who=ALICE)[0] == 403  # they show every account's tables
    settings = Settings(auth="verify", isolation="account", credentials={ALICE[0]: ALICE[1:]}, admin_token=TOKEN)
    with LiveServer(Context(settings=settings)) as server:
        assert admin(server, "/_dynalocal/tables", who=ALICE)[0] == 403
        assert admin(server, "/_dynalocal/tables", Authorization=f"Bearer {TOKEN}")[0] == 200
        assert admin(server, "/_dynalocal/read", READ, ALICE)[0] == 400  # signed, scoped: no such table yet


def test_under_shared_isolation_a_signature_opens_every_route():
    with LiveServer(Context(settings=Settings(auth="verify", credentials={ALICE[0]: (ALICE[1], None)}))) as server:
        assert admin(server, "/_dynalocal/tables")[0] == 403
        assert admin(server, "/_dynalocal/tables", who=ALICE)[0] == 200
        assert admin(server, "/_dynalocal/reset", b"{}", who=ALICE)[0] == 200


def test_the_console_write_route_needs_the_token_or_its_cookie_under_account_isolation():
    settings = Settings(auth="verify", isolation="account", credentials={ALICE[0]: ALICE[1:]}, admin_token=TOKEN)
    put = json.dumps({"operation": "PutItem", "TableName": "missing", "Item": {"id": {"S": "x"}}}).encode()
    with LiveServer(Context(settings=settings)) as server:
        assert admin(server, "/_dynalocal/write", put, ALICE)[0] == 403  # a signature opens only `read`
        conn = http.client.HTTPConnection(server.url.split("//")[1], timeout=10)
        conn.request("POST", "/_dynalocal/login", body=f"token={TOKEN}",
                     headers={"Content-Type": "application/x-www-form-urlencoded"})
        cookie = conn.getresponse().headers["Set-Cookie"].split(";")[0]
        conn.close()
        status, body = admin(server, "/_dynalocal/write", put, Cookie=cookie)
        assert (status, body["__type"]) == (400, "com.amazonaws.dynamodb.v20120810#ResourceNotFoundException")
