"""Request shape validation, driven by botocore's DynamoDB service model.

    validate(operation, body) -> None

Runs for every request after the JSON body is parsed and the operation is known. In DynamoDB's
order it raises:

1. SerializationException (member `Message`) for the first JSON type mismatch in *document order*
   (docs/behaviour/validation.md §4). Two mismatches are coerced in place, as DynamoDB does:
   Boolean members given "true"/"false"/"1"/"0"/"yes"/"no" (any case) become bools, and
   Integer/Long members given non-integral numbers are truncated. So `body` may be modified.
2. An invalid top-level TableName: only its own constraint errors, in the constraint form
   (docs/behaviour/validation.md §1: `Value '' ... length greater than or equal to 1` for the TableArn
   shape's minimum, else pattern / `>= 3` / `<= 255`); a missing one is `Value null ...`, or for
   CreateTable `The parameter 'TableName' is required but was not present in the request`.
3. Model constraints (required, enum, length, pattern, range), up to 10 collected into one
   ValidationException: `N validation error(s) detected: Value '<v>' at '<path>' failed to satisfy
   constraint: <c>; ...`.

AttributeValues (and the values of Key/Item/ExpressionAttributeValues/... maps, the elements of
Parameters/AttributeValueList lists) are opaque here: only their container's JSON kind is checked;
the storage layer validates AttributeValues in its own single pass. Unknown members are ignored.

Each operation's checker is generated once (lazily, on first use) by `checkgen.py` as straight-line
Python from the compact shape tree in `shapes.py`: type tests are `type(v) is str`-style, and any
mismatch hands over to the document-order `shapes.type_walk`, which raises the right
SerializationException (or coerces, after which the checker is simply re-run).

Unclear-spec choices (see also shapes.py):
* A body that is not a JSON object: `null` -> SerializationException without message (like an
  empty body), a list -> `Start of list found where not expected`, a scalar -> `Unexpected value
  type in payload` (the same forms `app.dispatch` uses; scylla accepts any SerializationException).
* Missing required members use the constraint form (`Value null at 'tableName' failed to satisfy
  constraint: Member must not be null`), except CreateTable's TableName (above).
* Table names: the model types them as TableArn (1..1024). Values starting with `arn:` are
  checked as ARNs (length <= 1024 only); other values get the classic name rules: pattern
  `[a-zA-Z0-9_.-]+` and length 3..255. Nested (e.g. `transactItems.1.member.put.tableName`) they
  are reported in constraint form beside other errors, and for RequestItems keys as `Map keys
  must satisfy constraint: [Member must have length less than or equal to 255, Member must have
  length greater than or equal to 3, Member must satisfy regular expression pattern: [a-zA-Z0-9_.-]+]`.
* DynamoDB's own forms: BatchGetItem's per-table Keys over 100 is `Value at
  'RequestItems.<t>.member.Keys' ...` (no value, capitalised path); `RequestItems: {}` is `The
  requestItems parameter is required for BatchGetItem` (BatchWriteItem likewise).
* Order of several errors: model member order (ProvisionedThroughput: write before read,
  docs/behaviour/validation.md §2); within a string, pattern then min length then max length. Lengths count UTF-16
  code units (Java String.length()).
* A null element of a (non-AttributeValue) list or map is reported as `Value null at
  '<path>.<i>.member' failed to satisfy constraint: Member must not be null`.
* Map constraints: `Map keys/value must satisfy constraint: [...]` at the map's path, once per
  failing entry, listing all the key/value constraints (max length before min length,
  docs/behaviour/validation.md §2). Keys of AttributeValue maps (Key, Item, ...) are not checked.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dynalocal.engine import shapes
from dynalocal.engine.checkgen import generate
from dynalocal.engine.shapes import Node, render
from dynalocal.errors import SerializationException, ValidationException

__all__ = ["validate", "compile_operation"]

CREATE_TABLE_NAME_MISSING = "The parameter 'TableName' is required but was not present in the request"
MAX_ERRORS = 10
_BATCH_OPERATIONS = ("BatchGetItem", "BatchWriteItem")


# --- runtime helpers used by generated code --------------------------------------------------------

class _Restart:
    """Returned by a checker after the type walk coerced values: run it again."""


_R = _Restart()
_TN_OK: set[str] = set()  # table names already seen to be valid (bounded)
_TN_RX = shapes._java_pattern(shapes.TABLE_NAME_PATTERN).fullmatch


def _u16(s: str) -> int:
    """Java String.length(): UTF-16 code units."""
    return len(s.encode("utf-16-le", "surrogatepass")) >> 1


def _jl(s: str) -> int:
    return len(s) if s.isascii() else _u16(s)


def _e(v: Any, path: str, constraint: str) -> str:
    shown = "null" if v is None else "'" + shapes._render_scalar(v) + "'"
    return f"Value {shown} at '{path}' failed to satisfy constraint: {constraint}"


def _en(v: Any, node: Node, path: str, constraint: str) -> str:
    shown = "null" if v is None else "'" + render(v, node) + "'"
    return f"Value {shown} at '{path}' failed to satisfy constraint: {constraint}"


def _b64ok(v: str) -> bool:
    try:
        shapes.check_base64(v)
    except SerializationException:
        return False
    return True


# --- compilation and the public entry point --------------------------------------------------------

_COMPILERS: dict[str, shapes.ShapeCompiler] = {}
_VALIDATORS: dict[str, Callable[[dict, list], Any]] = {}
SOURCES: dict[str, str] = {}  # generated code per operation (debugging aid)


def _compiler(service: str) -> shapes.ShapeCompiler:
    comp = _COMPILERS.get(service)
    if comp is None:
        comp = _COMPILERS[service] = shapes.ShapeCompiler(shapes.load_model(service))
    return comp


def _noop(body: dict, errs: list) -> None:
    return None


def compile_operation(operation: str) -> Callable[[dict, list], Any]:
    """The checker for `operation` (DynamoDB, else DynamoDB Streams; unknown -> no checks)."""
    fn = _VALIDATORS.get(operation)
    if fn is not None:
        return fn
    root = None
    for service in ("dynamodb", "dynamodbstreams"):
        root = _compiler(service).input_node(operation)
        if root is not None:
            break
    if root is None:
        fn = _noop
    else:
        source, consts = generate(operation, root)
        namespace = {"_walk": shapes.type_walk, "_R": _R, "_e": _e, "_en": _en, "_jl": _jl,
                     "_b64ok": _b64ok, "_TN_OK": _TN_OK, "_TN_RX": _TN_RX, **consts}
        exec(compile(source, f"<validator {operation}>", "exec"), namespace)
        fn = namespace["check"]
        SOURCES[operation] = source
    _VALIDATORS[operation] = fn
    return fn


def _bad_body(body: Any) -> SerializationException:
    if body is None:
        return SerializationException()
    if type(body) is list:
        return SerializationException("Start of list found where not expected")
    return SerializationException("Unexpected value type in payload")


def validate(operation: str, body: dict) -> None:
    """Raise SerializationException / ValidationException if `body` breaks `operation`'s input shape."""
    fn = _VALIDATORS.get(operation) or compile_operation(operation)
    if type(body) is not dict:
        raise _bad_body(body)
    errs: list[str] = []
    special = fn(body, errs)
    if special is not None:
        if special is _R:  # the type walk coerced some values in place: check again
            errs = []
            special = fn(body, errs)
            if special is _R:  # pragma: no cover - fast and slow type checks disagree: a bug
                raise RuntimeError(f"validator for {operation} restarted twice")
        if special is not None:
            errs = special  # the top-level tableName is invalid: only its errors are reported
            if operation == "CreateTable" and body.get("TableName") is None:
                raise ValidationException(CREATE_TABLE_NAME_MISSING)
    if errs:
        if operation in _BATCH_OPERATIONS and body.get("RequestItems") == {}:
            raise ValidationException(f"The requestItems parameter is required for {operation}")
        n = min(len(errs), MAX_ERRORS)
        raise ValidationException(f"{n} validation error{'s' if n > 1 else ''} detected: " +
                                  "; ".join(errs[:MAX_ERRORS]))
