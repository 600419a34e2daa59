"""Seed files for `--init`: DynamoDB requests from a JSON file of CreateTable requests plus items,
or from the `AWS::DynamoDB::Table` resources of a CloudFormation/SAM template (JSON or YAML).

Everything here is pure parsing: the result is a list of (operation, request) pairs that
`seed.apply` sends through the server's own dispatch, so seeding validates exactly as the API.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from dynalocal.seed.intrinsics import Resolver, TemplateError

Request = tuple[str, dict]  # (operation name, request body)


class SeedError(ValueError):
    """A seed file that cannot be used; the message names the file and the place in it."""


def load_file(path: str | Path) -> list[Request]:
    """The requests that seed the tables and items a JSON seed file or template describes."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise SeedError(f"{path}: {err.strerror}") from None
    try:
        document = parse_document(text, path.suffix.lower())
        return requests_of(document)
    except (TemplateError, SeedError) as err:
        raise SeedError(f"{path}: {err}") from None


def parse_document(text: str, suffix: str = "") -> Any:
    """JSON, or YAML with CloudFormation's short-form tags (`!Ref`, `!Sub`, ...)."""
    if suffix not in (".yaml", ".yml"):
        try:
            return json.loads(text)
        except json.JSONDecodeError as err:
            if suffix == ".json":
                raise SeedError(f"not valid JSON: {err}") from None
    from dynalocal.seed.cfnyaml import load_yaml  # PyYAML loads only for YAML seed files

    return load_yaml(text)


def requests_of(document: Any) -> list[Request]:
    """Requests from a parsed seed document (template or JSON seed file)."""
    if isinstance(document, dict) and "Resources" in document:
        return template_requests(document)
    return seed_requests(document)


# -- JSON seed files ------------------------------------------------------------------------

def seed_requests(document: Any) -> list[Request]:
    """`[{CreateTable request..., "Items": [...]}, ...]` or `{"Tables": [...], "Items": {table: [...]}}`.

    Items are in DynamoDB's typed JSON (`{"pk": {"S": "a"}}`), as PutItem takes them.
    """
    if isinstance(document, list):
        document = {"Tables": document}
    if not isinstance(document, dict) or not set(document) <= {"Tables", "Items"}:
        raise SeedError('expected a list of CreateTable requests, or an object with "Tables" and/or "Items", '
                        'or a CloudFormation template with "Resources"')
    tables, items = document.get("Tables", []), document.get("Items", {})
    if not isinstance(tables, list) or not isinstance(items, dict):
        raise SeedError('"Tables" must be a list and "Items" an object of table name -> list of items')
    out: list[Request] = []
    for n, table in enumerate(tables):
        if not isinstance(table, dict) or not isinstance(table.get("TableName"), str):
            raise SeedError(f"Tables[{n}] is not a CreateTable request with a TableName")
        request = {k: v for k, v in table.items() if k not in ("Items", "TimeToLiveSpecification")}
        out.append(("CreateTable", request))
        out += _ttl(table["TableName"], table.get("TimeToLiveSpecification"))
        out += _puts(table["TableName"], table.get("Items", []), f"Tables[{n}].Items")
    for name, table_items in items.items():
        out += _puts(name, table_items, f"Items.{name}")
    return out


def _puts(table: str, items: Any, where: str) -> list[Request]:
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        raise SeedError(f"{where} must be a list of items in DynamoDB JSON")
    return [("PutItem", {"TableName": table, "Item": item}) for item in items]


def _ttl(table: str, spec: Any) -> list[Request]:
    if not spec:
        return []
    if not isinstance(spec, dict):
        raise SeedError(f"TimeToLiveSpecification of {table} must be an object")
    if spec.get("Enabled") is False:
        return []
    return [("UpdateTimeToLive", {"TableName": table, "TimeToLiveSpecification": {
        "AttributeName": spec.get("AttributeName"), "Enabled": True}})]


# -- CloudFormation / SAM templates ---------------------------------------------------------

# Table properties that CreateTable takes under the same name and shape.
SAME_SHAPE = ("KeySchema", "AttributeDefinitions", "BillingMode", "ProvisionedThroughput", "GlobalSecondaryIndexes",
              "LocalSecondaryIndexes", "Tags", "TableClass", "DeletionProtectionEnabled", "OnDemandThroughput",
              "WarmThroughput")
# Properties with nothing to do locally (AWS-side integrations).
IGNORED = ("ContributorInsightsSpecification", "KinesisStreamSpecification", "ResourcePolicy",
           "PointInTimeRecoverySpecification")
SAM_TYPES = {"String": "S", "Number": "N", "Binary": "B"}


def template_requests(template: dict) -> list[Request]:
    """CreateTable (and UpdateTimeToLive) requests for each table resource of a template."""
    resources = template.get("Resources")
    if not isinstance(resources, dict):
        raise SeedError("Resources must be an object")
    resolver = Resolver(template)
    out: list[Request] = []
    for logical_id, resource in resources.items():
        kind = resource.get("Type") if isinstance(resource, dict) else None
        if kind not in ("AWS::DynamoDB::Table", "AWS::Serverless::SimpleTable"):
            continue
        if "Condition" in resource:
            raise TemplateError(f"Resources.{logical_id} has a Condition, which dynalocal cannot evaluate")
        where = f"Resources.{logical_id}.Properties"
        props = resolver.resolve(resource.get("Properties") or {}, where)
        if not isinstance(props, dict):
            raise SeedError(f"{where} must be an object")
        if kind == "AWS::Serverless::SimpleTable":
            out.append(("CreateTable", _simple_table(logical_id, props, where)))
        else:
            out += _table(logical_id, props, where)
    if not out:
        raise SeedError("the template has no AWS::DynamoDB::Table or AWS::Serverless::SimpleTable resource")
    return out


def _table(logical_id: str, props: dict, where: str) -> list[Request]:
    if "ImportSourceSpecification" in props:
        raise SeedError(f"{where}.ImportSourceSpecification imports from S3, which dynalocal cannot do; "
                        "put the items in a JSON seed file instead")
    unknown = set(props) - set(SAME_SHAPE) - set(IGNORED) - {"TableName", "StreamSpecification",
                                                               "SSESpecification", "TimeToLiveSpecification"}
    if unknown:
        raise SeedError(f"{where} has properties dynalocal does not know: {', '.join(sorted(unknown))}")
    name = props.get("TableName", logical_id)  # CloudFormation would generate one; the logical id is stable
    request: dict[str, Any] = {"TableName": name}
    request.update((k, props[k]) for k in SAME_SHAPE if k in props)
    stream = props.get("StreamSpecification")
    if stream:
        request["StreamSpecification"] = {"StreamEnabled": True, **stream}
    sse = props.get("SSESpecification")
    if sse:
        request["SSESpecification"] = {("Enabled" if k == "SSEEnabled" else k): v for k, v in sse.items()}
    return [("CreateTable", request)] + _ttl(name, props.get("TimeToLiveSpecification"))


def _simple_table(logical_id: str, props: dict, where: str) -> dict:
    """SAM's SimpleTable: one string/number/binary partition key, on demand unless throughput is given."""
    key: dict[str, Any] = props.get("PrimaryKey") or {"Name": "id", "Type": "String"}
    kind = SAM_TYPES.get(key.get("Type", ""))  # ("": no such type, like a missing one)
    if kind is None:
        raise SeedError(f"{where}.PrimaryKey.Type must be String, Number or Binary")
    request: dict[str, Any] = {
        "TableName": props.get("TableName", logical_id),
        "KeySchema": [{"AttributeName": key.get("Name"), "KeyType": "HASH"}],
        "AttributeDefinitions": [{"AttributeName": key.get("Name"), "AttributeType": kind}],
    }
    if "ProvisionedThroughput" in props:
        request["ProvisionedThroughput"] = props["ProvisionedThroughput"]
    else:
        request["BillingMode"] = "PAY_PER_REQUEST"
    if "Tags" in props:  # SAM writes tags as a map
        request["Tags"] = [{"Key": k, "Value": v} for k, v in props["Tags"].items()]
    if props.get("SSESpecification"):
        request["SSESpecification"] = {("Enabled" if k == "SSEEnabled" else k): v
                                       for k, v in props["SSESpecification"].items()}
    return request
