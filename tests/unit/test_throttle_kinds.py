"""The classification of throttle causes into key-design and capacity-setting, and what each mode refuses."""
from __future__ import annotations

import orjson

from dynalocal.capacity import causes
from dynalocal.capacity.modes import CAPACITY_SETTING, KEY_DESIGN, KIND, MODES, refused, table_mode
from dynalocal.config import Settings
from dynalocal.engine.context import Context
from dynalocal.engine.dispatch import dispatch
from conftest import FakeClock

CAUSES = [value for name, value in vars(causes).items()
          if name.isupper() and isinstance(value, str) and name not in ("DIRECTIONS",) and value.islower()
          and "_" in value]


def test_every_cause_has_one_kind():
    assert set(CAUSES) == set(KIND), "a cause without a kind, or a kind for no cause"
    assert {c for c, k in KIND.items() if k == KEY_DESIGN} == {causes.KEY_RANGE, causes.PARTITION_SHARE}
    assert all(k in (KEY_DESIGN, CAPACITY_SETTING) for k in KIND.values())


def test_what_each_mode_refuses():
    assert [m for m in MODES if refused(m, causes.KEY_RANGE)] == ["keys", "enforce"]
    assert [m for m in MODES if refused(m, causes.TABLE_RATE)] == ["enforce"]
    assert [m for m in MODES if refused(m, causes.ON_DEMAND_MAX)] == ["enforce"]
    assert [m for m in MODES if refused(m, causes.PARTITION_SHARE)] == ["keys", "enforce"]


def test_the_table_tag_sets_the_mode_unless_the_server_is_off():
    tag = "dynalocal:throttling"
    assert table_mode({}, "keys") == "keys"
    assert table_mode({tag: "enforce"}, "keys") == "enforce"
    assert table_mode({tag: "nonsense"}, "report") == "report"
    assert table_mode({tag: "enforce"}, "off") == "off"


def test_the_classic_model_enforces_its_partition_shares_in_keys_mode():
    ctx = Context(settings=Settings(burst_seconds=1), clock=FakeClock())
    assert ctx.settings.throttling == "keys"
    body = {"TableName": "classic", "KeySchema": [{"AttributeName": "p", "KeyType": "HASH"}],
            "AttributeDefinitions": [{"AttributeName": "p", "AttributeType": "S"}],
            "ProvisionedThroughput": {"ReadCapacityUnits": 2, "WriteCapacityUnits": 2},
            "Tags": [{"Key": "dynalocal:capacity-model", "Value": "classic"}]}
    assert dispatch(ctx, "DynamoDB_20120810.CreateTable", orjson.dumps(body))[0] == 200
    statuses = [dispatch(ctx, "DynamoDB_20120810.PutItem",
                         orjson.dumps({"TableName": "classic", "Item": {"p": {"S": "k"}}}))[0] for _ in range(5)]
    assert statuses == [200, 200, 400, 400, 400], "a 2 WCU/s share with 1 s of burst: 2 writes, then refused"
