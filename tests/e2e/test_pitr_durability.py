"""Point-in-time recovery with --data-dir: the history survives kill -9 and a clean restart."""
from __future__ import annotations

import time
from datetime import datetime, timezone

from server_process import ServerProcess, scan_all


def _state(client, name: str) -> dict[str, str]:
    return {i["pk"]["S"]: i["v"]["S"] for i in scan_all(client, name)}


def _restore(client, source: str, target: str, when: float) -> dict[str, str]:
    client.restore_table_to_point_in_time(SourceTableName=source, TargetTableName=target,
                                          RestoreDateTime=datetime.fromtimestamp(when, timezone.utc))
    return _state(client, target)


def test_history_survives_kill_and_restart(tmp_path):
    server = ServerProcess(tmp_path / "data", "--pitr-lag-seconds", "0", log_path=tmp_path / "server.log").start()
    try:
        client = server.client()
        client.create_table(TableName="src", BillingMode="PAY_PER_REQUEST",
                            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}])
        client.update_continuous_backups(TableName="src",
                                         PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": True})
        for i in range(100):
            client.put_item(TableName="src", Item={"pk": {"S": f"k{i}"}, "v": {"S": "first"}})
        first, t1 = _state(client, "src"), time.time()
        while time.time() <= t1 + 0.01:  # the next writes are stamped later than t1, whatever the clock's grain
            pass
        for i in range(0, 100, 3):
            client.put_item(TableName="src", Item={"pk": {"S": f"k{i}"}, "v": {"S": "second"}})
        for i in range(1, 100, 3):
            client.delete_item(TableName="src", Key={"pk": {"S": f"k{i}"}})
        second, t2 = _state(client, "src"), time.time()
        server.kill()
        server.start()
        client = server.client()
        assert _restore(client, "src", "at-t1", t1) == first
        assert _restore(client, "src", "at-t2", t2) == second
        client.put_item(TableName="src", Item={"pk": {"S": "k0"}, "v": {"S": "third"}})  # appended after the restart
        assert server.stop() == 0
        server.start()
        client = server.client()
        assert _state(client, "at-t1") == first  # restored tables are durable too
        assert _restore(client, "src", "again-t1", t1) == first
        assert _restore(client, "src", "again-t2", t2) == second
        assert _state(client, "src")["k0"] == "third"
    finally:
        server.kill()
