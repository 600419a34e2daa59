"""TagResource, UntagResource, ListTagsOfResource on table ARNs."""
from __future__ import annotations

import re

from dynalocal.capacity.registry import MODEL_TAG, PARTITIONS_TAG
from dynalocal.engine.caller import Caller
from dynalocal.engine.context import Context
from dynalocal.errors import AccessDeniedException, ResourceNotFoundException, ValidationException
from dynalocal.storage.database import TableEntry

MAX_TAGS = 50
_TAG_TEXT = re.compile(r"[\w\s.:/=+\-@]*")  # AWS tagging convention: letters, digits, spaces, _ . : / = + - @


def _table_for_arn(ctx: Context, caller: Caller, arn: str, operation: str) -> TableEntry:
    if not arn.startswith("arn:"):
        raise ValidationException("ARNs must start with 'arn:'")
    parts = arn.split(":", 5)
    if len(parts) < 6 or parts[2] != "dynamodb" or not parts[5].startswith("table/") or "/" in parts[5][6:]:
        raise ValidationException(f"Invalid TableArn: Invalid ResourceArn provided as input {arn}")
    entry = ctx.db.tables.get(caller.scope + parts[5][6:])
    if entry is None or entry.arn != arn:
        if operation == "ListTagsOfResource":  # DynamoDB answers AccessDenied here (docs/behaviour/validation.md §6)
            raise AccessDeniedException(f"User: arn:aws:iam::{parts[4]}:root is not authorized to perform: "
                                        f"dynamodb:ListTagsOfResource on resource: {arn}")
        if operation == "UntagResource":
            raise ResourceNotFoundException("Requested resource not found")
        raise ResourceNotFoundException(f"Requested resource not found: ResourcArn: {arn} not found")
    return entry


def check_tags(tags: list[dict], existing: dict[str, str]) -> dict[str, str]:
    """Validate tags to add; return the merged tag map (existing keys are overwritten)."""
    merged = dict(existing)
    for tag in tags:
        key, value = tag["Key"], tag["Value"]
        if not _TAG_TEXT.fullmatch(key) or not _TAG_TEXT.fullmatch(value):
            raise ValidationException("Invalid tag key or value: allowed characters are letters, numbers, spaces "
                                      "representable in UTF-8, and the following characters: + - = . _ : / @")
        merged[key] = value
    if len(merged) > MAX_TAGS:
        raise ValidationException(f"One or more parameter values were invalid: The number of tags exceeds the "
                                  f"limit of {MAX_TAGS}")
    return merged


def _retag(ctx: Context, entry: TableEntry, tags: dict[str, str]) -> None:
    changed = any(tags.get(tag) != entry.tags.get(tag) for tag in (PARTITIONS_TAG, MODEL_TAG))
    entry.tags = tags
    if changed:
        ctx.capacity.configure(entry)


def tag_resource(ctx: Context, caller: Caller, body: dict) -> bytes:
    entry = _table_for_arn(ctx, caller, body["ResourceArn"], "TagResource")
    if not body["Tags"]:
        raise ValidationException("Atleast one Tag needs to be provided as Input.")
    _retag(ctx, entry, check_tags(body["Tags"], entry.tags))
    return b""  # DynamoDB answers tagging with an empty body


def untag_resource(ctx: Context, caller: Caller, body: dict) -> bytes:
    entry = _table_for_arn(ctx, caller, body["ResourceArn"], "UntagResource")
    if not body["TagKeys"]:
        raise ValidationException("Atleast one Tag Key needs to be provided as Input.")
    _retag(ctx, entry, {k: v for k, v in entry.tags.items() if k not in set(body["TagKeys"])})
    return b""


def list_tags_of_resource(ctx: Context, caller: Caller, body: dict) -> dict:
    entry = _table_for_arn(ctx, caller, body["ResourceArn"], "ListTagsOfResource")
    return {"Tags": [{"Key": k, "Value": v} for k, v in entry.tags.items()]}
