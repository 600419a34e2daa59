"""Projection of items onto document paths (ProjectionExpression, AttributesToGet, ReturnValues).

Paths are merged into a trie once per request; applying it copies only the containers on
the way to projected values (the values themselves are shared, items being immutable).
Missing paths are omitted; projected list elements keep their order and are compacted.
"""
from __future__ import annotations


def build_trie(paths: list[tuple]) -> dict:
    """Merge non-overlapping resolved paths; an empty dict marks a whole-value leaf."""
    trie: dict = {}
    for path in paths:
        node = trie
        for step in path:
            node = node.setdefault(step, {})
    return trie


def _project_value(av: dict, node: dict) -> dict | None:
    if isinstance(next(iter(node)), str):
        inner = av.get("M")
        if inner is None:
            return None
        out = {}
        for key, child in node.items():
            value = inner.get(key)
            if value is not None:
                projected = value if not child else _project_value(value, child)
                if projected is not None:
                    out[key] = projected
        return {"M": out} if out else None
    inner = av.get("L")
    if inner is None:
        return None
    elements = []
    for index in sorted(i for i in node if isinstance(i, int)):
        if index < len(inner):
            child = node[index]
            projected = inner[index] if not child else _project_value(inner[index], child)
            if projected is not None:
                elements.append(projected)
    return {"L": elements} if elements else None


def project(item: dict, trie: dict) -> dict:
    """The parts of the item the trie selects."""
    out = {}
    for name, child in trie.items():
        av = item.get(name)
        if av is not None:
            if not child:
                out[name] = av
            else:
                projected = _project_value(av, child)
                if projected is not None:
                    out[name] = projected
    return out


class Projection:
    """A projection bound to one request (names resolved)."""

    __slots__ = ("paths", "top_level", "_trie", "_flat")

    def __init__(self, paths: list[tuple]) -> None:
        self.paths = paths
        self.top_level = frozenset(p[0] for p in paths)
        self._trie = build_trie(paths)
        self._flat = all(len(p) == 1 for p in paths)

    def apply(self, item: dict) -> dict:
        """DynamoDB projection of one item."""
        if self._flat:
            return {name: item[name] for name in self._trie if name in item}
        return project(item, self._trie)
