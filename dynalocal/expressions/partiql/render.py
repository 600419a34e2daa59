"""Render PartiQL-built AST nodes as expression-language text, so a PartiQL write can run as
the equivalent PutItem/UpdateItem/DeleteItem/TransactWriteItems request.

Names become `#nK` placeholders (PartiQL names may be reserved words or contain any character)
and literal slots stay `:vK` values; the rendered text is stable per statement, so the
expression template cache serves repeated statements without re-parsing.
"""
from __future__ import annotations

from dynalocal.expressions import ast as A


class Renderer:
    """Collects the names and values the rendered expressions use (for one request shape)."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}  # attribute name -> #placeholder
        self.values: dict[str, None] = {}  # :slots used, in order

    def name(self, element: str) -> str:
        found = self.names.get(element)
        if found is None:
            found = self.names[element] = f"#n{len(self.names)}"
        return found

    @property
    def attribute_names(self) -> dict[str, str]:
        """ExpressionAttributeNames for the rendered text."""
        return {placeholder: name for name, placeholder in self.names.items()}

    def path(self, path: A.Path) -> str:
        out = []
        for element in path.elements:
            if isinstance(element, int):
                out.append(f"[{element}]")
            else:
                out.append(("." if out else "") + self.name(element))
        return "".join(out)

    def operand(self, node: object) -> str:
        if isinstance(node, A.Path):
            return self.path(node)
        if isinstance(node, A.Value):
            self.values.setdefault(node.name, None)
            return node.name
        if isinstance(node, A.Arith):
            return f"{self.operand(node.left)} {node.op} {self.operand(node.right)}"
        assert isinstance(node, A.Call)  # the operand kinds PartiQL parses: path, slot, arithmetic, call
        return f"{node.name}({', '.join(self.operand(a) for a in node.args)})"

    def condition(self, node: object) -> str:
        if isinstance(node, (A.And, A.Or)):
            joiner = " AND " if isinstance(node, A.And) else " OR "
            return joiner.join(self._grouped(item) for item in node.items)
        if isinstance(node, A.Not):
            return "NOT " + self._grouped(node.operand)
        if isinstance(node, A.Compare):
            return f"{self.operand(node.left)} {node.op} {self.operand(node.right)}"
        if isinstance(node, A.Between):
            return (f"{self.operand(node.subject)} BETWEEN {self.operand(node.low)} "
                    f"AND {self.operand(node.high)}")
        if isinstance(node, A.In):
            return f"{self.operand(node.subject)} IN ({', '.join(self.operand(o) for o in node.options)})"
        return self.operand(node)

    def _grouped(self, node: object) -> str:
        text = self.condition(node)
        return f"({text})" if isinstance(node, (A.And, A.Or, A.Not)) else text

    def update(self, actions: tuple) -> str:
        """An UpdateExpression: SET, REMOVE, ADD and DELETE clauses, each once, in that order."""
        clauses: dict[str, list[str]] = {}
        for action in actions:
            target = self.path(action.path)
            if action.clause == "SET":
                text = f"{target} = {self.operand(action.value)}"
            elif action.clause == "REMOVE":
                text = target
            else:
                text = f"{target} {self.operand(action.value)}"
            clauses.setdefault(action.clause, []).append(text)
        return " ".join(f"{clause} {', '.join(clauses[clause])}"
                        for clause in ("SET", "REMOVE", "ADD", "DELETE") if clause in clauses)
