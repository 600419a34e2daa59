"""Fuzzing over HTTP: random and mutated bodies for every operation never get a 500, and rejected ones change nothing.

The server runs in process with a data directory, so after the fuzzing the test also
recovers that directory and compares the result with the live state. The number of
inputs tried is printed at the end of the run.
"""
from __future__ import annotations

import copy
import http.client
import json
import os
import shutil

import pytest
from conftest import LiveServer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dynalocal.config import Settings
from dynalocal.engine.context import Context
from dynalocal.engine.operations import HANDLERS, STREAMS_PREFIX
from dynalocal.http.durability import Durability
from dynalocal.journal.recovery import recover
from dynalocal.journal.tablemeta import encode_meta
from dynalocal.storage.database import Database

T = "DynamoDB_20120810."
ARN = "arn:aws:dynamodb:us-east-1:000000000000:table/fuzz-range"
# Deterministic by default (the same inputs every run); DYNALOCAL_FUZZ_RANDOM=1 explores new ones, and
# DYNALOCAL_FUZZ_SCALE multiplies the number of examples.
SCALE = float(os.environ.get("DYNALOCAL_FUZZ_SCALE", "1"))
EXAMPLES_PER_OPERATION = int(50 * SCALE)
RANDOM_BODIES = int(300 * SCALE)

RANGE_TABLE = {
    "TableName": "fuzz-range", "BillingMode": "PAY_PER_REQUEST",
    "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
    "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"},
                             {"AttributeName": "sk", "AttributeType": "N"},
                             {"AttributeName": "g", "AttributeType": "S"}],
    "GlobalSecondaryIndexes": [{"IndexName": "by-g", "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
                                "Projection": {"ProjectionType": "INCLUDE", "NonKeyAttributes": ["n"]}}],
    "LocalSecondaryIndexes": [{"IndexName": "by-g-local", "KeySchema": [
        {"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "g", "KeyType": "RANGE"}],
        "Projection": {"ProjectionType": "ALL"}}],
    "Tags": [{"Key": "team", "Value": "fuzz"}],
}
HASH_TABLE = {"TableName": "fuzz-hash", "BillingMode": "PROVISIONED",
              "ProvisionedThroughput": {"ReadCapacityUnits": 5, "WriteCapacityUnits": 5},
              "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}],
              "AttributeDefinitions": [{"AttributeName": "id", "AttributeType": "S"}]}
ITEMS = {
    "fuzz-range": [{"pk": {"S": f"p{i % 3}"}, "sk": {"N": str(i)}, "g": {"S": f"g{i % 2}"}, "n": {"N": str(i * 1.5)},
                    "l": {"L": [{"S": "x"}, {"N": "1"}, {"M": {"deep": {"BOOL": True}}}]}, "ss": {"SS": ["a", "b"]}}
                   for i in range(8)],
    "fuzz-hash": [{"id": {"S": f"i{i}"}, "v": {"B": "AAEC"}, "nul": {"NULL": True}} for i in range(4)],
}
KEY = {"pk": {"S": "p1"}, "sk": {"N": "1"}}
ITEM = {"pk": {"S": "p9"}, "sk": {"N": "9"}, "g": {"S": "g1"}, "n": {"N": "3"}, "m": {"M": {"a": {"NS": ["1", "2"]}}}}

TEMPLATES: dict[str, list[dict]] = {
    "CreateTable": [{**HASH_TABLE, "TableName": "fuzz-new"}, {**RANGE_TABLE, "TableName": "fuzz-new2"}],
    "DescribeTable": [{"TableName": "fuzz-range"}],
    "DeleteTable": [{"TableName": "fuzz-hash"}],
    "ListTables": [{"Limit": 1, "ExclusiveStartTableName": "fuzz-a"}],
    "UpdateTable": [
        {"TableName": "fuzz-hash", "ProvisionedThroughput": {"ReadCapacityUnits": 6, "WriteCapacityUnits": 7}},
        {"TableName": "fuzz-range", "AttributeDefinitions": [{"AttributeName": "n", "AttributeType": "N"}],
         "GlobalSecondaryIndexUpdates": [{"Create": {"IndexName": "by-n", "KeySchema": [
             {"AttributeName": "n", "KeyType": "HASH"}], "Projection": {"ProjectionType": "KEYS_ONLY"}}}]},
        {"TableName": "fuzz-range", "GlobalSecondaryIndexUpdates": [{"Delete": {"IndexName": "by-g"}}]}],
    "DescribeLimits": [{}],
    "DescribeEndpoints": [{}],
    "GetItem": [{"TableName": "fuzz-range", "Key": KEY, "ProjectionExpression": "#n, l[2].deep, ss",
                 "ExpressionAttributeNames": {"#n": "n"}, "ConsistentRead": True}],
    "PutItem": [{"TableName": "fuzz-range", "Item": ITEM, "ConditionExpression": "attribute_not_exists(pk)",
                 "ReturnValues": "ALL_OLD", "ReturnConsumedCapacity": "INDEXES"}],
    "DeleteItem": [{"TableName": "fuzz-range", "Key": KEY, "ConditionExpression": "n > :v",
                    "ExpressionAttributeValues": {":v": {"N": "0"}}, "ReturnValues": "ALL_OLD"}],
    "UpdateItem": [{"TableName": "fuzz-range", "Key": KEY,
                    "UpdateExpression": "SET n = n + :one, l[0] = :s, #new = if_not_exists(#new, :s) REMOVE l[1] "
                                        "ADD ss :set DELETE dset :del",
                    "ConditionExpression": "size(l) >= :one AND begins_with(g, :g)",
                    "ExpressionAttributeNames": {"#new": "new"},
                    "ExpressionAttributeValues": {":one": {"N": "1"}, ":s": {"S": "y"}, ":set": {"SS": ["c"]},
                                                  ":del": {"SS": ["a"]}, ":g": {"S": "g"}},
                    "ReturnValues": "UPDATED_NEW"},
                   {"TableName": "fuzz-hash", "Key": {"id": {"S": "i1"}},
                    "AttributeUpdates": {"v": {"Action": "PUT", "Value": {"S": "z"}}},
                    "Expected": {"id": {"Exists": True, "Value": {"S": "i1"}}}}],
    "Query": [{"TableName": "fuzz-range", "KeyConditionExpression": "pk = :p AND sk BETWEEN :a AND :b",
               "FilterExpression": "contains(ss, :s) OR attribute_type(n, :t)", "Limit": 2, "ScanIndexForward": False,
               "ExpressionAttributeValues": {":p": {"S": "p1"}, ":a": {"N": "0"}, ":b": {"N": "9"}, ":s": {"S": "a"},
                                             ":t": {"S": "N"}}, "ExclusiveStartKey": KEY},
              {"TableName": "fuzz-range", "IndexName": "by-g", "KeyConditionExpression": "g = :g",
               "ExpressionAttributeValues": {":g": {"S": "g1"}}, "Select": "COUNT"},
              {"TableName": "fuzz-range", "IndexName": "by-g-local", "KeyConditionExpression": "pk = :p AND g > :g",
               "ExpressionAttributeValues": {":p": {"S": "p1"}, ":g": {"S": "a"}},
               "ExclusiveStartKey": {"pk": {"S": "p1"}, "sk": {"N": "1"}, "g": {"S": "g1"}}},
              {"TableName": "fuzz-range", "KeyConditions": {"pk": {"ComparisonOperator": "EQ",
                                                                   "AttributeValueList": [{"S": "p0"}]}}}],
    "Scan": [{"TableName": "fuzz-range", "Segment": 1, "TotalSegments": 3, "FilterExpression": "n < :v",
              "ExpressionAttributeValues": {":v": {"N": "100"}}, "ProjectionExpression": "pk, sk"},
             {"TableName": "fuzz-hash", "ScanFilter": {"v": {"ComparisonOperator": "NOT_NULL"}}, "Limit": 1},
             {"TableName": "fuzz-range", "IndexName": "by-g", "Limit": 2,
              "ExclusiveStartKey": {"pk": {"S": "p1"}, "sk": {"N": "1"}, "g": {"S": "g1"}}}],
    "BatchGetItem": [{"RequestItems": {"fuzz-range": {"Keys": [KEY, {"pk": {"S": "p0"}, "sk": {"N": "0"}}],
                                                      "ProjectionExpression": "n"},
                                       "fuzz-hash": {"Keys": [{"id": {"S": "i0"}}], "ConsistentRead": True}}}],
    "BatchWriteItem": [{"RequestItems": {"fuzz-range": [{"PutRequest": {"Item": ITEM}},
                                                        {"DeleteRequest": {"Key": KEY}}],
                                         "fuzz-hash": [{"PutRequest": {"Item": {"id": {"S": "i9"}}}}]}}],
    "TransactWriteItems": [{"TransactItems": [
        {"Put": {"TableName": "fuzz-range", "Item": ITEM}},
        {"Update": {"TableName": "fuzz-hash", "Key": {"id": {"S": "i0"}}, "UpdateExpression": "SET c = :c",
                    "ExpressionAttributeValues": {":c": {"N": "1"}}}},
        {"Delete": {"TableName": "fuzz-range", "Key": KEY}},
        {"ConditionCheck": {"TableName": "fuzz-hash", "Key": {"id": {"S": "i1"}},
                            "ConditionExpression": "attribute_exists(id)"}}], "ClientRequestToken": "tok"}],
    "TransactGetItems": [{"TransactItems": [{"Get": {"TableName": "fuzz-range", "Key": KEY}},
                                            {"Get": {"TableName": "fuzz-hash", "Key": {"id": {"S": "i0"}}}}]}],
    "TagResource": [{"ResourceArn": ARN, "Tags": [{"Key": "k", "Value": "v"}]}],
    "UntagResource": [{"ResourceArn": ARN, "TagKeys": ["team"]}],
    "ListTagsOfResource": [{"ResourceArn": ARN}],
    "UpdateTimeToLive": [{"TableName": "fuzz-range",
                          "TimeToLiveSpecification": {"Enabled": True, "AttributeName": "n"}}],
    "DescribeTimeToLive": [{"TableName": "fuzz-range"}],
    "DescribeContinuousBackups": [{"TableName": "fuzz-range"}],
    "UpdateContinuousBackups": [{"TableName": "fuzz-range",
                                 "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True}}],
    "DescribeContributorInsights": [{"TableName": "fuzz-range", "IndexName": "by-g"}],
    "UpdateContributorInsights": [{"TableName": "fuzz-range", "ContributorInsightsAction": "ENABLE"}],
    "ListContributorInsights": [{"TableName": "fuzz-range", "MaxResults": 5}],
    "DescribeKinesisStreamingDestination": [{"TableName": "fuzz-range"}],
    "ExecuteStatement": [{"Statement": 'SELECT * FROM "fuzz-range" WHERE pk = ? AND sk = ?',
                          "Parameters": [{"S": "p1"}, {"N": "1"}]},
                         {"Statement": 'UPDATE "fuzz-hash" SET v = ? WHERE id = ?', "Parameters": [{"S": "z"}, {"S": "i1"}]}],
    "BatchExecuteStatement": [{"Statements": [{"Statement": 'SELECT * FROM "fuzz-hash" WHERE id = ?',
                                               "Parameters": [{"S": "i0"}]}]}],
    "ExecuteTransaction": [{"TransactStatements": [{"Statement": 'DELETE FROM "fuzz-range" WHERE pk = ? AND sk = ?',
                                                    "Parameters": [{"S": "p1"}, {"N": "1"}]}]}],
}
FALLBACK = [{"TableName": "fuzz-range", "Key": KEY, "Item": ITEM}]  # for operations added after this test

# -- strategies -----------------------------------------------------------------------------------

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
    st.sampled_from(["", "fuzz-range", "fuzz-hash", "pk", "sk", "#n", ":v", "p1", "1", "-0", "1e400", "NaN",
                     "AAEC", "!!notbase64", "a.b[3]", "SET a = :v", "attribute_exists(pk)", "pk = :v",
                     "ALL_OLD", "PROVISIONED", "PAY_PER_REQUEST", "HASH", "RANGE", "S", "N", "B", "x" * 5000]),
)
attribute_values = st.recursive(
    st.one_of(st.builds(lambda s: {"S": s}, st.text(max_size=10)),
              st.builds(lambda n: {"N": n}, st.sampled_from(["1", "-1.5", "1e130", "0.0000", "abc", "", "1" * 40])),
              st.builds(lambda b: {"B": b}, st.sampled_from(["", "AAEC", "====", "x"])),
              st.builds(lambda v: {"BOOL": v}, scalars), st.just({"NULL": True}), st.just({"NULL": False}),
              st.builds(lambda v: {"SS": v}, st.lists(st.text(max_size=3), max_size=3)),
              st.builds(lambda v: {"NS": v}, st.lists(st.sampled_from(["1", "2", "1.0", "x"]), max_size=3)),
              st.just({}), st.just({"S": "a", "N": "1"})),
    lambda inner: st.builds(lambda v: {"L": v}, st.lists(inner, max_size=3))
    | st.builds(lambda v: {"M": v}, st.dictionaries(st.sampled_from(["a", "b", "pk", ""]), inner, max_size=3)),
    max_leaves=8)
json_values = st.recursive(scalars | attribute_values,
                           lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
                               st.text(max_size=12) | st.sampled_from(["TableName", "Key", "Item", "S", "M"]),
                               inner, max_size=4),
                           max_leaves=12).map(copy.deepcopy)  # st.just() values are shared: never mutate them


def paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for key, value in node.items():
            yield from paths(value, prefix + (key,))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from paths(value, prefix + (i,))


def at(node, path):
    for step in path:
        node = node[step]
    return node


@st.composite
def mutated(draw, templates: list[dict]):
    """A valid request with one to three random mutations anywhere in it."""
    body = copy.deepcopy(draw(st.sampled_from(templates)))
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(list(paths(body))))
        action = draw(st.sampled_from(["replace", "replace", "delete", "insert", "grow", "retype"]))
        if not path:
            if action in ("replace", "retype"):
                body = draw(json_values)
            continue
        parent, last = at(body, path[:-1]), path[-1]
        if action == "replace":
            parent[last] = draw(json_values)
        elif action == "delete":
            del parent[last]
        elif action == "insert" and isinstance(parent[last], dict):
            parent[last][draw(st.text(max_size=8) | st.sampled_from(["S", "N", "M", "L", "Key"]))] = draw(json_values)
        elif action == "insert" and isinstance(parent[last], list):
            parent[last].insert(draw(st.integers(0, len(parent[last]))), draw(json_values))
        elif action == "grow":
            value = parent[last]
            count = draw(st.sampled_from([2, 30, 101, 1000]))
            if isinstance(value, (str, list)):  # stay within a few hundred KB however often it grows
                parent[last] = value * min(count, max(1, 100_000 // max(1, len(json.dumps(value)))))
            else:
                parent[last] = [value] * count
        elif action == "retype":
            value = parent[last]
            parent[last] = (json.dumps(value) if not isinstance(value, str) else
                            draw(st.sampled_from([[value], {"S": value}, len(value), None, True])))
    return body


# -- the server and its state ------------------------------------------------------------------

class Fuzzer:
    """An in-process server with a data directory, a keep-alive connection, and the baseline state."""

    def __init__(self, live: LiveServer, directory) -> None:
        self.live, self.directory = live, directory
        self.conn = http.client.HTTPConnection("127.0.0.1", live.port, timeout=30)
        self.tried = 0
        self.statuses: dict[int, int] = {}
        self.restore()
        self.baseline = self.state()

    def send(self, operation: str | None, raw: bytes, content_type: str = "application/x-amz-json-1.0",
             prefix: str = T):
        headers = {"Content-Type": content_type,  # signed, as every SDK request is (--auth relaxed checks the form)
                   "Authorization": "AWS4-HMAC-SHA256 Credential=fuzz/20250101/us-east-1/dynamodb/aws4_request, "
                                    "SignedHeaders=host, Signature=00"}
        if operation is not None:
            headers["X-Amz-Target"] = prefix + operation
        try:
            self.conn.request("POST", "/", raw, headers)
            response = self.conn.getresponse()
            return response.status, response.read()
        except (http.client.HTTPException, OSError):
            self.conn.close()  # e.g. the server closed after a 413; reconnect once
            self.conn = http.client.HTTPConnection("127.0.0.1", self.live.port, timeout=30)
            self.conn.request("POST", "/", raw, headers)
            response = self.conn.getresponse()
            return response.status, response.read()

    def state(self) -> dict:
        """Metadata, items and index entries of every table, read from the server's own memory."""
        out = {}
        for name, entry in sorted(self.live.ctx.db.tables.items()):
            indexes = {i: [(k, p.get(k)) for p, k in index.scan_keys()]
                       for i, index in sorted(entry.table.indexes.items())}
            out[name] = (encode_meta(entry), [(k, p.get(k)) for p, k in entry.table.scan_keys()], indexes)
        return out

    def restore(self) -> None:
        """Back to the two fixture tables with their items (through the API, so it is journaled too)."""
        assert self.live.raw(None, b"", path="/_dynalocal/reset")[0] == 200
        for body in (RANGE_TABLE, HASH_TABLE):
            assert self.send("CreateTable", json.dumps(body).encode())[0] == 200
        for table, items in ITEMS.items():
            body = {"RequestItems": {table: [{"PutRequest": {"Item": item}} for item in items]}}
            assert self.send("BatchWriteItem", json.dumps(body).encode())[0] == 200

    def check(self, operation: str | None, raw: bytes, content_type: str = "application/x-amz-json-1.0",
              prefix: str = T) -> None:
        """Send one input: no 500, a DynamoDB-shaped error or a JSON answer, nothing changed if rejected."""
        before = self.state()
        status, body = self.send(operation, raw, content_type, prefix)
        self.tried += 1
        self.statuses[status] = self.statuses.get(status, 0) + 1
        assert status < 500, (operation, raw[:500], body[:500])
        if status == 200:
            assert body == b"" or isinstance(json.loads(body), dict)
        elif status == 400:
            assert "__type" in json.loads(body), body
        else:  # 404 for a wrong content type, 413 for an oversized body: no DynamoDB shape, by DynamoDB's design
            assert status in (404, 413), (status, body[:300])
        after = self.state()
        if status != 200:
            assert after == before, f"rejected {operation} changed the stored data: {raw[:500]!r}"
        elif after != self.baseline:
            self.restore()


@pytest.fixture(scope="module")
def fuzzer(tmp_path_factory):
    directory = tmp_path_factory.mktemp("fuzz-data")
    ctx = Context(settings=Settings(data_dir=str(directory), sync="none", throttling="off", ttl_interval=10**6))
    Durability.open(ctx)
    with LiveServer(ctx) as live:
        yield Fuzzer(live, directory)


FUZZ = settings(max_examples=EXAMPLES_PER_OPERATION, deadline=None, database=None,
                derandomize=os.environ.get("DYNALOCAL_FUZZ_RANDOM") != "1",
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])


@pytest.mark.parametrize("operation", sorted(HANDLERS))
def test_mutated_requests_never_fail_the_server(fuzzer, operation):
    @FUZZ
    @given(body=mutated(TEMPLATES.get(operation, FALLBACK)))
    def run(body):
        fuzzer.check(operation, json.dumps(body).encode())

    run()


@pytest.mark.parametrize("operation", sorted(TEMPLATES))
def test_templates_are_valid_requests(fuzzer, operation):
    """The mutations start from requests the server accepts (else the fuzzing would test little)."""
    for template in TEMPLATES[operation]:
        status, body = fuzzer.send(operation, json.dumps(template).encode())
        assert status == 200, body
        fuzzer.restore()


@FUZZ
@given(operation=st.sampled_from(sorted(HANDLERS)), body=json_values)
def test_random_json_bodies(fuzzer, operation, body):
    fuzzer.check(operation, json.dumps(body).encode())


@settings(FUZZ, max_examples=RANDOM_BODIES)
@given(operation=st.sampled_from(sorted(HANDLERS) + ["NoSuchOperation", None]),
       raw=st.binary(max_size=200) | st.sampled_from([b"{", b"[]", b"null", b'{"TableName":', b"\xff\xfe{}",
                                                      b"{}" * 3]),
       content_type=st.sampled_from(["application/x-amz-json-1.0", "application/json", "text/plain"]))
def test_random_bytes_and_headers(fuzzer, operation, raw, content_type):
    fuzzer.check(operation, raw, content_type)


OVERSIZED = ["k" * 2049, "é" * 1025, "r" * 1025, "z" * 70_000]  # past 2048 B, 1024 B, and the 16-bit key length


def string_values(node, path=()):
    """Paths of every string attribute value ({"S": ...}) in a request: keys, items, operands."""
    if isinstance(node, dict):
        if set(node) == {"S"} and isinstance(node["S"], str):
            yield path + ("S",)
        for k, v in node.items():
            yield from string_values(v, path + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from string_values(v, path + (i,))


@pytest.mark.parametrize("operation", sorted(TEMPLATES))
def test_oversized_key_values_in_every_operation(fuzzer, operation):
    """Every string value of every template, in turn, made oversized: a DynamoDB-shaped answer,
    and nothing stored or cached for a refused one."""
    for template in TEMPLATES[operation]:
        for path in string_values(template):
            for value in OVERSIZED:
                body = copy.deepcopy(template)
                at(body, path[:-1])[path[-1]] = value
                fuzzer.check(operation, json.dumps(body).encode())
    for entry in fuzzer.live.ctx.db.tables.values():
        for schema in [entry.table.schema] + [i.schema for i in entry.table.indexes.values()]:
            assert not any(len(v) > 2048 for v in schema._prefixes), "an oversized key value was cached"


def test_recovering_the_data_directory_reproduces_the_live_state(fuzzer, tmp_path, figure):
    """Everything the fuzzing did (and undid) was journaled: recovery gives back exactly the live state."""
    figure(f"fuzz: {fuzzer.tried} inputs tried, answers by status {dict(sorted(fuzzer.statuses.items()))}")
    assert fuzzer.tried >= len(HANDLERS) * EXAMPLES_PER_OPERATION // 2
    copy_dir = tmp_path / "copy"
    shutil.copytree(fuzzer.directory, copy_dir)
    db = Database()
    recover(copy_dir, db)
    live = fuzzer.live.ctx.db
    assert sorted(db.tables) == sorted(live.tables)
    for name, entry in live.tables.items():
        restored = db.tables[name]
        assert encode_meta(restored) == encode_meta(entry)
        assert [(k, p.get(k)) for p, k in restored.table.scan_keys()] == \
            [(k, p.get(k)) for p, k in entry.table.scan_keys()]
        for index_name, index in entry.table.indexes.items():
            assert [(k, p.get(k)) for p, k in restored.table.indexes[index_name].scan_keys()] == \
                [(k, p.get(k)) for p, k in index.scan_keys()]


# -- PartiQL statements (issue 28) ------------------------------------------------------------------

PARTIQL_EXAMPLES = int(40 * SCALE)
PARTIQL_TOKENS = ["SELECT", "*", "FROM", '"fuzz-range"', '"fuzz-hash"', '"fuzz-range"."by-g"', "WHERE", "pk", "sk",
                  "n", "l[0]", "m.a", "=", "<>", "<", ">=", "?", "'p1'", "'i1'", "1", "-1", "1e400", "AND", "OR",
                  "NOT", "(", ")", "[", "]", "{", "}", "<<", ">>", ",", ":", "'k'", "IN", "BETWEEN", "IS", "MISSING",
                  "NULL", "TRUE", "UPDATE", "SET", "REMOVE", "INSERT", "INTO", "VALUE", "DELETE", "RETURNING", "ALL",
                  "OLD", "NEW", "MODIFIED", "size", "list_append", "if_not_exists", "set_add", "begins_with",
                  "contains", "attribute_type", ".", "+", "-", "`ion`", '"', "'", "EXISTS", "ORDER", "BY", "DESC",
                  "LIMIT", ";", "''", "\u00e9", "\x00"]
PARTIQL_BASES = [template["Statement"] for template in TEMPLATES["ExecuteStatement"]] + [
    "INSERT INTO \"fuzz-hash\" VALUE {'id': 'i7', 'v': [1, {'a': <<'x'>>}]}",
    "UPDATE \"fuzz-range\" SET n = n + 1, l = list_append(l, [2]) REMOVE m.a WHERE pk = 'p1' AND sk = 1 "
    "RETURNING ALL NEW *",
    "DELETE FROM \"fuzz-hash\" WHERE id = 'i2' RETURNING ALL OLD *",
    "SELECT pk, l[0] FROM \"fuzz-range\" WHERE pk IN ['p0', 'p1'] AND NOT (n BETWEEN 1 AND 3) ORDER BY sk DESC",
    "EXISTS(SELECT * FROM \"fuzz-hash\" WHERE id = 'i1')"]
# Where a statement can nest: (text before, one level open, innermost, one level close, text after).
PARTIQL_NESTINGS = [
    ('SELECT * FROM "fuzz-range" WHERE ', "(", "pk = 'p1'", ")", ""),
    ('SELECT * FROM "fuzz-range" WHERE ', "NOT ", "pk = 'p1'", "", ""),
    ('SELECT * FROM "fuzz-range" WHERE pk = \'p1\' AND l = ', "[", "1", "]", ""),
    ('SELECT * FROM "fuzz-range" WHERE n IN [', "{'a': ", "1", "}", "]"),
    ('UPDATE "fuzz-hash" SET v = ', "<<", "1", ">>", " WHERE id = 'i1'"),
    ('UPDATE "fuzz-hash" SET v = ', "list_append(", "v", ", [1])", " WHERE id = 'i1'"),
    ('UPDATE "fuzz-hash" SET v = ', "if_not_exists(v, ", "?", ")", " WHERE id = 'i1'"),
    ("INSERT INTO \"fuzz-hash\" VALUE {'id': 'i8', 'v': ", "[", "?", "]", "}"),
]


@st.composite
def partiql_statements(draw) -> str:
    """Token soup, a valid statement with tokens inserted, or one nested to a depth around the limits."""
    kind = draw(st.sampled_from(["soup", "mutated", "nested", "nested"]))
    if kind == "soup":
        return " ".join(draw(st.lists(st.sampled_from(PARTIQL_TOKENS), max_size=30)))
    if kind == "mutated":
        words = draw(st.sampled_from(PARTIQL_BASES)).split(" ")
        for _ in range(draw(st.integers(1, 3))):
            at_ = draw(st.integers(0, len(words)))
            words[at_:at_ + draw(st.integers(0, 1))] = [draw(st.sampled_from(PARTIQL_TOKENS))]
        return " ".join(words)
    before, opener, inner, closer, after = draw(st.sampled_from(PARTIQL_NESTINGS))
    depth = draw(st.sampled_from([1, 31, 33, 99, 100, 101, 326, 490, 976, 3000]))
    closing = closer * depth if draw(st.integers(0, 9)) else closer * (depth - 1)  # sometimes unbalanced
    return before + opener * depth + inner + closing + after


def partiql_member(statement: str, parameters: list) -> dict:
    return {"Statement": statement, **({"Parameters": parameters} if parameters else {})}


@settings(FUZZ, max_examples=PARTIQL_EXAMPLES)
@given(operation=st.sampled_from(["ExecuteStatement", "BatchExecuteStatement", "ExecuteTransaction"]),
       statements=st.lists(partiql_statements(), min_size=1, max_size=3),
       parameters=st.lists(attribute_values, max_size=2))
def test_partiql_statements_never_fail_the_server(fuzzer, operation, statements, parameters):
    """Random, mutated and deeply nested statements on every PartiQL operation: 4xx or 200, never 5xx."""
    members = [partiql_member(statement, parameters) for statement in statements]
    body = members[0] if operation == "ExecuteStatement" else \
        {"Statements": members} if operation == "BatchExecuteStatement" else {"TransactStatements": members}
    fuzzer.check(operation, json.dumps(body).encode())


# -- Streams parameters (issue 28) ------------------------------------------------------------------

STREAM_TABLE = {**HASH_TABLE, "TableName": "fuzz-stream",
                "StreamSpecification": {"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"}}
sequence_numbers = st.one_of(
    st.integers(0, 10**45).map(str), st.integers(0, 10**45).map(lambda n: f"{n:021d}"),
    st.text(alphabet="0123456789\u0661\u00b2-+ .e", max_size=45), st.sampled_from(["9" * 40, "1" * 21, "0" * 21]))


def streams_send(fuzzer: Fuzzer, operation: str, body: dict) -> dict:
    status, answer = fuzzer.send(operation, json.dumps(body).encode(), prefix=STREAMS_PREFIX)
    assert status == 200, answer
    return json.loads(answer)


@pytest.fixture
def stream_templates(fuzzer):
    """A stream-enabled table with records, and valid requests of every Streams operation on it; the
    fuzzer's baseline includes the table while the test runs and is restored after."""
    assert fuzzer.send("CreateTable", json.dumps(STREAM_TABLE).encode())[0] == 200
    for i in range(3):
        item = {"TableName": "fuzz-stream", "Item": {"id": {"S": f"s{i}"}}}
        assert fuzzer.send("PutItem", json.dumps(item).encode())[0] == 200
    arn = streams_send(fuzzer, "ListStreams", {"TableName": "fuzz-stream"})["Streams"][0]["StreamArn"]
    shard = streams_send(fuzzer, "DescribeStream", {"StreamArn": arn})["StreamDescription"]["Shards"][0]["ShardId"]
    iterator = streams_send(fuzzer, "GetShardIterator", {"StreamArn": arn, "ShardId": shard,
                                                         "ShardIteratorType": "TRIM_HORIZON"})["ShardIterator"]
    seq = streams_send(fuzzer, "GetRecords", {"ShardIterator": iterator})["Records"][0]["dynamodb"]["SequenceNumber"]
    fuzzer.baseline = fuzzer.state()
    yield {
        "ListStreams": [{"TableName": "fuzz-stream", "Limit": 2}, {"ExclusiveStartStreamArn": arn, "Limit": 1}],
        "DescribeStream": [{"StreamArn": arn, "Limit": 1, "ExclusiveStartShardId": shard},
                           {"StreamArn": arn, "ShardFilter": {"Type": "CHILD_SHARDS", "ShardId": shard}}],
        "GetShardIterator": [{"StreamArn": arn, "ShardId": shard, "ShardIteratorType": kind, "SequenceNumber": seq}
                             for kind in ("AT_SEQUENCE_NUMBER", "AFTER_SEQUENCE_NUMBER")]
                            + [{"StreamArn": arn, "ShardId": shard, "ShardIteratorType": "LATEST"}],
        "GetRecords": [{"ShardIterator": iterator, "Limit": 2}],
    }
    fuzzer.restore()
    fuzzer.baseline = fuzzer.state()


@pytest.mark.parametrize("operation", ["ListStreams", "DescribeStream", "GetShardIterator", "GetRecords"])
def test_streams_parameters_never_fail_the_server(fuzzer, stream_templates, operation):
    """Mutated Streams requests: 4xx or 200, never 5xx."""
    templates = stream_templates[operation]
    assert all(fuzzer.send(operation, json.dumps(t).encode(), prefix=STREAMS_PREFIX)[0] == 200 for t in templates)

    @settings(FUZZ, max_examples=PARTIQL_EXAMPLES)
    @given(body=mutated(templates))
    def run(body):
        fuzzer.check(operation, json.dumps(body).encode(), prefix=STREAMS_PREFIX)

    run()


def test_sequence_numbers_never_fail_the_server(fuzzer, stream_templates):
    """Every shape of sequence number on GetShardIterator (digits of any length and script, signs, 40 nines)."""
    @settings(FUZZ, max_examples=PARTIQL_EXAMPLES)
    @given(template=st.sampled_from(stream_templates["GetShardIterator"][:2]), sequence=sequence_numbers)
    def run(template, sequence):
        fuzzer.check("GetShardIterator", json.dumps({**template, "SequenceNumber": sequence}).encode(),
                     prefix=STREAMS_PREFIX)

    run()
