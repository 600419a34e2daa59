"""Document paths on items: read, and copy-on-write set/remove for updates.

A resolved path is a tuple of str (map key / attribute name) and int (list index).
Items are never mutated: `Writer` copies the top-level dict once and each nested
container on first write, so untouched parts stay shared with the original item.
"""
from __future__ import annotations

from typing import Any

from dynalocal.errors import ValidationException

INVALID_FOR_UPDATE = "The document path provided in the update expression is invalid for update"


def get(item: dict, path: tuple) -> dict | None:
    """The AttributeValue at `path`, or None when any step is missing or of the wrong type."""
    av = item.get(path[0])
    for step in path[1:]:
        if av is None:
            return None
        if isinstance(step, str):
            inner = av.get("M")
            av = inner.get(step) if inner is not None else None
        else:
            inner = av.get("L")
            av = inner[step] if inner is not None and step < len(inner) else None
    return av


class Writer:
    """Applies writes to a private copy of an item, copying containers only as needed."""

    __slots__ = ("root", "_owned")

    def __init__(self, item: dict) -> None:
        self.root = dict(item)
        self._owned: set[int] = set()

    # Containers are dicts (str steps) or lists (int steps) as the path says: typed Any here.
    def _own(self, container: Any, key: str | int, tag: str) -> Any:
        """The inner map/list of container[key] as a private copy (tag says which)."""
        inner = container[key][tag]
        if id(inner) not in self._owned:
            inner = dict(inner) if tag == "M" else list(inner)
            container[key] = {tag: inner}
            self._owned.add(id(inner))
        return inner

    def parent(self, path: tuple) -> Any:
        """The private container holding path[-1], or None when a step is missing or mistyped."""
        container: Any = self.root
        for i in range(len(path) - 1):
            step, nxt = path[i], path[i + 1]
            if isinstance(step, str):
                av = container.get(step)
            else:
                av = container[step] if step < len(container) else None
            tag = "M" if isinstance(nxt, str) else "L"
            if av is None or tag not in av:
                return None
            container = self._own(container, step, tag)
        return container

    def set(self, path: tuple, value: dict) -> tuple:
        """Write value at path (list index past the end appends); returns the path written."""
        container = self.parent(path)
        last = path[-1]
        if container is None:
            raise ValidationException(INVALID_FOR_UPDATE)
        if isinstance(last, str):
            container[last] = value
            return path
        if last < len(container):
            container[last] = value
            return path
        container.append(value)
        return path[:-1] + (len(container) - 1,)

    def remove(self, path: tuple, parent_required: bool = True) -> None:
        """Delete the element at path; a missing final element is ignored."""
        container = self.parent(path)
        if container is None:
            if parent_required:
                raise ValidationException(INVALID_FOR_UPDATE)
            return
        last = path[-1]
        if isinstance(last, str):
            container.pop(last, None)
        elif last < len(container):
            del container[last]
