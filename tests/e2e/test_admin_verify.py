"""Admin routes under `--auth verify --isolation account` (issue 28): the admin token or a valid
signature of a known credential, and a signature reads only its own account's tables."""
from __future__ import annotations

import http.client
import json
from urllib.parse import quote

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
    """reset drops every account's tables and the console page is for a browser: token only."""
    for path, body in (("/_dynalocal/reset", b"{}"), ("/_dynalocal/console", None)):
        assert admin(live, path, body)[0] == 403
        assert admin(live, path, body, ALICE)[0] == 403
    settings = Settings(auth="verify", isolation="account", credentials={ALICE[0]: ALICE[1:]}, admin_token=TOKEN)
    with LiveServer(Context(settings=settings)) as server:
        assert admin(server, "/_dynalocal/reset", b"{}", ALICE)[0] == 403
        assert admin(server, "/_dynalocal/tables", Authorization=f"Bearer {TOKEN}")[0] == 200
        assert admin(server, "/_dynalocal/read", READ, ALICE)[0] == 400  # signed, scoped: no such table yet


def test_under_shared_isolation_a_signature_opens_every_route():
    with LiveServer(Context(settings=Settings(auth="verify", credentials={ALICE[0]: (ALICE[1], None)}))) as server:
        assert admin(server, "/_dynalocal/tables")[0] == 403
        assert admin(server, "/_dynalocal/tables", who=ALICE)[0] == 200
        assert admin(server, "/_dynalocal/reset", b"{}", who=ALICE)[0] == 200


def test_the_console_write_route_takes_a_scoped_signature_or_the_token_or_its_cookie():
    settings = Settings(auth="verify", isolation="account", credentials={ALICE[0]: ALICE[1:], BOB[0]: BOB[1:]},
                        admin_token=TOKEN)
    put = json.dumps({"operation": "PutItem", "TableName": "missing", "Item": {"id": {"S": "x"}}}).encode()
    with LiveServer(Context(settings=settings)) as server:
        assert admin(server, "/_dynalocal/write", put)[0] == 403  # unsigned
        create = json.dumps({"operation": "CreateTable", "TableName": "mine", "BillingMode": "PAY_PER_REQUEST",
                             "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}],
                             "AttributeDefinitions": [{"AttributeName": "id", "AttributeType": "S"}]}).encode()
        assert admin(server, "/_dynalocal/write", create, ALICE)[0] == 200  # in Alice's scope
        statement = json.dumps({"operation": "ExecuteStatement",
                                "Statement": "INSERT INTO \"mine\" VALUE {'id': 'p'}"}).encode()
        assert admin(server, "/_dynalocal/write", statement, ALICE)[0] == 200
        assert ctx_tables(server) == ["111111111111/us-east-1/mine"]
        assert admin(server, "/_dynalocal/write", statement, BOB)[1]["__type"].endswith("ResourceNotFoundException")
        theirs = json.dumps({"operation": "PutItem", "TableName": "111111111111/us-east-1/mine",
                             "Item": {"id": {"S": "bob"}}}).encode()
        assert admin(server, "/_dynalocal/write", theirs, BOB)[0] == 403
        conn = http.client.HTTPConnection(server.url.split("//")[1], timeout=10)
        conn.request("POST", "/_dynalocal/login", body=f"token={TOKEN}",
                     headers={"Content-Type": "application/x-www-form-urlencoded"})
        cookie = conn.getresponse().headers["Set-Cookie"].split(";")[0]
        conn.close()
        status, body = admin(server, "/_dynalocal/write", put, Cookie=cookie)
        assert (status, body["__type"]) == (400, "com.amazonaws.dynamodb.v20120810#ResourceNotFoundException")


def ctx_tables(server: LiveServer) -> list[str]:
    """The catalog keys of the server's tables, read with the admin token."""
    return [t["name"] for t in admin(server, "/_dynalocal/tables", Authorization=f"Bearer {TOKEN}")[1]["tables"]]


@pytest.fixture(scope="module")
def two_accounts():
    """A server under verify + account with the token set, and a table per account."""
    credentials = {key: (secret, account) for key, secret, account in (ALICE, BOB)}
    settings = Settings(auth="verify", isolation="account", credentials=credentials, admin_token=TOKEN)
    with LiveServer(Context(settings=settings)) as server:
        for key, secret, _ in (ALICE, BOB):
            ddb = boto3.client("dynamodb", endpoint_url=server.url, region_name="us-east-1",
                               aws_access_key_id=key, aws_secret_access_key=secret)
            ddb.create_table(TableName=f"{secret}-table", BillingMode="PAY_PER_REQUEST",
                             KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
                             AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}])
            ddb.put_item(TableName=f"{secret}-table", Item={"id": {"S": f"{secret}-key"}})
            ddb.get_item(TableName=f"{secret}-table", Key={"id": {"S": f"{secret}-key"}})
        yield server


def own(who: tuple[str, str, str]) -> str:
    return f"{who[2]}/us-east-1/{who[1]}-table"


@pytest.mark.parametrize("who,other", [(ALICE, BOB), (BOB, ALICE)])
def test_a_signer_sees_only_its_own_tables_in_the_diagnosis_routes(two_accounts, who, other):
    status, body = admin(two_accounts, "/_dynalocal/tables", who=who)
    assert status == 200 and [t["name"] for t in body["tables"]] == [own(who)]
    status, body = admin(two_accounts, "/_dynalocal/report", who=who)
    assert status == 200 and [t["table"] for t in body["tables"]] == [own(who)]
    assert other[1] not in json.dumps(body)
    for suffix in ("partitions", "heat"):
        for name in (own(who), f"{who[1]}-table"):  # by catalog key, or by the name its SDK uses
            status, body = admin(two_accounts, f"/_dynalocal/tables/{name}/{suffix}", who=who)
            assert status == 200 and other[1] not in json.dumps(body), (suffix, name)
    partitions = admin(two_accounts, f"/_dynalocal/tables/{own(who)}/partitions", who=who)[1]["partitions"]
    assert sum(p["items"] for p in partitions) == 1
    status, text = admin(two_accounts, f"/_dynalocal/report?table={who[1]}-table", who=who)
    assert status == 200 and [t["table"] for t in text["tables"]] == [own(who)]


@pytest.mark.parametrize("path", ["/_dynalocal/tables/{}/partitions", "/_dynalocal/tables/{}/heat",
                                  "/_dynalocal/report?table={}"])
def test_another_accounts_table_is_refused_like_read(two_accounts, path):
    status, body = admin(two_accounts, path.format(quote(own(ALICE), safe="/" if "?" not in path else "")), who=BOB)
    read = admin(two_accounts, "/_dynalocal/read",
                 json.dumps({"operation": "Scan", "TableName": own(ALICE)}).encode(), BOB)
    assert status == 403 and (status, body) == read and "alice-key" not in json.dumps(body)
    status, body = admin(two_accounts, path.format("alice-table"), who=BOB)  # Bob's own name: no such table
    assert status == 404


@pytest.mark.parametrize("path", ["/_dynalocal/tables", "/_dynalocal/report",
                                  "/_dynalocal/tables/{}/partitions", "/_dynalocal/tables/{}/heat"])
def test_unsigned_is_refused_and_the_token_sees_everything(two_accounts, path):
    path = path.format(own(ALICE))
    assert admin(two_accounts, path)[0] == 403
    assert admin(two_accounts, path, who=(ALICE[0], "wrong", ALICE[2]))[0] == 403
    status, body = admin(two_accounts, path, Authorization=f"Bearer {TOKEN}")
    assert status == 200
    if path in ("/_dynalocal/tables", "/_dynalocal/report"):
        assert "alice-table" in json.dumps(body) and "bob-table" in json.dumps(body)


def test_the_text_report_is_scoped_too(two_accounts):
    request = AWSRequest("GET", two_accounts.url + "/_dynalocal/report?format=text")
    SigV4Auth(Credentials(BOB[0], BOB[1]), "dynamodb", "us-east-1").add_auth(request)
    conn = http.client.HTTPConnection(two_accounts.url.split("//")[1], timeout=10)
    try:
        conn.request("GET", "/_dynalocal/report?format=text", headers=dict(request.headers.items()))
        resp = conn.getresponse()
        text = resp.read().decode()
    finally:
        conn.close()
    assert resp.status == 200, text
    assert own(BOB) in text and "alice" not in text
