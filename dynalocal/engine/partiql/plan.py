"""Planning PartiQL statements onto the equivalent DynamoDB operations.

A SELECT whose WHERE fixes the whole primary key of the table is a GetItem (one per value of
an IN on the partition key); one that fixes the partition key (= or IN) of the table or the
named index, plus optionally one sort-key range, is a Query per partition-key value; anything
else is a Scan. Conjuncts not used as key conditions are a residual filter, evaluated on each
returned item by the expression evaluator. Writes need equality on every key attribute; their
remaining conjuncts become the ConditionExpression of the PutItem/UpdateItem/DeleteItem.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar, cast

from dynalocal.errors import ValidationException
from dynalocal.expressions import ast as A
from dynalocal.expressions.checks import bind_checks_condition, check_condition
from dynalocal.expressions.evaluate import Predicate, compile_condition
from dynalocal.expressions.partiql.ast import Delete, Exists, Insert, Select, Statement, Update
from dynalocal.expressions.partiql.render import Renderer
from dynalocal.storage.database import TableEntry
from dynalocal.values.keys import KeySchema
from dynalocal.values.multikey import MultiKey

NO_KEY = "Where clause does not contain a mandatory equality on all key attributes"
RANGE_OPS = {"=": "=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}
LOWER = (">", ">=")
UPPER = ("<", "<=")
SWAPPED = {"=": "=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
WriteTree = Insert | Update | Delete | Exists  # the statements a WritePlan runs
RangeCondition = A.Compare | A.Between | A.Call  # a sort-key condition a Query can serve
_T = TypeVar("_T")


PARAM = "PartiQL"  # the expression checks' parameter name, stripped from their messages
EXPRESSION_PREFIXES = ("Invalid PartiQL: ", "Invalid UpdateExpression: ", "Invalid ConditionExpression: ",
                       "Invalid KeyConditionExpression: ")


def plain(err: ValidationException) -> ValidationException:
    """An expression error as PartiQL words it: without the `Invalid <Expression>: ` prefix."""
    for prefix in EXPRESSION_PREFIXES:
        if err.message is not None and err.message.startswith(prefix):
            return ValidationException(err.message[len(prefix):])
    return err


def check_values(checks: list, values: dict) -> None:
    """Run a statement's value-dependent expression checks (bounds, operand types) for one request."""
    try:
        for check in checks:
            check({}, values)
    except ValidationException as err:
        raise plain(err) from None


def key_type_error(name: str) -> ValidationException:
    return ValidationException(f"Key attribute's data type should match its data type in table's schema: Key {name}")


def _conjuncts(where: object) -> list:
    if where is None:
        return []
    return list(where.items) if isinstance(where, A.And) else [where]


def _is_attr(node: object, name: str) -> bool:
    return isinstance(node, A.Path) and node.elements == (name,)


def _equality(node: object, name: str) -> A.Value | None:
    """The value slot of `name = value` (either side), else None."""
    if isinstance(node, A.Compare) and node.op == "=":
        if _is_attr(node.left, name) and isinstance(node.right, A.Value):
            return node.right
        if _is_attr(node.right, name) and isinstance(node.left, A.Value):
            return node.left
    return None


def _take(conjuncts: list, match: Callable[[object, str], _T], name: str) -> _T | None:
    """The first conjunct `match(node, name)` recognises (removed from the list), or None."""
    for i, node in enumerate(conjuncts):
        found = match(node, name)
        if found is not None:
            del conjuncts[i]
            return found
    return None


def _hash_condition(node: object, name: str) -> tuple | None:
    value = _equality(node, name)
    if value is not None:
        return (value,)
    if isinstance(node, A.In) and _is_attr(node.subject, name) and all(isinstance(o, A.Value) for o in node.options):
        return node.options
    return None


def _range_condition(node: object, name: str) -> RangeCondition | None:
    """A conjunct a Query can serve as its sort-key condition, normalised to `name op value`."""
    if isinstance(node, A.Compare) and node.op in RANGE_OPS:
        if _is_attr(node.left, name) and isinstance(node.right, A.Value):
            return node
        if _is_attr(node.right, name) and isinstance(node.left, A.Value):
            return A.Compare(SWAPPED[node.op], node.right, node.left)
    if isinstance(node, A.Between) and _is_attr(node.subject, name) and isinstance(node.low, A.Value) \
            and isinstance(node.high, A.Value):
        return node
    if isinstance(node, A.Call) and node.name == "begins_with" and _is_attr(node.args[0], name) \
            and isinstance(node.args[1], A.Value):
        return node
    return None


def _and(items: list) -> object:
    if not items:
        return None
    return items[0] if len(items) == 1 else A.And(tuple(items))


class Narrow:
    """A Query variant whose key condition is BETWEEN the two bounds the WHERE puts on the sort key."""

    __slots__ = ("key_condition", "names", "range_values", "filter")

    def __init__(self, key_condition: str | None, names: dict, range_values: tuple,
                 filter_: Predicate | None) -> None:
        self.key_condition, self.names, self.range_values, self.filter = key_condition, names, range_values, filter_


class ReadPlan:
    """How a SELECT runs: operation, key slots, key condition text, residual filter, projection."""

    def __init__(self, select: Select, schema: KeySchema, index: str | None, is_table: bool,
                 multi: MultiKey | None = None) -> None:
        self.table, self.index, self.projection = select.table, index, select.projection
        self.schema = schema
        self.aliases = self._aliases(select.projection)
        self.checks: list = []
        if select.where is not None:
            try:
                check_condition(select.where, PARAM)
            except ValidationException as err:
                raise plain(err) from None
            self.checks = bind_checks_condition(cast(A.Cond, select.where), PARAM)  # check_condition accepted it
        rest = _conjuncts(select.where)
        # A multi-attribute GSI key: (value slot, attribute, type) of each HASH attribute's equality
        self.multi_slots: tuple[tuple[str, str, str], ...] = ()
        if multi is not None:
            self._plan_multi(select, multi, rest)
            return
        hash_values = _take(rest, _hash_condition, schema.hash_name)  # a local: mypy solves _take's type from `match`
        self.hash_values: tuple = hash_values or ()
        self.range: RangeCondition | None = None
        if self.hash_values and schema.range_name is not None:
            self.range = _take(rest, _range_condition, schema.range_name)
        if not self.hash_values:
            self.operation, rest = "Scan", _conjuncts(select.where)
        elif is_table and (schema.range_name is None or (
                isinstance(self.range, A.Compare) and self.range.op == "=")):
            self.operation = "GetItem"
        else:
            self.operation = "Query"
        self.residual = _and(rest)
        self.filter = compile_condition(self.residual) if self.residual is not None else None
        self.descending = self._order(select, schema)
        self.key_condition, self.names, self.range_values = self._key_condition(schema, self.range)
        self.narrow = self._narrow(schema, rest)

    def _plan_multi(self, select: Select, multi: MultiKey, rest: list) -> None:
        """A multi-attribute GSI key (docs/behaviour/multikey-gsi.md §3): a Query when the WHERE has an
        equality on every HASH attribute (the other conjuncts filter its items), else a Scan."""
        slots = []
        for name, kind in multi.hash_attrs:
            value = _take(rest, _equality, name)
            if value is None:
                break
            slots.append((value.name, name, kind))
        self.hash_values, self.range, self.range_values, self.narrow = (), None, (), None
        if len(slots) < len(multi.hash_attrs):
            self.operation, rest, self.key_condition, self.names = "Scan", _conjuncts(select.where), None, {}
        else:
            self.operation, self.multi_slots = "Query", tuple(slots)
            self.key_condition = " AND ".join(f"#k{i} = :k{i}" for i in range(len(slots)))
            self.names = {f"#k{i}": name for i, (_, name, _) in enumerate(slots)}
        self.residual = _and(rest)
        self.filter = compile_condition(self.residual) if self.residual is not None else None
        self.descending = False
        if select.order:
            if select.where is None:
                raise ValidationException("Must have WHERE clause in the statement when using ORDER BY clause.")
            for name, desc in select.order:
                if name not in multi.names:
                    raise ValidationException(
                        f"Variable reference {name} in ORDER BY clause must be part of the primary key")
                if multi.range_attrs and name == multi.range_attrs[0][0]:
                    self.descending = desc
            if not self.multi_slots:
                raise ValidationException("Must have at least one non-optional hash key condition in WHERE clause "
                                          "when using ORDER BY clause.")

    def _narrow(self, schema: KeySchema, rest: list) -> Narrow | None:
        """`sk >= :a AND sk < :b`: a Query of the whole [a, b] range when a <= b (the key condition
        holds one sort-key condition; the first bound alone would read past the second)."""
        first = self.range
        if self.operation != "Query" or not isinstance(first, A.Compare) or first.op not in LOWER + UPPER:
            return None
        wanted = UPPER if first.op in LOWER else LOWER
        for node in rest:
            other = _range_condition(node, schema.range_name)  # type: ignore[arg-type]
            if isinstance(other, A.Compare) and other.op in wanted:
                low, high = (first, other) if first.op in LOWER else (other, first)
                between = A.Between(low.left, low.right, high.right)
                text, names, slots = self._key_condition(schema, between)
                exclusive = [c for c in (first,) if c.op in (">", "<")]  # `other` stays in the residual
                residual = _and(rest + exclusive)
                return Narrow(text, names, slots, compile_condition(residual) if residual is not None else None)
        return None

    @staticmethod
    def _aliases(projection: tuple | None) -> tuple:
        """Output names of projected paths: the last name and any indexes after it (`a.b[0]` -> `b[0]`)."""
        if projection is None:
            return ()
        aliases = []
        for path in projection:
            elements = path.elements
            last = max(i for i, e in enumerate(elements) if isinstance(e, str))
            alias = elements[last] + "".join(f"[{e}]" for e in elements[last + 1:])
            if alias in aliases:
                raise ValidationException(f"Duplicate identifiers in select clause: {alias}")
            aliases.append(alias)
        return tuple(aliases)

    def _order(self, select: Select, schema: KeySchema) -> bool:
        if not select.order:
            return False
        if select.where is None:
            raise ValidationException("Must have WHERE clause in the statement when using ORDER BY clause.")
        descending = False
        for name, desc in select.order:
            if name not in schema.name_set:
                raise ValidationException(
                    f"Variable reference {name} in ORDER BY clause must be part of the primary key")
            if name == schema.range_name:
                descending = desc
        if not self.hash_values:
            raise ValidationException("Must have at least one non-optional hash key condition in WHERE clause when "
                                      "using ORDER BY clause.")
        return descending

    def _key_condition(self, schema: KeySchema, sort: object) -> tuple[str | None, dict, tuple]:
        """The KeyConditionExpression (`:h` is the partition-key value of each Query) and its slots."""
        if self.operation != "Query":
            return None, {}, ()
        if sort is None:
            return "#h = :h", {"#h": schema.hash_name}, ()
        renderer = Renderer()
        renderer.names[schema.range_name] = "#r"  # type: ignore[index]
        text = renderer.condition(sort)
        return f"#h = :h AND {text}", {"#h": schema.hash_name, "#r": schema.range_name}, tuple(renderer.values)


class WritePlan:
    """How an INSERT/UPDATE/DELETE/EXISTS runs: key slots plus rendered expressions."""

    def __init__(self, tree: WriteTree, schema: KeySchema) -> None:
        self.schema = schema
        renderer = Renderer()
        self.key: dict[str, A.Value] = {}
        self.update: str | None = None
        self.condition: str | None = None
        self.returning = getattr(tree, "returning", None)
        self.arith: list[A.Arith] = []
        self.negated = getattr(tree, "negated", False)  # NOT EXISTS
        self.checks = False  # whether the WHERE has conditions besides the key
        if isinstance(tree, Insert):
            self.kind, self.item = "Insert", tree.item
            self.condition = f"attribute_not_exists({renderer.name(schema.hash_name)})"
        else:
            where = tree.select.where if isinstance(tree, Exists) else tree.where
            rest = self._key(where, schema)
            self.checks = bool(rest)
            guard: list = []
            if isinstance(tree, Update):
                self.kind = "Update"
                self.update = renderer.update(tree.actions)
                self.arith = [a.value for a in tree.actions if isinstance(a.value, A.Arith)]
            else:
                self.kind = "Delete" if isinstance(tree, Delete) else "Exists"
            if self.kind in ("Update", "Exists"):  # the item must exist
                guard = [A.Call("attribute_exists", (A.Path((schema.hash_name,), placeholders=False),))]
            if guard or rest:
                self.condition = renderer.condition(_and(guard + rest))
        self.names = renderer.attribute_names
        self.values = tuple(renderer.values)

    def _key(self, where: object, schema: KeySchema) -> list:
        """Take the key equalities out of the WHERE conjuncts; return the rest."""
        rest = []
        for node in _conjuncts(where):
            for name in schema.names:
                value = _equality(node, name)
                if value is not None:
                    if name in self.key:
                        raise ValidationException(f"Multiple conditions on same key {name}. Only single item "
                                                  "Update/Insert/Delete are supported")
                    self.key[name] = value
                    break
            else:
                rest.append(node)
        if len(self.key) != len(schema.names):
            raise ValidationException(NO_KEY)
        return rest


def plan(statement: Statement, entry: TableEntry) -> ReadPlan | WritePlan:
    """The (cached) plan of a statement against the table's current key schema."""
    tree = statement.tree
    select = tree if isinstance(tree, Select) else None
    index_name = select.index if select is not None else None
    schema = entry.table.schema
    if index_name is not None:
        index = entry.table.indexes.get(index_name)
        if index is None:
            if index_name in entry.table.vectors:  # our wording (docs/behaviour/vectors.md §6)
                raise ValidationException("ExecuteStatement operation not supported on this index type.")
            raise ValidationException(f"The table does not have the specified index: {index_name}")
        schema = index.schema
        if index.multi is not None and select is not None:  # its schema names only the first attributes
            key = (schema, index.multi)
            found = statement.plans.get(key)
            if found is None:
                found = statement.plans[key] = ReadPlan(select, schema, index_name, False, index.multi)
            return found
    found = statement.plans.get(schema)
    if found is None:
        found = ReadPlan(select, schema, index_name, index_name is None) if select is not None \
            else WritePlan(cast(WriteTree, tree), schema)
        statement.plans[schema] = found
    return found
