"""The code generator of request validation: an operation's input shape tree (`shapes.py`) as one
straight-line Python function `check(body, errs)`, compiled once by `validation.compile_operation`.

The generated code calls the runtime helpers that `validation` puts in its namespace (`_e`, `_en`,
`_jl`, `_b64ok`, `_walk`, `_R`, `_TN_OK`, `_TN_RX`); the rules it encodes (document order, error
forms, constraint order) are in `validation`'s docstring and docs/behaviour/validation.md.
"""
from __future__ import annotations

from typing import Any

from dynalocal.engine import shapes
from dynalocal.engine.shapes import Node

NOT_NULL = "Member must not be null"


def _len_min(n: int) -> str:
    return f"Member must have length greater than or equal to {n}"


def _len_max(n: int) -> str:
    return f"Member must have length less than or equal to {n}"


def _val_min(n: Any) -> str:
    return f"Member must have value greater than or equal to {n}"


def _val_max(n: Any) -> str:
    return f"Member must have value less than or equal to {n}"


def _pattern(p: str) -> str:
    return f"Member must satisfy regular expression pattern: {p}"


def _enum(values: tuple) -> str:
    return "Member must satisfy enum value set: [" + ", ".join(values) + "]"


_TABLE_KEY_CONSTRAINTS = [_len_max(shapes.TABLE_NAME_MAX), _len_min(shapes.TABLE_NAME_MIN),
                          _pattern(shapes.TABLE_NAME_PATTERN)]
_ARN_KEY_CONSTRAINTS = [_len_max(1024), _len_min(1)]


_TYPE_TEST = {
    "string": "type({v}) is not str",
    "boolean": "type({v}) is not bool",
    "integer": "type({v}) is not int",
    "long": "type({v}) is not int",
    "double": "type({v}) is not float and type({v}) is not int",
    "float": "type({v}) is not float and type({v}) is not int",
    "timestamp": "type({v}) is not float and type({v}) is not int",
    "blob": "type({v}) is not str or not _b64ok({v})",
    "list": "type({v}) is not list",
    "map": "type({v}) is not dict",
    "structure": "type({v}) is not dict",
}
_NUMERIC = ("integer", "long", "double", "float", "timestamp")


def _path_expr(parts: list) -> str:
    """parts: literal strings and ('expr',) tuples -> one Python string expression."""
    out: list[str] = []
    lit = ""
    for p in parts:
        if isinstance(p, str):
            lit += p
        else:
            if lit:
                out.append(repr(lit))
                lit = ""
            out.append(p[0])
    if lit or not out:
        out.append(repr(lit))
    return " + ".join(out)


def _child(parts: list, name: str) -> list:
    return parts + ["." + name] if parts else [name]


def _constraint_list(node: Node) -> list[str]:
    """All constraints of a map key/value node, in the order DynamoDB lists them."""
    if node.table == "arn":
        return _ARN_KEY_CONSTRAINTS
    if node.table == "name":
        return _TABLE_KEY_CONSTRAINTS
    out: list[str] = []
    if node.kind in _NUMERIC:
        if node.max is not None:
            out.append(_val_max(node.max))
        if node.min is not None:
            out.append(_val_min(node.min))
    else:
        if node.max is not None:
            out.append(_len_max(node.max))
        if node.min is not None:
            out.append(_len_min(node.min))
    if node.pattern is not None:
        out.append(_pattern(node.pattern))
    if node.enum is not None:
        out.append(_enum(node.enum))
    return out


class _Gen:
    def __init__(self, root: Node) -> None:
        self.lines: list[str] = []
        self.consts: dict[str, Any] = {"_root": root}
        self.n = 0
        self.stack: list[str] = []

    def const(self, obj: Any) -> str:
        name = f"_k{len(self.consts)}"
        self.consts[name] = obj
        return name

    def var(self, hint: str) -> str:
        self.n += 1
        return f"{hint}{self.n}"

    def emit(self, ind: int, line: str) -> None:
        self.lines.append("    " * ind + line)

    def err(self, ind: int, v: str, path: list, constraint: str, node: Node | None = None, sink: str = "errs") -> None:
        c = self.const(constraint)
        if node is None:
            self.emit(ind, f"{sink}.append(_e({v}, {_path_expr(path)}, {c}))")
        else:
            self.emit(ind, f"{sink}.append(_en({v}, {self.const(node)}, {_path_expr(path)}, {c}))")

    # value: type test, then its own constraints, then its children
    def value(self, node: Node, v: str, path: list, ind: int, top: bool = False, own: bool = True) -> None:
        if node.kind == "av":
            return
        self.emit(ind, f"if {_TYPE_TEST[node.kind].format(v=v)}:")
        self.emit(ind + 1, "_walk(body, _root); return _R")
        self.constraints(node, v, path, ind, top, own)

    def constraints(self, node: Node, v: str, path: list, ind: int, top: bool = False, own: bool = True) -> None:
        kind = node.kind
        if kind == "string":
            if own:
                self.string(node, v, path, ind, top)
        elif kind in _NUMERIC:
            if node.min is not None:
                self.emit(ind, f"if {v} < {node.min!r}:")
                self.err(ind + 1, v, path, _val_min(node.min))
            if node.max is not None:
                self.emit(ind, f"if {v} > {node.max!r}:")
                self.err(ind + 1, v, path, _val_max(node.max))
        elif kind == "structure":
            if node.name in self.stack:
                raise RuntimeError(f"recursive shape {node.name} cannot be compiled")
            self.stack.append(node.name)
            self.structure(node, v, path, ind, top)
            self.stack.pop()
        elif kind == "list":
            if own:
                self.length(node, v, path, ind)
            self.list_value(node, v, path, ind)
        elif kind == "map":
            if own:
                self.length(node, v, path, ind)
            self.map_value(node, v, path, ind)

    def length(self, node: Node, v: str, path: list, ind: int) -> None:
        if node.min is not None:
            self.emit(ind, f"if len({v}) < {node.min}:")
            self.err(ind + 1, v, path, _len_min(node.min), node)
        if node.max is not None:
            self.emit(ind, f"if len({v}) > {node.max}:")
            if node.name == "KeyList":  # BatchGetItem's per-table keys: DynamoDB's own form, no value shown
                shown = [p.replace("requestItems", "RequestItems").replace(".keys", ".Keys") if isinstance(p, str)
                         else p for p in path]
                self.emit(ind + 1, f"errs.append('Value at ' + repr({_path_expr(shown)}) + "
                                   f"{' failed to satisfy constraint: ' + _len_max(node.max)!r})")
            else:
                self.err(ind + 1, v, path, _len_max(node.max), node)

    def string(self, node: Node, v: str, path: list, ind: int, top: bool) -> None:
        if node.table:
            self.table_name(node, v, path, ind, top)
            return
        if node.enum is not None:
            self.emit(ind, f"if {v} not in {self.const(node.enum_set)}:")
            self.err(ind + 1, v, path, _enum(node.enum))
        if node.regex is not None and node.pattern is not None:
            self.emit(ind, f"if {self.const(node.regex.fullmatch)}({v}) is None:")
            self.err(ind + 1, v, path, _pattern(node.pattern))
        self.string_length(node.min, node.max, v, path, ind)

    def string_length(self, mn: int | None, mx: int | None, v: str, path: list, ind: int, sink: str = "errs") -> None:
        if mn is None and mx is None:
            return
        conds = []
        if mn is not None and mn > 0:
            conds.append(f"len({v}) < {mn}")
        if mx is not None:
            conds.append(f"len({v}) > {mx}")
            conds.append(f"(len({v}) * 2 > {mx} and not {v}.isascii())")
        if not conds:
            return
        n = self.var("n")
        self.emit(ind, f"if {' or '.join(conds)}:")
        self.emit(ind + 1, f"{n} = _jl({v})")
        if mn is not None and mn > 0:
            self.emit(ind + 1, f"if {n} < {mn}:")
            self.err(ind + 2, v, path, _len_min(mn), sink=sink)
        if mx is not None:
            self.emit(ind + 1, f"if {n} > {mx}:")
            self.err(ind + 2, v, path, _len_max(mx), sink=sink)

    def table_name(self, node: Node, v: str, path: list, ind: int, top: bool) -> None:
        """Table name or ARN. At top level its errors go to `tn`: when the name is invalid DynamoDB
        reports only the tableName constraints (docs/behaviour/validation.md §1)."""
        lo, hi = shapes.TABLE_NAME_MIN, shapes.TABLE_NAME_MAX
        sink = "tn" if top else "errs"
        if node.table == "arn":
            self.emit(ind, f"if {v}.startswith('arn:'):")
            self.string_length(None, node.max, v, path, ind + 1, sink)
            self.emit(ind, f"elif {v} not in _TN_OK:")
        else:
            self.emit(ind, f"if {v} not in _TN_OK:")
        n = self.var("n")
        self.emit(ind + 1, f"{n} = _jl({v})")
        if top and node.table == "arn":  # the model's TableArn minimum (1) comes first: '' gets only that
            self.emit(ind + 1, f"if {n} < 1:")
            self.err(ind + 2, v, path, _len_min(1), sink=sink)
            self.emit(ind + 1, f"elif {n} < {lo} or {n} > {hi} or _TN_RX({v}) is None:")
        else:
            self.emit(ind + 1, f"if {n} < {lo} or {n} > {hi} or _TN_RX({v}) is None:")
        self.emit(ind + 2, f"if _TN_RX({v}) is None:")
        self.err(ind + 3, v, path, _pattern(shapes.TABLE_NAME_PATTERN), sink=sink)
        self.emit(ind + 2, f"if {n} < {lo}:")
        self.err(ind + 3, v, path, _len_min(lo), sink=sink)
        self.emit(ind + 2, f"if {n} > {hi}:")
        self.err(ind + 3, v, path, _len_max(hi), sink=sink)
        self.emit(ind + 1, "elif len(_TN_OK) < 4096:")
        self.emit(ind + 2, f"_TN_OK.add({v})")

    def structure(self, node: Node, v: str, path: list, ind: int, top: bool) -> None:
        members = node.members
        # Bodies usually carry few of the many optional members. After the last required member,
        # skip the remaining lookups when the object holds no keys beyond those already seen
        # (order of checks, and so of reported errors, stays the model order).
        last_required = max((i for i, m in enumerate(members) if m[3]), default=-1)
        count = self.var("c") if len(members) - last_required - 1 >= 3 else None
        if count:
            self.emit(ind, f"{count} = 0")
        for i, (wire, lname, child, required) in enumerate(members):
            if count and i == last_required + 1:
                self.emit(ind, f"if len({v}) > {count}:")
                ind += 1
            self.member(v, wire, lname, child, required, path, ind, top,
                        count if count and i <= last_required else None)

    def member(self, v: str, wire: str, lname: str, child: Node, required: bool, path: list, ind: int,
               top: bool, count: str | None) -> None:
        """One structure member; `count` (if given) is incremented when the member is present."""
        mpath = _child(path, lname)
        if child.kind == "av":  # opaque: presence only
            if required:
                self.emit(ind, f"if {v}.get({wire!r}) is None:")
                self.err(ind + 1, "None", mpath, NOT_NULL)
                if count:
                    self.emit(ind, "else:")
                    self.emit(ind + 1, f"{count} += 1")
            elif count:
                self.emit(ind, f"if {v}.get({wire!r}) is not None:")
                self.emit(ind + 1, f"{count} += 1")
            return
        x = self.var("v")
        self.emit(ind, f"{x} = {v}.get({wire!r})")
        if required:
            self.emit(ind, f"if {x} is None:")
            self.err(ind + 1, "None", mpath, NOT_NULL, sink="tn" if top and wire == "TableName" else "errs")
            self.emit(ind, "else:")
        else:
            self.emit(ind, f"if {x} is not None:")
        if count:
            self.emit(ind + 1, f"{count} += 1")
        self.value(child, x, mpath, ind + 1, top=top and wire == "TableName")

    def list_value(self, node: Node, v: str, path: list, ind: int) -> None:
        elem = node.elem
        assert elem is not None  # a list node always has its element shape
        if elem.kind == "av":
            return
        i, e = self.var("i"), self.var("e")
        epath = path + [".", (f"str({i} + 1)",), ".member"]
        self.emit(ind, f"for {i}, {e} in enumerate({v}):")
        self.emit(ind + 1, f"if {e} is None:")
        self.err(ind + 2, "None", epath, NOT_NULL)
        self.emit(ind + 1, "else:")
        self.value(elem, e, epath, ind + 2)

    def map_value(self, node: Node, v: str, path: list, ind: int) -> None:
        key, value = node.key, node.value
        assert key is not None and value is not None  # a map node always has both shapes
        key_checked = bool(key.table or key.pattern or key.enum or key.min or key.max) and value.kind != "av"
        if value.kind == "av" and not key_checked:
            return
        k, e = self.var("k"), self.var("e")
        self.emit(ind, f"for {k}, {e} in {v}.items():")
        if key_checked:
            self.map_key(node, key, k, v, path, ind + 1)
        if value.kind == "av":
            return
        epath = path + [".", (k,), ".member"]
        self.emit(ind + 1, f"if {e} is None:")
        self.err(ind + 2, "None", epath, NOT_NULL)
        self.emit(ind + 1, "else:")
        self.emit(ind + 2, f"if {_TYPE_TEST[value.kind].format(v=e)}:")
        self.emit(ind + 3, "_walk(body, _root); return _R")
        fails = self.fails_expr(value, e)
        if fails:
            self.emit(ind + 2, f"if {fails}:")
            self.err(ind + 3, v, path, "Map value must satisfy constraint: [" +
                     ", ".join(_constraint_list(value)) + "]", node)
        if value.kind in ("structure", "list", "map"):
            self.constraints(value, e, epath, ind + 2, own=False)

    def map_key(self, node: Node, key: Node, k: str, v: str, path: list, ind: int) -> None:
        msg = "Map keys must satisfy constraint: [" + ", ".join(_constraint_list(key)) + "]"
        lo, hi = shapes.TABLE_NAME_MIN, shapes.TABLE_NAME_MAX
        if key.table:
            if key.table == "arn":
                self.emit(ind, f"if {k}.startswith('arn:'):")
                self.emit(ind + 1, f"if _jl({k}) > {key.max}:")
                self.err(ind + 2, v, path, "Map keys must satisfy constraint: [" +
                         ", ".join(_ARN_KEY_CONSTRAINTS) + "]", node)
                self.emit(ind, f"elif {k} not in _TN_OK:")
            else:
                self.emit(ind, f"if {k} not in _TN_OK:")
            self.emit(ind + 1, f"if not {lo} <= len({k}) <= {hi} or _TN_RX({k}) is None:")
            self.err(ind + 2, v, path, "Map keys must satisfy constraint: [" +
                     ", ".join(_TABLE_KEY_CONSTRAINTS) + "]", node)
            self.emit(ind + 1, "elif len(_TN_OK) < 4096:")
            self.emit(ind + 2, f"_TN_OK.add({k})")
            return
        fails = self.fails_expr(key, k)
        if fails:
            self.emit(ind, f"if {fails}:")
            self.err(ind + 1, v, path, msg, node)

    def fails_expr(self, node: Node, x: str) -> str:
        """A boolean expression: does scalar/collection `x` break any of node's own constraints?"""
        conds: list[str] = []
        kind = node.kind
        if kind in _NUMERIC:
            if node.min is not None:
                conds.append(f"{x} < {node.min!r}")
            if node.max is not None:
                conds.append(f"{x} > {node.max!r}")
        elif kind in ("list", "map"):
            if node.min is not None:
                conds.append(f"len({x}) < {node.min}")
            if node.max is not None:
                conds.append(f"len({x}) > {node.max}")
        elif kind == "string":
            if node.enum is not None:
                conds.append(f"{x} not in {self.const(node.enum_set)}")
            if node.regex is not None:
                conds.append(f"{self.const(node.regex.fullmatch)}({x}) is None")
            if node.min:
                conds.append(f"_jl({x}) < {node.min}")
            if node.max is not None:
                conds.append(f"(len({x}) * 2 > {node.max} and _jl({x}) > {node.max})")
        return " or ".join(conds)


def generate(operation: str, root: Node) -> tuple[str, dict]:
    """The checker's source for `operation` and the constants it refers to."""
    gen = _Gen(root)
    gen.emit(0, "def check(body, errs):")
    gen.emit(1, "tn = []")
    gen.constraints(root, "body", [], 1, top=True)
    gen.emit(1, "return tn or None")
    return "\n".join(gen.lines) + "\n", gen.consts
