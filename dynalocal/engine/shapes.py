"""Input shapes of the DynamoDB (and DynamoDB Streams) service model, in a compact form.

The service model is read once (orjson straight from the `service-2.json.gz` copy shipped in
`models/`, taken from MODEL_SOURCE, so that a newer botocore cannot change validation; ~5 ms,
no botocore session) and each operation's input shape is turned into a tree of `Node`s holding
only what request validation needs: the JSON kind, constraints, members in check order and the
Java type name DynamoDB's deserializer would report. `validation.py` compiles these trees into
straight-line per-operation checkers.

Also here: the document-order JSON type walk (`type_walk`) that produces DynamoDB's
SerializationException texts and applies its coercions, and `render`, which prints a value the
way DynamoDB's Java `toString` does inside constraint messages.
"""
from __future__ import annotations

import base64
import binascii
import math
import os
import re
import zlib
from typing import Any

import orjson

from dynalocal.errors import SerializationException

JAVA_PKG = "com.amazonaws.dynamodb.v20120810."
# Java deserializer message for a scalar where a *parameterized* collection (a list or map that is
# itself a list element or map value, e.g. BatchWriteItem `RequestItems.<t>`, BatchGetItem
# `Keys[i]`) was expected [dynalite test helpers, recorded against DynamoDB on Java 11+].
CAST_MSG = ("class sun.reflect.generics.reflectiveObjects.ParameterizedTypeImpl cannot be cast to class "
            "java.lang.Class (sun.reflect.generics.reflectiveObjects.ParameterizedTypeImpl and "
            "java.lang.Class are in module java.base of loader 'bootstrap')")
START_OF_STRUCT = "Start of structure or map found where not expected"

# Enum listing order DynamoDB uses in "Member must satisfy enum value set"
# (docs/behaviour/validation.md §2); every other enum is listed in model order.
ENUM_ORDER = {
    "ReturnValue": ("ALL_NEW", "UPDATED_OLD", "ALL_OLD", "NONE", "UPDATED_NEW"),
    "Select": ("SPECIFIC_ATTRIBUTES", "COUNT", "ALL_ATTRIBUTES", "ALL_PROJECTED_ATTRIBUTES"),
    "ComparisonOperator": ("IN", "NULL", "BETWEEN", "LT", "NOT_CONTAINS", "EQ", "GT", "NOT_NULL", "NE",
                           "LE", "BEGINS_WITH", "GE", "CONTAINS"),
    "KeyType": ("HASH", "RANGE"),
    "BillingMode": ("PROVISIONED", "PAY_PER_REQUEST"),
    "ConditionalOperator": ("OR", "AND"),
    "ReturnItemCollectionMetrics": ("SIZE", "NONE"),
    "ReturnConsumedCapacity": ("INDEXES", "TOTAL", "NONE"),
    "ScalarAttributeType": ("B", "N", "S"),
}
# Order in which members' constraint failures are listed, where DynamoDB's differs from the model
# (docs/behaviour/validation.md §2: writeCapacityUnits is reported before readCapacityUnits).
MEMBER_ORDER = {"ProvisionedThroughput": ("WriteCapacityUnits", "ReadCapacityUnits")}

# Table names: the 2024+ model types TableName inputs as TableArn (1..1024, no pattern). A value
# starting with "arn:" is validated as an ARN (length only); anything else as a plain table name
# with the classic TableName rules below (docs/behaviour/validation.md §1).
TABLE_NAME_PATTERN = "[a-zA-Z0-9_.-]+"
TABLE_NAME_MIN, TABLE_NAME_MAX = 3, 255
TABLE_SHAPES = ("TableArn", "TableName")

JAVA_SCALARS = {"string": "java.lang.String", "boolean": "java.lang.Boolean", "integer": "java.lang.Integer",
                "long": "java.lang.Long", "double": "java.lang.Double", "float": "java.lang.Float",
                "timestamp": "java.util.Date", "blob": "java.nio.ByteBuffer"}
TYPE_WORD = {"integer": "Integer", "long": "Long", "double": "Double", "float": "Float", "timestamp": "Date"}


class Node:
    """One input shape, as validation sees it.

    kind: string | boolean | integer | long | double | float | timestamp | blob | list | map |
    structure | av (an AttributeValue: opaque, checked by the storage layer, never descended).
    table: "arn" / "name" for a table name (or ARN, for TableArn shapes): TableName members and
    RequestItems keys, which get the name rules described in validation.py; else "".
    """

    __slots__ = ("kind", "name", "min", "max", "pattern", "regex", "enum", "enum_set", "members",
                 "by_wire", "elem", "key", "value", "java", "table")

    def __init__(self, kind: str, name: str) -> None:
        self.kind, self.name = kind, name
        self.min: int | None = None
        self.max: int | None = None
        self.pattern: str | None = None
        self.regex: re.Pattern[str] | None = None
        self.enum: tuple[str, ...] | None = None
        self.enum_set: frozenset[str] | None = None
        self.members: list[tuple[str, str, Node, bool]] = []  # (wire name, path name, node, required)
        self.by_wire: dict[str, Node] = {}
        self.elem: Node | None = None  # list kind
        self.key: Node | None = None  # map kind
        self.value: Node | None = None  # map kind
        self.java = ""
        self.table = ""

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"<Node {self.kind} {self.name}>"


def _java_pattern(pattern: str) -> re.Pattern:
    """Translate the few Java-only regex constructs the model uses; match like Java's matches()."""
    py = pattern.replace(r"\p{Print}", r"\x20-\x7E" if "[" in pattern else r"[\x20-\x7E]")
    py = py.replace(r"\uD800\uDC00-\uDBFF\uDFFF", r"\U00010000-\U0010FFFF")
    return re.compile(py, re.ASCII)


MODEL_SOURCE = "botocore 1.44.5"  # where the shipped models/*.json.gz come from (see models/README.md)
MODELS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "models")


def load_model(service: str) -> dict:
    """The shipped service model (`dynamodb`, `dynamodbstreams`) as plain dicts (no botocore import: ~100 ms)."""
    with open(os.path.join(MODELS, f"{service}.json.gz"), "rb") as f:
        return orjson.loads(_gunzip(f.read()))


def _gunzip(data: bytes) -> bytes:
    """Decompress a gzip file in one call (no `gzip` import: it costs ~2 ms of startup)."""
    inflater = zlib.decompressobj(wbits=31)
    out = inflater.decompress(data) + inflater.flush()
    if inflater.unused_data:  # another gzip member follows (botocore's files have one)
        out += _gunzip(inflater.unused_data)
    return out


def lower_first(name: str) -> str:
    return name[:1].lower() + name[1:]


class ShapeCompiler:
    """Builds `Node` trees from one service model's shapes (memoised per shape)."""

    def __init__(self, model: dict) -> None:
        self.shapes = model["shapes"]
        self.operations = model["operations"]
        self.memo: dict[str, Node] = {}

    def input_node(self, operation: str) -> Node | None:
        op = self.operations.get(operation)
        if op is None:
            return None
        if "input" not in op:
            return Node("structure", operation + "Input")
        return self.node(op["input"]["shape"])

    def node(self, name: str, table: bool = False) -> Node:
        memo_key = name + ("#table" if table else "")
        if memo_key in self.memo:
            return self.memo[memo_key]
        shape = self.shapes[name]
        kind = shape["type"]
        if name == "AttributeValue":
            kind = "av"
        node = Node(kind, name)
        self.memo[memo_key] = node  # before recursing: recursive shapes share the node
        node.min, node.max = shape.get("min"), shape.get("max")
        if table:
            node.table = "arn" if name == "TableArn" else "name"
        elif "pattern" in shape:
            node.pattern = shape["pattern"]
            node.regex = _java_pattern(shape["pattern"])
        if "enum" in shape:
            order = ENUM_ORDER.get(name)
            node.enum = order if order and set(order) == set(shape["enum"]) else tuple(shape["enum"])
            node.enum_set = frozenset(node.enum)
        if kind == "structure":
            required = set(shape.get("required", ()))
            members = shape.get("members", {})
            order = MEMBER_ORDER.get(name)
            names = list(order) + [m for m in members if m not in order] if order else list(members)
            for wire in names:
                m_shape = members[wire]["shape"]
                child = self.node(m_shape, table=wire == "TableName" and m_shape in TABLE_SHAPES)
                node.members.append((wire, lower_first(wire), child, wire in required))
                node.by_wire[wire] = child
            node.java = "class " + JAVA_PKG + name
        elif kind == "list":
            node.elem = self.node(shape["member"]["shape"])
            node.java = f"java.util.List<{_java_type(node.elem)}>"
        elif kind == "map":
            k_shape = shape["key"]["shape"]
            node.key = self.node(k_shape, table=k_shape in TABLE_SHAPES)
            node.value = self.node(shape["value"]["shape"])
            node.java = f"java.util.Map<java.lang.String, {_java_type(node.value)}>"
        elif kind == "av":
            node.java = "class " + JAVA_PKG + "AttributeValue"
        else:
            node.java = "class " + JAVA_SCALARS.get(kind, "java.lang.Object")
        return node


def _java_type(node: Node) -> str:
    return node.java[6:] if node.java.startswith("class ") else node.java


# --- document-order type walk (SerializationException texts, coercions) ---------------------------

def _ser(message: str) -> SerializationException:
    return SerializationException(message)


def _number_token(v: Any) -> str:
    if v is True:
        return "TRUE_VALUE"
    if v is False:
        return "FALSE_VALUE"
    return "DECIMAL_VALUE" if type(v) is float else "NUMBER_VALUE"


def check_base64(v: str) -> None:
    """Blob members must hold canonical padded base64 (docs/behaviour/validation.md §4)."""
    if len(v) % 4:
        raise _ser(f"Base64 encoded length is expected a multiple of 4 bytes but found: {len(v)}")
    try:
        ok = base64.b64encode(base64.b64decode(v, validate=True)).decode() == v
    except (binascii.Error, ValueError):
        ok = False
    if not ok:
        raise _ser("Invalid last non-pad Base64 character dectected")


def type_walk(v: Any, node: Node, parameterized: bool = False) -> Any:
    """Check `v` (not None) against `node` in JSON document order, as DynamoDB's deserializer does.

    Raises SerializationException at the first mismatch; returns the value to keep (coerced for
    Boolean-from-string and Integer/Long-from-decimal), which the caller stores back.
    """
    kind = node.kind
    if kind == "av":
        return v
    if kind == "structure":
        return _walk_structure(v, node)
    if kind == "list" or kind == "map":
        return _walk_collection(v, node, parameterized)
    return _walk_scalar(v, node)


def _walk_structure(v: Any, node: Node) -> Any:
    t = type(v)
    if t is dict:
        by_wire = node.by_wire
        for k, x in v.items():
            child = by_wire.get(k)
            if child is not None and x is not None:
                y = type_walk(x, child)
                if y is not x:
                    v[k] = y
        return v
    if t is list:
        raise _ser("Unrecognized collection type " + node.java)
    raise _ser("Unexpected field type")


def _walk_collection(v: Any, node: Node, parameterized: bool) -> Any:
    """A list (its elements) or a map (its values), each checked in order."""
    t = type(v)
    if node.kind == "list":
        if t is not list:
            raise _ser(START_OF_STRUCT if t is dict else CAST_MSG if parameterized else "Unexpected field type")
        inner = node.elem
        entries: Any = enumerate(v)
    else:
        if t is not dict:
            raise _ser("Unrecognized collection type " + node.java if t is list
                       else CAST_MSG if parameterized else "Unexpected field type")
        inner = node.value
        entries = v.items()
    assert inner is not None  # a list node always has its element shape, a map node its value shape
    if inner.kind != "av":
        nested = inner.kind in ("list", "map")
        for k, x in entries:
            if x is not None:
                y = type_walk(x, inner, nested)
                if y is not x:
                    v[k] = y
    return v


def _walk_scalar(v: Any, node: Node) -> Any:
    kind = node.kind
    t = type(v)
    if t is dict:
        raise _ser(START_OF_STRUCT)
    if t is list:
        raise _ser("Unrecognized collection type " + node.java)
    if kind == "string":
        if t is str:
            return v
        raise _ser(_number_token(v) + " cannot be converted to String")
    if kind == "boolean":
        if t is bool:
            return v
        if t is str:
            word = v.upper()
            if word in ("TRUE", "1", "YES"):
                return True
            if word in ("FALSE", "0", "NO"):
                return False
            raise _ser("Unexpected token received from parser")
        raise _ser("NUMBER_VALUE cannot be converted to Boolean")
    if kind == "blob":
        if t is str:
            check_base64(v)
            return v
        raise _ser("only base-64-encoded strings are convertible to bytes")
    word = TYPE_WORD.get(kind, "Object")
    if t is str:
        raise _ser("STRING_VALUE cannot be converted to " + word)
    if t is bool:
        raise _ser(_number_token(v) + " cannot be converted to " + word)
    if t is float and kind in ("integer", "long"):
        if not math.isfinite(v):  # pragma: no cover - orjson rejects non-finite numbers
            raise _ser("DECIMAL_VALUE cannot be converted to " + word)
        return int(v)  # DynamoDB truncates non-integral numbers for Integer/Long members
    return v


# --- Java-style rendering of values in constraint messages ----------------------------------------

def _render_scalar(v: Any) -> str:
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if type(v) is float:
        if v == int(v) and abs(v) < 1e7:
            return f"{v:.1f}"
        return repr(v).replace("e+", "E").replace("e", "E")
    return str(v)


def render_av(v: Any) -> str:
    """An AttributeValue as DynamoDB prints it, e.g. `AttributeValue: {S:abc}` (scylla recording)."""
    if type(v) is not dict:
        return _render_scalar(v) if type(v) is not list else "[" + ", ".join(map(render_av, v)) + "]"
    parts = []
    for tag, x in v.items():
        if tag == "M" and type(x) is dict:
            inner = "{" + ", ".join(f"{k}={render_av(y)}" for k, y in x.items()) + "}"
        elif tag == "L" and type(x) is list:
            inner = "[" + ", ".join(render_av(y) for y in x) + "]"
        elif type(x) is list:
            inner = "[" + ", ".join(_render_scalar(y) for y in x) + "]"
        else:
            inner = _render_scalar(x)
        parts.append(f"{tag}:{inner}")
    return "AttributeValue: {" + ",".join(parts) + "}"


def render(v: Any, node: Node | None) -> str:
    """Java toString of a (type-checked) request value: lists `[a, b]`, maps/structures `{k=v}`."""
    if v is None:
        return "null"
    kind = node.kind if node is not None else None
    if kind == "av":
        return render_av(v)
    t = type(v)
    if t is list:
        elem = node.elem if node is not None and kind == "list" else None
        return "[" + ", ".join(render(x, elem) for x in v) + "]"
    if t is dict:
        if node is not None and kind == "structure":
            by_wire = node.by_wire
            return "{" + ", ".join(f"{k}={render(x, by_wire[k])}" for k, x in v.items()
                                   if k in by_wire and x is not None) + "}"
        value = node.value if node is not None and kind == "map" else None
        return "{" + ", ".join(f"{k}={render(x, value)}" for k, x in v.items()) + "}"
    return _render_scalar(v)
