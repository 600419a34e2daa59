"""Seed files for --init: JSON seed files and CloudFormation/SAM templates become DynamoDB requests."""
from __future__ import annotations

from pathlib import Path

import pytest

from dynalocal.seed.cfnyaml import load_yaml
from dynalocal.seed.template import SeedError, load_file, requests_of

DATA = Path(__file__).resolve().parents[1] / "data"


def test_json_seed_file_gives_create_table_ttl_and_puts():
    requests = load_file(DATA / "seed_orders.json")
    assert [op for op, _ in requests] == ["CreateTable", "UpdateTimeToLive", "PutItem", "PutItem", "PutItem"]
    create = requests[0][1]
    assert create["TableName"] == "orders" and "Items" not in create and "TimeToLiveSpecification" not in create
    assert requests[1][1]["TimeToLiveSpecification"] == {"AttributeName": "expires", "Enabled": True}
    assert requests[2][1] == {"TableName": "orders", "Item": {"pk": {"S": "CUSTOMER#1"}, "sk": {"S": "ORDER#1"},
                                                               "total": {"N": "12"}}}


def test_items_only_seed_file_loads_into_named_tables():
    requests = requests_of({"Items": {"orders": [{"pk": {"S": "a"}}]}})
    assert requests == [("PutItem", {"TableName": "orders", "Item": {"pk": {"S": "a"}}})]


def test_sam_template_tables_with_short_form_tags():
    requests = load_file(DATA / "sam_template.yaml")
    ops = [(op, body["TableName"]) for op, body in requests]
    assert ops == [("CreateTable", "orders-dev"), ("UpdateTimeToLive", "orders-dev"), ("CreateTable", "Sessions")]
    orders = requests[0][1]
    assert orders["Tags"] == [{"Key": "stage", "Value": "dev"}]
    assert orders["StreamSpecification"] == {"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"}
    assert orders["GlobalSecondaryIndexes"][0]["IndexName"] == "by-status"
    sessions = requests[2][1]
    assert sessions["KeySchema"] == [{"AttributeName": "sessionId", "KeyType": "HASH"}]
    assert sessions["AttributeDefinitions"] == [{"AttributeName": "sessionId", "AttributeType": "S"}]
    assert sessions["BillingMode"] == "PAY_PER_REQUEST"


def test_yaml_short_forms_become_long_forms():
    doc = load_yaml("a: !Ref X\nb: !GetAtt T.Arn\nc: !Join [':', [x, !Ref Y]]\nd: !Sub\n  - '${A}'\n  - A: 1\n")
    assert doc == {"a": {"Ref": "X"}, "b": {"Fn::GetAtt": ["T", "Arn"]},
                   "c": {"Fn::Join": [":", ["x", {"Ref": "Y"}]]}, "d": {"Fn::Sub": ["${A}", {"A": 1}]}}


def template(props: dict, **top) -> dict:
    return {"Resources": {"T": {"Type": "AWS::DynamoDB::Table", "Properties": {
        "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
        "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}], **props}}}, **top}


def test_resolvable_intrinsics():
    doc = template({"TableName": {"Fn::Join": ["-", [{"Ref": "AWS::Region"},
                                                     {"Fn::FindInMap": ["Names", "dev", "table"]},
                                                     {"Fn::Select": [1, {"Fn::Split": [",", "a,b"]}]},
                                                     {"Fn::Sub": "${!Lit}"}]]}},
                   Mappings={"Names": {"dev": {"table": "orders"}}})
    assert requests_of(doc)[0][1]["TableName"] == "us-east-1-orders-b-${Lit}"


@pytest.mark.parametrize("value, message", [
    ({"Fn::GetAtt": ["Other", "Arn"]}, "Resources.T.Properties.TableName uses Fn::GetAtt, which needs a deployed stack"),
    ({"Fn::ImportValue": "shared-name"}, "uses Fn::ImportValue, which needs a deployed stack"),
    ({"Ref": "OtherResource"}, "uses Ref OtherResource, which cannot be resolved locally"),
    ({"Ref": "NoDefault"}, "refers to parameter NoDefault, which has no Default"),
    ({"Fn::Sub": "${Other.Arn}"}, "an attribute, Fn::GetAtt"),
])
def test_unresolvable_intrinsics_are_a_clear_error(value, message):
    doc = template({"TableName": value}, Parameters={"NoDefault": {"Type": "String"}})
    with pytest.raises(ValueError, match=message.replace(".", r"\.").replace("(", r"\(")):
        requests_of(doc)


def test_template_without_tables_and_bad_seed_shapes_are_errors(tmp_path):
    with pytest.raises(SeedError, match="no AWS::DynamoDB::Table"):
        requests_of({"Resources": {"F": {"Type": "AWS::Serverless::Function"}}})
    with pytest.raises(SeedError, match="Tables\\[0\\] is not a CreateTable request"):
        requests_of([{"KeySchema": []}])
    bad = tmp_path / "bad.json"
    bad.write_text("{nope")
    with pytest.raises(SeedError, match="bad.json: not valid JSON"):
        load_file(bad)
    with pytest.raises(SeedError, match="missing.json: No such file"):
        load_file(tmp_path / "missing.json")
