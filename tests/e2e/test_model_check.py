"""Model checking: random operations on a small key space, every answer checked against a model.

Single-item, batch, transactional and PartiQL operations, from three connections (boto3 clients)
taking turns, on a table with a GSI, with forced re-partitions (a heat split asked for between
requests) among them. The model is a dict of items; each answer (items returned, condition
failures, cancellations) must be exactly what DynamoDB's rules give on the model. Bounded:
a few dozen short runs.
"""
from __future__ import annotations

import itertools

import pytest
from botocore.exceptions import ClientError
from conftest import LiveServer
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

PKS = ("a", "b", "c")
SKS = (0, 1, 2)
KEYS = [(p, s) for p in PKS for s in SKS]
GS = ("x", "y")
_names = itertools.count()

keys = st.sampled_from(KEYS)
clients = st.integers(0, 2)
values = st.integers(0, 9)
gvals = st.sampled_from(GS + (None,))


@pytest.fixture(scope="module")
def live():
    with LiveServer() as server:
        yield server


def _key(k) -> dict:
    return {"pk": {"S": k[0]}, "sk": {"N": str(k[1])}}


def _item(k, v: int, g: str | None) -> dict:
    item = {**_key(k), "v": {"N": str(v)}}
    if g is not None:
        item["g"] = {"S": g}
    return item


def _code(err: ClientError) -> str:
    return err.response["Error"]["Code"]


class TableModel(RuleBasedStateMachine):
    live: LiveServer
    ddb: list

    @initialize()
    def create(self):
        self.name = f"model-{next(_names)}"
        self.model: dict[tuple, dict] = {}
        self.ddb[0].create_table(
            TableName=self.name, BillingMode="PAY_PER_REQUEST",
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
            AttributeDefinitions=[{"AttributeName": n, "AttributeType": t} for n, t in
                                  (("pk", "S"), ("sk", "N"), ("g", "S"))],
            GlobalSecondaryIndexes=[{"IndexName": "by-g", "Projection": {"ProjectionType": "ALL"},
                                     "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}]}])

    # -- single-item operations ------------------------------------------------------------

    @rule(c=clients, k=keys, v=values, g=gvals, cond=st.sampled_from([None, "attribute_exists(pk)",
                                                                        "attribute_not_exists(pk)"]))
    def put(self, c, k, v, g, cond):
        args = {"TableName": self.name, "Item": _item(k, v, g), "ReturnValues": "ALL_OLD"}
        if cond:
            args["ConditionExpression"] = cond
        allowed = cond is None or (cond == "attribute_exists(pk)") == (k in self.model)
        try:
            out = self.ddb[c].put_item(**args)
        except ClientError as err:
            assert not allowed and _code(err) == "ConditionalCheckFailedException"
            return
        assert allowed
        assert out.get("Attributes") == self.model.get(k)
        self.model[k] = _item(k, v, g)

    @rule(c=clients, k=keys, n=values)
    def add(self, c, k, n):
        out = self.ddb[c].update_item(TableName=self.name, Key=_key(k), UpdateExpression="ADD v :n",
                                      ExpressionAttributeValues={":n": {"N": str(n)}}, ReturnValues="ALL_NEW")
        old = self.model.get(k)
        new = dict(old) if old else _key(k)
        new["v"] = {"N": str(int(old["v"]["N"]) + n if old and "v" in old else n)}
        assert out["Attributes"] == new
        self.model[k] = new

    @rule(c=clients, k=keys)
    def increment_existing(self, c, k):
        try:
            self.ddb[c].update_item(TableName=self.name, Key=_key(k), UpdateExpression="SET v = v + :one",
                                    ExpressionAttributeValues={":one": {"N": "1"}})
        except ClientError as err:
            assert k not in self.model and _code(err) == "ValidationException"
            return
        assert k in self.model
        self.model[k]["v"] = {"N": str(int(self.model[k]["v"]["N"]) + 1)}

    @rule(c=clients, k=keys, conditional=st.booleans())
    def delete(self, c, k, conditional):
        args = {"TableName": self.name, "Key": _key(k), "ReturnValues": "ALL_OLD"}
        if conditional:
            args["ConditionExpression"] = "attribute_exists(pk)"
        try:
            out = self.ddb[c].delete_item(**args)
        except ClientError as err:
            assert conditional and k not in self.model and _code(err) == "ConditionalCheckFailedException"
            return
        assert out.get("Attributes") == self.model.pop(k, None)

    @rule(c=clients, k=keys)
    def get(self, c, k):
        out = self.ddb[c].get_item(TableName=self.name, Key=_key(k), ConsistentRead=True)
        assert out.get("Item") == self.model.get(k)

    # -- batches ---------------------------------------------------------------------------

    @rule(c=clients, ks=st.lists(keys, min_size=1, max_size=6, unique=True), v=values,
          deletes=st.lists(st.booleans(), min_size=6, max_size=6))
    def batch_write(self, c, ks, v, deletes):
        requests = []
        for k, delete in zip(ks, deletes):
            requests.append({"DeleteRequest": {"Key": _key(k)}} if delete else {"PutRequest": {"Item": _item(k, v, "x")}})
        out = self.ddb[c].batch_write_item(RequestItems={self.name: requests})
        assert out["UnprocessedItems"] == {}
        for k, delete in zip(ks, deletes):
            if delete:
                self.model.pop(k, None)
            else:
                self.model[k] = _item(k, v, "x")

    @rule(c=clients, ks=st.lists(keys, min_size=1, max_size=9, unique=True))
    def batch_get(self, c, ks):
        out = self.ddb[c].batch_get_item(RequestItems={self.name: {"Keys": [_key(k) for k in ks],
                                                                   "ConsistentRead": True}})
        assert out["UnprocessedKeys"] == {}
        got = sorted(out["Responses"][self.name], key=lambda i: (i["pk"]["S"], i["sk"]["N"]))
        assert got == [self.model[k] for k in sorted(ks) if k in self.model]

    # -- transactions ----------------------------------------------------------------------

    @rule(c=clients, ks=st.lists(keys, min_size=1, max_size=4, unique=True), v=values,
          kinds=st.lists(st.sampled_from(["put_new", "update_existing", "delete", "check_exists"]),
                         min_size=4, max_size=4))
    def transact_write(self, c, ks, v, kinds):
        items, ok = [], True
        for k, kind in zip(ks, kinds):
            if kind == "put_new":
                items.append({"Put": {"TableName": self.name, "Item": _item(k, v, "y"),
                                      "ConditionExpression": "attribute_not_exists(pk)"}})
                ok &= k not in self.model
            elif kind == "update_existing":
                items.append({"Update": {"TableName": self.name, "Key": _key(k), "UpdateExpression": "SET v = :v",
                                         "ConditionExpression": "attribute_exists(pk)",
                                         "ExpressionAttributeValues": {":v": {"N": str(v)}}}})
                ok &= k in self.model
            elif kind == "delete":
                items.append({"Delete": {"TableName": self.name, "Key": _key(k)}})
            else:
                items.append({"ConditionCheck": {"TableName": self.name, "Key": _key(k),
                                                 "ConditionExpression": "attribute_exists(pk)"}})
                ok &= k in self.model
        try:
            self.ddb[c].transact_write_items(TransactItems=items)
        except ClientError as err:
            assert not ok and _code(err) == "TransactionCanceledException"
            return
        assert ok
        for k, kind in zip(ks, kinds):
            if kind == "put_new":
                self.model[k] = _item(k, v, "y")
            elif kind == "update_existing":
                self.model[k]["v"] = {"N": str(v)}
            elif kind == "delete":
                self.model.pop(k, None)

    @rule(c=clients, ks=st.lists(keys, min_size=1, max_size=5, unique=True))
    def transact_get(self, c, ks):
        out = self.ddb[c].transact_get_items(TransactItems=[{"Get": {"TableName": self.name, "Key": _key(k)}}
                                                            for k in ks])
        assert [r.get("Item") for r in out["Responses"]] == [self.model.get(k) for k in ks]

    # -- PartiQL ---------------------------------------------------------------------------

    @rule(c=clients, k=keys, v=values)
    def partiql_insert(self, c, k, v):
        stmt = f"INSERT INTO \"{self.name}\" VALUE {{'pk': '{k[0]}', 'sk': {k[1]}, 'v': {v}}}"
        try:
            self.ddb[c].execute_statement(Statement=stmt)
        except ClientError as err:
            assert k in self.model and _code(err) == "DuplicateItemException"
            return
        assert k not in self.model
        self.model[k] = {**_key(k), "v": {"N": str(v)}}

    @rule(c=clients, k=keys, v=values)
    def partiql_update(self, c, k, v):
        stmt = f"UPDATE \"{self.name}\" SET v = {v} WHERE pk = '{k[0]}' AND sk = {k[1]}"
        try:
            self.ddb[c].execute_statement(Statement=stmt)
        except ClientError as err:  # an UPDATE of a missing item fails its implicit condition
            assert k not in self.model and _code(err) == "ConditionalCheckFailedException"
            return
        assert k in self.model
        self.model[k]["v"] = {"N": str(v)}

    @rule(c=clients, k=keys)
    def partiql_delete(self, c, k):
        self.ddb[c].execute_statement(Statement=f"DELETE FROM \"{self.name}\" WHERE pk = '{k[0]}' AND sk = {k[1]}")
        self.model.pop(k, None)

    @rule(c=clients, p=st.sampled_from(PKS))
    def partiql_select(self, c, p):
        out = self.ddb[c].execute_statement(Statement=f"SELECT * FROM \"{self.name}\" WHERE pk = '{p}'",
                                            ConsistentRead=True)
        assert out["Items"] == [self.model[k] for k in sorted(self.model) if k[0] == p]

    # -- reads of many items ---------------------------------------------------------------

    @rule(c=clients, p=st.sampled_from(PKS), forward=st.booleans())
    def query(self, c, p, forward):
        out = self.ddb[c].query(TableName=self.name, KeyConditionExpression="pk = :p", ConsistentRead=True,
                                ExpressionAttributeValues={":p": {"S": p}}, ScanIndexForward=forward)
        expected = [self.model[k] for k in sorted(self.model) if k[0] == p]
        assert out["Items"] == (expected if forward else expected[::-1])

    @rule(c=clients, g=st.sampled_from(GS))
    def query_index(self, c, g):
        out = self.ddb[c].query(TableName=self.name, IndexName="by-g", KeyConditionExpression="g = :g",
                                ExpressionAttributeValues={":g": {"S": g}})
        assert sorted(out["Items"], key=lambda i: (i["pk"]["S"], i["sk"]["N"])) == \
            [self.model[k] for k in sorted(self.model) if self.model[k].get("g") == {"S": g}]

    @rule(c=clients, limit=st.integers(1, 4))
    def scan_in_pages(self, c, limit):
        items, start = [], None
        while True:
            args = {"TableName": self.name, "Limit": limit, "ConsistentRead": True}
            if start:
                args["ExclusiveStartKey"] = start
            out = self.ddb[c].scan(**args)
            items += out["Items"]
            start = out.get("LastEvaluatedKey")
            if not start:
                break
        assert sorted(items, key=lambda i: (i["pk"]["S"], i["sk"]["N"])) == [self.model[k] for k in sorted(self.model)]

    # -- the periodic event ----------------------------------------------------------------

    @rule()
    def split(self):
        """Ask for twice the partitions, as a heat split does; applied before the next request."""
        ctx = self.live.ctx
        entry = ctx.db.tables[self.name]
        tm = ctx.capacity.meters(entry)
        for m in (tm.table, *tm.gsis.values()):
            if len(m.parts) < 64:
                m.split_floor = 2 * len(m.parts)
                m._ask_layout()

    @invariant()
    def item_count(self):
        if hasattr(self, "model"):
            assert self.live.ctx.db.tables[self.name].table.item_count == len(self.model)


def test_random_operations_match_the_model(live):
    TableModel.live = live
    TableModel.ddb = [live.client() for _ in range(3)]
    run = TableModel.TestCase
    run.settings = settings(max_examples=40, stateful_step_count=30, deadline=None, database=None,
                            suppress_health_check=list(HealthCheck))
    run().runTest()
