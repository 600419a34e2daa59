"""`dynalocal --init FILE`: tables and items from a JSON seed file and a SAM template, at start."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from server_process import ServerProcess, scan_all

DATA = Path(__file__).resolve().parents[1] / "data"


def test_init_with_json_seed_file_and_sam_template(tmp_path):
    # 1,000 more items for the 1 WCU table: far beyond its 300 s of burst; seeding is never throttled.
    more = tmp_path / "more.json"
    more.write_text(json.dumps({"Items": {"orders": [{"pk": {"S": f"CUSTOMER#{n % 50}"}, "sk": {"S": f"X#{n:04d}"}}
                                                     for n in range(1000)]}}))
    with ServerProcess(None, "--init", str(DATA / "seed_orders.json"), "--init", str(DATA / "sam_template.yaml"),
                       "--init", str(more), log_path=tmp_path / "server.log") as server:
        ddb = server.client()
        assert sorted(ddb.list_tables()["TableNames"]) == ["Sessions", "orders", "orders-dev"]
        items = ddb.query(TableName="orders", KeyConditionExpression="pk = :c AND begins_with(sk, :o)",
                          ExpressionAttributeValues={":c": {"S": "CUSTOMER#1"}, ":o": {"S": "ORDER#"}})["Items"]
        assert sorted(i["sk"]["S"] for i in items) == ["ORDER#1", "ORDER#2"]
        assert ddb.describe_table(TableName="orders")["Table"]["ItemCount"] == 1003
        assert ddb.describe_time_to_live(TableName="orders")["TimeToLiveDescription"] == {
            "TimeToLiveStatus": "ENABLED", "AttributeName": "expires"}
        table = ddb.describe_table(TableName="orders-dev")["Table"]
        assert table["GlobalSecondaryIndexes"][0]["IndexName"] == "by-status"
        assert table["BillingModeSummary"]["BillingMode"] == "PAY_PER_REQUEST"
        assert ddb.list_tags_of_resource(ResourceArn=table["TableArn"])["Tags"] == [{"Key": "stage", "Value": "dev"}]
        assert ddb.describe_table(TableName="Sessions")["Table"]["KeySchema"] == [
            {"AttributeName": "sessionId", "KeyType": "HASH"}]


def test_init_is_kept_once_with_a_data_directory(tmp_path):
    args = ("--init", str(DATA / "seed_orders.json"))
    with ServerProcess(tmp_path / "data", *args, log_path=tmp_path / "server.log") as server:
        server.client().delete_item(TableName="orders", Key={"pk": {"S": "CUSTOMER#2"}, "sk": {"S": "ORDER#3"}})
    # Restarted with the same --init: the recovered table is left as it is (the deleted item stays deleted).
    with ServerProcess(tmp_path / "data", *args, log_path=tmp_path / "server.log") as server:
        assert len(scan_all(server.client(), "orders")) == 2
    assert "tables orders exist already" in (tmp_path / "server.log").read_text()


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dynalocal", "--port", "0", *args], capture_output=True,
                          text=True, timeout=60)


def test_init_errors_stop_the_server_with_a_clear_message(tmp_path):
    template = tmp_path / "template.yaml"
    template.write_text("Resources:\n  T:\n    Type: AWS::DynamoDB::Table\n    Properties:\n"
                        "      TableName: !GetAtt Other.Name\n")
    done = run_cli("--init", str(template))
    assert done.returncode != 0
    assert ("cannot use --init " + str(template) + ": Resources.T.Properties.TableName uses Fn::GetAtt, "
            "which needs a deployed stack") in done.stderr
    bad_table = tmp_path / "bad.json"
    bad_table.write_text('[{"TableName": "x", "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}], '
                         '"AttributeDefinitions": [], "BillingMode": "PAY_PER_REQUEST"}]')
    done = run_cli("--init", str(bad_table))
    assert done.returncode != 0
    assert "CreateTable on table x failed: ValidationException" in done.stderr
