"""Wire plug-ins end to end: request/response compression, CORS, SigV4 authentication, regions and
accounts in ARNs, and table isolation (docs/behaviour/wire.md §2-§5, operations.md §2)."""
from __future__ import annotations

import gzip
import json
import urllib.error
import urllib.request
import zlib

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError
from conftest import LiveServer

from dynalocal.config import Settings
from dynalocal.engine.context import Context

KEYS = [{"AttributeName": "id", "KeyType": "HASH"}]
DEFS = [{"AttributeName": "id", "AttributeType": "S"}]
AUTH = ("AWS4-HMAC-SHA256 Credential=test/20250101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, "
        "Signature=00")


def client(live, key: str = "test", secret: str = "test", region: str = "us-east-1", **config):
    session = boto3.session.Session(aws_access_key_id=key, aws_secret_access_key=secret, region_name=region)
    config.setdefault("retries", {"max_attempts": 0})
    return session.client("dynamodb", endpoint_url=live.url, config=Config(**config))


def post(live, target: str, body: bytes, method: str = "POST", **headers: str):
    """A hand-made request to the DynamoDB endpoint: (status, headers, body)."""
    sent = {"Content-Type": "application/x-amz-json-1.0"}
    if target:
        sent["X-Amz-Target"] = "DynamoDB_20120810." + target
    sent.update({k.replace("_", "-"): v for k, v in headers.items()})
    request = urllib.request.Request(live.url + "/", data=body if method == "POST" else None, method=method,
                                     headers=sent)
    try:
        with urllib.request.urlopen(request, timeout=10) as resp:
            return resp.status, resp.headers, resp.read()
    except urllib.error.HTTPError as err:
        return err.code, err.headers, err.read()


def error_of(payload: bytes) -> tuple[str, str | None]:
    body = json.loads(payload)
    return body["__type"].rsplit("#", 1)[1], body.get("message", body.get("Message"))


def compress_requests(ddb, encode=gzip.compress, name: str = "gzip") -> None:
    """Make a boto3 client compress its request bodies before signing them, as SDKs with request
    compression do (botocore itself only compresses operations whose model asks for it, and
    DynamoDB's model does not)."""
    def before_sign(request, **_):
        if request.data:
            request.data = encode(request.data if isinstance(request.data, bytes) else request.data.encode())
            request.headers["Content-Encoding"] = name
            request.headers["Content-Length"] = str(len(request.data))
    ddb.meta.events.register("before-sign.dynamodb", before_sign)


# --- compression ---------------------------------------------------------------------------------

def test_boto3_with_request_compression(server):
    for encode, name in ((gzip.compress, "gzip"), (zlib.compress, "deflate")):
        ddb = client(server, request_min_compression_size_bytes=1, disable_request_compression=False)
        compress_requests(ddb, encode, name)
        table = f"compressed-{name}"
        ddb.create_table(TableName=table, KeySchema=KEYS, AttributeDefinitions=DEFS, BillingMode="PAY_PER_REQUEST")
        ddb.put_item(TableName=table, Item={"id": {"S": "a"}, "text": {"S": "x" * 50_000}})
        assert ddb.get_item(TableName=table, Key={"id": {"S": "a"}})["Item"]["text"]["S"] == "x" * 50_000
        ddb.delete_table(TableName=table)


@pytest.mark.parametrize("encoding, body", [
    ("br", gzip.compress(b"{}")),  # an encoding DynamoDB does not know
    ("gzip", b"this is not gzip"),
    ("gzip", gzip.compress(b'{"TableName": "t"}')[:-6]),  # truncated
    ("deflate", b"\x00\x01\x02"),
    ("gzip", b""),  # an empty "compressed" body
])
def test_broken_encodings_are_internal_server_errors_and_change_nothing(server, make_table, encoding, body):
    table = make_table([("id", "HASH")], [("id", "S")])
    if body == b"this is not gzip" or encoding == "br":
        body = body if encoding == "gzip" else gzip.compress(json.dumps(
            {"TableName": table, "Item": {"id": {"S": "a"}}}).encode())
    status, _, payload = post(server, "PutItem", body, Content_Encoding=encoding, Authorization=AUTH)
    assert status == 500
    assert error_of(payload) == ("InternalServerError", "Internal server error")
    assert server.client().scan(TableName=table)["Count"] == 0


def test_the_size_limit_applies_to_the_decoded_body(server, make_table):
    table = make_table([("id", "HASH")], [("id", "S")])
    item = json.dumps({"TableName": table, "Item": {"id": {"S": "a"}, "pad": {"S": "x" * 300_000}}}).encode()
    status, _, _ = post(server, "PutItem", gzip.compress(item), Content_Encoding="gzip", Authorization=AUTH)
    assert status == 200
    # 17 MiB of JSON whitespace compresses to ~17 KB; decoded it is over the 16 MiB limit
    bomb = gzip.compress(b"{" + b" " * (17 * 1024 * 1024) + b"}")
    assert len(bomb) < 100_000
    status, _, payload = post(server, "ListTables", bomb, Content_Encoding="gzip", Authorization=AUTH)
    assert (status, payload) == (413, b"")


def test_responses_are_compressed_from_4096_bytes_when_accepted(server, make_table):
    table = make_table([("id", "HASH")], [("id", "S")])
    server.client().put_item(TableName=table, Item={"id": {"S": "big"}, "pad": {"S": "y" * 5000}})
    server.client().put_item(TableName=table, Item={"id": {"S": "small"}})
    big = json.dumps({"TableName": table, "Key": {"id": {"S": "big"}}}).encode()
    small = json.dumps({"TableName": table, "Key": {"id": {"S": "small"}}}).encode()
    for coding, decode in (("gzip", gzip.decompress), ("deflate", zlib.decompress)):
        status, headers, payload = post(server, "GetItem", big, Accept_Encoding=coding, Authorization=AUTH)
        assert status == 200 and headers["Content-Encoding"] == coding
        assert int(headers["x-amz-crc32"]) == zlib.crc32(payload)  # over the bytes as sent
        assert json.loads(decode(payload))["Item"]["pad"]["S"] == "y" * 5000
        status, headers, payload = post(server, "GetItem", small, Accept_Encoding=coding, Authorization=AUTH)
        assert status == 200 and headers["Content-Encoding"] is None and json.loads(payload)["Item"]
    status, headers, payload = post(server, "GetItem", big, Accept_Encoding="identity", Authorization=AUTH)
    assert headers["Content-Encoding"] is None and len(payload) > 5000


# --- CORS -----------------------------------------------------------------------------------------

def test_preflight_and_response_headers_for_local_origins(server):
    status, headers, payload = post(server, "", b"", method="OPTIONS", Origin="http://localhost:3000",
                                    Access_Control_Request_Method="POST",
                                    Access_Control_Request_Headers="content-type,x-amz-target,authorization")
    assert (status, payload) == (200, b"")
    assert headers["Access-Control-Allow-Origin"] == "http://localhost:3000"
    assert "POST" in headers["Access-Control-Allow-Methods"]
    assert headers["Access-Control-Allow-Headers"] == "content-type,x-amz-target,authorization"
    assert headers["Access-Control-Max-Age"] == "172800"
    status, headers, _ = post(server, "ListTables", b"{}", Origin="http://127.0.0.1:5173", Authorization=AUTH)
    assert status == 200 and headers["Access-Control-Allow-Origin"] == "http://127.0.0.1:5173"
    assert headers["Access-Control-Expose-Headers"] == "x-amzn-RequestId, x-amz-crc32"


def test_other_websites_cannot_drive_a_local_server_by_default(server):
    status, headers, _ = post(server, "", b"", method="OPTIONS", Origin="https://evil.example",
                              Access_Control_Request_Method="POST")
    assert status == 403 and headers["Access-Control-Allow-Origin"] is None
    status, headers, _ = post(server, "ListTables", b"{}", Origin="https://evil.example", Authorization=AUTH)
    assert headers["Access-Control-Allow-Origin"] is None  # the browser keeps the page from reading it
    status, headers, _ = post(server, "ListTables", b"{}", Origin="http://localhost.evil.example:80",
                              Authorization=AUTH)
    assert headers["Access-Control-Allow-Origin"] is None


def test_cors_origins_option():
    with LiveServer(Context(settings=Settings(cors_origins=("*",)))) as live:
        status, headers, _ = post(live, "", b"", method="OPTIONS", Origin="https://app.example",
                                  Access_Control_Request_Method="POST")
        assert status == 200 and headers["Access-Control-Allow-Origin"] == "*"
    with LiveServer(Context(settings=Settings(cors_origins=("https://app.example",)))) as live:
        assert post(live, "", b"", method="OPTIONS", Origin="https://app.example")[0] == 200
        assert post(live, "", b"", method="OPTIONS", Origin="http://localhost:3000")[0] == 403


# --- authentication -------------------------------------------------------------------------------

def test_relaxed_auth_needs_a_well_formed_signature(server):
    status, _, payload = post(server, "ListTables", b"{}")
    assert status == 400
    assert error_of(payload) == ("MissingAuthenticationTokenException", "Request is missing Authentication Token")
    status, _, payload = post(server, "ListTables", b"{}", Authorization="AWS4-HMAC-SHA256 Signature=00")
    kind, message = error_of(payload)
    assert status == 400 and kind == "IncompleteSignatureException"
    assert "Authorization header requires 'Credential' parameter." in message
    # a body that is not JSON is reported first, as DynamoDB does
    status, _, payload = post(server, "ListTables", b"{not json")
    assert (status, error_of(payload)[0]) == (400, "SerializationException")
    # any secret goes in relaxed mode
    assert "TableNames" in client(server, secret="whatever").list_tables()


@pytest.fixture(scope="module")
def verifying():
    credentials = {"AKIDLOCAL": ("s3cret", "111122223333"), "AKIDOTHER": ("other", None)}
    with LiveServer(Context(settings=Settings(auth="verify", credentials=credentials))) as live:
        yield live


def test_verify_accepts_right_signatures(verifying):
    ddb = client(verifying, "AKIDLOCAL", "s3cret", "eu-central-1")
    ddb.create_table(TableName="signed", KeySchema=KEYS, AttributeDefinitions=DEFS, BillingMode="PAY_PER_REQUEST")
    ddb.put_item(TableName="signed", Item={"id": {"S": "a"}})
    arn = ddb.describe_table(TableName="signed")["Table"]["TableArn"]
    assert arn == "arn:aws:dynamodb:eu-central-1:111122223333:table/signed"  # the account from the credentials
    compress_requests(ddb)  # the signature covers the compressed body
    assert ddb.get_item(TableName="signed", Key={"id": {"S": "a"}})["Item"] == {"id": {"S": "a"}}


@pytest.mark.parametrize("key, secret, code, message", [
    ("AKIDLOCAL", "wrong", "InvalidSignatureException",
     "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access "
     "Key and signing method. Consult the service documentation for details."),
    ("AKIDUNKNOWN", "s3cret", "UnrecognizedClientException", "The security token included in the request is invalid."),
])
def test_verify_refuses_wrong_secrets_and_unknown_keys(verifying, key, secret, code, message):
    with pytest.raises(ClientError) as info:
        client(verifying, key, secret).list_tables()
    assert (info.value.response["Error"]["Code"], info.value.response["Error"]["Message"]) == (code, message)
    assert info.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400


def test_verify_refuses_a_skewed_clock(verifying):
    ddb = client(verifying, "AKIDLOCAL", "s3cret")
    real = verifying.ctx.wall_clock
    try:
        for shift, words in ((20 * 60, "Signature expired: "), (-20 * 60, "Signature not yet current: ")):
            verifying.ctx.wall_clock = lambda shift=shift: real() + shift
            with pytest.raises(ClientError) as info:
                ddb.list_tables()
            assert info.value.response["Error"]["Code"] == "InvalidSignatureException"
            assert info.value.response["Error"]["Message"].startswith(words)
        verifying.ctx.wall_clock = lambda: real() + 14 * 60  # within 15 minutes: fine
        ddb.list_tables()
    finally:
        verifying.ctx.wall_clock = real


def test_verify_covers_the_streams_api_prefix(verifying):
    # DynamoDB Streams requests are signed with the service name dynamodb too; a wrong secret is refused
    session = boto3.session.Session(aws_access_key_id="AKIDLOCAL", aws_secret_access_key="wrong",
                                    region_name="us-east-1")
    streams = session.client("dynamodbstreams", endpoint_url=verifying.url, config=Config(retries={"max_attempts": 0}))
    with pytest.raises(ClientError) as info:
        streams.list_streams()
    assert info.value.response["Error"]["Code"] == "InvalidSignatureException"
    session = boto3.session.Session(aws_access_key_id="AKIDLOCAL", aws_secret_access_key="s3cret",
                                    region_name="us-east-1")
    assert "Streams" in session.client("dynamodbstreams", endpoint_url=verifying.url).list_streams()


def test_auth_none_serves_unsigned_requests():
    with LiveServer(Context(settings=Settings(auth="none"))) as live:
        status, _, payload = post(live, "ListTables", b"{}")
        assert status == 200 and "TableNames" in json.loads(payload)


# --- regions, accounts, isolation ------------------------------------------------------------------

def _create(ddb, name: str) -> str:
    return ddb.create_table(TableName=name, KeySchema=KEYS, AttributeDefinitions=DEFS,
                            BillingMode="PAY_PER_REQUEST")["TableDescription"]["TableArn"]


def test_shared_isolation_arns_carry_the_signing_region(server):
    arn = _create(client(server, region="ap-southeast-2"), "shared-arn")
    assert arn == "arn:aws:dynamodb:ap-southeast-2:000000000000:table/shared-arn"
    other = client(server, region="eu-west-1")
    assert "shared-arn" in other.list_tables()["TableNames"]  # one database for everyone
    other.delete_table(TableName="shared-arn")


def test_region_isolation():
    with LiveServer(Context(settings=Settings(isolation="region"))) as live:
        east, west = client(live, region="us-east-1"), client(live, region="us-west-2")
        assert _create(east, "music").startswith("arn:aws:dynamodb:us-east-1:")
        assert west.list_tables()["TableNames"] == []
        with pytest.raises(west.exceptions.ResourceNotFoundException):
            west.describe_table(TableName="music")
        assert _create(west, "music").startswith("arn:aws:dynamodb:us-west-2:")  # the same name, another region
        east.put_item(TableName="music", Item={"id": {"S": "east"}})
        assert west.scan(TableName="music")["Count"] == 0
        # another key in the same region sees the same tables
        assert client(live, key="someone-else", region="us-east-1").list_tables()["TableNames"] == ["music"]
        # the admin endpoint addresses a table by region and name
        with urllib.request.urlopen(live.url + "/_dynalocal/tables/us-west-2/music/partitions", timeout=10) as resp:
            assert json.loads(resp.read())["table"] == "us-west-2/music"


def test_account_isolation():
    credentials = {"AKIDALICE": ("a", "111111111111"), "AKIDALICE2": ("a2", "111111111111"),
                   "AKIDBOB": ("b", "222222222222")}
    with LiveServer(Context(settings=Settings(isolation="account", credentials=credentials))) as live:
        alice, alice2, bob = (client(live, key, region="eu-west-1") for key in ("AKIDALICE", "AKIDALICE2", "AKIDBOB"))
        assert _create(alice, "orders") == "arn:aws:dynamodb:eu-west-1:111111111111:table/orders"
        assert alice2.list_tables()["TableNames"] == ["orders"]  # same account, another key
        assert bob.list_tables()["TableNames"] == []
        assert client(live, "AKIDALICE", region="eu-north-1").list_tables()["TableNames"] == []  # another region
        # unknown keys: the account derived from the key, as LocalStack does
        derived = client(live, "ASIAY34FZKBOKMUTVV7A", region="eu-west-1")  # AWS's documented example key
        assert _create(derived, "orders") == "arn:aws:dynamodb:eu-west-1:609629065308:table/orders"
        assert client(live, "test", region="eu-west-1").list_tables()["TableNames"] == []  # 000000000000
        assert client(live, "123456789012", region="eu-west-1").list_tables()["TableNames"] == []
        assert _create(client(live, "123456789012", region="eu-west-1"), "t12").split(":")[4] == "123456789012"


def test_isolation_persists(tmp_path):
    settings = dict(isolation="region", data_dir=str(tmp_path))

    def server():
        from dynalocal.http.durability import Durability

        ctx = Context(settings=Settings(**settings))
        Durability.open(ctx)
        return LiveServer(ctx)

    with server() as live:
        _create(client(live, region="eu-west-1"), "kept")
        client(live, region="eu-west-1").put_item(TableName="kept", Item={"id": {"S": "a"}})
    with server() as live:
        assert client(live, region="eu-west-1").list_tables()["TableNames"] == ["kept"]
        assert client(live, region="us-east-1").list_tables()["TableNames"] == []
        assert client(live, region="eu-west-1").scan(TableName="kept")["Count"] == 1


def test_streams_under_region_isolation():
    with LiveServer(Context(settings=Settings(isolation="region"))) as live:
        east, west = client(live, region="us-east-1"), client(live, region="us-west-2")
        for ddb in (east, west):
            ddb.create_table(TableName="events", KeySchema=KEYS, AttributeDefinitions=DEFS, BillingMode="PAY_PER_REQUEST",
                             StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"})
        session = boto3.session.Session(aws_access_key_id="test", aws_secret_access_key="test", region_name="us-west-2")
        streams = session.client("dynamodbstreams", endpoint_url=live.url)
        listed = streams.list_streams()["Streams"]
        assert [(s["TableName"], s["StreamArn"].split(":")[3]) for s in listed] == [("events", "us-west-2")]
        assert streams.list_streams(TableName="events")["Streams"] == listed
        described = streams.describe_stream(StreamArn=listed[0]["StreamArn"])["StreamDescription"]
        assert described["TableName"] == "events"


def test_every_path_to_a_table_respects_isolation():
    with LiveServer(Context(settings=Settings(isolation="region"))) as live:
        east, west = client(live, region="us-east-1"), client(live, region="eu-west-1")
        _create(east, "paths")
        _create(west, "paths")
        east.execute_statement(Statement="INSERT INTO \"paths\" VALUE {'id': 'a'}")
        east.transact_write_items(TransactItems=[{"Put": {"TableName": "paths", "Item": {"id": {"S": "b"}}}}])
        east.batch_write_item(RequestItems={"paths": [{"PutRequest": {"Item": {"id": {"S": "c"}}}}]})
        assert east.scan(TableName="paths")["Count"] == 3
        assert west.execute_statement(Statement='SELECT * FROM "paths"')["Items"] == []
        assert west.batch_get_item(RequestItems={"paths": {"Keys": [{"id": {"S": "a"}}]}})["Responses"]["paths"] == []
        east.update_time_to_live(TableName="paths", TimeToLiveSpecification={"Enabled": True, "AttributeName": "ttl"})
        assert west.describe_time_to_live(TableName="paths")["TimeToLiveDescription"]["TimeToLiveStatus"] == "DISABLED"
        arn = east.describe_table(TableName="paths")["Table"]["TableArn"]
        east.tag_resource(ResourceArn=arn, Tags=[{"Key": "team", "Value": "east"}])
        with pytest.raises(ClientError):  # the east table's ARN names nothing in eu-west-1
            west.list_tags_of_resource(ResourceArn=arn)
